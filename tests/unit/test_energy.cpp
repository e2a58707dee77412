// Window energy on synthetic timelines with known answers.
#include <gtest/gtest.h>

#include <cmath>

#include "jouleprof/analysis/energy.hpp"

using namespace jouleprof;

namespace {
// 20 ms samples of a step: `lo` W before t_step, `hi` after; counter reads every 0.5 s.
GpuWindowData step(double lo, double hi, double t_step, double t_end) {
  GpuWindowData d;
  for (int i = 0; i / 50.0 <= t_end + 1e-9; ++i) {
    const double t = i / 50.0;
    d.power.push_back({t, t < t_step - 1e-9 ? lo : hi});
  }
  double e = 0;
  for (int i = 0; i / 2.0 <= t_end + 1e-9; ++i) {
    const double t = i / 2.0;
    e = t < t_step ? lo * t : lo * t_step + hi * (t - t_step);
    d.counter.push_back({t, 1000.0 + e});
  }
  return d;
}
}  // namespace

TEST(WindowEnergy, LongWindowUsesTheCounterAndAgreesWithTheTimeline) {
  const GpuWindowData d = step(300, 300, 0, 12);
  const GpuEnergy e = window_energy(d, 1.0, 11.0, EnergyOptions{});
  EXPECT_EQ(e.method, "counter");
  EXPECT_NEAR(e.energy_j, 3000, 1e-6);
  ASSERT_TRUE(e.timeline_j);
  EXPECT_NEAR(*e.timeline_j, 3000, 1e-6);
  ASSERT_TRUE(e.disagreement);
  EXPECT_NEAR(*e.disagreement, 0, 1e-9);
  // Counter and a gap-free timeline agree exactly: the bound is their agreement (plus the
  // counter's mJ resolution), not mean power × the update period (30 J; issue 35 item 9).
  EXPECT_EQ(e.uncertainty_basis, "timeline cross-check");
  EXPECT_LT(e.uncertainty_j, 0.01);
  EXPECT_GT(e.uncertainty_j, 0);
  EXPECT_NEAR(e.mean_power_w, 300, 1e-9);
}

// Issue 35 item 9: a counter stale by 60 ms at its end read, and a timeline that disagrees by
// that much: the bound is the disagreement plus the timeline's edge term, and covers the truth.
TEST(WindowEnergy, CounterBoundIsTheTimelineCrossCheckWhenSmaller) {
  GpuWindowData d = step(300, 300, 0, 12);
  for (Sample& c : d.counter) c.value -= c.t_s > 5 ? 300 * 0.06 : 0;  // the end read lags 60 ms
  const GpuEnergy e = window_energy(d, 1.0, 11.0, EnergyOptions{});
  EXPECT_EQ(e.method, "counter");
  EXPECT_EQ(e.uncertainty_basis, "timeline cross-check");
  EXPECT_NEAR(e.uncertainty_j, 18, 0.01);
  EXPECT_LE(std::abs(e.energy_j - 3000), e.uncertainty_j + 1e-9);
  // A timeline with a gap (a drained buffer that overflowed) is no cross-check: staleness.
  GpuWindowData g = d;
  std::erase_if(g.power, [](const Sample& x) { return x.t_s > 4 && x.t_s < 6; });
  const GpuEnergy s = window_energy(g, 1.0, 11.0, EnergyOptions{});
  EXPECT_EQ(s.uncertainty_basis, "staleness");
  EXPECT_NEAR(s.uncertainty_j, s.energy_j / 10 * 0.1, 1e-9);
}

// Issue 35: about half of 20 ms simulated windows had counter_energy_j ≈ −0.02 J — the counter
// did not update inside the window and only the edge corrections were left. A window shorter
// than the counter's update period has no counter figure.
TEST(WindowEnergy, NoCounterFigureForWindowsShorterThanItsUpdatePeriod) {
  GpuWindowData d = step(300, 300, 0, 2);
  d.counter = {{1.000, 5000}, {1.025, 5000}};  // stale: no update between the reads
  const GpuEnergy e = window_energy(d, 1.003, 1.023, EnergyOptions{});
  EXPECT_FALSE(e.counter_j);
  EXPECT_NE(e.counter_note.find("shorter than the energy counter's 100 ms update period"), std::string::npos)
      << e.counter_note;
  EXPECT_NEAR(e.energy_j, 6, 1e-6);  // the timeline's figure
}

