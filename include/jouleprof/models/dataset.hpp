// DVFS sweep data for the power/runtime models: one row per (application, clock, repeat) with the
// activity metrics measured in that run, its mean power and its run time (docs/models.md).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace jouleprof::models {

/// Which CSV columns hold what. Defaults are the published FGCS-2023 data's names.
struct ColumnMap {
  std::string application = "application";
  std::string clock = "sm_app_clock";  ///< MHz
  std::string power = "power_usage";   ///< W, mean over the run
  std::string time = "run_time";       ///< s
  std::string phase;                   ///< optional: prefill / decode / ... (one model point per app+phase)
  std::string quality;                 ///< optional: a quality figure (higher is better) for the Pareto front
  std::string power_limit;             ///< optional: the power limit (W) of each run (measured sweeps: optimised with the clock)
  std::string pred_power, pred_time;   ///< optional: another model's predictions, evaluated like ours
  /// Activity columns. Empty: every known activity column the file has (kKnownActivity).
  std::vector<std::string> activity;
};

/// Activity columns recognised without --activity (DCGM names as in the published data, plus ours).
extern const std::vector<std::string> kKnownActivity;

struct Row {
  std::string application;  ///< "app" or "app/phase" when a phase column is mapped
  double clock_mhz = 0;
  double power_w = 0;
  double time_s = 0;
  std::vector<double> activity;  ///< in Dataset::activity order
  std::optional<double> quality;
  std::optional<double> power_limit_w;  ///< ColumnMap::power_limit (nullopt: the GPU's default)
  std::optional<double> pred_power_w, pred_time_s;  ///< ColumnMap::pred_power / pred_time
  bool outlier = false;  ///< set by flag_outliers(); excluded from fits, optima and MAPE
  std::string outlier_reason;
  double energy_j() const { return power_w * time_s; }
};

struct Dataset {
  std::string source;                 ///< file path (provenance)
  std::vector<std::string> activity;  ///< activity column names, in Row::activity order
  bool activity_explicit = false;     ///< named by the user (constant/collinear ones are errors, not dropped)
  bool simulated = false;             ///< measured on the simulated GPU (run store data)
  std::vector<Row> rows;

  std::vector<std::string> applications() const;  ///< in first-seen order
  /// Rows of one application sorted by clock (indices into rows).
  std::vector<std::size_t> rows_of(const std::string& app) const;
  int activity_index(const std::string& name) const;  ///< -1 when absent
  /// Every application with its rows sorted by clock, in first-seen order (one pass: linear).
  std::vector<std::pair<std::string, std::vector<std::size_t>>> groups() const;
};

/// Reads a CSV (header line, comma separated, quoted fields allowed). Errors name the file, the
/// line and the column: missing columns (all of them, named), non-numeric, NaN/inf, negative or
/// zero power/time/clock.
Result<Dataset> read_csv(const std::string& path, const ColumnMap& map);
Result<Dataset> parse_csv(const std::string& text, const ColumnMap& map, const std::string& source = "<text>");

/// Training data from the run store: the complete measured runs of one `jouleprof sweep` (tag
/// `sweep`), one row per repeat (mean power = energy / duration of the run window, or of each
/// marked phase with `phases`: application "app/phase"); the clock from the tag clock_mhz (else
/// the observed clock), the power limit from power_limit_w; activity from the runs' "activity"
/// section (`sweep --metrics` / `measure --metrics`), the columns every run has.
struct StoreSource {
  std::string db;       ///< "" : the default run store
  std::string sweep;    ///< sweep id
  std::string app_tag;  ///< tag naming the application ("" : the sweep's parameters, k=v,...)
  bool phases = false;
};
Result<Dataset> read_store(const StoreSource& src);

/// Outlier rule: a row is an outlier when its power, or one of the activity metrics, departs from
/// the median of its application's neighbouring clocks (up to `window` on each side) by more than
/// power_tol (relative) or activity_abs + activity_rel x median. Such rows are logged but are
/// not points of the DVFS curve (the published V100 data has runs with far lower power/activity).
struct OutlierRule {
  int window = 3;
  double power_tol = 0.15;
  double time_tol = 0;  ///< relative run-time departure that makes a row an outlier; 0: run time not checked
  double activity_abs = 0.05;
  double activity_rel = 0.15;
  bool enabled = true;
};
/// The models predict across clocks at one power limit.
inline constexpr const char* kPowerLimitModelError =
    "the data has runs at several power limits of one application: the models predict across clocks at one power "
    "limit (optimise power limits from the measured sweep: leave out --model)";
/// True when some application has runs at more than one power limit (a power-limit sweep).
bool varies_power_limit(const Dataset& d);

/// Marks outliers; returns how many rows were marked (none in a power-limit sweep).
std::size_t flag_outliers(Dataset& d, const OutlierRule& rule);

}  // namespace jouleprof::models
