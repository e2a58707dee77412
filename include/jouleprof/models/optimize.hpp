// The energy-optimal clock: objectives, per application (and phase), savings with confidence
// intervals from repeats, Pareto fronts (docs/models.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/models/validate.hpp"

namespace jouleprof::models {

enum class ObjectiveKind { energy, edp, ed2p, slowdown };
struct Objective {
  ObjectiveKind kind = ObjectiveKind::energy;
  double slowdown_pct = 0;  ///< slowdown: energy minimised with time <= (1 + pct/100) x time at the max clock
  std::string name() const;
};
/// "energy", "edp", "ed2p" or "slowdown:PCT" (PCT >= 0).
Result<Objective> parse_objective(const std::string& s);

struct Interval {
  double value = 0, low = 0, high = 0;
};

struct Choice {
  std::string application;
  Objective objective;
  double chosen_clock_mhz = 0;
  std::optional<double> chosen_power_limit_w;     ///< power-limit sweeps (nullopt: the default limit)
  std::optional<double> optimum_power_limit_w;
  std::optional<double> reference_power_limit_w;
  double predicted_power_w = 0, predicted_time_s = 0, predicted_energy_j = 0;
  double reference_clock_mhz = 0;  ///< the highest clock (the default a user runs at)
  double predicted_savings_pct = 0;
  double predicted_slowdown_pct = 0;
  std::optional<Interval> predicted_savings_interval;  ///< 95%, from the model's predictive spread
  std::string outside_training;  ///< the probe outside the model's training range ("" : inside)
  // Measured, where the data has the chosen clock and a curve to compare with.
  std::optional<double> measured_energy_at_chosen_j;
  std::optional<double> measured_time_at_chosen_s;
  std::optional<double> optimum_clock_mhz;  ///< the measured optimum of the same objective
  std::optional<double> optimum_energy_j;
  std::optional<double> energy_excess_pct;     ///< measured energy at chosen vs at the optimum
  std::optional<double> objective_excess_pct;  ///< the objective's value at chosen vs at the optimum
  std::optional<Interval> measured_savings_pct;  ///< vs the reference clock, 95% CI from repeats
  std::optional<double> measured_slowdown_pct;
};

/// Picks, for each curve, the clock minimising the objective on the predictions, and compares
/// with the measured optimum (outlier points are not candidates for either; no measured optimum
/// from fewer than kMinMeasuredCurve measured points).
std::vector<Choice> optimize(const std::vector<Curve>& curves, const Objective& obj);

/// Predicted curves over power limits instead of clocks: for each limit (W), the clock the GPU
/// settles at under it — the highest clock whose predicted power fits — with that clock's
/// predicted power and time; then the reference (the highest clock at the default limit). Limits
/// below every clock's predicted power are left out. A steady load is assumed (a cap throttles
/// only a workload's high-power phases; a phase-wise curve gives them separately). Errors: no
/// limits, a limit <= 0.
Result<std::vector<Curve>> power_limit_curves(const std::vector<Curve>& curves, const std::vector<double>& limits_w);

struct ParetoPoint {
  double clock_mhz = 0, energy_j = 0, time_s = 0;
  std::optional<double> power_limit_w;
  std::optional<double> quality;
};
/// Clocks not dominated in (energy lower, time lower, quality higher) — predicted values, or the
/// measured ones with `measured`.
std::vector<ParetoPoint> pareto_front(const Curve& c, bool measured);

/// A 95% interval of 100 x (1 - a/b) from repeat samples (delta method on the means; a single
/// sample on either side gives a zero-width interval).
Interval savings_interval(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace jouleprof::models
