// The mapper and energy model: behaviour with analytic expectations, calibration round trip,
// and golden tree/JSON output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jouleprof/estimate/builders.hpp"
#include "jouleprof/estimate/calibrate.hpp"
#include "jouleprof/estimate/estimate.hpp"
#include "jouleprof/estimate/report.hpp"

using namespace jouleprof::estimate;

namespace {
HardwareSpec test_gpu() {
  auto h = load_hardware_file(std::string(JOULEPROF_ESTIMATE_FIXTURES) + "/hw/test-gpu.json");
  EXPECT_TRUE(h) << (h ? "" : h.error().message);
  return std::move(h.value());
}
Estimate run(const std::string& model, const EstimateOptions& o = {}, const Calibration* cal = nullptr,
             const HardwareSpec* hw = nullptr) {
  auto g = build_model(model, {});
  EXPECT_TRUE(g);
  static const HardwareSpec gpu = test_gpu();
  auto e = estimate(*g, hw ? *hw : gpu, o, cal);
  EXPECT_TRUE(e) << (e ? "" : e.error().message);
  return std::move(e.value());
}
std::string read(const std::string& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
void golden(const std::string& name, const std::string& text) {
  const std::string path = std::string(JOULEPROF_ESTIMATE_GOLDEN) + "/" + name;
  if (std::getenv("JOULEPROF_UPDATE_GOLDEN")) {
    std::ofstream(path) << text;
    return;
  }
  EXPECT_EQ(read(path), text) << "golden " << path << " differs (JOULEPROF_UPDATE_GOLDEN=1 rewrites it)";
}
std::string fmt_clock(double mhz) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", mhz);
  return b;
}
}  // namespace

TEST(EstimateModel, StreamingCopyIsMemoryBound) {
  EstimateOptions o;
  o.warm = false;
  const Estimate e = run("copy:268435456", o);
  ASSERT_EQ(e.subgraphs.size(), 1u);
  const double bytes = 2.0 * 2 * 268435456;
  EXPECT_DOUBLE_EQ(e.dram_bytes, bytes);
  const HardwareSpec hw = test_gpu();
  const double t = bytes / (hw.dram().bandwidth_gbps.value * 1e9 * hw.eff_memory.value) + hw.launch_overhead_us.value * 1e-6;
  EXPECT_NEAR(e.latency_s, t, t * 1e-9);
  EXPECT_EQ(e.subgraphs[0].bound, "memory");
}

TEST(EstimateModel, WarmCacheServesSmallTensorsFromL2) {
  EstimateOptions warm, cold;
  cold.warm = false;
  const Estimate w = run("copy:1048576", warm), c = run("copy:1048576", cold);
  EXPECT_LT(w.dram_bytes, c.dram_bytes);
  EXPECT_DOUBLE_EQ(w.dram_bytes, 0);  // 4 MB in and out fit in a 50 MB L2 in steady state
}

TEST(EstimateModel, LowerClockSlowsComputeAndSavesDynamicEnergy) {
  EstimateOptions hi, lo;
  hi.power_cap = lo.power_cap = false;
  lo.clock_mhz = 990;
  const Estimate a = run("gemm:8192x8192x8192", hi), b = run("gemm:8192x8192x8192", lo);
  EXPECT_NEAR(b.latency_s / a.latency_s, 2.0, 0.05);  // compute- (or L2-) bound: both run at the core clock
  const HardwareSpec hw = test_gpu();
  const double v = voltage_at(hw, 990) / hw.voltage_max_v.value;
  double mac_a = 0, mac_b = 0;
  for (const auto& ev : a.totals) mac_a += ev.name == "tensor_core_mac" ? ev.energy_j : 0;
  for (const auto& ev : b.totals) mac_b += ev.name == "tensor_core_mac" ? ev.energy_j : 0;
  EXPECT_NEAR(mac_b / mac_a, v * v, 1e-9);  // dynamic energy per op ~ V^2
}

