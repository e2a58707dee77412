// The mapper and energy model: behaviour with analytic expectations, calibration round trip,
// and golden tree/JSON output.
#include <gtest/gtest.h>

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

TEST(EstimateModel, WaveQuantizationPenalisesSkinnyGemms) {
  EstimateOptions o;
  o.power_cap = false;
  const Estimate big = run("gemm:4096x4096x4096", o), skinny = run("gemm:64x4096x4096", o);
  EXPECT_GT(big.subgraphs[0].utilization, 5 * skinny.subgraphs[0].utilization);
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
  c.stats["after_energy_mape_pct_test"] = 12;
  const std::string p = testing::TempDir() + "/cal.json";
  ASSERT_TRUE(save_calibration(c, p));
  auto l = load_calibration(p);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->hw_id, "test-gpu");
  EXPECT_DOUBLE_EQ(*l->eff_matrix, 0.9);
  EXPECT_DOUBLE_EQ(l->k_dram, 3.5);
  EXPECT_DOUBLE_EQ(l->dispatch_us.at("matmul"), 15);
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