TEST(WindowEnergy, CounterEdgesAreAlignedWithTheTimeline) {
  // Counter reads at 1.0 and 11.0, window 1.1–10.9: the edge parts come from the timeline.
  const GpuWindowData d = step(200, 200, 0, 12);
  const GpuEnergy e = window_energy(d, 1.1, 10.9, EnergyOptions{});
  EXPECT_EQ(e.method, "counter");
  EXPECT_NEAR(e.energy_j, 200 * 9.8, 1e-6);
}

TEST(WindowEnergy, ShortWindowUsesTheTimelineWithUncertaintyNeverZero) {
  GpuWindowData d = step(75, 700, 5.0, 10);
  // A 16 ms window right after the step: inside one 20 ms sample interval.
  const GpuEnergy e = window_energy(d, 5.002, 5.018, EnergyOptions{});
  EXPECT_EQ(e.method, "timeline");
  EXPECT_GT(e.energy_j, 0);
  EXPECT_NEAR(e.energy_j, 700 * 0.016, 1e-6);
  EXPECT_FALSE(e.counter_note.empty());
  // Straddling the step: the uncertainty covers where in the interval it happened.
  const GpuEnergy s = window_energy(d, 4.99, 5.01, EnergyOptions{});
  EXPECT_GT(s.uncertainty_j, 0);
  EXPECT_LE(std::abs(s.energy_j - (75 * 0.01 + 700 * 0.01)), s.uncertainty_j + 1e-9);
}

TEST(WindowEnergy, IdleBaselineGivesEnergyAboveIdle) {
  GpuWindowData d = step(400, 400, 0, 5);
  d.idle_power_w = 75;
  const GpuEnergy e = window_energy(d, 0.5, 4.5, EnergyOptions{});
  ASSERT_TRUE(e.above_idle_j);
  EXPECT_NEAR(*e.above_idle_j, (400 - 75) * 4.0, 1e-6);
}

TEST(WindowEnergy, CounterResetFallsBackToTheTimeline) {
  GpuWindowData d = step(100, 100, 0, 5);
  d.counter = {{1.0, 5000}, {4.0, 10}};  // driver reload: the counter went back
  const GpuEnergy e = window_energy(d, 1.0, 4.0, EnergyOptions{});
  EXPECT_EQ(e.method, "timeline");
  EXPECT_NE(e.counter_note.find("reset"), std::string::npos);
  EXPECT_NEAR(e.energy_j, 300, 1e-6);
}

TEST(WindowEnergy, NothingSampledIsNoneNotZeroWatts) {
  const GpuEnergy e = window_energy(GpuWindowData{}, 0, 1, EnergyOptions{});
  EXPECT_EQ(e.method, "none");
  EXPECT_FALSE(e.timeline_j);
  EXPECT_FALSE(e.counter_j);
}

TEST(Repeats, StatisticsAndCiWarning) {
  Measurement m;
  for (int i = 0; i < 3; ++i) {
    WindowResult w;
    w.kind = "run";
    w.run = i;
    w.t0_s = i * 10;
    w.t1_s = i * 10 + 5;
    w.gpu_energy_j = 1000 + 100 * i;
    w.counts["tokens"] = 100;
    m.windows.push_back(w);
    RunInfo r;
    r.index = i;
    r.window = i;
    m.runs.push_back(r);
  }
  summarize_repeats(m, 0.05);
  ASSERT_FALSE(m.stats.empty());
  EXPECT_EQ(m.stats[0].what, "gpu_energy_j");
  EXPECT_DOUBLE_EQ(m.stats[0].summary.mean, 1100);
  bool per_token = false;
  for (const auto& s : m.stats) per_token |= s.what == "gpu_energy_per_token_j" && s.summary.mean == 11;
  EXPECT_TRUE(per_token);
  ASSERT_EQ(m.warnings.size(), 1u);  // CI ±24.8% > 5%
  EXPECT_NE(m.warnings[0].find("gpu_energy_j"), std::string::npos);
}

