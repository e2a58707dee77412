// Sampled mode's duty cycle in the injection library (duty_cycle.hpp), driven by a fake clock: the
// switches fall where the cycle says, the traced share of the time is the one asked for, and the
// switch log it writes is read back into the run's traced windows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "duty_cycle.hpp"
#include "jouleprof/trace/trace.hpp"

using namespace jouleprof;
namespace fs = std::filesystem;

TEST(InjectSampling, SettingsFromTheEnvironment) {
  auto c = inject::duty_cycle_from("10", "1000");
  EXPECT_EQ(c.on_ns, 100000000);
  EXPECT_EQ(c.period_ns, 1000000000);
  EXPECT_EQ(inject::duty_cycle_from("25", nullptr).on_ns, 250000000);  // default period 1 s
  for (const char* bad : {"", "0", "100", "-5", "ten", "10%"}) EXPECT_FALSE(inject::duty_cycle_from(bad, "1000").active()) << bad;
  EXPECT_FALSE(inject::duty_cycle_from("10", "0").active());
  EXPECT_FALSE(inject::duty_cycle_from(nullptr, nullptr).active());
}

// 20 periods of a 10% cycle from a start inside an off phase: every switch on a boundary of the
// cycle, tracing on for 10% of the time, and the log has each switch.
TEST(InjectSampling, TheDutyCycleIsHonoured) {
  const auto c = inject::duty_cycle_from("10", "1000");
  const int64_t start = 5'000'000'000'000LL + 400'000'000;  // 400 ms into a period: off
  int64_t now = start;
  struct Switch {
    int64_t t;
    bool on;
  };
  std::vector<Switch> switches;
  inject::DutyHooks h;
  h.now_ns = [&] { return now; };
  h.wait_until = [&](int64_t t) {
    if (t > start + 20'000'000'000LL) return false;
    now = t + 1000;  // woken a microsecond late
    return true;
  };
  h.set_tracing = [&](bool on) { switches.push_back({now, on}); };
  const bool left_on = inject::run_duty_cycle(c, true, h);  // initialize() left the kinds on
  ASSERT_GE(switches.size(), 40u);
  EXPECT_FALSE(switches.front().on);  // off at once: the start is in an off phase
  EXPECT_EQ(switches.front().t, start);
  int64_t on_ns = 0;
  for (std::size_t i = 1; i < switches.size(); ++i) {
    EXPECT_NE(switches[i].on, switches[i - 1].on);
    EXPECT_EQ((switches[i].t - 1000) % c.period_ns, switches[i].on ? 0 : c.on_ns) << i;
    if (!switches[i].on) on_ns += switches[i].t - switches[i - 1].t;
  }
  const int64_t span = switches.back().t - switches.front().t;
  EXPECT_NEAR(static_cast<double>(on_ns) / static_cast<double>(span), 0.10, 0.01);
  EXPECT_EQ(left_on, switches.back().on);
}

TEST(InjectSampling, TheSwitchLogBecomesTheRunsTracedWindows) {
  const std::string dir = (fs::temp_directory_path() / ("jp-sample-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    inject::SampleLog log;
    ASSERT_TRUE(log.open(dir, 77, inject::duty_cycle_from("10", "1000")));
    log.mark(true, 1'000'000'000);
    log.mark(false, 1'100'000'000);
    log.mark(true, 2'000'000'000);  // still on at the end: closes with the process's last record
  }
  std::ofstream(dir + "/sample-99.txt") << "not a log\n";  // no such process: skipped
  TraceData t;
  ProcessTrace p;
  p.pid = 77;
  p.clocks.push_back({0, 0, 0});  // CUPTI's clock is CLOCK_REALTIME
  t.processes.push_back(p);
  Activity a;
  a.start_ns = 2'010'000'000;
  a.end_ns = 2'050'000'000;
  t.activities.push_back(a);
  read_sample_logs(dir, t);
  EXPECT_DOUBLE_EQ(t.sampling.on_s, 0.1);
  EXPECT_DOUBLE_EQ(t.sampling.period_s, 1.0);
  align_trace(t, 500'000'000, {});
  ASSERT_EQ(t.sampling.windows_s.size(), 2u);
  EXPECT_NEAR(t.sampling.windows_s[0].first, 0.5, 1e-9);
  EXPECT_NEAR(t.sampling.windows_s[0].second, 0.6, 1e-9);
  EXPECT_NEAR(t.sampling.windows_s[1].first, 1.5, 1e-9);
  EXPECT_NEAR(t.sampling.windows_s[1].second, 1.55, 1e-9);
  fs::remove_all(dir);
}
