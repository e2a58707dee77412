// CUPTI PM sampling, the parts that need no GPU (tests/activity): which CUPTI metrics give the
// activity metrics within one pass, and the decoded samples turned into a window.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "source.hpp"

namespace jouleprof::activity {

/// One way to get an activity metric from CUPTI metrics: cupti[0] × scale, or, for a ratio,
/// cupti[0] / cupti[1] (two counters of the same sample).
struct PmFormula {
  std::vector<std::string> cupti;
  bool ratio = false;
  double scale = 0.01;  ///< CUPTI's pct_of_peak metrics are percent
};
struct PmMetricChoice {
  std::string name;                     ///< as the models call it (DCGM profiling field names)
  std::vector<PmFormula> alternatives;  ///< first that fits wins
};
/// The activity metrics in priority order (the first ones are what the models need most).
const std::vector<PmMetricChoice>& pm_metric_choices();

struct PmPlan {
  struct Metric {
    std::string name, definition;  ///< definition: the CUPTI expression, e.g. "a / b"
    int num = -1, den = -1;        ///< indices into cupti
    double scale = 1;
  };
  std::vector<Metric> metrics;
  std::vector<std::string> cupti;     ///< the CUPTI metric names to configure, each once
  std::vector<std::string> left_out;  ///< "fp64_active (3 passes)"
};

/// Greedy, in priority order: each metric's first alternative with which the whole set still
/// needs one pass. `passes(names)` is the number of passes the set needs, 0 when CUPTI refuses it.
PmPlan plan_pm_metrics(const std::vector<PmMetricChoice>& choices,
                       const std::function<std::size_t(const std::vector<std::string>&)>& passes);

/// One decoded sample: its GPU time span (CLOCK_REALTIME ns) and one value per plan.cupti.
struct PmSample {
  uint64_t start_ns = 0, end_ns = 0;
  std::vector<double> raw;
};

/// The samples' time-weighted mean per metric over [first start, last end], on the run time base
/// through `to_run_s`; -1 for a metric no sample could give (a ratio with a zero denominator).
/// nullopt when no sample spans time.
std::optional<Window> pm_window(const PmPlan& plan, const std::vector<PmSample>& samples,
                                const std::function<double(uint64_t)>& to_run_s);

}  // namespace jouleprof::activity
