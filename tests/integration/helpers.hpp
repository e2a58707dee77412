// Helpers for integration tests: temp files, scenario files and running the CLI.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace jp_test {

inline std::filesystem::path temp_dir() {
  static const std::filesystem::path d = [] {
    auto p = std::filesystem::temp_directory_path() / ("jp-it-" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p;
  }();
  return d;
}

inline std::string write_file(const std::string& name, const std::string& text) {
  const auto p = temp_dir() / name;
  std::ofstream(p) << text;
  return p.string();
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

/// Starts the CLI with extra environment; `after_start` may signal it (gets the pid).
template <class F>
CliRun run_cli_with(const std::vector<std::string>& args, const std::vector<std::string>& env, F after_start) {
  const std::string out = (temp_dir() / "stdout.txt").string(), err = (temp_dir() / "stderr.txt").string();
  const pid_t pid = fork();
  if (pid == 0) {
    freopen(out.c_str(), "w", stdout);
    freopen(err.c_str(), "w", stderr);
    // Runs go into a store of the test's own, never the user's.
    const std::string db = "JOULEPROF_DB=" + (temp_dir() / "runs.db").string();
    putenv(const_cast<char*>(db.c_str()));
    for (const auto& kv : env) putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> argv;
    std::string cli = JOULEPROF_CLI;
    argv.push_back(cli.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(cli.c_str(), argv.data());
    _exit(126);
  }
  after_start(pid);
  int status = 0;
  waitpid(pid, &status, 0);
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

inline CliRun run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  return run_cli_with(args, env, [](pid_t) {});
}

/// Environment that points jouleprof at the fake NVML with a scenario.
inline std::vector<std::string> fake_env(const std::string& scenario_text) {
  return {"JOULEPROF_NVML_LIB=" JOULEPROF_FAKE_NVML,
          "JOULEPROF_FAKE_NVML_SCENARIO=" + write_file("scenario.txt", scenario_text)};
}

inline nlohmann::json load_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

}  // namespace jp_test
