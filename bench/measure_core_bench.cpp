// CPU-path benchmarks of the measurement core, each with a baseline in the same run:
//   - sampler CPU share of one core against the fake libnvidia-ml (target ≤ 2%; the device
//     figure comes from scripts/device-validate.sh, where NVML is real);
//   - trapezoid integration vs a plain sum over the same samples;
//   - Series::append (chunked, spilling) vs std::vector::push_back.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "jouleprof/core/integrate.hpp"
#include "jouleprof/core/series.hpp"
#include "jouleprof/sampler/monitor.hpp"

using namespace jouleprof;

namespace {

void SamplerCpuShare(benchmark::State& state, const char* backend) {
  setenv("JOULEPROF_FAKE_NVML_SCENARIO", "/dev/null", 1);
  const double period_ms = static_cast<double>(state.range(0));
  double share = 0;
  for (auto _ : state) {
    MonitorOptions o;
    o.gpus.backend = backend;
    o.gpus.nvml_library = JOULEPROF_FAKE_NVML;
    o.sampler.fast_period_s = period_ms / 1000.0;
    o.sampler.read_cpu = false;
    auto mon = Monitor::create(o);
    if (!mon) {
      state.SkipWithError(mon.error().message.c_str());
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    share = (*mon)->sampler().thread_cpu_s() / wall;
    (*mon)->finish();
  }
  state.counters["cpu_share_of_one_core_pct"] = 100 * share;
  state.counters["target_pct"] = 2;
}
void BM_SamplerCpu_FakeNvml(benchmark::State& s) { SamplerCpuShare(s, "nvml"); }
void BM_SamplerCpu_SimBaseline(benchmark::State& s) { SamplerCpuShare(s, "sim"); }
BENCHMARK(BM_SamplerCpu_FakeNvml)->Arg(100)->Arg(20)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SamplerCpu_SimBaseline)->Arg(100)->Iterations(1)->Unit(benchmark::kMillisecond);

std::vector<Sample> power_samples(std::size_t n) {
  std::vector<Sample> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = {static_cast<double>(i) * 0.02, 300 + 100 * std::sin(0.01 * static_cast<double>(i))};
  return v;
}

void BM_Integrate_Trapezoid(benchmark::State& state) {
  const auto v = power_samples(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(integrate_trapezoid(v, 1.0, v.back().t_s - 1.0).energy_j);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
void BM_Integrate_SumBaseline(benchmark::State& state) {
  const auto v = power_samples(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    double s = 0;
    for (const Sample& x : v) s += x.value;
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Integrate_Trapezoid)->Arg(1 << 20);
BENCHMARK(BM_Integrate_SumBaseline)->Arg(1 << 20);

void BM_Series_AppendWithSpill(benchmark::State& state) {
  for (auto _ : state) {
    Series s(1 << 16);  // forces spilling
    for (int i = 0; i < state.range(0); ++i) s.append(i * 0.02, 1.0);
    benchmark::DoNotOptimize(s.size());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
void BM_Series_VectorBaseline(benchmark::State& state) {
  for (auto _ : state) {
    std::vector<Sample> v;
    for (int i = 0; i < state.range(0); ++i) v.push_back({i * 0.02, 1.0});
    benchmark::DoNotOptimize(v.size());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Series_AppendWithSpill)->Arg(1 << 20);
BENCHMARK(BM_Series_VectorBaseline)->Arg(1 << 20);

}  // namespace
