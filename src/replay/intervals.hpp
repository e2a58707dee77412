// Busy time of one device's GPU activity: the union of its [start, end) intervals, and its span.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace jouleprof::replay_detail {

struct BusySpan {
  int64_t busy_ns = 0;  ///< length of the union of the intervals (overlaps counted once)
  int64_t span_ns = 0;  ///< first start to last end
};

/// Sorts `iv` and measures it; empty intervals give zeros.
inline BusySpan busy_and_span(std::vector<std::pair<int64_t, int64_t>>& iv) {
  if (iv.empty()) return {};
  std::sort(iv.begin(), iv.end());
  int64_t busy = 0, c0 = iv.front().first, c1 = iv.front().second, last = c1;
  for (const auto& [s, e] : iv) {
    if (s > c1) {
      busy += c1 - c0;
      c0 = s;
      c1 = e;
    } else {
      c1 = std::max(c1, e);
    }
    last = std::max(last, e);
  }
  return {busy + (c1 - c0), last - iv.front().first};
}

}  // namespace jouleprof::replay_detail
