// Energy from power samples and from cumulative counters.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "jouleprof/core/series.hpp"

namespace jouleprof {

struct Integral {
  double energy_j = 0;
  double duration_s = 0;
  std::size_t samples_inside = 0;  ///< samples strictly inside the window
  /// Bound on the error from not knowing where, inside the sample intervals that straddle
  /// the window's edges, the power changed: 0.5 * interval * |ΔP| per edge.
  double edge_uncertainty_j = 0;
  bool covered = false;      ///< samples exist on both sides of the window
  double max_gap_s = 0;      ///< largest spacing between samples used
  double mean_power_w() const { return duration_s > 0 ? energy_j / duration_s : 0; }
};

/// Trapezoidal integral of power (W) over [t0, t1] with linear interpolation at the edges.
/// Samples must be time ordered. Outside the samples' span the nearest value is held and
/// `covered` is false.
Integral integrate_trapezoid(const std::vector<Sample>& samples, double t0, double t1);

/// Linear interpolation of a sample list at t (held constant outside its span).
std::optional<double> interpolate(const std::vector<Sample>& samples, double t);

/// Difference of a cumulative counter that wraps at `wrap` (0: never wraps).
/// Returns nullopt when b < a and the counter does not wrap (a reset, e.g. driver reload).
std::optional<uint64_t> counter_delta(uint64_t a, uint64_t b, uint64_t wrap);

}  // namespace jouleprof
