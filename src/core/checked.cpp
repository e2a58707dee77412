#include "jouleprof/core/checked.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace jouleprof {
namespace {

std::string quoted(std::string_view text) {
  // Long or odd input is shown shortened: the message stays one readable line.
  std::string s;
  for (char c : text.substr(0, 40)) s += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (text.size() > 40) s += "…";
  return "'" + s + "'";
}

// from_chars takes no leading '+'; people type it.
std::string_view drop_plus(std::string_view t) {
  if (t.size() > 1 && t[0] == '+' && t[1] != '-' && t[1] != '+') t.remove_prefix(1);
  return t;
}

}  // namespace

std::string format_bound(double v) {
  if (std::isinf(v)) return v > 0 ? "∞" : "-∞";
  if (std::isnan(v)) return "NaN";
  char buf[32];
  // Whole numbers as written (1048576, not 1.04858e+06); others to 6 significant digits.
  std::snprintf(buf, sizeof buf, std::fabs(v) < 1e15 && v == std::floor(v) ? "%.0f" : "%.6g", v);
  return buf;
}

std::string format_bound(int64_t v) {
  // Bounds near the type's limits are shown by the limit's size, not as 19 digits.
  if (v == std::numeric_limits<int64_t>::max()) return "2^63-1";
  if (v == std::numeric_limits<int64_t>::min()) return "-2^63";
  if (v == std::numeric_limits<int32_t>::max()) return "2147483647";
  return std::to_string(v);
}

std::string range_message(std::string_view what, double v, const DoubleRange& r) {
  const bool low = r.min_exclusive ? !(v > r.min) : !(v >= r.min);
  const bool high = !(v <= r.max);
  if (!low && !high) return "";
  const std::string name(what);
  const std::string lo_op = r.min_exclusive ? " > " : " ≥ ";
  const bool has_min = std::isfinite(r.min), has_max = std::isfinite(r.max);
  std::string need;
  if (has_min && has_max) {
    need = "must be between " + format_bound(r.min) + " and " + format_bound(r.max);
    if (r.min_exclusive) need = "must be" + lo_op + format_bound(r.min) + " and ≤ " + format_bound(r.max);
  } else if (has_min) {
    need = "must be" + lo_op + format_bound(r.min);
  } else {
    need = "must be ≤ " + format_bound(r.max);
  }
  return name + " " + need + ", got " + format_bound(v);
}

static std::string need_text(const IntRange& r) {
  constexpr auto lo = std::numeric_limits<int64_t>::min();
  constexpr auto hi = std::numeric_limits<int64_t>::max();
  if (r.min != lo && r.max != hi) return "must be between " + format_bound(r.min) + " and " + format_bound(r.max);
  if (r.min != lo) return "must be ≥ " + format_bound(r.min);
  if (r.max != hi) return "must be ≤ " + format_bound(r.max);
  return "must fit in 64 bits";
}

std::string range_message(std::string_view what, int64_t v, const IntRange& r) {
  if (v >= r.min && v <= r.max) return "";
  return std::string(what) + " " + need_text(r) + ", got " + std::to_string(v);
}

Result<double> check_double(std::string_view what, double v, const DoubleRange& r) {
  if (!std::isfinite(v)) {
    return make_error(Errc::invalid_argument, std::string(what) + " must be a finite number, got " + format_bound(v));
  }
  if (auto msg = range_message(what, v, r); !msg.empty()) return make_error(Errc::invalid_argument, msg);
  return v;
}

Result<int64_t> check_int(std::string_view what, int64_t v, const IntRange& r) {
  if (auto msg = range_message(what, v, r); !msg.empty()) return make_error(Errc::invalid_argument, msg);
  return v;
}

Result<double> parse_checked_double(std::string_view what, std::string_view text, const DoubleRange& r) {
  const std::string_view t = drop_plus(text);
  double v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, std::chars_format::general);
  if (t.empty() || end != t.data() + t.size() || ec == std::errc::invalid_argument) {
    return make_error(Errc::invalid_argument, std::string(what) + " needs a number, got " + quoted(text));
  }
  if (ec == std::errc::result_out_of_range || !std::isfinite(v)) {
    return make_error(Errc::invalid_argument, std::string(what) + " must be a finite number, got " + quoted(text));
  }
  return check_double(what, v, r);
}

Result<int64_t> parse_checked_int(std::string_view what, std::string_view text, const IntRange& r) {
  const std::string_view t = drop_plus(text);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, 10);
  if (t.empty() || end != t.data() + t.size() || ec == std::errc::invalid_argument) {
    return make_error(Errc::invalid_argument, std::string(what) + " needs a whole number, got " + quoted(text));
  }
  if (ec == std::errc::result_out_of_range) {
    return make_error(Errc::invalid_argument, std::string(what) + " " + need_text(r) + ", got " + quoted(text));
  }
  return check_int(what, v, r);
}

std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<uint64_t> checked_product(std::initializer_list<int64_t> factors) {
  uint64_t p = 1;
  for (int64_t f : factors) {
    if (f < 0) return std::nullopt;
    auto next = checked_mul(p, static_cast<uint64_t>(f));
    if (!next) return std::nullopt;
    p = *next;
  }
  return p;
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (std::fabs(bytes) >= 1000 && u < 6) {
    bytes /= 1000;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.3g %s", bytes, units[u]);
  return buf;
}

Result<void> check_fits(std::string_view what, double needed_bytes, double available_bytes, std::string_view where) {
  if (!std::isfinite(needed_bytes) || needed_bytes > available_bytes) {
    return make_error(Errc::invalid_argument, std::string(what) + " needs " +
                                                  (std::isfinite(needed_bytes) ? format_bytes(needed_bytes) : "more than 2^64 B") +
                                                  " of memory, " + std::string(where) + " has " + format_bytes(available_bytes));
  }
  return {};
}

}  // namespace jouleprof
