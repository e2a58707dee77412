// JSON, CSV and text renderings of model evaluations and optimizer choices (docs/models.md has
// the shapes). JSON carries schema_version; units are in the key names.
#pragma once

#include <string>
#include <vector>

#include "jouleprof/models/optimize.hpp"
#include "jouleprof/models/validate.hpp"

namespace jouleprof::models {

struct EvalContext {
  std::string model;  ///< model file, or "cross-validation"
  std::string form;
  std::string data;
  std::string split;  ///< "", "leave-one-application-out" or "kfold:K"
  ProbeOptions probe;
  std::size_t outlier_rows = 0;
  bool simulated = false;  ///< the data came from the simulated GPU (figures say so)
  std::vector<std::string> in_sample;  ///< model eval: applications the model was trained on
  bool nested = false;                 ///< validate --form auto: the design chosen inside each fold
  std::size_t designs = 0;             ///< designs tried against the inner figure in each fold
  std::string criterion;               ///< the inner figure
  std::vector<std::string> locked;     ///< the locked test set (held out of every choice)
  unsigned locked_seed = 0;
  bool measured = false;               ///< optimize on a measured sweep (no predictions)
};

/// A further block of results beside the main one: "held_out" (model eval of in-sample
/// applications, each refitted without it) or "locked_set" (validate --report-locked).
struct Section {
  std::string name;
  std::vector<Curve> curves;
  Evaluation evaluation;
  std::vector<std::vector<Choice>> choices;
};

/// {"schema_version", "model", "form", "data", "split", "probe", "applications": [{"application",
///  "points", "probe_clocks_mhz", "power_mape_pct", "time_mape_pct", "energy_mape_pct", "power_r2",
///  "time_r2", "energy_r2"}], "overall": {...}, "optimizer": [per objective summaries]}
std::string eval_json(const EvalContext& ctx, const std::vector<Curve>& curves, const Evaluation& ev,
                      const std::vector<std::vector<Choice>>& choices, const std::vector<Section>& extra = {});
std::string eval_csv(const std::vector<Curve>& curves, const Evaluation& ev);
std::string eval_text(const EvalContext& ctx, const std::vector<Curve>& curves, const Evaluation& ev,
                      const std::vector<std::vector<Choice>>& choices, const std::vector<Section>& extra = {});

/// {"schema_version", "objective", "model", "data", "applications": [{"application",
///  "chosen_clock_mhz", "predicted_energy_j", "measured_energy_at_chosen_j", "optimum_clock_mhz",
///  "optimum_energy_j", ...}], "summary": {...}}
std::string optimize_json(const EvalContext& ctx, const std::vector<Curve>& curves, const std::vector<Choice>& choices,
                          bool pareto);
std::string optimize_csv(const std::vector<Choice>& choices);
std::string optimize_text(const EvalContext& ctx, const std::vector<Choice>& choices);

/// Mean energy excess over the measured optimum and how many applications are within `pct`.
struct ExcessSummary {
  std::size_t applications = 0, compared = 0, within = 0;
  double mean_energy_excess_pct = 0, mean_objective_excess_pct = 0, max_energy_excess_pct = 0;
};
ExcessSummary summarize(const std::vector<Choice>& choices, double within_pct = 2.0);

/// LaTeX tabulars for papers: per application the chosen clock (and limit), measured saving with
/// its 95% CI, slowdown and excess over the measured optimum; or the MAPEs and excess per objective.
std::string optimize_latex(const std::vector<Choice>& choices);
std::string eval_latex(const Evaluation& ev, const std::vector<std::vector<Choice>>& choices);

/// ECharts options (the CLI renders them to SVG as `sweep --svg-dir` does): the energy-vs-clock
/// U-curve with the chosen point, the measured points with their 95% CI from repeats and the
/// measured optimum; and predicted vs measured power, time or energy over every application.
std::string ucurve_chart_option(const Curve& c, const Choice& ch, bool simulated);
std::string predicted_vs_measured_chart_option(const std::vector<Curve>& curves, const std::string& quantity, bool simulated);

/// Predicted curves: {"schema_version", "model", "applications": [{"application",
/// "probe_clocks_mhz", "points": [{"clock_mhz", "power_w", "time_s", "energy_j"}]}]}
std::string curves_json(const std::string& model, const std::vector<Curve>& curves);

}  // namespace jouleprof::models
