// Runs the jouleprof CLI built with the tests (JOULEPROF_CLI) and returns stdout + stderr.
#pragma once

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace jouleprof::models::test {

inline std::string run_cli(const std::string& args, int& rc) {
  const std::string cmd = std::string(JOULEPROF_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int st = pclose(p);
  rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return out;
}

}  // namespace jouleprof::models::test
