// The real NVML loader, sensors and sampler against the fake libnvidia-ml, on a fake clock: the
// fake NVML's model time and the run time base both come from the test's clock, and the sampler
// polls when the test advances it (SamplerConfig::manual), so no test sleeps or races a thread.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "helpers.hpp"
#include "jouleprof/sampler/monitor.hpp"
#include "jouleprof/sensors/sim_model.hpp"

using namespace jouleprof;

namespace {

// Steady and wall-clock time that move only when the test says so.
class FakeClock final : public ClockSource {
 public:
  int64_t steady_ns() const override { return steady_.load(); }
  int64_t realtime_ns() const override { return real_.load(); }
  void advance_ns(int64_t ns) {
    steady_ += ns;
    real_ += ns;
  }
  static int64_t realtime_of(void* self) { return static_cast<FakeClock*>(self)->realtime_ns(); }

 private:
  std::atomic<int64_t> steady_{1'000'000'000};
  std::atomic<int64_t> real_{1'700'000'000'000'000'000};  // November 2023, in ns
};

// A Monitor over the fake NVML on the test's FakeClock. run_for(s) advances the clock in 5 ms
// steps and lets the sampler poll what is due after each, as its thread would.
class FakeTime {
 public:
  FakeTime() {
    lib_ = dlopen(JOULEPROF_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);  // the same handle the loader gets
    EXPECT_NE(lib_, nullptr) << dlerror();
    if (lib_ != nullptr) set_clock_ = reinterpret_cast<SetClock>(dlsym(lib_, "jouleprof_fake_nvml_set_clock"));
    EXPECT_NE(set_clock_, nullptr);
    if (set_clock_ != nullptr) set_clock_(&FakeClock::realtime_of, &clock_);
  }
  ~FakeTime() {
    if (set_clock_ != nullptr) set_clock_(nullptr, nullptr);
    if (lib_ != nullptr) dlclose(lib_);
  }
  FakeTime(const FakeTime&) = delete;
  FakeTime& operator=(const FakeTime&) = delete;

  std::unique_ptr<Monitor> monitor(const std::string& scenario) {
    setenv("JOULEPROF_FAKE_NVML_SCENARIO", jp_test::write_file("mon.txt", scenario).c_str(), 1);
    MonitorOptions o;
    o.gpus.backend = "nvml";
    o.gpus.nvml_library = JOULEPROF_FAKE_NVML;
    o.sampler.read_cpu = false;
    o.sampler.manual = true;
    o.clock = &clock_;
    auto m = Monitor::create(o);
    EXPECT_TRUE(m) << (m ? "" : m.error().message);
    return m ? std::move(*m) : nullptr;
  }
  void run_for(Monitor& mon, double seconds) {
    constexpr int64_t kStepNs = 5'000'000;
    for (int64_t left = std::llround(seconds * 1e9); left > 0; left -= kStepNs) {
      clock_.advance_ns(std::min(left, kStepNs));
      mon.sampler().poll_due();
    }
  }

