// Core math: integration, counters, series storage, statistics, time base; run identifiers.
#include <gtest/gtest.h>

#include <cmath>

#include "jouleprof/core/integrate.hpp"
#include "jouleprof/core/series.hpp"
#include "jouleprof/core/stats.hpp"
#include "jouleprof/core/timebase.hpp"
#include "jouleprof/core/uuid.hpp"

#include <set>

using namespace jouleprof;

TEST(Integrate, ConstantPowerIsPowerTimesTime) {
  std::vector<Sample> s;
  for (int i = 0; i <= 100; ++i) s.push_back({i * 0.02, 300.0});
  const Integral in = integrate_trapezoid(s, 0.13, 1.57);
  EXPECT_NEAR(in.energy_j, 300.0 * 1.44, 1e-9);
  EXPECT_TRUE(in.covered);
  EXPECT_NEAR(in.edge_uncertainty_j, 0.0, 1e-12);
  EXPECT_NEAR(in.max_gap_s, 0.02, 1e-12);
}

TEST(Integrate, LinearRampIsExactAndEdgesInterpolate) {
  std::vector<Sample> s = {{0, 0}, {1, 100}, {2, 200}};
  // ∫ 100 t dt from 0.5 to 1.5 = 50 (1.5² - 0.5²) = 100
  EXPECT_NEAR(integrate_trapezoid(s, 0.5, 1.5).energy_j, 100.0, 1e-9);
  EXPECT_EQ(integrate_trapezoid(s, 0.5, 1.5).samples_inside, 1u);
}

TEST(Integrate, WindowInsideOneIntervalHasBoundedUncertainty) {
  std::vector<Sample> s = {{0, 100}, {0.02, 700}};
  const Integral in = integrate_trapezoid(s, 0.005, 0.015);
  EXPECT_NEAR(in.energy_j, 0.01 * 400, 1e-9);      // the interpolated mean
  EXPECT_NEAR(in.edge_uncertainty_j, 0.01 * 600, 1e-9);  // duration × jump
  EXPECT_GT(in.energy_j, 0);
}

TEST(Integrate, OutsideSamplesIsNotCovered) {
  std::vector<Sample> s = {{1, 50}, {2, 50}};
  const Integral in = integrate_trapezoid(s, 0, 3);
  EXPECT_FALSE(in.covered);
  EXPECT_NEAR(in.energy_j, 150, 1e-9);  // held values
  EXPECT_EQ(integrate_trapezoid({}, 0, 1).energy_j, 0);
}

TEST(Counter, DeltaHandlesWrapAndReset) {
  EXPECT_EQ(counter_delta(10, 25, 0), 15u);
  EXPECT_EQ(counter_delta(90, 5, 100), 15u);      // wrapped at 100
  EXPECT_FALSE(counter_delta(90, 5, 0).has_value());  // a non-wrapping counter went back: reset
}

TEST(Series, SliceIncludesNeighboursAndRejectsOutOfOrder) {
  Series s;
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(s.append(i, i * 10));
  EXPECT_FALSE(s.append(5, 0));
  const auto v = s.slice(2.5, 4.5);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v.front().t_s, 2);
  EXPECT_EQ(v.back().t_s, 5);
  EXPECT_EQ(s.size(), 10u);
}

TEST(Series, SpillsToDiskAndReadsBackIdentically) {
  Series s(2 * Series::kChunk);  // the smallest budget
  const std::size_t n = 7 * Series::kChunk + 123;
  for (std::size_t i = 0; i < n; ++i) s.append(static_cast<double>(i) * 0.02, std::sin(static_cast<double>(i)));
  EXPECT_GT(s.spilled_samples(), 0u);
  EXPECT_EQ(s.size(), n);
  const auto all = s.all();
  ASSERT_EQ(all.size(), n);
  for (std::size_t i = 0; i < n; i += 997) EXPECT_DOUBLE_EQ(all[i].value, std::sin(static_cast<double>(i)));
  const auto mid = s.slice(100.01, 101.01);  // inside a spilled chunk
  ASSERT_FALSE(mid.empty());
  EXPECT_LT(mid.front().t_s, 100.01);
  EXPECT_GT(mid.back().t_s, 101.01);
  EXPECT_EQ(mid.size(), 52u);
  EXPECT_DOUBLE_EQ(s.front().t_s, 0.0);
}

