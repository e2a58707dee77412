#include "jouleprof/core/error.hpp"

#include <cstdio>

#include "jouleprof/core/text.hpp"

namespace jouleprof {

const char* to_string(Errc c) {
  switch (c) {
    case Errc::invalid_argument: return "invalid argument";
    case Errc::not_found: return "not found";
    case Errc::exec: return "cannot execute";
    case Errc::unavailable: return "unavailable";
    case Errc::not_present: return "not present";
    case Errc::unsupported: return "unsupported";
    case Errc::io: return "I/O error";
    case Errc::parse: return "parse error";
    case Errc::vendor: return "vendor library error";
    case Errc::lost: return "device lost";
    case Errc::internal: return "internal error";
  }
  return "error";
}

int exit_code_for(const Error& e) {
  switch (e.code) {
    // 2: bad input — flags, files, names, ids (a missing file or run is the user's input).
    case Errc::invalid_argument:
    case Errc::not_found:
    case Errc::parse: return 2;
    // 3: the GPU or driver is unavailable (no driver, GPU not present, GPU lost).
    case Errc::unavailable:
    case Errc::not_present:
    case Errc::lost: return 3;
    case Errc::exec: return 127;
    default: return 1;
  }
}

int report_error(const Error& e) {
  std::string msg = e.message;
  for (char& c : msg) {
    if (c == '\n') c = ' ';
  }
  // Messages quote what the user typed or a file held: printed as valid UTF-8 with control
  // characters escaped, so an error cannot move the terminal's cursor or split the line.
  msg = for_terminal(msg);
  std::fprintf(stderr, "jouleprof: error: %s\n", msg.c_str());
  return exit_code_for(e);
}

}  // namespace jouleprof
