// Power and run-time models of a workload across SM clocks (docs/models.md).
//
// A model predicts a workload's power and run time at every clock from its activity, power and
// run time measured at ONE probe clock (or up to three): that is what a user has after one run.
// Forms (one strategy each, src/models/form_*.cpp):
//   fgcs     the FGCS-2023 functional form, refit per GPU, max clock a parameter, tensor term
//   poly     polynomial in the clock ratio times the probe's activity, anchored at the probe
//   xgboost  gradient-boosted trees (Debian's libxgboost, loaded at run time) on the same inputs
//   knn      the curve shapes of the nearest training applications in probe-activity space
//   ensemble poly and knn blended in log space, the weight chosen by inner cross-validation
//   physics  T = a/f + b (the 1/f fraction from the probe's activity), P = static + k f V(f)^2 with
//            V(f) learned per GPU; further probes fit the workload's own a and k
//   auto     (the default) the design — form, hyper-parameters, outlier rule — whose
//            leave-one-application-out figure over the TRAINING applications is best (kAutoDesigns)
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/models/dataset.hpp"

namespace jouleprof::models {

enum class Form { fgcs, poly, xgboost, knn, ensemble, physics, automatic };
const char* to_string(Form f);
Result<Form> parse_form(const std::string& s);

struct FitOptions {
  Form form = Form::poly;
  double max_clock_mhz = 0;    ///< 0: the highest clock in the training data
  double probe_clock_mhz = 0;  ///< training anchor; 0: each application's highest clock
  double ridge = 0;            ///< poly: L2 penalty (x mean diagonal); 0: chosen by leave-one-application-out over the training data
  int xgb_rounds = 400;
  int xgb_depth = 4;
  double xgb_eta = 0.05;
  std::string gpu;  ///< the GPU the data was measured on (provenance; checked when applied)
  OutlierRule outliers;
  double physics_ridge = 0.1;         ///< physics: penalty of the 1/f-fraction regression (x applications)
  bool physics_dram_static = false;   ///< physics: static power + a DRAM-activity term
  int probes = 1;                     ///< probes per held-out workload the design is chosen for (auto)
  /// The probe handling, chosen in the inner loop when `probes` > 1 (saved in the model file):
  /// the predictions use the first `probes_used` probes (0: all given), and the workload's own
  /// fit to the extra probes weighs `probe_weight` (0..1) against the population's curve.
  /// With `probe_noise` > 0 the weight is also the workload's own: x max(0, 1 - noise^2 / r^2),
  /// r the RMS of ln(measured / one-probe prediction) at the extra probes (positive-part
  /// James-Stein: a disagreement of the size of the noise is dropped, a far larger one kept).
  int probes_used = 0;
  double probe_weight = 1;
  double probe_noise = 0;
  bool uncertainty = true;            ///< estimate the predictive spread (inner leave-one-application-out)
  /// Progress of long fits (design selection): called with (done, total).
  std::function<void(int, int)> progress;
};

/// One way to use a workload's probes: the first `used` of them, the extra ones' own fit weighted
/// by `weight` (shrunk toward the population's curve).
struct ProbeHandling {
  int used = 1;
  double weight = 1;
  double noise = 0;  ///< > 0: the per-workload James-Stein weight (FitOptions::probe_noise)
  std::string label() const;
};
/// The handlings the inner loop chooses among for `probes` probes: every handling of fewer probes
/// (so N+1 probes can always fall back on N), then `probes` probes at each weight of
/// kProbeWeights and with each James-Stein noise of kProbeNoise. One probe: the one handling.
std::vector<ProbeHandling> probe_handlings(int probes);
inline constexpr double kProbeWeights[] = {0.25, 0.5, 0.75, 1.0};
inline constexpr double kProbeNoise[] = {0.02, 0.05};

/// One candidate of `--form auto`: a form with its fixed choices, and a label for reports.
struct Design {
  std::string label;
  FitOptions options;
};
/// The candidate designs of `--form auto` for `base` (fixed before any result was looked at:
/// docs/validation/models.md). xgboost, knn and ensemble are left out for their cost.
std::vector<Design> auto_designs(const FitOptions& base);

/// The predictive spread of ln power, ln time and ln energy as a function of the distance from the
/// probe, x = |ln(f / f0)|: root mean square of held-out residuals in bins of x (non-decreasing).
struct Uncertainty {
  std::vector<double> x_edges;  ///< upper edges of the bins
  std::vector<double> log_power, log_time, log_energy;  ///< one per bin
  std::string method;  ///< how it was estimated ("" : none)
  bool empty() const { return x_edges.empty(); }
  /// The spread at distance x (the last bin beyond the edges).
  void at(double x, double& sp, double& st, double& se) const;
};

/// One probe run of the workload being predicted.
struct Probe {
  double clock_mhz = 0;
  std::vector<double> activity;  ///< in the model's activity order
  double power_w = 0;
  double time_s = 0;
};

struct Point {
  double clock_mhz = 0;
  double power_w = 0;
  double time_s = 0;
  double sigma_log_power = 0, sigma_log_time = 0, sigma_log_energy = 0;  ///< predictive spread (0: unknown)
  double energy_j() const { return power_w * time_s; }
};

/// Training provenance, saved with the model.
struct ModelInfo {
  Form form = Form::poly;
  std::string gpu;
  double max_clock_mhz = 0;
  double probe_clock_mhz = 0;
  std::vector<std::string> activity;  ///< the activity columns the model needs
  std::vector<std::string> dropped_activity;  ///< columns of the data left out, with the reason
  std::vector<double> clocks_mhz;     ///< the clocks seen in training (the optimizer's candidates)
  std::string training_source;
  std::size_t training_rows = 0;
  std::size_t training_outliers = 0;
  std::vector<std::string> training_applications;
  std::string created_utc;
  std::string tool_version;
  FitOptions options;
  std::vector<double> probe_activity_min, probe_activity_max;  ///< over the training probes, per column
  double probe_power_min_w = 0, probe_power_max_w = 0;
  Uncertainty uncertainty;
  /// `--form auto`: each design tried with its inner figure, and the one chosen.
  std::vector<std::pair<std::string, double>> designs;
  std::string chosen_design;
  std::string inner_criterion;
};

/// The probe's activity (or power) outside what the model was trained on: "dram_active 0.93
/// (trained 0.01-0.71)", "" when inside (2% slack).
std::string outside_training(const ModelInfo& info, const Probe& probe);

namespace detail {
class FormImpl;
}

class Model {
 public:
  const ModelInfo& info() const { return info_; }
  /// Power and time at each clock, from 1-3 probe runs. The first probe anchors the curve; further
  /// probes correct its slope (docs/models.md "Probes").
  Result<std::vector<Point>> predict(const std::vector<Probe>& probes, const std::vector<double>& clocks_mhz) const;
  /// The model file (JSON, schema_version 1): provenance and the fitted parameters.
  std::string to_json() const;
  static Result<Model> from_json(const std::string& text, const std::string& source);

  Model(ModelInfo info, std::shared_ptr<const detail::FormImpl> impl);
  std::shared_ptr<const detail::FormImpl> impl() const { return impl_; }

 private:
  ModelInfo info_;
  std::shared_ptr<const detail::FormImpl> impl_;
};

/// `--form auto` holds out each training application in turn: fewer than this is too few to choose.
inline constexpr std::size_t kMinAutoApplications = 4;

/// Fits a model on every non-outlier row of `data` (flag_outliers is applied here).
/// Errors: too few applications or clocks, collinear or constant features, missing metrics.
Result<Model> fit(Dataset data, const FitOptions& options);
Result<Model> load_model(const std::string& path);
Result<void> save_model(const Model& m, const std::string& path);

/// Where a held-out workload is probed.
struct ProbeOptions {
  double probe_clock_mhz = 0;  ///< 0: the highest clock in the workload's data
  int probes = 1;              ///< 1-3; extra probes at ~75% and ~55% of the first
};

}  // namespace jouleprof::models
