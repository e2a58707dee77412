// CUPTI PM sampling without a GPU: the one-pass metric choice and the samples → window decode,
// on figures recorded on the H100 (workloads/pmprobe on the `lab` branch,
// archive/models-device/2026-11-26/pmprobe.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "pm_plan.hpp"

using namespace jouleprof::activity;

namespace {

// What the H100 answered in the probe: these metrics fit one pass together; the pct form of
// sm__cycles_active was not among the candidates, so it is treated as not offered here.
std::size_t h100_like(const std::vector<std::string>& names) {
  static const std::set<std::string> offered{
      "sm__cycles_active.avg",
      "gpc__cycles_elapsed.max",
      "dram__throughput.avg.pct_of_peak_sustained_elapsed",
      "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
      "sm__warps_active.avg.pct_of_peak_sustained_active",
      "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
      "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed"};
  for (const auto& n : names)
    if (!offered.count(n)) return 0;
  // fp64's pipe counter shares a counter domain with the others on this imagined chip: 2 passes.
  const bool fp64 = std::count(names.begin(), names.end(),
                               "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed") > 0;
  return fp64 && names.size() > 1 ? 2 : 1;
}

TEST(PmPlan, TakesEachMetricsFirstAlternativeThatKeepsOnePass) {
  const PmPlan p = plan_pm_metrics(pm_metric_choices(), h100_like);
  std::vector<std::string> names;
  for (const auto& m : p.metrics) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"sm_active", "tensor_active", "dram_active",
                                             "sm_occupancy", "fp32_active"}));
  // sm_active: neither the pct form nor sm__cycles_elapsed is offered, so active / gpc elapsed.
  EXPECT_EQ(p.metrics[0].definition, "sm__cycles_active.avg / gpc__cycles_elapsed.max");
  EXPECT_EQ(p.metrics[3].definition, "sm__warps_active.avg.pct_of_peak_sustained_active / 100");
  EXPECT_EQ(p.left_out,
            (std::vector<std::string>{"fp16_active (not offered)", "fp64_active (2 passes)"}));
  // Each CUPTI metric configured once, and the indices point at them.
  EXPECT_EQ(std::set<std::string>(p.cupti.begin(), p.cupti.end()).size(), p.cupti.size());
  EXPECT_EQ(p.cupti[static_cast<std::size_t>(p.metrics[0].num)], "sm__cycles_active.avg");
  EXPECT_EQ(p.cupti[static_cast<std::size_t>(p.metrics[0].den)], "gpc__cycles_elapsed.max");
  EXPECT_EQ(h100_like(p.cupti), 1u);
}

TEST(PmPlan, NothingOfferedLeavesEveryMetricOut) {
  const PmPlan p = plan_pm_metrics(pm_metric_choices(),
                                   [](const std::vector<std::string>&) { return std::size_t{0}; });
  EXPECT_TRUE(p.metrics.empty());
  EXPECT_TRUE(p.cupti.empty());
  EXPECT_EQ(p.left_out.size(), pm_metric_choices().size());
}

PmPlan probe_plan() {
  return plan_pm_metrics(pm_metric_choices(), h100_like);
}

// Raw values in plan.cupti order from the probe's means (bf16 4096³ GEMMs, 10 ms samples).
std::vector<double> probe_raw(const PmPlan& p, double scale_active = 1) {
  std::vector<double> raw;
  for (const auto& n : p.cupti) {
    if (n == "sm__cycles_active.avg")
      raw.push_back(1.52311e7 * scale_active);
    else if (n == "gpc__cycles_elapsed.max")
      raw.push_back(1.85884e7);
    else if (n.rfind("dram__", 0) == 0)
      raw.push_back(31.1582);
    else if (n.find("tensor") != std::string::npos)
      raw.push_back(81.9508);
    else if (n.find("warps") != std::string::npos)
      raw.push_back(14.0439);
    else
      raw.push_back(0);
  }
  return raw;
}

