// Runs a program as a child for CLI tests: stdout and stderr to files, extra environment, an
// optional working folder, and a hook that gets the pid while it runs (to signal it).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace jp_test {

struct ProgramRun {
  int exit_code = -1;  ///< 128 + signal when it was killed
  std::string out, err;
};

inline std::string slurp_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// env entries are KEY=VALUE, applied in order (a later one wins); out/err name the capture files.
template <class F>
ProgramRun run_program(const std::string& exe, const std::vector<std::string>& args, const std::vector<std::string>& env,
                       const std::string& cwd, const std::string& out, const std::string& err, F after_start) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(125);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(125);
    std::vector<std::string> env_copy = env;  // putenv keeps the pointers
    for (auto& kv : env_copy) putenv(kv.data());
    std::string path = exe;
    std::vector<std::string> copy = args;
    std::vector<char*> argv{path.data()};
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(path.c_str(), argv.data());
    _exit(126);
  }
  after_start(pid);
  int status = 0;
  waitpid(pid, &status, 0);
  ProgramRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp_file(out);
  r.err = slurp_file(err);
  return r;
}

}  // namespace jp_test