TEST(EstimateModel, PowerCapThrottlesHeavyGemms) {
  Calibration cal;
  cal.hw_id = "test-gpu";
  cal.k_compute = cal.k_onchip = 20;  // an energy-hungry chip
  EstimateOptions capped, free;
  free.power_cap = false;
  const Estimate c = run("gemm:8192x8192x8192", capped, &cal), f = run("gemm:8192x8192x8192", free, &cal);
  EXPECT_GT(f.avg_power_w, 700);
  EXPECT_LE(c.avg_power_w, 700 * 1.001);
  EXPECT_LT(c.subgraphs[0].clock_mhz, 1980);
  EXPECT_GT(c.latency_s, f.latency_s);
}

// Issue 35 item 3: --clock 1410 and 1980 gave identical results with a headline saying the
// requested clock; the headline and JSON now state the clock used and why it is lower.
TEST(EstimateModel, PowerCappedClockIsTheHeadlineAndSaysWhy) {
  Calibration cal;
  cal.hw_id = "test-gpu";
  cal.k_compute = cal.k_onchip = 20;
  EstimateOptions at_max, at_1410;
  at_1410.clock_mhz = 1410;
  const Estimate a = run("gemm:8192x8192x8192", at_max, &cal), b = run("gemm:8192x8192x8192", at_1410, &cal);
  ASSERT_TRUE(a.power_capped);
  EXPECT_DOUBLE_EQ(a.clock_requested_mhz, 1980);
  EXPECT_DOUBLE_EQ(a.clock_mhz, a.subgraphs[0].clock_mhz);
  EXPECT_LT(a.clock_mhz, 1980);
  EXPECT_GT(a.uncapped_power_w, 700);
  const std::string tree = render_tree(a, {4});
  EXPECT_NE(tree.find(fmt_clock(a.clock_mhz) + " MHz (power-capped)"), std::string::npos) << tree;
  EXPECT_NE(tree.find("power-capped: at 1980 MHz the average power would be"), std::string::npos) << tree;
  const auto j = nlohmann::json::parse(to_json(a));
  EXPECT_EQ(j["power_capped"], true);
  EXPECT_DOUBLE_EQ(j["clock_mhz"].get<double>(), a.clock_mhz);
  EXPECT_DOUBLE_EQ(j["clock_requested_mhz"].get<double>(), 1980);
  // A request above the capped clock is capped to the same clock (the identical figures of the
  // issue, now explained); below it the request holds and is not called capped.
  ASSERT_LT(a.clock_mhz, 1410);
  EXPECT_TRUE(b.power_capped);
  EXPECT_NEAR(b.clock_mhz, a.clock_mhz, 0.01);
  EXPECT_NEAR(b.energy_j, a.energy_j, 1e-6 * a.energy_j);
  EXPECT_NE(render_tree(b, {4}).find("power-capped: at 1410 MHz"), std::string::npos);
  EstimateOptions low;
  low.clock_mhz = std::floor(a.clock_mhz) - 100;
  const Estimate l = run("gemm:8192x8192x8192", low, &cal);
  EXPECT_FALSE(l.power_capped);
  EXPECT_DOUBLE_EQ(l.clock_mhz, low.clock_mhz.value());
  EXPECT_EQ(render_tree(l, {4}).find("power-capped"), std::string::npos);
  EXPECT_LE(l.avg_power_w, 700);
  // The comparison table names the clock and marks the capped one.
  const std::string cmp = render_comparison({a, l});
  EXPECT_NE(cmp.find(fmt_clock(a.clock_mhz) + "*"), std::string::npos) << cmp;
  EXPECT_NE(cmp.find("* power-capped"), std::string::npos) << cmp;
}

TEST(EstimateModel, WaveQuantizationPenalisesSkinnyGemms) {
  EstimateOptions o;
  o.power_cap = false;
  // 64x4096: 32 CTA tiles on 132 SMs.
  const Estimate big = run("gemm:4096x4096x4096", o), skinny = run("gemm:64x4096x4096", o);
  EXPECT_GT(big.subgraphs[0].utilization, 4 * skinny.subgraphs[0].utilization);
}