TEST(PmWindow, RecordedH100SamplesGiveFractions) {
  const PmPlan p = probe_plan();
  std::vector<PmSample> s;
  for (uint64_t i = 0; i < 5; ++i)
    s.push_back(
        {1'000'000'000 + i * 10'000'000, 1'000'000'000 + (i + 1) * 10'000'000, probe_raw(p)});
  const auto w = pm_window(p, s, [](uint64_t ns) { return static_cast<double>(ns) * 1e-9 - 1.0; });
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->t0_s, 0.0);
  EXPECT_NEAR(w->t1_s, 0.05, 1e-12);
  ASSERT_EQ(w->values.size(), 5u);
  EXPECT_NEAR(w->values[0], 1.52311e7 / 1.85884e7, 1e-12);  // sm_active 0.819
  EXPECT_NEAR(w->values[1], 0.819508, 1e-12);               // tensor_active
  EXPECT_NEAR(w->values[2], 0.311582, 1e-12);               // dram_active
  EXPECT_NEAR(w->values[3], 0.140439, 1e-12);               // sm_occupancy
  EXPECT_EQ(w->values[4], 0.0);                             // fp32_active
}

TEST(PmWindow, SamplesAreWeightedByTheirSpan) {
  const PmPlan p = probe_plan();
  auto raw_a = probe_raw(p), raw_b = probe_raw(p, 0.5);
  // 30 ms at 0.819 and 10 ms at half that: the mean is (3 × 0.819 + 0.41) / 4.
  const std::vector<PmSample> s{{0, 30'000'000, raw_a}, {30'000'000, 40'000'000, raw_b}};
  const auto w = pm_window(p, s, [](uint64_t ns) { return static_cast<double>(ns) * 1e-9; });
  ASSERT_TRUE(w);
  const double a = 1.52311e7 / 1.85884e7;
  EXPECT_NEAR(w->values[0], (3 * a + 0.5 * a) / 4, 1e-12);
  EXPECT_NEAR(w->values[1], 0.819508, 1e-12);
}

TEST(PmWindow, AZeroDenominatorOrNoSampleIsNotAValue) {
  const PmPlan p = probe_plan();
  auto raw = probe_raw(p);
  raw[static_cast<std::size_t>(p.metrics[0].den)] =
      0;  // an idle GPU's clock gated: no elapsed cycles
  const auto w = pm_window(p, {{0, 10, raw}}, [](uint64_t ns) { return static_cast<double>(ns); });
  ASSERT_TRUE(w);
  EXPECT_EQ(w->values[0], -1.0);
  EXPECT_NEAR(w->values[1], 0.819508, 1e-12);
  EXPECT_FALSE(pm_window(p, {}, [](uint64_t) { return 0.0; }));
  EXPECT_FALSE(pm_window(p, {{10, 10, raw}}, [](uint64_t) { return 0.0; }));   // spans no time
  EXPECT_FALSE(pm_window(p, {{0, 10, {1.0}}}, [](uint64_t) { return 0.0; }));  // too few values
}

}  // namespace

#ifdef JOULEPROF_HAVE_RAPIDCHECK
#include <rapidcheck/gtest.h>

// Whatever the samples, a window's value is a weighted mean: between the samples' extremes.
RC_GTEST_PROP(PmWindowProperty, ValuesLieBetweenTheSamplesExtremes, ()) {
  const PmPlan p = probe_plan();
  const auto n = *rc::gen::inRange<std::size_t>(1, 20);
  std::vector<PmSample> s;
  double lo = 1e300, hi = -1e300;
  uint64_t t = *rc::gen::inRange<uint64_t>(0, 1'000'000'000);
  for (std::size_t i = 0; i < n; ++i) {
    const uint64_t span = *rc::gen::inRange<uint64_t>(1, 50'000'000);
    std::vector<double> raw = probe_raw(p);
    const double tensor_pct = *rc::gen::inRange<int>(0, 10000) / 100.0;
    for (std::size_t k = 0; k < p.cupti.size(); ++k)
      if (p.cupti[k].find("tensor") != std::string::npos) raw[k] = tensor_pct;
    lo = std::min(lo, tensor_pct / 100);
    hi = std::max(hi, tensor_pct / 100);
    s.push_back({t, t + span, raw});
    t += span + *rc::gen::inRange<uint64_t>(0, 5'000'000);
  }
  const auto w = pm_window(p, s, [](uint64_t ns) { return static_cast<double>(ns) * 1e-9; });
  RC_ASSERT(w.has_value());
  RC_ASSERT(w->t0_s <= w->t1_s);
  RC_ASSERT(w->values[1] >= lo - 1e-12 && w->values[1] <= hi + 1e-12);
}
#endif
