// Pausing from inside the program (jouleprof_trace_pause/resume, duty_cycle.hpp RecordingControl),
// driven by fake CUPTI switch hooks and a fake clock: a pause switches the kernel records, the
// anchors and the NVTX handlers off, a resume brings back what was on, a pause overrides the
// sampled mode's duty cycle, and the pause spans written to the switch log come back as the run's
// paused time, outside its recorded windows.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "duty_cycle.hpp"
#include "jouleprof/trace/pause.hpp"
#include "jouleprof/trace/trace.hpp"

using namespace jouleprof;
namespace fs = std::filesystem;

namespace {

// The fake CUPTI side of a switch: the kinds' state, the calls in order, CUPTI's clock.
struct FakeCupti {
  bool kinds = true, api_records = true;
  int anchors = 0, flushes = 0;
  uint64_t clock = 1'000'000'000;
  std::vector<std::string> calls;
  inject::SwitchHooks hooks() {
    inject::SwitchHooks h;
    h.cupti_now = [this] { return clock; };
    h.mono_ns = [] { return int64_t{0}; };
    h.set_kinds = [this](bool on) {
      kinds = on;
      calls.push_back(on ? "kinds on" : "kinds off");
    };
    h.set_api_records = [this](bool on) { api_records = on; };
    h.anchor = [this] { ++anchors; };
    h.flush = [this] { ++flushes; };
    return h;
  }
};

std::string temp_dir(const std::string& name) {
  const std::string dir = (fs::temp_directory_path() / (name + "-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// One process (pid), CUPTI's clock CLOCK_REALTIME, with a kernel ending at `last_ns`.
TraceData one_process(int64_t pid, int64_t last_ns) {
  TraceData t;
  ProcessTrace p;
  p.pid = pid;
  p.clocks.push_back({0, 0, 0});
  t.processes.push_back(p);
  Activity a;
  a.start_ns = last_ns - 1000;
  a.end_ns = last_ns;
  t.activities.push_back(a);
  return t;
}

}  // namespace

// A fully traced process: its first pause opens the switch log (no duty cycle), switches the
// records off (anchors first) and stops the NVTX handlers; resume switches them on again.
TEST(InjectPause, PauseStopsRecordsAndRangesAndResumeBringsThemBack) {
  const std::string dir = temp_dir("jp-pause");
  FakeCupti cupti;
  std::atomic<bool> anchoring{true}, nvtx_on{true};
  inject::SampleLog log;
  inject::RecordingControl control;
  control.start({}, &log, dir, 81, 500'000'000);
  EXPECT_FALSE(fs::exists(dir + "/sample-81.txt"));  // nothing until the first pause
  EXPECT_FALSE(control.resume(cupti.hooks(), anchoring, nvtx_on));  // not paused: nothing done
  EXPECT_TRUE(cupti.calls.empty());

  cupti.clock = 1'000'000'000;
  ASSERT_TRUE(control.pause(cupti.hooks(), anchoring, nvtx_on));
  EXPECT_FALSE(cupti.kinds);
  EXPECT_FALSE(cupti.api_records);
  EXPECT_FALSE(anchoring);
  EXPECT_FALSE(nvtx_on);
  EXPECT_TRUE(control.paused());
  EXPECT_FALSE(control.recording_kernels());
  EXPECT_EQ(cupti.flushes, 1);  // the recorded window's records written before the pause
  EXPECT_FALSE(control.pause(cupti.hooks(), anchoring, nvtx_on));  // twice: nothing more
  EXPECT_EQ(cupti.calls.size(), 1u);

  cupti.clock = 3'000'000'000;
  ASSERT_TRUE(control.resume(cupti.hooks(), anchoring, nvtx_on));
  EXPECT_TRUE(cupti.kinds);
  EXPECT_TRUE(cupti.api_records);
  EXPECT_TRUE(anchoring);
  EXPECT_TRUE(nvtx_on);
  EXPECT_EQ(cupti.anchors, 1);  // the resumed window starts with an anchor
  EXPECT_EQ(cupti.calls, (std::vector<std::string>{"kinds off", "kinds on"}));

  const std::string text = read_all(dir + "/sample-81.txt");
  EXPECT_EQ(text.rfind("jouleprof-sample 1 on_ns=0 period_ns=0\non 500000000\npause 1000000000\noff 1000000000", 0), 0u) << text;
  EXPECT_NE(text.find("resume 3000000000"), std::string::npos) << text;

  // Read back: recorded whenever not paused (from before CUDA started to after the last
  // record), paused 1-3 s.
  TraceData t = one_process(81, 4'000'000'000);
  read_sample_logs(dir, t);
  EXPECT_FALSE(t.sampling.duty_cycle());
  align_trace(t, 0, {});
  ASSERT_TRUE(t.sampling.active());
  ASSERT_EQ(t.sampling.windows_s.size(), 2u);
  EXPECT_LT(t.sampling.windows_s[0].first, -1e6);
  EXPECT_NEAR(t.sampling.windows_s[0].second, 1.0, 1e-9);
  EXPECT_NEAR(t.sampling.windows_s[1].first, 3.0, 1e-9);
  EXPECT_GT(t.sampling.windows_s[1].second, 1e6);
  ASSERT_EQ(t.sampling.pauses_s.size(), 1u);
  EXPECT_NEAR(t.sampling.pauses_s[0].first, 1.0, 1e-9);
  EXPECT_NEAR(t.sampling.pauses_s[0].second, 3.0, 1e-9);
  fs::remove_all(dir);
}

// Sampled mode: while paused the duty cycle's switches change nothing; resume restores the phase
// the cycle is in (off in an off phase, on in a window).
TEST(InjectPause, PauseOverridesTheDutyCycleUntilResume) {
  const std::string dir = temp_dir("jp-pause-duty");
  FakeCupti cupti;
  std::atomic<bool> anchoring{true}, nvtx_on{true};
  const auto cycle = inject::duty_cycle_from("10", "1000");
  inject::SampleLog log;
  ASSERT_TRUE(log.open(dir, 82, cycle));
  log.mark(true, 0);
  inject::RecordingControl control;
  control.start(cycle, &log, dir, 82, 0);
  cupti.clock = 50'000'000;
  ASSERT_TRUE(control.pause(cupti.hooks(), anchoring, nvtx_on));  // inside a window: off
  EXPECT_FALSE(cupti.kinds);
  control.duty(false, cupti.hooks(), anchoring);  // the cycle's off phase: nothing to do
  control.duty(true, cupti.hooks(), anchoring);   // its next window: still paused
  EXPECT_FALSE(cupti.kinds);
  control.duty(false, cupti.hooks(), anchoring);
  cupti.clock = 2'500'000'000;
  ASSERT_TRUE(control.resume(cupti.hooks(), anchoring, nvtx_on));  // in an off phase: stays off
  EXPECT_FALSE(cupti.kinds);
  EXPECT_TRUE(nvtx_on);  // the NVTX ranges come back (the sampled mode keeps them)
  EXPECT_FALSE(anchoring);
  control.duty(true, cupti.hooks(), anchoring);  // the next window
  EXPECT_TRUE(cupti.kinds);
  EXPECT_TRUE(anchoring);
  EXPECT_EQ(cupti.calls, (std::vector<std::string>{"kinds off", "kinds on"}));

  // Paused in a window, resumed in an off phase: the window ends at the pause.
  cupti.clock = 3'050'000'000;
  ASSERT_TRUE(control.pause(cupti.hooks(), anchoring, nvtx_on));
  cupti.clock = 3'060'000'000;
  control.duty(false, cupti.hooks(), anchoring);
  control.duty(true, cupti.hooks(), anchoring);  // 4.0 s: a window, but paused
  cupti.clock = 4'020'000'000;
  ASSERT_TRUE(control.resume(cupti.hooks(), anchoring, nvtx_on));  // inside it: on at once
  EXPECT_TRUE(cupti.kinds);
  TraceData t = one_process(82, 4'100'000'000);
  read_sample_logs(dir, t);
  align_trace(t, 0, {});
  EXPECT_TRUE(t.sampling.duty_cycle());
  ASSERT_EQ(t.sampling.pauses_s.size(), 2u);
  EXPECT_NEAR(t.sampling.pauses_s[0].second, 2.5, 1e-9);
  ASSERT_EQ(t.sampling.windows_s.size(), 3u);
  EXPECT_NEAR(t.sampling.windows_s[0].second, 0.05, 1e-9);  // ended by the pause
  EXPECT_NEAR(t.sampling.windows_s[2].first, 4.02, 1e-9);   // from the resume
  fs::remove_all(dir);
}

// Calls from several threads while the timer thread switches: every switch changes the state (no
// double off or on), and the state at the end is the one the last call asked for.
TEST(InjectPause, PauseAndResumeFromManyThreads) {
  const std::string dir = temp_dir("jp-pause-threads");
  FakeCupti cupti;
  std::atomic<bool> anchoring{true}, nvtx_on{true};
  inject::SampleLog log;
  inject::RecordingControl control;
  control.start({}, &log, dir, 83, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 500; ++k) {
        // The hooks' own state is guarded by the control's lock (they run inside it).
        if ((k + i) % 2 == 0) {
          control.pause(cupti.hooks(), anchoring, nvtx_on);
        } else {
          control.resume(cupti.hooks(), anchoring, nvtx_on);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (std::size_t k = 1; k < cupti.calls.size(); ++k) EXPECT_NE(cupti.calls[k], cupti.calls[k - 1]) << k;
  control.resume(cupti.hooks(), anchoring, nvtx_on);
  EXPECT_TRUE(cupti.kinds);
  EXPECT_TRUE(nvtx_on);
  EXPECT_FALSE(control.paused());
  fs::remove_all(dir);
}

// A process that ended paused (or whose log was cut at a pause) was not recorded after the pause;
// an unknown word ends the log.
TEST(InjectPause, AProcessThatEndedPausedWasNotRecordedAfter) {
  const std::string dir = temp_dir("jp-pause-open");
  std::ofstream(dir + "/sample-84.txt") << "jouleprof-sample 1 on_ns=0 period_ns=0\non 1000\npause 2000\noff 2000\nbogus 5\nresume 3000\n";
  TraceData t = one_process(84, 9000);
  read_sample_logs(dir, t);
  ASSERT_EQ(t.processes[0].pauses_ns.size(), 1u);
  EXPECT_EQ(t.processes[0].pauses_ns[0].first, 2000);
  EXPECT_GT(t.processes[0].pauses_ns[0].second, int64_t{1} << 60);
  ASSERT_EQ(t.processes[0].sample_windows_ns.size(), 1u);  // recorded only before the pause
  EXPECT_EQ(t.processes[0].sample_windows_ns[0].second, 2000);
  EXPECT_TRUE(t.warnings.empty());
  fs::remove_all(dir);
}

// The public header (jouleprof/trace/pause.hpp) reaches the C API of the injection library loaded in
// the process (here by the test, before any CUDA: a pause is held until CUDA starts the trace), and
// is a no-op without the tracer's environment.
TEST(InjectPause, ThePublicHeaderReachesTheLoadedLibrary) {
  const std::string dir = temp_dir("jp-pause-header");
  unsetenv("JOULEPROF_TRACE_DIR");
  setenv("CUDA_INJECTION64_PATH", JOULEPROF_INJECT_LIB, 1);
  EXPECT_EQ(trace_pause::recording(), -1);  // not loaded yet
  void* lib = dlopen(JOULEPROF_INJECT_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  EXPECT_EQ(trace_pause::recording(), -1);  // no trace directory: not under jouleprof trace
  EXPECT_FALSE(trace_pause::pause());
  setenv("JOULEPROF_TRACE_DIR", dir.c_str(), 1);
  EXPECT_EQ(trace_pause::recording(), 1);
  {
    trace_pause::Paused p;
    EXPECT_EQ(trace_pause::recording(), 0);
  }
  EXPECT_EQ(trace_pause::recording(), 1);
  EXPECT_TRUE(trace_pause::pause());
  EXPECT_EQ(trace_pause::recording(), 0);
  EXPECT_TRUE(trace_pause::resume());
  EXPECT_EQ(trace_pause::recording(), 1);
  unsetenv("JOULEPROF_TRACE_DIR");
  unsetenv("CUDA_INJECTION64_PATH");
  dlclose(lib);
  fs::remove_all(dir);
}
