// Window energy from a sampled timeline: counter difference first, trapezoid cross-check,
// idle baseline, uncertainty; statistics over repeats.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/series.hpp"
#include "jouleprof/result/result.hpp"

namespace jouleprof {

struct EnergyOptions {
  /// The counter is the primary figure only for windows at least this long; shorter windows
  /// take the sample timeline (the counter updates every ~100 ms on H100).
  double counter_min_window_s = 1.0;
  double counter_update_s = 0.1;
  /// A counter read further than this from a window edge is not used for that window.
  double counter_edge_tolerance_s = 0.25;
  /// Windows shorter than this are smeared by the sensor's own response (~20 ms samples that
  /// each average and lag the true power). An isolated one (no other window edge within
  /// response_lead_s before or response_tail_s after it) gets its energy as the idle level
  /// before it times its duration plus the whole excess response, tail included
  /// (docs/energy-methods.md).
  double response_max_window_s = 0.1;
  double response_lead_s = 0.1;
  double response_tail_s = 0.12;
};

/// Inputs for one GPU: slices of its timeline around the window.
struct GpuWindowData {
  std::vector<Sample> power;     ///< power timeline (W): driver samples, else a fallback field
  std::string power_source = "timeline";
  std::vector<Sample> counter;   ///< energy-counter reads (t, J)
  std::optional<double> idle_power_w;
  bool isolated = false;  ///< no other window edge near this window (see response_* options)
};

GpuEnergy window_energy(const GpuWindowData& d, double t0, double t1, const EnergyOptions& opt);

/// Re-bounds every counter figure of `m` with a measured update period: its staleness term
/// becomes mean power × `period_s`, and stays the bound where it is smaller than the cross-check.
void apply_counter_update_period(Measurement& m, double period_s);

/// The bound on a counter window's staleness error that n repeats with sample stdev `stdev`
/// support: the error is the difference of two independent uniform staleness terms
/// (triangular, stdev = range / sqrt 6), and stdev <= the repeats' stdev; with the one-sided
/// 95% chi-square upper bound of that stdev, range <= sqrt(6) × stdev × sqrt((n-1)/chi2_0.05).
/// Infinity for n < 3.
double repeats_staleness_bound(double stdev, std::size_t n);

/// Fills repeat statistics and warnings (CI too wide, windows shorter than the sensors allow).
void summarize_repeats(Measurement& m, double ci_warn_relative);

}  // namespace jouleprof
