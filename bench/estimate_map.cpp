// Mapping speed of `jouleprof estimate`: a synthetic 100k-op graph (residual MLP blocks), built,
// partitioned and mapped onto the H100 model. Target: well under 1 s.
#include <benchmark/benchmark.h>

#include "jouleprof/estimate/estimate.hpp"

namespace {
using namespace jouleprof::estimate;

// 25,000 blocks x 4 ops (linear = matmul + bias add, gelu, residual add) = 100,000 ops.
Graph big_graph(int blocks) {
  GraphBuilder b("synthetic-100k", DType::bf16);
  int x = b.input("x", {64, 256});
  for (int i = 0; i < blocks; ++i) {
    const std::string n = "b" + std::to_string(i);
    int h = b.linear(n + ".fc", x, 256, true);
    h = b.unary(n + ".gelu", "Gelu", h, 8, 1);
    x = b.binary(n + ".res", "Add", x, h);
  }
  b.output(x);
  return std::move(b.finish().value());
}

HardwareSpec h100() {
  auto h = load_hardware_file(default_data_dir() + "/hw/h100-sxm.json");
  return std::move(h.value());
}

void BM_EstimateBuild100kOps(benchmark::State& s) {
  for (auto _ : s) benchmark::DoNotOptimize(big_graph(25000).ops.size());
}
BENCHMARK(BM_EstimateBuild100kOps)->Unit(benchmark::kMillisecond);

void BM_EstimatePartitionAndMap100kOps(benchmark::State& s) {
  const Graph g = big_graph(25000);
  const HardwareSpec hw = h100();
  EstimateOptions o;
  o.fuse = s.range(0) != 0;
  for (auto _ : s) {
    auto e = estimate(g, hw, o);
    benchmark::DoNotOptimize(e.value().energy_j);
  }
  s.counters["ops"] = static_cast<double>(g.ops.size());
}
BENCHMARK(BM_EstimatePartitionAndMap100kOps)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// Worst case of the whole-run power cap: an energy-hungry calibration pushes the run over TDP,
// so the clock bisection re-times every subgraph ~30 times (unfused).
void BM_EstimateMap100kOpsPowerCapped(benchmark::State& s) {
  const Graph g = big_graph(25000);
  const HardwareSpec hw = h100();
  Calibration cal;
  cal.hw_id = hw.id;
  cal.k_compute = cal.k_onchip = cal.k_dram = 200;
  cal.launch_us = 0.0;  // tiny kernels back to back: power set by their events alone
  EstimateOptions o;
  o.fuse = false;
  double clock = 0;
  for (auto _ : s) {
    auto e = estimate(g, hw, o, &cal);
    clock = e.value().subgraphs.front().clock_mhz;
    benchmark::DoNotOptimize(e.value().energy_j);
  }
  s.counters["clock_mhz"] = clock;
}
BENCHMARK(BM_EstimateMap100kOpsPowerCapped)->Unit(benchmark::kMillisecond);
}  // namespace
