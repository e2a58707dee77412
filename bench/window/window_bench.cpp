// Cost of a Monitor window (begin + end) on the caller's thread, next to one read of the NVML
// energy counter — what a Zeus-style monitor pays at every window edge (issue 21; target
// ≤ 50 µs per begin+end pair). Both go through the real NVML loader: by default the fake
// libnvidia-ml of this build (CI), or the library named by $JOULEPROF_NVML_LIB (the H100:
// libnvidia-ml.so.1, scripts/device-python.sh). Compare the ratio, not the absolute times.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "jouleprof/sampler/monitor.hpp"

using namespace jouleprof;

namespace {

std::string nvml_library() {
  const char* lib = std::getenv("JOULEPROF_NVML_LIB");
  return lib != nullptr && *lib != '\0' ? lib : JOULEPROF_FAKE_NVML;
}

std::unique_ptr<Monitor> open_monitor(benchmark::State& state, const std::string& backend) {
  MonitorOptions o;
  o.gpus.backend = backend;
  o.gpus.nvml_library = nvml_library();
  o.gpus.ids = {"0"};
  o.sampler.read_cpu = false;
  auto mon = Monitor::create(o);
  if (!mon) {
    state.SkipWithError(mon.error().message.c_str());
    return nullptr;
  }
  return std::move(*mon);
}

// begin + end of one window; the sampler thread reads the counter for both edges meanwhile.
void WindowPair(benchmark::State& state, const std::string& backend) {
  auto mon = open_monitor(state, backend);
  if (!mon) return;
  for (auto _ : state) {
    const auto id = mon->begin("w");
    mon->end(id);
  }
  state.counters["target_us"] = 50;
  state.SetLabel(mon->gpus().backend + " " + mon->gpus().gpus.front()->info().name);
  mon->finish();
}
void BM_WindowPair_Nvml(benchmark::State& s) { WindowPair(s, "nvml"); }
void BM_WindowPair_Sim(benchmark::State& s) { WindowPair(s, "sim"); }
// A bounded count: every window is kept (they are the measurement).
BENCHMARK(BM_WindowPair_Nvml)->Iterations(20000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WindowPair_Sim)->Iterations(20000)->Unit(benchmark::kMicrosecond);

// Baseline: one energy-counter read (nvmlDeviceGetTotalEnergyConsumption) on this thread.
void BM_EnergyCounterRead_Nvml(benchmark::State& state) {
  auto mon = open_monitor(state, "nvml");
  if (!mon) return;
  GpuSensor& gpu = *mon->gpus().gpus.front();
  for (auto _ : state) {
    auto mj = gpu.read_energy_mj();
    if (!mj) {
      state.SkipWithError(mj.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(*mj);
  }
  state.SetLabel(gpu.info().name);
  mon->finish();
}
BENCHMARK(BM_EnergyCounterRead_Nvml)->Unit(benchmark::kMicrosecond)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
