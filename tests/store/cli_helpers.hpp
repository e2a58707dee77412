// Running the jouleprof CLI from store/report tests: exit code, stdout, stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace jp_store_test {

struct Cli {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) {
    if (c == '\'') {
      o += "'\\''";
    } else {
      o += c;
    }
  }
  return o + "'";
}

/// Runs `jouleprof ARGS...` in `dir`; the default store is `dir`/default.db (never the user's).
inline Cli run_cli(const std::string& dir, const std::vector<std::string>& args) {
  std::string cmd = "cd " + quote(dir) + " && JOULEPROF_DB=" + quote(dir + "/default.db") + " " + quote(JOULEPROF_CLI);
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " >" + quote(dir + "/cli.out") + " 2>" + quote(dir + "/cli.err");
  const int st = std::system(cmd.c_str());
  Cli r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(dir + "/cli.out");
  r.err = slurp(dir + "/cli.err");
  return r;
}

inline int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n' ? 1 : 0;
  return n;
}

}  // namespace jp_store_test
