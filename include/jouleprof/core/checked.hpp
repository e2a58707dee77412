// Checked numbers at the boundary: every number a user types (CLI options) or a file gives
// (JSON fields, CSV cells) passes through here once, so NaN, inf, negative values, sizes that
// overflow and bounds printed as 300 digits never reach the library.
//
//   auto runs = parse_checked_int("--runs", text, {.min = 1});       // "--runs must be ≥ 1, got 0"
//   auto bytes = checked_mul(rows, cols);                             // std::nullopt on overflow
#pragma once

#include <cstdint>
#include <limits>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "jouleprof/core/error.hpp"

namespace jouleprof {

/// A closed range [min, max] of finite values; either end may be left open (±infinity for
/// doubles, the type's limit for integers). `what` names the quantity in messages ("--runs").
struct DoubleRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;  ///< "must be > min" instead of "≥ min"
};
struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

/// A bound as people write it: "1", "0.5", "1e+06", never 300 digits; "any" for an open end.
std::string format_bound(double v);
std::string format_bound(int64_t v);

/// Why `v` is outside `r`, in words ("--runs must be ≥ 1, got 0"); empty when it is inside.
std::string range_message(std::string_view what, double v, const DoubleRange& r);
std::string range_message(std::string_view what, int64_t v, const IntRange& r);

/// The whole of `text` as one finite number within `r` (no trailing text, no NaN/inf, no
/// hex floats); Errc::invalid_argument with a one-line message naming `what` otherwise.
Result<double> parse_checked_double(std::string_view what, std::string_view text, const DoubleRange& r = {});
/// The whole of `text` as a base-10 integer within `r`, checked in 64 bits (no overflow wraps,
/// "1e3" and "1.5" refused).
Result<int64_t> parse_checked_int(std::string_view what, std::string_view text, const IntRange& r = {});
/// A value already held as a double (e.g. from a JSON document) checked for finiteness and range.
Result<double> check_double(std::string_view what, double v, const DoubleRange& r = {});
Result<int64_t> check_int(std::string_view what, int64_t v, const IntRange& r = {});

/// 64-bit size arithmetic that says when it overflows instead of wrapping.
std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b);
std::optional<uint64_t> checked_add(uint64_t a, uint64_t b);
/// The product of all factors, or nullopt on overflow (or a negative factor).
std::optional<uint64_t> checked_product(std::initializer_list<int64_t> factors);

/// A byte count in words for messages: "16.8 GB", "512 B".
std::string format_bytes(double bytes);
/// Refuses a memory need larger than what is available, saying how much is needed:
/// "--batch 2147483647 needs 16.8 TB of GPU memory, the H100 has 79.6 GB".
Result<void> check_fits(std::string_view what, double needed_bytes, double available_bytes, std::string_view where);

}  // namespace jouleprof