 private:
  using SetClock = void (*)(int64_t (*)(void*), void*);
  FakeClock clock_;
  void* lib_ = nullptr;
  SetClock set_clock_ = nullptr;
};

}  // namespace

TEST(FakeNvml, SteadyLoadCounterAndTimelineAgree) {
  FakeTime time;
  auto mon = time.monitor("idle_w 300\n");
  ASSERT_TRUE(mon);
  EXPECT_EQ(mon->gpus().backend, "nvml");
  EXPECT_EQ(mon->gpus().gpus[0]->info().driver_version, "580.159-fake");
  time.run_for(*mon, 0.2);
  Monitor::WindowId id;
  {
    auto w = mon->scope("steady");
    id = w.id();
    time.run_for(*mon, 1.5);
  }
  time.run_for(*mon, 0.15);
  const Measurement m = mon->finish();
  const GpuEnergy& e = m.windows[id].gpus[0];
  EXPECT_EQ(e.method, "counter");
  ASSERT_TRUE(e.counter_j && e.timeline_j);
  EXPECT_NEAR(m.windows[id].duration_s(), 1.5, 1e-9);  // the fake clock's time, exactly
  const double expect = 300 * m.windows[id].duration_s();
  EXPECT_NEAR(*e.counter_j, expect, 0.01 * expect);
  EXPECT_NEAR(*e.timeline_j, expect, 0.01 * expect);
  // The driver buffer is drained incrementally with ~20 ms spacing and no duplicates.
  const auto s = m.timelines[0]->series[static_cast<int>(Metric::power_sample_w)].all();
  ASSERT_GT(s.size(), 60u);
  for (std::size_t i = 1; i < s.size(); ++i) EXPECT_NEAR(s[i].t_s - s[i - 1].t_s, 0.02, 0.002);
  // Sample timestamps (realtime µs) land on the run time base near the monotonic clock.
  EXPECT_NEAR(s.back().t_s, m.duration_s, 0.1);
}

TEST(FakeNvml, SquareWaveIsResolvedBySamplesNotByTheOneSecondAverage) {
  FakeTime time;
  auto mon = time.monitor("idle_w 100\nat 0 square 0.05 0.05 700 100\n");
  ASSERT_TRUE(mon);
  time.run_for(*mon, 2.2);
  const Measurement m = mon->finish();
  auto range = [&](Metric k, double from) {
    double lo = 1e9, hi = -1e9;
    m.timelines[0]->series[static_cast<int>(k)].for_each([&](const Sample& x) {
      if (x.t_s < from) return;
      lo = std::min(lo, x.value);
      hi = std::max(hi, x.value);
    });
    return hi - lo;
  };
  EXPECT_GT(range(Metric::power_sample_w, 1.2), 500);   // on/off visible
  EXPECT_LT(range(Metric::power_average_w, 1.2), 60);   // the 1-s average is flat
}

TEST(FakeNvml, UnsupportedBufferFallsBackToThePowerField) {
  FakeTime time;
  auto mon = time.monitor("idle_w 200\nunsupported samples\n");
  ASSERT_TRUE(mon);
  EXPECT_FALSE(mon->gpus().gpus[0]->supports(Metric::power_sample_w));
  const auto id = mon->begin("w");
  time.run_for(*mon, 0.6);
  mon->end(id);
  time.run_for(*mon, 0.15);
  const Measurement m = mon->finish();
  EXPECT_EQ(m.windows[id].gpus[0].method, "timeline(instant)");
  EXPECT_NEAR(m.windows[id].gpus[0].energy_j, 200 * 0.6, 10);
  EXPECT_NE(std::find(m.gpu_state[0].unsupported.begin(), m.gpu_state[0].unsupported.end(), "power_sample_w"),
            m.gpu_state[0].unsupported.end());
}

TEST(FakeNvml, GpuLostMidRunIsRecordedNotFatal) {
  FakeTime time;
  auto mon = time.monitor("idle_w 150\nfail_after_s 0.6\n");
  ASSERT_TRUE(mon);
  const auto id = mon->begin("w");
  time.run_for(*mon, 1.2);
  mon->end(id);
  const Measurement m = mon->finish();
  ASSERT_TRUE(m.gpu_state[0].lost_at_s);
  EXPECT_GT(*m.gpu_state[0].lost_at_s, 0.5);
  EXPECT_LT(*m.gpu_state[0].lost_at_s, 0.75);  // found by the first poll after the loss
  EXPECT_GT(m.gpu_state[0].error_count, 0u);
  EXPECT_NE(m.gpu_state[0].errors[0].message.find("GPU is lost"), std::string::npos);
  EXPECT_FALSE(m.warnings.empty());
}

TEST(FakeNvml, NestedAndOverlappingWindows) {
  FakeTime time;
  auto mon = time.monitor("idle_w 100\n");
  ASSERT_TRUE(mon);
  const auto outer = mon->begin("outer");
  const auto a = mon->begin("a");
  time.run_for(*mon, 0.1);
  const auto b = mon->begin("b");  // overlaps a
  time.run_for(*mon, 0.1);
  mon->end(a);
  time.run_for(*mon, 0.1);
  mon->end(b);
  mon->end(outer);
  time.run_for(*mon, 0.15);
  auto live = mon->energy(a);
  ASSERT_TRUE(live);
  EXPECT_NEAR(live->gpu_energy_j, 100 * 0.2, 3);
  const Measurement m = mon->finish();
  EXPECT_EQ(m.windows[a].parent, static_cast<int>(outer));
  EXPECT_EQ(m.windows[b].parent, static_cast<int>(a));
  EXPECT_NEAR(m.windows[b].gpu_energy_j, 100 * 0.2, 3);
  EXPECT_NEAR(m.windows[outer].gpu_energy_j, 100 * 0.3, 3);
}

TEST(FakeNvml, SynchronizeHookRunsAtEveryEdge) {
  setenv("JOULEPROF_FAKE_NVML_SCENARIO", jp_test::write_file("sync.txt", "idle_w 80\n").c_str(), 1);
  MonitorOptions o;
  o.gpus.nvml_library = JOULEPROF_FAKE_NVML;
  o.sampler.read_cpu = false;
  int calls = 0;
  o.synchronize = [&] { ++calls; };
  auto mon = Monitor::create(o);
  ASSERT_TRUE(mon);
  { auto w = (*mon)->scope("x"); }
  EXPECT_EQ(calls, 2);
  (*mon)->finish();
}

TEST(FakeNvml, InitFailureIsAClearError) {
  setenv("JOULEPROF_FAKE_NVML_INIT_ERROR", "9", 1);
  MonitorOptions o;
  o.gpus.backend = "nvml";
  o.gpus.nvml_library = JOULEPROF_FAKE_NVML;
  auto mon = Monitor::create(o);
  unsetenv("JOULEPROF_FAKE_NVML_INIT_ERROR");
  ASSERT_FALSE(mon);
  EXPECT_EQ(mon.error().code, Errc::unavailable);
  EXPECT_NE(mon.error().message.find("Driver Not Loaded"), std::string::npos) << mon.error().message;
}

TEST(FakeNvml, ReplaysRecordedH100ReadingsAndMeasuresThemExactly) {
  const std::string fixture = std::string(JOULEPROF_TEST_FIXTURES) + "/h100-square50-replay.txt";
  const std::string text = jp_test::read_file(fixture);
  auto cfg = parse_sim_scenario(text);
  ASSERT_TRUE(cfg) << cfg.error().message;
  const SimGpuModel truth(*cfg);
  FakeTime time;
  auto mon = time.monitor(text);
  ASSERT_TRUE(mon);
  time.run_for(*mon, 0.3);
  const auto id = mon->begin("replay");
  time.run_for(*mon, 3.4);
  mon->end(id);
  time.run_for(*mon, 0.2);
  const Measurement m = mon->finish();
  const WindowResult& w = m.windows[id];
  // Model time 0 is nvmlInit, at the run time base's origin on the fake clock.
  const double expect = truth.schedule().integral(w.t0_s, w.t1_s);
  EXPECT_NEAR(w.gpus[0].energy_j, expect, 0.01 * expect);
  ASSERT_TRUE(w.gpus[0].timeline_j);
  EXPECT_NEAR(*w.gpus[0].timeline_j, expect, 0.01 * expect);
  double lo = 1e9, hi = 0;
  for (const Sample& s : m.timelines[0]->series[static_cast<int>(Metric::power_sample_w)].slice(w.t0_s + 0.5, w.t1_s - 0.5)) {
    lo = std::min(lo, s.value);
    hi = std::max(hi, s.value);
  }
  EXPECT_GT(hi - lo, 300);  // the recorded 50/50 ms load is still visible
}