// Issue 35 item 9: the repeats bound the counter's staleness error (random from repeat to
// repeat): five repeats with a 1.4 J stdev give sqrt(6) × 1.4 × sqrt(4 / 0.7107) ≈ 8.1 J, not
// mean power × 100 ms (45 J at 450 W).
TEST(Repeats, CounterStalenessBoundFromTheRepeats) {
  EXPECT_TRUE(std::isinf(repeats_staleness_bound(1.0, 2)));
  EXPECT_NEAR(repeats_staleness_bound(1.4, 5), std::sqrt(6.0) * 1.4 * std::sqrt(4 / 0.7107), 1e-3);
  EXPECT_GT(repeats_staleness_bound(1.4, 30), 1.4 * std::sqrt(6.0));  // an upper bound of the stdev
  Measurement m;
  const double e[] = {675.0, 676.2, 673.9, 675.8, 674.4};
  for (int i = 0; i < 5; ++i) {
    WindowResult w;
    w.kind = "run";
    w.run = i;
    w.t0_s = i * 10;
    w.t1_s = i * 10 + 1.5;
    w.gpu_energy_j = e[i];
    GpuEnergy g;
    g.energy_j = e[i];
    g.method = "counter";
    g.uncertainty_j = 450 * 0.1;
    g.uncertainty_basis = "staleness";
    w.gpus.push_back(g);
    m.windows.push_back(w);
    RunInfo r;
    r.index = i;
    r.window = i;
    m.runs.push_back(r);
  }
  summarize_repeats(m, 0.05);
  const double sd = m.stats[0].summary.stdev;
  for (const WindowResult& w : m.windows) {
    EXPECT_EQ(w.gpus[0].uncertainty_basis, "repeats");
    EXPECT_NEAR(w.gpus[0].uncertainty_j, repeats_staleness_bound(sd, 5), 1e-9);
    EXPECT_LT(w.gpus[0].uncertainty_j, 10);
  }
}

namespace {
// 20 ms samples of a true power signal seen through a sensor that averages each 20 ms and
// then lags with a first-order filter (time constant tau): what the H100 buffer looks like.
GpuWindowData lagged_burst(double base, double peak, double t_on, double t_off, double tau) {
  GpuWindowData d;
  double y = base;
  const double dt = 0.0005;
  double acc = 0;
  int n = 0;
  for (int i = 0; i * dt <= 1.0; ++i) {
    const double t = i * dt;
    const double p = (t >= t_on && t < t_off) ? peak : base;
    y += (p - y) * dt / tau;
    acc += y;
    ++n;
    if (i % 40 == 39) {  // every 20 ms
      d.power.push_back({t + dt, acc / n});
      acc = 0;
      n = 0;
    }
  }
  return d;
}
}  // namespace

TEST(WindowEnergy, ShortIsolatedWindowIncludesTheSensorResponse) {
  GpuWindowData d = lagged_burst(135, 600, 0.503, 0.523, 0.015);
  d.isolated = true;
  const double truth = 600 * 0.020;
  const GpuEnergy e = window_energy(d, 0.503, 0.523, EnergyOptions{});
  EXPECT_EQ(e.method, "timeline(response)");
  ASSERT_TRUE(e.response_j && e.timeline_j);
  EXPECT_NEAR(*e.response_j, truth, 0.05 * truth);
  EXPECT_LT(*e.timeline_j, 0.8 * truth);  // the window alone misses the lagged part
  EXPECT_LE(std::abs(e.energy_j - truth), e.uncertainty_j + 1e-9);
  // Not isolated: no correction, and the note says so.
  d.isolated = false;
  const GpuEnergy n = window_energy(d, 0.503, 0.523, EnergyOptions{});
  EXPECT_EQ(n.method, "timeline");
  EXPECT_NE(n.note.find("not corrected"), std::string::npos);
}
