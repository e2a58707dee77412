// The report of a sweep (`jouleprof sweep`): per point, energy, time, average power, EDP and
// ED²P of the measured region (the workload's marked phases when present, else the whole run)
// with the repeats' 95% CI, per phase too; the measured optimum of each metric marked; CSV and
// ECharts specifications with error bars against clock or power limit.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/stats.hpp"
#include "jouleprof/report/charts.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof {

struct SweepRow {
  std::string point;  ///< the point's key ("clock=1410 mem=- pl=- batch=8")
  std::optional<double> clock_mhz, mem_clock_mhz, power_limit_w;
  std::optional<double> observed_clock_mhz;
  std::map<std::string, std::string> params;
  std::vector<int64_t> run_ids;
  Summary energy_j, duration_s, power_w, edp_js, ed2p_js2;  ///< over every measured run of the point
  std::map<std::string, std::pair<Summary, Summary>> phases;  ///< phase → (energy J, duration s)
  bool best_energy = false, best_edp = false, best_ed2p = false;
};

struct SweepReport {
  std::string sweep_id;
  bool simulated = false;
  std::string region;  ///< "marked phases" or "whole runs"
  std::vector<SweepRow> rows;  ///< by clock, then power limit, then parameters
  std::vector<std::string> failures;  ///< stored but incomplete points, with the reason
};

/// Gathers the sweep's runs from the store (tag sweep=ID).
Result<SweepReport> sweep_report(Store& store, const std::string& sweep_id);

/// Marks the lowest energy, EDP and ED2P row of each application (each set of --param values).
void mark_best_rows(std::vector<SweepRow>& rows);
/// One row per point: the settings, parameters, n and every metric's mean and CI half-width.
std::string sweep_report_csv(const SweepReport& r);
/// The report as one JSON document (schemas/sweep-report.schema.json): per point the settings,
/// parameters, run ids, every metric's summary and the per-phase energy and time.
std::string sweep_report_json(const SweepReport& r);
/// A table for the terminal, optimum marked with '*', then the per-phase table when there are phases.
std::string sweep_report_text(const SweepReport& r);
/// `metric`: energy_j | duration_s | power_w | edp_js | ed2p_js2 against `axis`: clock_mhz |
/// power_limit_w, one line per other setting/parameter combination, error bars = 95% CI,
/// the optimum marked; `phase_energy_j`: one line per marked phase (and other combination).
/// Empty option when no row has the axis.
ChartSpec sweep_chart(const SweepReport& r, const std::string& metric, const std::string& axis, const ChartOptions& o);

}  // namespace jouleprof
