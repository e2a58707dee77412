#include "jouleprof/report/downsample.hpp"

#include <cmath>

namespace jouleprof {

std::vector<Sample> downsample_minmax(const std::vector<Sample>& in, std::size_t buckets) {
  if (buckets == 0 || in.size() <= 2 * buckets) return in;
  std::vector<Sample> out;
  out.reserve(2 * buckets + 2);
  const double t0 = in.front().t_s, t1 = in.back().t_s;
  const double width = (t1 - t0) / static_cast<double>(buckets);
  std::size_t i = 0;
  for (std::size_t b = 0; b < buckets && i < in.size(); ++b) {
    const double end = b + 1 == buckets ? t1 : t0 + width * static_cast<double>(b + 1);
    std::size_t lo = i, hi = i;
    bool any = false;
    while (i < in.size() && (in[i].t_s < end || (b + 1 == buckets))) {
      if (!any || in[i].value < in[lo].value) lo = i;
      if (!any || in[i].value > in[hi].value) hi = i;
      any = true;
      ++i;
    }
    if (!any) continue;
    if (lo == hi) {
      out.push_back(in[lo]);
    } else if (lo < hi) {
      out.push_back(in[lo]);
      out.push_back(in[hi]);
    } else {
      out.push_back(in[hi]);
      out.push_back(in[lo]);
    }
  }
  return out;
}

std::vector<Sample> downsample_lttb(const std::vector<Sample>& in, std::size_t threshold) {
  const std::size_t n = in.size();
  if (threshold >= n || threshold < 3) return in;
  std::vector<Sample> out;
  out.reserve(threshold);
  const double every = static_cast<double>(n - 2) / static_cast<double>(threshold - 2);
  std::size_t a = 0;
  out.push_back(in[0]);
  for (std::size_t i = 0; i < threshold - 2; ++i) {
    // Average of the next bucket.
    auto next_start = static_cast<std::size_t>(std::floor(static_cast<double>(i + 1) * every)) + 1;
    auto next_end = std::min(n, static_cast<std::size_t>(std::floor(static_cast<double>(i + 2) * every)) + 1);
    double avg_t = 0, avg_v = 0;
    const std::size_t len = next_end > next_start ? next_end - next_start : 0;
    for (std::size_t k = next_start; k < next_end; ++k) {
      avg_t += in[k].t_s;
      avg_v += in[k].value;
    }
    if (len > 0) {
      avg_t /= static_cast<double>(len);
      avg_v /= static_cast<double>(len);
    } else {
      avg_t = in[n - 1].t_s;
      avg_v = in[n - 1].value;
    }
    const auto start = static_cast<std::size_t>(std::floor(static_cast<double>(i) * every)) + 1;
    const auto end = static_cast<std::size_t>(std::floor(static_cast<double>(i + 1) * every)) + 1;
    double best = -1;
    std::size_t pick = start;
    for (std::size_t k = start; k < end && k < n; ++k) {
      const double area = std::fabs((in[a].t_s - avg_t) * (in[k].value - in[a].value) -
                                    (in[a].t_s - in[k].t_s) * (avg_v - in[a].value));
      if (area > best) {
        best = area;
        pick = k;
      }
    }
    out.push_back(in[pick]);
    a = pick;
  }
  out.push_back(in[n - 1]);
  return out;
}

}  // namespace jouleprof
