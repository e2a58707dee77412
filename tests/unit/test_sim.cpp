// The simulated GPU model and its scenario files.
#include <gtest/gtest.h>

#include "jouleprof/sensors/sim_model.hpp"
#ifdef JOULEPROF_HAVE_RAPIDCHECK
#include <rapidcheck/gtest.h>
#endif

using namespace jouleprof;

TEST(PowerSchedule, SquareWaveIntegralIsExact) {
  PowerSchedule p(75);
  p.set_square(1.0, 0.05, 0.05, 700, 100);
  p.set_constant(3.0, 75);
  // 1 s at 75 W + 2 s at (700+100)/2 + 1 s at 75 W
  EXPECT_NEAR(p.integral(0, 4), 75 + 2 * 400 + 75, 1e-9);
  EXPECT_NEAR(p.integral(1.0, 1.05), 700 * 0.05, 1e-9);
  EXPECT_NEAR(p.integral(1.03, 1.07), 700 * 0.02 + 100 * 0.02, 1e-9);
  EXPECT_EQ(p.at(1.01), 700);
  EXPECT_EQ(p.at(1.06), 100);
  EXPECT_EQ(p.at(3.5), 75);
}

TEST(SimGpuModel, SensorsBehaveLikeTheH100) {
  SimConfig c;
  c.initial.high_w = 100;
  SimGpuModel m(c);
  m.schedule().set_constant(1.0, 600);
  // Samples: 20 ms grid, each the mean over the 20 ms before its timestamp.
  const auto s = m.samples(0.95, 1.05);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_NEAR(s[0].t_s, 0.96, 1e-9);
  EXPECT_NEAR(s[1].power_w, 100, 1e-9);   // t=0.98
  EXPECT_NEAR(s[2].power_w, 100, 1e-9);   // t=1.00
  EXPECT_NEAR(s[3].power_w, 600, 1e-9);   // t=1.02
  // The buffer holds at most buffer_samples.
  EXPECT_EQ(m.samples(-100, 10).size(), c.buffer_samples);
  // The counter and the 1-s average update every 100 ms.
  EXPECT_EQ(m.energy_mj(1.05), m.energy_mj(1.0));
  EXPECT_EQ(m.energy_mj(1.1) - m.energy_mj(1.0), 60000u);  // 0.1 s × 600 W
  EXPECT_NEAR(m.power_average_w(1.55), 0.5 * 100 + 0.5 * 600, 1e-6);
  EXPECT_NEAR(m.power_instant_w(1.55), 600, 1e-6);
  EXPECT_FALSE(m.failed(1e6));
}

// A load of start_load (the built-in workload, a command under --device sim) is at its clock and
// busy from its first instant, and idle at 345 MHz the instant it stops: the clock used to wait
// for the 1-s average power to rise, so a poll early in a short run read the idle clock.
TEST(SimGpuModel, ClockAndUtilizationFollowAStartedLoadAtOnce) {
  SimConfig c;
  SimGpuModel m(c);
  SimControl lock;
  lock.sm_clock_lock_mhz = 1980;
  lock.power_limit_w = 700;
  m.set_control(lock);
  EXPECT_EQ(m.sm_clock_mhz(0.5), 345);  // idle before any load
  EXPECT_EQ(m.gpu_util_pct(0.5), 0);
  const SimOperatingPoint op = m.start_load(1.0, 450, 0.5);
  EXPECT_EQ(op.clock_mhz, 1980);
  EXPECT_EQ(m.sm_clock_mhz(1.01), 1980);  // the 1-s average is still ~75 W here
  EXPECT_EQ(m.gpu_util_pct(1.01), 100);
  m.stop_load(1.3);
  EXPECT_EQ(m.sm_clock_mhz(1.31), 345);
  EXPECT_EQ(m.gpu_util_pct(1.31), 0);
}

TEST(Scenario, ParsesEveryKey) {
  auto r = parse_sim_scenario(
      "# comment\n gpus 2\nname Test GPU 1\nidle_w 60 # idle\ntdp_w 400\nat 1 square 0.05 0.05 400 60\n"
      "at 2 constant 60\nfail_after_s 9\nunsupported samples energy\nmig 1\nbuffer_samples 10\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->gpus, 2);
  EXPECT_EQ(r->name, "Test GPU 1");
  EXPECT_EQ(r->initial.high_w, 60);
  EXPECT_EQ(r->schedule.size(), 2u);
  EXPECT_TRUE(r->schedule[0].square);
  EXPECT_EQ(r->unsupported.size(), 2u);
  EXPECT_TRUE(r->mig_enabled);
  EXPECT_EQ(r->fail_after_s, 9);
}

TEST(Scenario, ErrorsNameTheLine) {
  auto r = parse_sim_scenario("gpus 1\n\nat 1 triangle 3\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("line 3"), std::string::npos) << r.error().message;
  EXPECT_FALSE(parse_sim_scenario("gpus 0\n"));
  EXPECT_FALSE(parse_sim_scenario("idle_w -5\n"));
  EXPECT_FALSE(parse_sim_scenario("gpus 2 3\n"));
  EXPECT_FALSE(parse_sim_scenario("at 2 constant 1\nat 1 constant 2\n"));
  EXPECT_FALSE(parse_sim_scenario("bogus 1\n"));
  EXPECT_FALSE(parse_sim_scenario("tdp_w nan\n"));
}

#ifdef JOULEPROF_HAVE_RAPIDCHECK
RC_GTEST_PROP(ScenarioProperty, NeverCrashesAndErrorsNameALine, (const std::string& text)) {
  auto r = parse_sim_scenario(text);
  if (!r) RC_ASSERT(r.error().message.find("line ") != std::string::npos);
}

RC_GTEST_PROP(ScenarioProperty, GeneratedScheduleIntegratesToSegmentSum, ()) {
  const auto watts = *rc::gen::container<std::vector<int>>(*rc::gen::inRange(1, 20), rc::gen::inRange(0, 1000));
  std::string text = "idle_w 50\n";
  double expect = 50.0 * 1.0;  // [0,1) idle
  for (std::size_t i = 0; i < watts.size(); ++i) {
    text += "at " + std::to_string(1 + i) + " constant " + std::to_string(watts[i]) + "\n";
    expect += watts[i];
  }
  auto r = parse_sim_scenario(text);
  RC_ASSERT(r.ok());
  SimGpuModel m(*r);
  RC_ASSERT(std::abs(m.schedule().integral(0, 1.0 + static_cast<double>(watts.size())) - expect) < 1e-6);
}
#endif
