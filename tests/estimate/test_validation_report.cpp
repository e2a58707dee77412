// The validation table's summary: one MAPE line per split, held-out sets other than "test" included.
#include <gtest/gtest.h>

#include "jouleprof/estimate/calibrate.hpp"

using namespace jouleprof::estimate;

TEST(ValidationReport, OneMapeLinePerSplitInOrderOfAppearance) {
  auto row = [](const char* name, const char* split, double meas, double pred) {
    ValidationRow r;
    r.name = name;
    r.split = split;
    r.meas_latency_s = meas;
    r.meas_energy_j = meas;
    r.pred_latency_s = pred;
    r.pred_energy_j = pred;
    return r;
  };
  const std::vector<ValidationRow> before{row("a", "train", 1, 2), row("b", "test", 1, 3), row("c", "blind", 2, 1)};
  const std::vector<ValidationRow> after{row("a", "train", 1, 1.1), row("b", "test", 1, 0.8), row("c", "blind", 2, 2.5)};
  const std::string t = render_validation(before, after);
  const auto train = t.find("MAPE train (n=1): latency 100.0% uncalibrated -> 10.0% calibrated; energy 100.0% -> 10.0%");
  const auto test = t.find("MAPE test  (n=1): latency 200.0% uncalibrated -> 20.0% calibrated");
  const auto blind = t.find("MAPE blind (n=1): latency 50.0% uncalibrated -> 25.0% calibrated");
  ASSERT_NE(train, std::string::npos) << t;
  ASSERT_NE(test, std::string::npos) << t;
  ASSERT_NE(blind, std::string::npos) << t;
  EXPECT_LT(train, test);
  EXPECT_LT(test, blind);
  EXPECT_EQ(mape(after, "blind").n, 1u);
}
