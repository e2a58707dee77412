// The checked-number layer (core/checked.hpp) and the progress line (core/progress.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "jouleprof/core/checked.hpp"
#include "jouleprof/core/progress.hpp"

namespace jouleprof {
namespace {

TEST(Checked, ParsesWholeFiniteNumbersOnly) {
  EXPECT_DOUBLE_EQ(*parse_checked_double("--x", "1.5"), 1.5);
  EXPECT_DOUBLE_EQ(*parse_checked_double("--x", "+2e3"), 2000.0);
  for (const char* bad : {"", "nan", "NaN", "inf", "-inf", "infinity", "1e400", "1.5x", " 1", "0x10", "--1", "1,5"}) {
    auto r = parse_checked_double("--x", bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, Errc::invalid_argument);
      EXPECT_NE(r.error().message.find("--x"), std::string::npos);
    }
  }
}

TEST(Checked, RangeErrorsInWordsWithoutHugeDigits) {
  auto r = parse_checked_int("--runs", "0", {.min = 1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "--runs must be ≥ 1, got 0");
  auto d = parse_checked_double("--period-ms", "5", {.min = 10, .max = 2000});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().message, "--period-ms must be between 10 and 2000, got 5");
  auto p = parse_checked_double("--sim-power", "0", {.min = 0, .min_exclusive = true});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message, "--sim-power must be > 0, got 0");
  auto big = parse_checked_double("--x", "-1e300", {.min = 0});
  ASSERT_FALSE(big.ok());
  EXPECT_LT(big.error().message.size(), 60u) << big.error().message;
  EXPECT_EQ(format_bound(std::numeric_limits<double>::max()), "1.79769e+308");
}

TEST(Checked, IntegersCheckedIn64Bits) {
  EXPECT_EQ(*parse_checked_int("--seed", "9223372036854775807"), std::numeric_limits<int64_t>::max());
  auto over = parse_checked_int("--batch", "9223372036854775808", {.min = 1, .max = 4096});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().message, "--batch must be between 1 and 4096, got '9223372036854775808'");
  auto neg = parse_checked_int("--seed", "-1", {.min = 0});
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.error().message, "--seed must be ≥ 0, got -1");
  for (const char* bad : {"1.5", "1e3", "12abc", "", "+", "-"}) EXPECT_FALSE(parse_checked_int("--n", bad).ok()) << bad;
}

TEST(Checked, SizeArithmeticSaysWhenItOverflows) {
  EXPECT_EQ(checked_mul(1ULL << 32, 1ULL << 31), 1ULL << 63);
  EXPECT_FALSE(checked_mul(1ULL << 32, 1ULL << 32).has_value());
  EXPECT_FALSE(checked_add(~0ULL, 1).has_value());
  EXPECT_EQ(checked_product({2, 3, 7}), 42u);
  EXPECT_FALSE(checked_product({9223372036854775807LL, 2, 2}).has_value());
  EXPECT_FALSE(checked_product({4, -1}).has_value());
  EXPECT_EQ(format_bytes(16.8e9), "16.8 GB");
  EXPECT_EQ(format_bytes(512), "512 B");
  auto fit = check_fits("--batch 2147483647", 1.68e13, 79.6e9, "the GPU");
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.error().message, "--batch 2147483647 needs 16.8 TB of memory, the GPU has 79.6 GB");
  EXPECT_TRUE(check_fits("x", 1e9, 2e9, "the GPU").ok());
}

TEST(Progress, LineShowsCountElapsedEtaAndLastFigure) {
  EXPECT_EQ(format_progress("configuration", 3, 6, 30, "0.512 J/token"),
            "configuration 3/6 · 30 s elapsed · ETA 30 s · last: 0.512 J/token");
  EXPECT_EQ(format_progress("run", 0, 5, 0.5, ""), "run 0/5 · 0.5 s elapsed");
  EXPECT_EQ(format_progress("run", 5, 5, 125, ""), "run 5/5 · 2 min 05 s elapsed");
  EXPECT_EQ(format_duration(3720), "1 h 02 min");
}

TEST(Progress, WritesOnlyWhenEnabled) {
  double now = 0;
  std::vector<std::string> lines;
  auto clock = [&] { return now; };
  auto sink = [&](const std::string& l, bool) { lines.push_back(l); };
  {
    Progress off("run", 2, false, clock, sink);
    off.step("x");
  }
  EXPECT_TRUE(lines.empty());
  Progress on("run", 2, true, clock, sink);
  now = 10;
  on.step("1.0 J");
  now = 12;
  on.note("GPU 43 °C");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "run 1/2 · 10 s elapsed · ETA 10 s · last: 1.0 J");
  EXPECT_EQ(lines[1], "run 1/2 · 12 s elapsed · ETA 12 s · last: 1.0 J · GPU 43 °C");
}

}  // namespace
}  // namespace jouleprof
