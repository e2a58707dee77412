// Report generation on a 2-hour, 8-GPU, 50 Hz run: HTML report time and size (target: under
// ~20 MB and responsive), and Chrome-trace export time and size (full resolution and downsampled).
#include <benchmark/benchmark.h>

#include "jouleprof/report/html_report.hpp"
#include "jouleprof/report/trace.hpp"
#include "jouleprof/store/synthetic.hpp"

#include "synthetic_run.hpp"

using namespace jouleprof;

namespace {

void BM_Report_Html_2h_8gpu_50Hz(benchmark::State& state) {
  const Measurement& m = bench::long_synthetic_run();
  std::size_t size = 0;
  for (auto _ : state) {
    auto html = render_html_report({{"run 1", 1, &m}});
    if (!html) {
      state.SkipWithError(html.error().message.c_str());
      break;
    }
    size = html->size();
  }
  state.counters["html_MB"] = static_cast<double>(size) / 1e6;
}
BENCHMARK(BM_Report_Html_2h_8gpu_50Hz)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Report_Trace_2h_8gpu_50Hz(benchmark::State& state) {
  const Measurement& m = bench::long_synthetic_run();
  TraceOptions o;
  o.max_points = static_cast<std::size_t>(state.range(0));
  std::size_t size = 0;
  for (auto _ : state) {
    const std::string t = chrome_trace_json(m, o);
    size = t.size();
    benchmark::DoNotOptimize(t.data());
  }
  state.counters["trace_MB"] = static_cast<double>(size) / 1e6;
}
BENCHMARK(BM_Report_Trace_2h_8gpu_50Hz)->Arg(0)->Arg(20000)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