TEST(EstimateModel, SmallMGemmsUseNarrowTilesNotPaddedToTheFullTile) {
  // Operand swap: M = 1 and M = 8 both pad to the MMA's N granularity (8), so their tensor
  // work, and compute time, is the same; without it M = 1 would pay for 128 rows.
  EstimateOptions o;
  o.power_cap = false;
  const Estimate m1 = run("gemm:1x4096x4096", o), m8 = run("gemm:8x4096x4096", o), m128 = run("gemm:128x4096x4096", o);
  EXPECT_NEAR(m1.subgraphs[0].t_compute_s, m8.subgraphs[0].t_compute_s, 1e-12);
  EXPECT_LT(m8.subgraphs[0].t_compute_s * 10, m128.subgraphs[0].t_compute_s);
}

TEST(EstimateModel, FewCtasCannotUseTheWholeMemoryBandwidth) {
  HardwareSpec hw = test_gpu();
  hw.params["sm_load_bytes_per_clock"] = Sourced{32, "test"};
  EstimateOptions o;
  o.power_cap = false;
  o.warm = false;
  // 16x2048x8192: 16 CTAs (128-wide N tiles) stream 32 MiB of weights through 16 SMs.
  const Estimate e = run("gemm:16x2048x8192", o, nullptr, &hw);
  const double bytes = e.subgraphs[0].dram_bytes;
  EXPECT_GE(e.subgraphs[0].t_memory_s, bytes / (16 * 32 * 1980e6) * (1 - 1e-9));
  const Estimate wide = run("gemm:16x2048x8192", o);  // no per-SM limit: DRAM-bound
  EXPECT_GT(e.subgraphs[0].t_memory_s, 1.5 * wide.subgraphs[0].t_memory_s);
}

TEST(EstimateModel, MultiPassRowKernelsTakeAStreamingSweepPerPass) {
  EstimateOptions o;
  o.warm = false;
  o.power_cap = false;
  const HardwareSpec hw = test_gpu();
  const double rate = hw.dram().bandwidth_gbps.value * 1e9 * hw.eff_memory.value, row = 2.0 * 65536 * 4096;
  const Estimate sm = run("softmax:65536x4096", o), ln = run("layernorm:65536x4096", o);
  EXPECT_NEAR(sm.subgraphs[0].t_memory_s, 4 * row / rate, 1e-9);  // 3 reads + 1 write
  EXPECT_NEAR(ln.subgraphs[0].t_memory_s, 3 * row / rate + 2 * 2.0 * 4096 / rate, 1e-9);  // 2 reads + 1 write (+ weights)
  EXPECT_DOUBLE_EQ(sm.dram_bytes, 2 * row);  // the extra sweeps hit on chip
}

TEST(EstimateModel, EagerHostAndDeviceOverlapAsAPipeline) {
  // Eager dispatch is asynchronous: steady state takes max(total host, total device), not
  // the sum over ops of max(host, device); one cold run is at least as long.
  Calibration cal;
  cal.hw_id = "test-gpu";
  cal.dispatch_us = {{"matmul", 20}, {"conv", 20}, {"attention", 20}, {"other", 20}};
  EstimateOptions dev, eager, cold;
  dev.fuse = eager.fuse = cold.fuse = false;
  eager.eager = cold.eager = true;
  cold.warm = false;
  for (const char* m : {"resnet50", "llama-3.2-1b"}) {
    ModelOptions mo;
    mo.batch = 16;
    auto g = build_model(m, mo);
    ASSERT_TRUE(g);
    static const HardwareSpec gpu = test_gpu();
    const Estimate d = *estimate(*g, gpu, dev, &cal), e = *estimate(*g, gpu, eager, &cal), c = *estimate(*g, gpu, cold, &cal);
    double host = 0, sum_max = 0;
    for (std::size_t i = 0; i < e.subgraphs.size(); ++i) {
      const double h = 20e-6 * static_cast<double>(e.subgraphs[i].kernels);
      host += h;
      sum_max += std::max(h, e.subgraphs[i].device_s);
    }
    EXPECT_NEAR(e.latency_s, std::max(host, d.latency_s), 1e-9 * e.latency_s) << m;
    EXPECT_LE(e.latency_s, sum_max * (1 + 1e-12)) << m;
    EXPECT_GE(c.latency_s, e.latency_s * (1 - 1e-12)) << m;
    EXPECT_LE(c.latency_s, (host + d.latency_s) * (1 + 1e-12)) << m;
  }
}

