// Run-vs-run comparison: per-run values over the measured repeats, and whether the difference
// of two runs' means exceeds what their repeats' spread explains (Welch's t-test, 95%).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/stats.hpp"
#include "jouleprof/result/result.hpp"

namespace jouleprof {

/// Values per measured (non-warm-up, complete) run, keyed like Measurement::stats:
/// "gpu_energy_j", "gpu_above_idle_j", "duration_s", "mean_power_w", "meter_energy_j",
/// "gpu_energy_per_<count>_j", "phase:<name>:gpu_energy_j", "phase:<name>:duration_s",
/// "phase:<name>:mean_power_w", "phase:<name>:gpu_energy_per_<count>_j".
std::map<std::string, std::vector<double>> repeat_values(const Measurement& m);

/// Quantities `runs compare` and the report compare, in this order, when present.
std::vector<std::string> comparable_keys(const std::vector<const Measurement*>& runs, const std::string& phase = "");

struct CompareCell {
  std::optional<Summary> value;            ///< absent: the run has no such value
  std::optional<double> diff;              ///< mean - baseline mean
  std::optional<double> diff_rel;          ///< diff / baseline mean
  std::optional<bool> significant;         ///< Welch 95%: needs n >= 2 on both sides
};

struct Comparison {
  std::vector<std::string> keys;                ///< rows of the table
  std::vector<std::vector<CompareCell>> cells;  ///< [run][key]; run 0 is the baseline
};

Comparison compare_runs(const std::vector<const Measurement*>& runs, const std::string& phase = "");

/// Welch's two-sided t-test at 95%: does mean(a) differ from mean(b)? nullopt when n < 2.
std::optional<bool> differs_95(const Summary& a, const Summary& b);

}  // namespace jouleprof
