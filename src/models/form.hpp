// The strategy interface behind Model: one implementation per form (form_*.cpp).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "jouleprof/models/model.hpp"

namespace jouleprof::models::detail {

/// The dot product of a design row and fitted coefficients (the forms' linear predictors).
inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

/// One application's non-outlier points (repeats averaged), ascending clock, with its anchor.
struct AppPoint {
  double clock_mhz = 0, power_w = 0, time_s = 0;
  std::vector<double> activity;  ///< the model's columns
};
struct AppSweep {
  std::string application;
  std::vector<AppPoint> points;
  std::size_t anchor = 0;  ///< the training probe
};

/// Sweeps of every application with >= min_points non-outlier clocks, restricted to `columns`
/// (indices into d.activity), anchored at the clock nearest `probe_clock_mhz` (0: the highest).
std::vector<AppSweep> sweeps_of(const Dataset& d, const std::vector<int>& columns, double probe_clock_mhz,
                                std::size_t min_points = 1);

struct FitContext {
  const std::vector<AppSweep>& sweeps;
  const std::vector<std::string>& activity;
  double max_clock_mhz;
  const FitOptions& options;
};

class FormImpl {
 public:
  virtual ~FormImpl() = default;
  /// Power (W) and time (s) at `clocks` for a workload probed once (`probe`).
  virtual void predict(const Probe& probe, const std::vector<double>& clocks, std::vector<double>& power_w,
                       std::vector<double>& time_s) const = 0;
  virtual nlohmann::json params() const = 0;
  /// Forms that use further probes themselves (physics) fill P and T from all of them, the
  /// further probes' evidence on power and on time weighted by `w_power`, `w_time` (0: the
  /// one-probe prediction), and return true; the others return false and Model::predict tilts
  /// the one-probe curve through them.
  virtual bool predict_probes(const std::vector<Probe>& /*probes*/, const std::vector<double>& /*clocks*/, double /*w_power*/,
                              double /*w_time*/, std::vector<double>& /*power_w*/, std::vector<double>& /*time_s*/) const {
    return false;
  }
};

Result<std::unique_ptr<FormImpl>> fit_fgcs(const FitContext& c);
Result<std::unique_ptr<FormImpl>> fit_poly(const FitContext& c);
Result<std::unique_ptr<FormImpl>> fit_xgboost(const FitContext& c);
Result<std::unique_ptr<FormImpl>> fit_knn(const FitContext& c);
Result<std::unique_ptr<FormImpl>> fit_ensemble(const FitContext& c);
Result<std::unique_ptr<FormImpl>> fit_physics(const FitContext& c);
Result<std::unique_ptr<FormImpl>> load_physics(const nlohmann::json& p, const ModelInfo& info);
Result<std::unique_ptr<FormImpl>> load_fgcs(const nlohmann::json& p, const ModelInfo& info);
Result<std::unique_ptr<FormImpl>> load_poly(const nlohmann::json& p, const ModelInfo& info);
Result<std::unique_ptr<FormImpl>> load_xgboost(const nlohmann::json& p, const ModelInfo& info);
Result<std::unique_ptr<FormImpl>> load_knn(const nlohmann::json& p, const ModelInfo& info);
Result<std::unique_ptr<FormImpl>> load_ensemble(const nlohmann::json& p, const ModelInfo& info);

/// Least squares with an L2 penalty (rows weighted); error when the system is singular.
Result<std::vector<double>> ridge_solve(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                                        const std::vector<double>& w, double ridge);

}  // namespace jouleprof::models::detail