TEST(EstimateModel, ModuleCallsAddHostTimeInEagerMode) {
  Calibration cal;
  cal.hw_id = "test-gpu";
  cal.dispatch_us = {{"other", 20}};  // every op class: host-bound at batch 1
  EstimateOptions o;
  o.fuse = false;
  o.eager = true;
  const Estimate a = run("resnet50", o, &cal);
  cal.module_us = 10;
  const Estimate b = run("resnet50", o, &cal);
  EXPECT_NEAR(b.latency_s - a.latency_s, 183 * 10e-6, 1e-9);
}

TEST(EstimateModel, LargeTensorsArePartlyResidentInAPartitionedCache) {
  // 32 MiB of weights swept each run through a 50 MB L2 split into two 25 MB partitions:
  // 25 MB (one partition) stays resident, the rest comes from DRAM every run.
  HardwareSpec hw = test_gpu();
  hw.params["llc_partitions"] = Sourced{2, "test"};
  EstimateOptions o;
  const Estimate e = run("gemm:1x4096x4096", o, nullptr, &hw);
  const double weights = 2.0 * 4096 * 4096, part = hw.llc()->size_bytes.value / 2;
  EXPECT_NEAR(e.dram_bytes, weights - part + 2.0 * (4096 + 4096) * 0, 0.01 * weights);
  const Estimate whole = run("gemm:1x4096x4096", o);  // one 50 MB partition: all resident
  EXPECT_DOUBLE_EQ(whole.dram_bytes, 0);
}

TEST(EstimateModel, PowerCapActsOnTheWholeRunsAveragePower) {
  // A hot GEMM followed by cold memory-bound work: one clock for the run, average power <= TDP.
  Calibration cal;
  cal.hw_id = "test-gpu";
  cal.k_compute = cal.k_onchip = 20;
  GraphBuilder b("mix", DType::bf16);
  int x = b.input("x", {8192, 8192});
  x = b.matmul("mm", x, b.weight("w", {8192, 8192}));
  for (int i = 0; i < 8; ++i) x = b.unary("relu" + std::to_string(i), "Relu", x);
  auto g = b.finish();
  ASSERT_TRUE(g);
  const Estimate e = *estimate(*g, test_gpu(), {}, &cal);
  EXPECT_LE(e.avg_power_w, 700 * 1.001);
  for (const auto& s : e.subgraphs) EXPECT_DOUBLE_EQ(s.clock_mhz, e.subgraphs[0].clock_mhz);
  EstimateOptions free;
  free.power_cap = false;
  const Estimate f = *estimate(*g, test_gpu(), free, &cal);
  EXPECT_GT(f.avg_power_w, 700);
}

TEST(EstimateModel, EnergyBreakdownSumsToTotal) {
  for (const char* m : {"resnet18", "llama-3.2-1b", "gemm:128x128x128"}) {
    const Estimate e = run(m);
    double s = 0;
    for (const auto& ev : e.totals) s += ev.energy_j;
    EXPECT_NEAR(s, e.energy_j, e.energy_j * 1e-9) << m;
    EXPECT_NEAR(e.dynamic_j + e.static_j, e.energy_j, e.energy_j * 1e-9) << m;
  }
}

TEST(EstimateModel, EveryClassHasItsOwnEvents) {
  auto c = load_catalog({std::string(JOULEPROF_DATA) + "/hw"});
  ASSERT_TRUE(c);
  const std::pair<const char*, const char*> expect[] = {
      {"xeon-8490h", "instruction_fetch"}, {"tpu-v4", "array_mac"}, {"kpu-t256", "noc_hop"}, {"h100-sxm", "warp_instruction"}};
  for (const auto& [hw, ev] : expect) {
    const Estimate e = run("resnet18", {}, nullptr, *c->find(hw));
    bool found = false;
    for (const auto& t : e.totals) found |= t.name == ev && t.energy_j > 0;
    EXPECT_TRUE(found) << hw << " " << ev;
    EXPECT_GT(e.latency_s, 0);
  }
}

