#include "jouleprof/core/error.hpp"

namespace jouleprof {

const char* to_string(Errc c) {
  switch (c) {
    case Errc::invalid_argument: return "invalid argument";
    case Errc::not_found: return "not found";
    case Errc::exec: return "cannot execute";
    case Errc::unavailable: return "unavailable";
    case Errc::unsupported: return "unsupported";
    case Errc::io: return "I/O error";
    case Errc::parse: return "parse error";
    case Errc::vendor: return "vendor library error";
    case Errc::lost: return "device lost";
    case Errc::internal: return "internal error";
  }
  return "error";
}

}  // namespace jouleprof
