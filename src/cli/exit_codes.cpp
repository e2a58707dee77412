#include "exit_codes.hpp"

#include <cstdio>

namespace jouleprof::cli {

int exit_code_for(const Error& e) {
  switch (e.code) {
    case Errc::invalid_argument:
    case Errc::parse: return kExitUsage;
    case Errc::unavailable:
    case Errc::not_found:
    case Errc::lost: return kExitNoDevice;
    case Errc::exec: return kExitExec;
    default: return 1;
  }
}

int report(const Error& e) {
  std::string msg = e.message;
  for (char& c : msg) {
    if (c == '\n') c = ' ';
  }
  std::fprintf(stderr, "jouleprof: error: %s\n", msg.c_str());
  return exit_code_for(e);
}

}  // namespace jouleprof::cli