TEST(EstimateModel, BadOptionsAreErrors) {
  auto g = build_model("resnet18", {});
  ASSERT_TRUE(g);
  auto c = load_catalog({std::string(JOULEPROF_DATA) + "/hw"});
  ASSERT_TRUE(c);
  EstimateOptions o;
  o.clock_mhz = 5000;
  EXPECT_FALSE(estimate(*g, test_gpu(), o));
  o = {};
  o.precision = DType::bf16;
  auto e = estimate(*g, **c->find("v100-sxm2"), o);  // V100 has no bf16
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("fp16"), std::string::npos) << e.error().message;
}

TEST(EstimateCalibration, SaveLoadRoundTrip) {
  Calibration c;
  c.hw_id = "test-gpu";
  c.eff_matrix = 0.9;
  c.k_dram = 3.5;
  c.active_w = 60;
  c.dispatch_us = {{"matmul", 15}, {"other", 8}};
  c.eff_attention = 0.55;
  c.gemm_k0 = 170;
  c.module_us = 20;
  c.busy_w = 35;
  c.stats["after_energy_mape_pct_test"] = 12;
  const std::string p = testing::TempDir() + "/cal.json";
  ASSERT_TRUE(save_calibration(c, p));
  auto l = load_calibration(p);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->hw_id, "test-gpu");
  EXPECT_DOUBLE_EQ(*l->eff_matrix, 0.9);
  EXPECT_DOUBLE_EQ(l->k_dram, 3.5);
  EXPECT_DOUBLE_EQ(l->dispatch_us.at("matmul"), 15);
  EXPECT_DOUBLE_EQ(*l->eff_attention, 0.55);
  EXPECT_DOUBLE_EQ(*l->gemm_k0, 170);
  EXPECT_DOUBLE_EQ(l->module_us, 20);
  EXPECT_DOUBLE_EQ(l->busy_w, 35);
  EXPECT_FALSE(l->eff_memory);
  EXPECT_FALSE(load_calibration("/nonexistent.json"));
}

TEST(EstimateCalibration, FitRecoversParametersOfSyntheticMeasurements) {
  // Measurements made by the model itself with known parameters: the fit must find them back.
  HardwareSpec hw = test_gpu();
  Calibration truth;
  truth.hw_id = hw.id;
  truth.eff_matrix = 0.85;
  truth.eff_vector = 0.6;
  truth.eff_memory = 0.9;
  truth.idle_w = 70;
  truth.active_w = 60;
  truth.launch_us = 2;
  truth.k_compute = 5;
  truth.k_onchip = 5;
  truth.k_dram = 3;
  truth.dispatch_us = {{"matmul", 1}, {"other", 1}, {"conv", 1}, {"attention", 1}};
  MeasurementSet m;
  m.hw_id = hw.id;
  m.idle_w = 70;
  for (const char* model : {"gemm:8192x8192x1024", "gemm:4096x4096x4096", "gemm:1x8192x8192", "copy:268435456",
                            "add:134217728", "softmax:65536x1024", "gemm:2048x2048x512", "attention:4,16,1024,1024,128"}) {
    MeasuredItem it;
    it.name = model;
    it.model = model;
    it.split = "train";
    auto g = build_model(model, {});
    EstimateOptions o;
    o.fuse = false;
    o.eager = true;
    auto e = estimate(*g, hw, o, &truth);
    ASSERT_TRUE(e);
    it.latency_s = e->latency_s;
    it.energy_j = e->energy_j;
    it.clock_mhz = e->subgraphs[0].clock_mhz;
    m.items.push_back(it);
  }
  auto fit = fit_calibration(m, hw);
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_LT(fit->stats.at("after_energy_mape_pct_train"), 2.0);
  EXPECT_LT(fit->stats.at("after_latency_mape_pct_train"), 3.0);
  EXPECT_NEAR(*fit->eff_memory, 0.9, 0.03);
}

TEST(EstimateOutput, GoldenTreeJsonCsv) {
  EstimateOptions o;
  const Estimate e = run("gemm:1024x1024x1024", o);
  golden("gemm1024_tree.txt", render_tree(e, {4}));
  golden("gemm1024.json", to_json(e));
  golden("gemm1024.csv", to_csv({e}));
  auto j = nlohmann::json::parse(to_json(e));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_GT(j["energy_j"].get<double>(), 0);
  EXPECT_EQ(j["subgraphs"].size(), 1u);
}
