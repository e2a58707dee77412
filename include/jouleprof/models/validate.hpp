// Applying a model to the applications of a data set, and cross-validation (docs/models.md).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/models/dataset.hpp"
#include "jouleprof/models/model.hpp"

namespace jouleprof::models {

/// One clock of one application: the prediction and, where the data has it, the measurement.
struct CurvePoint {
  double clock_mhz = 0;
  std::optional<double> power_limit_w;  ///< measured sweeps over power limits (nullopt: default)
  double pred_power_w = 0;
  double pred_time_s = 0;
  std::optional<double> power_w;  ///< measured (mean over repeats)
  std::optional<double> time_s;
  std::optional<double> quality;
  std::vector<double> repeat_energy_j;  ///< each repeat's energy (for confidence intervals)
  bool outlier = false;
  double sigma_log_energy = 0, sigma_log_time = 0, sigma_log_power = 0;  ///< the prediction's spread (0: none known)
  double pred_energy_j() const { return pred_power_w * pred_time_s; }
  std::optional<double> energy_j() const {
    if (!power_w || !time_s) return std::nullopt;
    return *power_w * *time_s;
  }
};

/// An application's predicted (and measured) curve over clocks.
struct Curve {
  std::string application;
  std::vector<double> probe_clocks_mhz;
  std::vector<CurvePoint> points;  ///< ascending clock (then power limit, the default last)
  std::string outside_training;    ///< the probe's activity outside the model's training range ("" : inside)
  std::string design;              ///< cross-validation: the design that predicted it (auto: chosen in the inner loop)
};

/// The data's column index of each activity column the model needs (missing ones are named).
Result<std::vector<int>> model_columns(const Model& m, const Dataset& d);

/// The probe rows of one application, chosen by `opt` among its non-outlier clocks.
Result<std::vector<Probe>> select_probes(const Dataset& d, const std::string& app, const std::vector<int>& columns,
                                         const ProbeOptions& opt);
/// The probes of every application at once (one pass over the data), in Dataset::applications order.
Result<std::vector<std::pair<std::string, std::vector<Probe>>>> select_all_probes(const Dataset& d, const std::vector<int>& columns,
                                                                               const ProbeOptions& opt);

/// A curve measured at fewer clocks than this is a set of probe runs, not a curve: predictions fill
/// in the model's candidate clocks, and no measured optimum is taken from it.
inline constexpr std::size_t kMinMeasuredCurve = 3;

/// Predicts every application of `d` from its probe(s) with `m` (the data's rows give the clocks
/// and the measurements; an application with fewer than kMinMeasuredCurve clocks is predicted at
/// the model's candidate clocks as well). `d` must have the model's activity columns (missing
/// ones are named).
Result<std::vector<Curve>> predict_curves(const Model& m, Dataset d, const ProbeOptions& opt);

/// The measured curves themselves (predictions = measurements): the optimizer on a measured sweep;
/// or, where the data maps predicted power/time columns, those predictions (another model's).
Result<std::vector<Curve>> measured_curves(Dataset d, const OutlierRule& rule);

enum class Split { leave_one_application_out, kfold };
/// Cross-validation: each application is predicted by a model fitted without it
/// (leave-one-application-out) or without its fold (k folds of applications, fixed seed).
/// With fo.form == auto each fold chooses its design by an inner leave-one-application-out over its
/// own training applications: a nested cross-validation, whose outer figure is the held-out one.
/// `progress` (optional) is called with (folds done, folds).
Result<std::vector<Curve>> cross_validate(const Dataset& d, const FitOptions& fo, const ProbeOptions& po, Split split,
                                          int folds = 5, const std::function<void(int, int)>& progress = {});
/// The same folds, each fitted once and its held-out applications predicted with each probe
/// handling in turn: one set of curves per handling (the inner loop's choice of the handling costs
/// no extra fit). Empty `handlings`: one set, with each fitted model's own handling.
Result<std::vector<std::vector<Curve>>> cross_validate_handlings(const Dataset& d, const FitOptions& fo, const ProbeOptions& po,
                                                                 const std::vector<ProbeHandling>& handlings, Split split,
                                                                 int folds = 5, const std::function<void(int, int)>& progress = {});

/// The locked test set: `n` applications drawn once by `seed` (std::mt19937 shuffle of the sorted
/// names), and the rest (development). Designs are chosen on the development applications only.
struct LockedSplit {
  std::vector<std::string> locked, development;
};
LockedSplit locked_split(const Dataset& d, std::size_t n, unsigned seed);
/// The rows of `apps` only.
Dataset subset(const Dataset& d, const std::vector<std::string>& apps);
/// Nested cross-validation needs an outer fold's training set big enough for the inner one.
inline constexpr std::size_t kMinNestedApplications = kMinAutoApplications + 1;

/// The inner loop's figure of a design's held-out curves: what the product delivers. Each curve
/// gets (with `with_spread`) the spread of the OTHER curves' residuals, `optimize` chooses its
/// clock with it (expected energy, upper-bound guard), and the figure is the mean measured-energy
/// excess there over the measured optimum, + 1e-3 x the energy MAPE (near ties).
double inner_figure(std::vector<Curve> curves, bool with_spread);

struct Errors {
  std::size_t points = 0;
  double power_mape_pct = 0, time_mape_pct = 0, energy_mape_pct = 0;
  double power_r2 = 0, time_r2 = 0, energy_r2 = 0;
};
struct AppErrors {
  std::string application;
  Errors errors;
};
struct Evaluation {
  std::vector<AppErrors> applications;
  Errors overall;  ///< over all non-outlier measured points
};
/// MAPE and R^2 over each application's measured, non-outlier clocks.
Evaluation evaluate(const std::vector<Curve>& curves);

}  // namespace jouleprof::models
