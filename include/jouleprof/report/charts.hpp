// Chart specifications (Apache ECharts options as JSON), shared by the HTML report and the
// static figures of `jouleprof plot`: one specification, two renderers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "jouleprof/measure/result.hpp"

namespace jouleprof {

/// A run as the report and the plots see it.
struct ReportRun {
  std::string label;  ///< "run 12" or a file name
  int64_t id = 0;
  const Measurement* m = nullptr;
};

struct ChartSpec {
  std::string id;           ///< DOM id (stable: "timeline-0", "windows-0", "repeats", "compare", "tokens")
  std::string title;
  std::string option_json;  ///< the ECharts option object
  int height_px = 360;
};

struct ChartOptions {
  std::size_t max_points = 2000;  ///< per timeline series (min/max downsampling)
  std::string by_tag;             ///< comparison axis (e.g. "batch"); empty: first tag that differs
  bool for_static = false;        ///< no zoom slider or tooltip (plots)
};

/// Power per GPU (plus CPU and meter) over time, windows shaded, idle baseline drawn.
ChartSpec timeline_chart(const ReportRun& r, std::size_t index, const ChartOptions& o);
/// SM clock and temperature per GPU over time; empty option when the run has neither.
ChartSpec clocks_chart(const ReportRun& r, std::size_t index, const ChartOptions& o);
/// Energy per window (runs and phases), stacked per GPU.
ChartSpec windows_chart(const ReportRun& r, std::size_t index, const ChartOptions& o);
/// Distribution of per-run GPU energy over the repeats, one box per run.
ChartSpec repeats_chart(const std::vector<ReportRun>& runs, const ChartOptions& o);
/// Mean energy per run (± 95% CI) against a tag's value; the axis tag is in the title.
ChartSpec compare_chart(const std::vector<ReportRun>& runs, const ChartOptions& o);
/// Energy per count (e.g. J/token) per phase and run; empty option when no window has counts.
ChartSpec per_count_chart(const std::vector<ReportRun>& runs, const ChartOptions& o);

/// The tag to compare along: o.by_tag, else the first tag whose value differs between runs.
std::string comparison_tag(const std::vector<ReportRun>& runs, const ChartOptions& o);

}  // namespace jouleprof
