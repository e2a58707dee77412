// GPU-only checks of the real NVML backend (CTest label "device"; skipped without a driver).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "jouleprof/sampler/monitor.hpp"

using namespace jouleprof;

namespace {
std::unique_ptr<Monitor> real_monitor() {
  MonitorOptions o;
  o.gpus.backend = "nvml";
  o.gpus.ids = {"0"};
  auto m = Monitor::create(o);
  if (!m) return nullptr;
  return std::move(*m);
}
}  // namespace

TEST(RealNvml, SensorsAnswerWithPlausibleValues) {
  auto mon = real_monitor();
  if (!mon) GTEST_SKIP() << "no NVIDIA driver here";
  GpuSensor& g = *mon->gpus().gpus[0];
  EXPECT_FALSE(g.info().name.empty());
  EXPECT_EQ(g.info().uuid.rfind("GPU-", 0), 0u);
  EXPECT_FALSE(g.info().driver_version.empty());
  for (Metric m : {Metric::power_sample_w, Metric::power_average_w, Metric::energy_j, Metric::temperature_c}) {
    EXPECT_TRUE(g.supports(m)) << metric_name(m);
  }
  auto p = g.read(Metric::power_average_w);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_GT(*p, 20);
  EXPECT_LT(*p, 1500);
  auto e0 = g.read_energy_mj();
  ASSERT_TRUE(e0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto e1 = g.read_energy_mj();
  ASSERT_TRUE(e1);
  EXPECT_GT(*e1, *e0);  // the counter advances (≥ idle power × 1 s)
  mon->finish();
}

TEST(RealNvml, SampleBufferIsDrainedIncrementallyOnTheRunTimeBase) {
  auto mon = real_monitor();
  if (!mon) GTEST_SKIP() << "no NVIDIA driver here";
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const Measurement m = mon->finish();
  const auto s = m.timelines[0]->series[static_cast<int>(Metric::power_sample_w)].all();
  ASSERT_GT(s.size(), 50u);
  double min_gap = 1e9, max_gap = 0;
  for (std::size_t i = 1; i < s.size(); ++i) {
    const double gap = s[i].t_s - s[i - 1].t_s;
    min_gap = std::min(min_gap, gap);
    max_gap = std::max(max_gap, gap);
  }
  EXPECT_GT(min_gap, 0);        // no duplicates
  EXPECT_LT(max_gap, 0.25);     // no holes between drains
  // Samples carry CLOCK_REALTIME µs; converted, the newest lands within 0.2 s of the end.
  EXPECT_NEAR(s.back().t_s, m.duration_s, 0.2);
  std::printf("samples: %zu, gap %.1f–%.1f ms, newest %.1f ms before the end\n", s.size(), min_gap * 1e3,
              max_gap * 1e3, (m.duration_s - s.back().t_s) * 1e3);
}
