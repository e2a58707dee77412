#include "jouleprof/core/integrate.hpp"

#include <algorithm>
#include <cmath>

namespace jouleprof {
namespace {

double lerp(const Sample& a, const Sample& b, double t) {
  if (b.t_s <= a.t_s) return b.value;
  const double w = (t - a.t_s) / (b.t_s - a.t_s);
  return a.value + w * (b.value - a.value);
}

// Index of the first sample with t_s > t.
std::size_t upper(const std::vector<Sample>& s, double t) {
  return static_cast<std::size_t>(
      std::upper_bound(s.begin(), s.end(), t, [](double x, const Sample& v) { return x < v.t_s; }) -
      s.begin());
}

}  // namespace

std::optional<double> interpolate(const std::vector<Sample>& s, double t) {
  if (s.empty()) return std::nullopt;
  const std::size_t i = upper(s, t);
  if (i == 0) return s.front().value;
  if (i == s.size()) return s.back().value;
  return lerp(s[i - 1], s[i], t);
}

Integral integrate_trapezoid(const std::vector<Sample>& s, double t0, double t1) {
  Integral r;
  r.duration_s = std::max(0.0, t1 - t0);
  if (s.empty() || t1 <= t0) return r;
  r.covered = s.front().t_s <= t0 && s.back().t_s >= t1;

  // Build the integration knots: window edges (interpolated) plus every sample inside.
  const double p0 = *interpolate(s, t0);
  const double p1 = *interpolate(s, t1);
  std::size_t i = upper(s, t0);  // first sample after t0
  double prev_t = t0, prev_p = p0;
  double energy = 0;
  for (; i < s.size() && s[i].t_s < t1; ++i) {
    energy += 0.5 * (prev_p + s[i].value) * (s[i].t_s - prev_t);
    prev_t = s[i].t_s;
    prev_p = s[i].value;
    r.samples_inside++;
  }
  energy += 0.5 * (prev_p + p1) * (t1 - prev_t);
  r.energy_j = energy;

  // Edge uncertainty: inside the sample interval that straddles an edge the power may have
  // changed at any instant, not linearly; the worst case is half the interval times the jump.
  auto interval_at = [&](double t) -> std::pair<double, double> {  // (length, |jump|)
    const std::size_t k = upper(s, t);
    if (k == 0 || k == s.size()) return {0.0, 0.0};
    return {s[k].t_s - s[k - 1].t_s, std::fabs(s[k].value - s[k - 1].value)};
  };
  const auto [dt0, dp0] = interval_at(t0);
  const auto [dt1, dp1] = interval_at(t1);
  r.edge_uncertainty_j = 0.5 * dt0 * dp0 + 0.5 * dt1 * dp1;
  if (r.samples_inside == 0) {
    // The whole window sits inside one interval: the error cannot exceed duration * |jump|.
    r.edge_uncertainty_j = std::min(r.edge_uncertainty_j, r.duration_s * dp0);
  }
  for (std::size_t k = 1; k < s.size(); ++k) {
    if (s[k].t_s > t0 && s[k - 1].t_s < t1) {
      r.max_gap_s = std::max(r.max_gap_s, s[k].t_s - s[k - 1].t_s);
    }
  }
  return r;
}

std::optional<uint64_t> counter_delta(uint64_t a, uint64_t b, uint64_t wrap) {
  if (b >= a) return b - a;
  if (wrap == 0) return std::nullopt;
  return (wrap - a) + b;  // one wrap; RAPL counters count in [0, wrap)
}

}  // namespace jouleprof
