#include "jouleprof/core/parse.hpp"

#include <cmath>
#include <cstdlib>

namespace jouleprof {

bool parse_finite_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

}  // namespace jouleprof
