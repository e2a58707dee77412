#include <gtest/gtest.h>

#include "jouleprof/models/dataset.hpp"

namespace md = jouleprof::models;

namespace {
const char* kHeader = "application,sm_app_clock,fp_active,dram_active,power_usage,run_time\n";
}

TEST(ModelsDataset, ParsesRowsAndKnownActivityColumns) {
  auto d = md::parse_csv(std::string(kHeader) + "x,1000,0.5,0.2,100,2\nx,900,0.5,0.2,90,2.2\n", {});
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->rows.size(), 2u);
  EXPECT_EQ(d->activity, (std::vector<std::string>{"fp_active", "dram_active"}));
  EXPECT_DOUBLE_EQ(d->rows[1].energy_j(), 90 * 2.2);
  EXPECT_EQ(d->rows_of("x").front(), 1u);  // sorted by clock
}

TEST(ModelsDataset, MissingColumnsAreAllNamed) {
  auto d = md::parse_csv("application,clock,power\nx,1,2\n", {});
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("sm_app_clock"), std::string::npos);
  EXPECT_NE(d.error().message.find("power_usage"), std::string::npos);
  EXPECT_NE(d.error().message.find("run_time"), std::string::npos);
}

TEST(ModelsDataset, NamedActivityMustExist) {
  md::ColumnMap m;
  m.activity = {"fp_active", "TENSO"};
  auto d = md::parse_csv(std::string(kHeader) + "x,1000,0.5,0.2,100,2\n", m);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("TENSO"), std::string::npos);
}

TEST(ModelsDataset, NanInfNegativeAndEmptyAreErrorsWithLine) {
  for (const char* bad : {"x,1000,nan,0.2,100,2\n", "x,1000,0.5,inf,100,2\n", "x,1000,0.5,0.2,-5,2\n", "x,1000,0.5,0.2,100,\n",
                          "x,1000,-0.1,0.2,100,2\n", "x,0,0.5,0.2,100,2\n"}) {
    auto d = md::parse_csv(std::string(kHeader) + bad, {}, "f.csv");
    ASSERT_FALSE(d) << bad;
    EXPECT_NE(d.error().message.find("f.csv:2"), std::string::npos) << d.error().message;
  }
  EXPECT_FALSE(md::parse_csv("", {}));
  EXPECT_FALSE(md::parse_csv(kHeader, {}));
}

TEST(ModelsDataset, QuotedFieldsAndPhaseColumn) {
  md::ColumnMap m;
  m.phase = "phase";
  auto d = md::parse_csv("application,phase,sm_app_clock,power_usage,run_time\n\"llama, 1B\",decode,1000,300,1\n", m);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->rows[0].application, "llama, 1B/decode");
}

TEST(ModelsDataset, OutlierRowsAreFlaggedByNeighbours) {
  std::string csv = kHeader;
  for (int f = 500; f <= 1400; f += 50) {
    const double p = (f == 900) ? 40.0 : 50.0 + f * 0.1;  // one run with far lower power
    csv += "x," + std::to_string(f) + ",0.5,0.2," + std::to_string(p) + ",2\n";
  }
  auto d = md::parse_csv(csv, {});
  ASSERT_TRUE(d);
  EXPECT_EQ(md::flag_outliers(*d, {}), 1u);
  for (const auto& r : d->rows) EXPECT_EQ(r.outlier, r.clock_mhz == 900) << r.clock_mhz;
  md::OutlierRule off;
  off.enabled = false;
  EXPECT_EQ(md::flag_outliers(*d, off), 0u);
}

TEST(ModelsDataset, RunTimeOutliersOnlyWhenAsked) {
  // One run 20% shorter than its neighbouring clocks (a logging glitch): kept by the default rule
  // (run time not checked), an outlier with --outlier-time-tol 0.15.
  std::string csv = kHeader;
  for (int f = 500; f <= 1400; f += 50)
    csv += "x," + std::to_string(f) + ",0.5,0.2," + std::to_string(50.0 + f * 0.1) + "," + (f == 700 ? "1.6" : "2") + "\n";
  auto d = md::parse_csv(csv, {});
  ASSERT_TRUE(d);
  EXPECT_EQ(md::flag_outliers(*d, {}), 0u);
  md::OutlierRule with_time;
  with_time.time_tol = 0.15;
  EXPECT_EQ(md::flag_outliers(*d, with_time), 1u);
  for (const auto& r : d->rows) {
    EXPECT_EQ(r.outlier, r.clock_mhz == 700) << r.clock_mhz;
    if (r.outlier) {
      EXPECT_NE(r.outlier_reason.find("run time"), std::string::npos);
    }
  }
}
