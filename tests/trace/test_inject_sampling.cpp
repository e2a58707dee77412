// Sampled mode's duty cycle in the injection library (duty_cycle.hpp), driven by a fake clock: the
// switches fall where the cycle says, the traced share of the time is the one asked for, and the
// switch log it writes is read back into the run's traced windows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
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

// A switch off stops the anchors before it disables anything, logs the switch before the flush and
// leaves NVTX ranges as the only thing recorded; a switch on logs its time before enabling and
// anchors once after. Each line carries how long the calls took; the reader skips the comments.
TEST(InjectSampling, ASwitchOffLeavesOnlyTheRanges) {
  const std::string dir = (fs::temp_directory_path() / ("jp-switch-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<std::string> calls;
  std::atomic<bool> anchoring{true};
  uint64_t cupti = 1'000'000'000;
  int64_t mono = 0;
  inject::SwitchHooks h;
  h.cupti_now = [&] {
    calls.push_back("now");
    return cupti += 1000;
  };
  h.mono_ns = [&] { return mono += 500; };
  h.set_kinds = [&](bool on) { calls.push_back(std::string("kinds ") + (anchoring ? "anchoring " : "") + (on ? "on" : "off")); };
  h.set_api_records = [&](bool on) { calls.push_back(std::string("api records ") + (on ? "on" : "off")); };
  h.anchor = [&] { calls.push_back(anchoring ? "anchor" : "anchor while off"); };
  h.flush = [&] { calls.push_back("flush"); };
  {
    inject::SampleLog log;
    ASSERT_TRUE(log.open(dir, 78, inject::duty_cycle_from("10", "1000")));
    log.mark(true, 999'000'000);
    inject::switch_tracing(false, h, log, anchoring);
    EXPECT_FALSE(anchoring);
    inject::switch_tracing(true, h, log, anchoring);
    EXPECT_TRUE(anchoring);
    log.mark(false, 1'100'000'000);
  }
  EXPECT_EQ(calls, (std::vector<std::string>{"api records off", "kinds off", "now", "flush", "now", "kinds on",
                                             "api records on", "anchor"}));
  std::ifstream in(dir + "/sample-78.txt");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("off 1000001000 took_ns="), std::string::npos) << text;
  EXPECT_NE(text.find("# flush took_ns=500"), std::string::npos) << text;
  EXPECT_NE(text.find("on 1000002000 took_ns="), std::string::npos) << text;
  TraceData t;
  ProcessTrace p;
  p.pid = 78;
  p.clocks.push_back({0, 0, 0});
  t.processes.push_back(p);
  read_sample_logs(dir, t);
  align_trace(t, 0, {});
  ASSERT_EQ(t.sampling.windows_s.size(), 2u);  // the comment lines did not end the log
  EXPECT_NEAR(t.sampling.windows_s[0].first, 0.999, 1e-9);
  EXPECT_NEAR(t.sampling.windows_s[0].second, 1.000001, 1e-9);
  fs::remove_all(dir);
}

TEST(InjectSampling, KernelsOffOnlyForZero) {
  EXPECT_TRUE(inject::kernels_off("0"));
  for (const char* v : {"", "1", "no", "00"}) EXPECT_FALSE(inject::kernels_off(v)) << v;
  EXPECT_FALSE(inject::kernels_off(nullptr));
}
