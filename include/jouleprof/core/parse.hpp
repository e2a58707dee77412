// Strict number parsing shared by the text parsers (markers, meter CSV, scenario files).
#pragma once

#include <string>

namespace jouleprof {

/// The whole of `s` is one finite number (no trailing text, no NaN/inf).
bool parse_finite_double(const std::string& s, double& out);

}  // namespace jouleprof
