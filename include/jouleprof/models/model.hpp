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
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/models/dataset.hpp"

namespace jouleprof::models {

enum class Form { fgcs, poly, xgboost, knn, ensemble };
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
};

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

 private:
  ModelInfo info_;
  std::shared_ptr<const detail::FormImpl> impl_;
};

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
