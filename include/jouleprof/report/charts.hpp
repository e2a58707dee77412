// Chart specifications (Apache ECharts options as JSON), shared by the HTML report and the
// static figures of `jouleprof plot`: one specification, two renderers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jouleprof/result/result.hpp"

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
  int width_px = 1000;            ///< the figure's width: how many rows the legend needs
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
/// What to tell the user when the comparison axis says nothing: --by names a tag that has one
/// value (or none) across the runs, or no tag differs at all; "" when the axis varies.
std::string by_tag_warning(const std::vector<ReportRun>& runs, const ChartOptions& o);

/// One configuration of `jouleprof bench llm` as the charts see it: a point of a run's "llm"
/// section (docs/bench-llm.md). A stored configuration has one; a sweep's JSON file has all.
struct BenchPoint {
  std::string run;  ///< label of the run it came from
  std::string model, dtype, variant, status;  ///< status: complete | incomplete | skipped
  double params = 0;   ///< model parameters
  int batch = 0, gen = 0;
  double prompt = 0;   ///< tokens per sequence (the mean for a --tokens file)
  bool simulated = false;
  std::optional<double> prefill_j_per_token, prefill_above_idle_j_per_token, prefill_tokens_per_s;
  std::optional<double> decode_j_per_token, decode_above_idle_j_per_token, decode_tokens_per_s;
  std::optional<double> decode_mean_power_w, prefill_mean_power_w, decode_ms_per_step;
  std::vector<std::pair<std::string, double>> components_j_per_token;  ///< isolated, in step order
  std::string label() const;  ///< "llama-3.2-1b bf16 b8 p128 g128"
};

/// Every bench llm point among the runs, in run order.
std::vector<BenchPoint> bench_points(const std::vector<ReportRun>& runs);

/// A sweep dimension on a bench chart's x axis: prompt length, batch, or model size (parameters).
enum class BenchAxis { prompt, batch, model };
const char* bench_axis_name(BenchAxis a);
std::optional<BenchAxis> bench_axis_from_name(const std::string& name);  ///< "prompt", "batch", "model"
/// The dimensions along which the points vary, in the order prompt, batch, model.
std::vector<BenchAxis> bench_axes(const std::vector<BenchPoint>& points);

/// J/token of prefill and decode (solid) and above idle (dashed) against a dimension, one line
/// per combination of the other sweep values; empty option without points.
ChartSpec bench_energy_chart(const std::vector<BenchPoint>& points, BenchAxis axis, const ChartOptions& o);
/// Tokens per second of prefill and decode against a dimension.
ChartSpec bench_throughput_chart(const std::vector<BenchPoint>& points, BenchAxis axis, const ChartOptions& o);
/// Decode J/token per component (isolated), stacked per configuration, with the measured decode
/// J/token beside; empty option when no point has components.
ChartSpec bench_components_chart(const std::vector<BenchPoint>& points, const ChartOptions& o);

/// `jouleprof trace` runs (the result's "trace" section): one stacked bar per GPU of the energy
/// by kernel class with idle/static and unattributed (they add up to the measured energy); and
/// the energy per layer in model order (empty option without two or more layers).
ChartSpec trace_breakdown_chart(const ReportRun& r, std::size_t index, const ChartOptions& o);
ChartSpec trace_layers_chart(const ReportRun& r, std::size_t index, const ChartOptions& o);

}  // namespace jouleprof
