// Helpers for integration tests: temp files, scenario files and running the CLI.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
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

#include "../common/run_program.hpp"

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

inline std::string read_file(const std::string& path) { return slurp_file(path); }

using CliRun = ProgramRun;

/// Starts the CLI with extra environment; `after_start` may signal it (gets the pid). Runs go
/// into a store of the test's own, never the user's (an env entry JOULEPROF_DB=... overrides it).
template <class F>
CliRun run_cli_with(const std::vector<std::string>& args, const std::vector<std::string>& env, F after_start) {
  std::vector<std::string> all{"JOULEPROF_DB=" + (temp_dir() / "runs.db").string()};
  all.insert(all.end(), env.begin(), env.end());
  return run_program(JOULEPROF_CLI, args, all, "", (temp_dir() / "stdout.txt").string(), (temp_dir() / "stderr.txt").string(),
                     after_start);
}

inline CliRun run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  return run_cli_with(args, env, [](pid_t) {});
}

/// A handshake with a workload (issue 31: no timers in tests): a FIFO the workload writes one line
/// to once it runs (`echo ready > $FIFO`); wait() returns true when that line came. The only time
/// limit is a 60 s guard, so that a workload that never starts fails the test instead of hanging it.
class ReadyFifo {
 public:
  explicit ReadyFifo(const std::string& name) : path_((temp_dir() / name).string()) {
    ::unlink(path_.c_str());
    ok_ = ::mkfifo(path_.c_str(), 0600) == 0;
    // Opened now, non-blocking: the workload's open for writing does not wait for the reader.
    if (ok_) fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK);
  }
  ~ReadyFifo() {
    if (fd_ >= 0) ::close(fd_);
    ::unlink(path_.c_str());
  }
  ReadyFifo(const ReadyFifo&) = delete;
  ReadyFifo& operator=(const ReadyFifo&) = delete;
  const std::string& path() const { return path_; }
  bool wait() const {
    if (fd_ < 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 60000) != 1 || (p.revents & POLLIN) == 0) return false;
    char c = 0;
    return ::read(fd_, &c, 1) == 1;
  }

 private:
  std::string path_;
  bool ok_ = false;
  int fd_ = -1;
};

/// Environment that points jouleprof at the fake NVML with a scenario.
inline std::vector<std::string> fake_env(const std::string& scenario_text) {
  return {"JOULEPROF_NVML_LIB=" JOULEPROF_FAKE_NVML,
          "JOULEPROF_FAKE_NVML_SCENARIO=" + write_file("scenario.txt", scenario_text)};
}

inline nlohmann::json load_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

}  // namespace jp_test