TEST(Stats, KnownValues) {
  const Summary s = summarize({1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_NEAR(s.stdev, std::sqrt(2.5), 1e-12);
  EXPECT_NEAR(s.ci95_half_width, 2.776 * std::sqrt(2.5) / std::sqrt(5.0), 1e-9);
  EXPECT_DOUBLE_EQ(summarize({4, 1}).median, 2.5);
  EXPECT_EQ(summarize({7}).ci95_half_width, 0);
  EXPECT_EQ(summarize({}).n, 0u);
  EXPECT_NEAR(student_t95(1000), 1.96, 1e-9);
}

namespace {
class SteppingClock : public ClockSource {
 public:
  int64_t steady = 1'000'000'000;
  int64_t offset = 1'700'000'000'000'000'000;
  int64_t steady_ns() const override { return steady; }
  int64_t realtime_ns() const override { return steady + offset; }
};
}  // namespace

TEST(TimeBase, ConvertsRealtimeAndFollowsAStep) {
  SteppingClock c;
  TimeBase tb(c);
  EXPECT_DOUBLE_EQ(tb.now_s(), 0.0);
  c.steady += 2'000'000'000;
  EXPECT_NEAR(tb.now_s(), 2.0, 1e-12);
  // A realtime stamp taken "now" maps to now on the run time base.
  EXPECT_NEAR(tb.from_realtime_ns(c.realtime_ns()), 2.0, 1e-9);
  EXPECT_NEAR(tb.from_realtime_us(static_cast<uint64_t>((c.realtime_ns() - 5'000'000) / 1000)), 1.995, 1e-6);
  // NTP steps the wall clock by +0.5 s: after recalibration, new stamps still map correctly.
  c.offset += 500'000'000;
  tb.recalibrate();
  EXPECT_NEAR(tb.from_realtime_ns(c.realtime_ns()), 2.0, 1e-9);
  EXPECT_EQ(tb.max_offset_change_ns(), 500'000'000);
  EXPECT_EQ(tb.calibrations().size(), 2u);
  EXPECT_EQ(tb.to_realtime_ns(2.0), c.realtime_ns());
}

TEST(RunUuid, RandomOnesAreWellFormedAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string u = random_uuid();
    ASSERT_TRUE(is_uuid(u)) << u;
    EXPECT_EQ(u[14], '4') << u;                                         // version 4
    EXPECT_NE(std::string("89ab").find(u[19]), std::string::npos) << u;  // RFC 9562 variant
    seen.insert(u);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(RunUuid, DerivedOnesDependOnlyOnTheirInputs) {
  const std::string parent = "0f1e2d3c-4b5a-4968-8776-655443322110";
  const std::string a = derived_uuid(parent, "configuration 0");
  EXPECT_TRUE(is_uuid(a)) << a;
  EXPECT_EQ(a[14], '8') << a;  // version 8: derived, not random
  EXPECT_EQ(derived_uuid(parent, "configuration 0"), a);
  EXPECT_NE(derived_uuid(parent, "configuration 1"), a);
  EXPECT_NE(derived_uuid("0f1e2d3c-4b5a-4968-8776-655443322111", "configuration 0"), a);
  EXPECT_NE(derived_uuid("ab", "c"), derived_uuid("a", "bc"));
}

TEST(RunUuid, OnlyTheCanonicalFormIsOne) {
  EXPECT_TRUE(is_uuid("0f1e2d3c-4b5a-4968-8776-655443322110"));
  EXPECT_FALSE(is_uuid("0F1E2D3C-4B5A-4968-8776-655443322110"));  // jouleprof writes lowercase
  EXPECT_FALSE(is_uuid("0f1e2d3c4b5a49688776655443322110"));
  EXPECT_FALSE(is_uuid("0f1e2d3c-4b5a-4968-8776-65544332211g"));
  EXPECT_FALSE(is_uuid(""));
}
