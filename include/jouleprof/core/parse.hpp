// Strict number parsing shared by the text parsers (markers, meter CSV, scenario files).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace jouleprof {

/// The whole of `s` is one finite number (no trailing text, no NaN/inf).
bool parse_finite_double(const std::string& s, double& out);

/// Deeper than any document jouleprof reads or writes (results nest 5 levels).
inline constexpr int kMaxJsonDepth = 64;
/// The byte offset where a JSON text nests deeper than `max_depth` arrays/objects, if it does;
/// checked before parsing so a hostile document cannot exhaust a recursive reader's stack.
std::optional<std::size_t> json_too_deep(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace jouleprof
