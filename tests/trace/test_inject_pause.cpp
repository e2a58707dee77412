// Pausing from inside the program (jouleprof_trace_pause/resume, duty_cycle.hpp RecordingControl),
// driven by fake CUPTI switch hooks and a fake clock: a pause switches the kernel records, the
// anchors and the NVTX handlers off, a resume brings back what was on, a pause overrides the
// sampled mode's duty cycle, and the pause spans written to the switch log come back as the run's
// paused time, outside its recorded windows.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/run_program.hpp"
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
  const std::string dir =
      (fs::temp_directory_path() / (name + "-" + std::to_string(getpid()))).string();
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

// A control over a fake CUPTI, its switch log in a directory of its own.
struct Rig {
  std::string dir;
  FakeCupti cupti;
  std::atomic<bool> anchoring{true}, nvtx_on{true};
  inject::SampleLog log;
  inject::RecordingControl control;
  explicit Rig(const std::string& name) : dir(temp_dir(name)) {}
  ~Rig() { fs::remove_all(dir); }
  bool pause() { return control.pause(cupti.hooks(), anchoring, nvtx_on); }
  bool resume() { return control.resume(cupti.hooks(), anchoring, nvtx_on); }
  void duty(bool on) { control.duty(on, cupti.hooks(), anchoring); }
  /// Records, anchors and NVTX ranges all on, or all off.
  void expect_all(bool on) const {
    EXPECT_EQ(cupti.kinds, on);
    EXPECT_EQ(cupti.api_records, on);
    EXPECT_EQ(anchoring.load(), on);
    EXPECT_EQ(nvtx_on.load(), on);
    EXPECT_EQ(control.paused(), !on);
    EXPECT_EQ(control.recording_kernels(), on);
  }
};

}  // namespace

// A fully traced process: its first pause opens the switch log (no duty cycle), switches the
// records off (anchors first) and stops the NVTX handlers; resume switches them on again.
TEST(InjectPause, PauseStopsRecordsAndRangesAndResumeBringsThemBack) {
  Rig r("jp-pause");
  r.control.start({}, &r.log, r.dir, 81, 500'000'000);
  EXPECT_FALSE(fs::exists(r.dir + "/sample-81.txt"));  // nothing until the first pause
  EXPECT_FALSE(r.resume());                            // not paused: nothing done
  EXPECT_TRUE(r.cupti.calls.empty());

  r.cupti.clock = 1'000'000'000;
  ASSERT_TRUE(r.pause());
  r.expect_all(false);
  EXPECT_EQ(r.cupti.flushes, 1);  // the recorded window's records written before the pause
  EXPECT_FALSE(r.pause());        // twice: nothing more
  EXPECT_EQ(r.cupti.calls.size(), 1u);

  r.cupti.clock = 3'000'000'000;
  ASSERT_TRUE(r.resume());
  r.expect_all(true);
  EXPECT_EQ(r.cupti.anchors, 1);  // the resumed window starts with an anchor
  EXPECT_EQ(r.cupti.calls, (std::vector<std::string>{"kinds off", "kinds on"}));

  const std::string text = read_all(r.dir + "/sample-81.txt");
  EXPECT_EQ(
      text.rfind(
          "jouleprof-sample 1 on_ns=0 period_ns=0\non 500000000\npause 1000000000\noff 1000000000",
          0),
      0u)
      << text;
  EXPECT_NE(text.find("resume 3000000000"), std::string::npos) << text;

  // Read back: recorded whenever not paused (from before CUDA started to after the last
  // record), paused 1-3 s.
  TraceData t = one_process(81, 4'000'000'000);
  read_sample_logs(r.dir, t);
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
}

// Sampled mode: while paused the duty cycle's switches change nothing; resume restores the phase
// the cycle is in (off in an off phase, on in a window).
TEST(InjectPause, PauseOverridesTheDutyCycleUntilResume) {
  Rig r("jp-pause-duty");
  const auto cycle = inject::duty_cycle_from("10", "1000");
  ASSERT_TRUE(r.log.open(r.dir, 82, cycle));
  r.log.mark(true, 0);
  r.control.start(cycle, &r.log, r.dir, 82, 0);
  r.cupti.clock = 50'000'000;
  ASSERT_TRUE(r.pause());  // inside a window: off
  EXPECT_FALSE(r.cupti.kinds);
  r.duty(false);  // the cycle's off phase: nothing to do
  r.duty(true);   // its next window: still paused
  EXPECT_FALSE(r.cupti.kinds);
  r.duty(false);
  r.cupti.clock = 2'500'000'000;
  ASSERT_TRUE(r.resume());  // in an off phase: stays off
  EXPECT_FALSE(r.cupti.kinds);
  EXPECT_TRUE(r.nvtx_on);  // the NVTX ranges come back (the sampled mode keeps them)
  EXPECT_FALSE(r.anchoring);
  r.duty(true);  // the next window
  EXPECT_TRUE(r.cupti.kinds);
  EXPECT_TRUE(r.anchoring);
  EXPECT_EQ(r.cupti.calls, (std::vector<std::string>{"kinds off", "kinds on"}));

  // Paused in a window, resumed in an off phase: the window ends at the pause.
  r.cupti.clock = 3'050'000'000;
  ASSERT_TRUE(r.pause());
  r.cupti.clock = 3'060'000'000;
  r.duty(false);
  r.duty(true);  // 4.0 s: a window, but paused
  r.cupti.clock = 4'020'000'000;
  ASSERT_TRUE(r.resume());  // inside it: on at once
  EXPECT_TRUE(r.cupti.kinds);
  TraceData t = one_process(82, 4'100'000'000);
  read_sample_logs(r.dir, t);
  align_trace(t, 0, {});
  EXPECT_TRUE(t.sampling.duty_cycle());
  ASSERT_EQ(t.sampling.pauses_s.size(), 2u);
  EXPECT_NEAR(t.sampling.pauses_s[0].second, 2.5, 1e-9);
  ASSERT_EQ(t.sampling.windows_s.size(), 3u);
  EXPECT_NEAR(t.sampling.windows_s[0].second, 0.05, 1e-9);  // ended by the pause
  EXPECT_NEAR(t.sampling.windows_s[2].first, 4.02, 1e-9);   // from the resume
}

// Calls from several threads while the duty cycle's timer thread switches: every switch changes
// the state (no double off or on), and after the last resume the records are on (the cycle's last
// phase was a window).
TEST(InjectPause, PauseAndResumeFromManyThreads) {
  Rig r("jp-pause-threads");
  const auto cycle = inject::duty_cycle_from("10", "1000");
  ASSERT_TRUE(r.log.open(r.dir, 83, cycle));
  r.control.start(cycle, &r.log, r.dir, 83, 0);
  std::vector<std::thread> threads;
  threads.emplace_back([&] {  // the timer thread
    for (int k = 0; k < 1000; ++k) r.duty(k % 2 == 1);
  });
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 500; ++k) (k + i) % 2 == 0 ? r.pause() : r.resume();
    });
  }
  for (auto& th : threads) th.join();
  // The hooks' own state needs no lock: they run inside the control's.
  ASSERT_GT(r.cupti.calls.size(), 2u);
  for (std::size_t k = 1; k < r.cupti.calls.size(); ++k)
    EXPECT_NE(r.cupti.calls[k], r.cupti.calls[k - 1]) << k;
  r.resume();
  EXPECT_TRUE(r.cupti.kinds);
  EXPECT_TRUE(r.nvtx_on);
  EXPECT_FALSE(r.control.paused());
}

// A process that ended paused (or whose log was cut at a pause) was not recorded after the pause;
// an unknown word ends the log.
TEST(InjectPause, AProcessThatEndedPausedWasNotRecordedAfter) {
  const std::string dir = temp_dir("jp-pause-open");
  std::ofstream(dir + "/sample-84.txt") << "jouleprof-sample 1 on_ns=0 period_ns=0\non 1000\npause "
                                           "2000\noff 2000\nbogus 5\nresume 3000\n";
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

// The public header (jouleprof/trace/pause.hpp) reaches the C API of the injection library loaded
// in the process (here by the test, before any CUDA: a pause is held until CUDA starts the trace),
// and is a no-op without the tracer's environment.
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

namespace {

// The pause probe under the injection library over the fake activity CUPTI, tracing into `dir`,
// with `env` added.
jp_test::ProgramRun run_pause_probe(const std::string& dir, const std::vector<std::string>& env = {},
                                    const std::vector<std::string>& args = {}) {
  std::vector<std::string> all = {std::string("CUDA_INJECTION64_PATH=") + JOULEPROF_INJECT_LIB,
                                  std::string("JOULEPROF_CUPTI_LIB=") + JOULEPROF_FAKE_CUPTI_ACTIVITY,
                                  std::string("JOULEPROF_CUDA_DRIVER_LIB=") + JOULEPROF_FAKE_CUPTI_ACTIVITY, "JOULEPROF_TRACE_DIR=" + dir};
  all.insert(all.end(), env.begin(), env.end());
  return jp_test::run_program(JOULEPROF_PAUSE_PROBE, args, all, "", dir + "/out.txt", dir + "/err.txt", [](pid_t) {});
}

std::string sample_log_of(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("sample-", 0) == 0) return read_all(e.path().string());
  }
  return "";
}

}  // namespace

// End to end through the injection library itself, over a fake activity CUPTI: a program pauses
// and resumes through the public header; the kernels launched while paused are not in its trace
// file, those before and after are, the records' kinds were off while paused (the anchor call's API
// record stays enabled: no anchor calls are made while paused, and switching that record from
// another thread lost the program's anchors on an H200), and the pause span is in its switch log.
TEST(InjectPause, TheLibraryPausesOverAFakeCupti) {
  const std::string dir = temp_dir("jp-pause-e2e");
  const auto r = run_pause_probe(dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out,
            "before recording=1 kernels=0 anchor=0\n"  // loaded, CUDA not started yet: not paused
            "started recording=1 kernels=1 anchor=1\n"
            "pause=1\n"
            "paused recording=0 kernels=0 anchor=1\n"
            "resume=1\n"
            "resumed recording=1 kernels=1 anchor=1\n"
            "graph-level=1\n")
      << r.err;
  auto t = read_trace_dir(dir);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->processes.size(), 1u);
  EXPECT_TRUE(t->processes[0].ended);
  std::vector<std::string> kernels;
  for (const Activity& a : t->activities) {
    if (a.kind == Activity::Kind::kernel) kernels.push_back(a.name);
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"recorded_before_kernel", "recorded_before_kernel",
                                               "recorded_before_kernel", "recorded_after_kernel",
                                               "recorded_after_kernel", "CUDA graph 7", "CUDA graph 7"}));
  read_sample_logs(dir, *t);
  ASSERT_EQ(t->processes[0].pauses_ns.size(), 1u);
  EXPECT_LT(t->processes[0].pauses_ns[0].first, t->processes[0].pauses_ns[0].second);
  EXPECT_TRUE(t->warnings.empty());
  fs::remove_all(dir);
}

// The sampled mode switches the kernel records per context, on the primary context of each device
// (once enabled globally, they cost on every launch after they are disabled): never globally, the
// switch log starts with the first window, and only the windows' kernels are in the trace.
TEST(InjectPause, TheSampledModeSwitchesRecordsPerContext) {
  const std::string dir = temp_dir("jp-sampled-context");
  const auto r = run_pause_probe(dir, {"JOULEPROF_TRACE_SAMPLE=50", "JOULEPROF_TRACE_SAMPLE_PERIOD_MS=2"}, {"sampled"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_EQ(r.out.rfind("sampled per-context=1 ever-global=0 launched=", 0), 0u) << r.out;
  const long launched = std::stol(r.out.substr(r.out.rfind('=') + 1));
  const std::string log = sample_log_of(dir);
  std::istringstream lines(log);
  std::string magic, first;
  std::getline(lines, magic);
  std::getline(lines, first);
  EXPECT_EQ(first.rfind("on ", 0), 0u) << log;  // nothing recorded before the first window
  auto t = read_trace_dir(dir);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->processes.size(), 1u);
  EXPECT_TRUE(t->processes[0].notes.empty());
  long kernels = 0;
  for (const Activity& a : t->activities) kernels += a.kind == Activity::Kind::kernel ? 1 : 0;
  EXPECT_GT(kernels, 0);
  EXPECT_LT(kernels, launched);  // the off phases' launches are not recorded
  fs::remove_all(dir);
}

// The NVTX handlers anchor (a driver call and its API record per range event) only while kernels
// are recorded: in full tracing from the start; in the sampled mode, which records nothing before
// its first window, not before that window. The period here is an hour longer than the realtime
// clock's value, so the whole run lies before the first window.
TEST(InjectPause, RangesAnchorOnlyWhileKernelsAreRecorded) {
  const std::string dir = temp_dir("jp-ranges-anchor");
  const auto full = run_pause_probe(dir, {}, {"ranges"});
  ASSERT_EQ(full.exit_code, 0) << full.out << full.err;
  EXPECT_EQ(full.out, "ranges anchors=20\n");
  const std::string sampled_dir = temp_dir("jp-ranges-anchor-sampled");
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto sampled = run_pause_probe(sampled_dir, {"JOULEPROF_TRACE_SAMPLE=10", "JOULEPROF_TRACE_SAMPLE_PERIOD_MS=" + std::to_string(now_ms + 3600000)},
                                       {"ranges"});
  ASSERT_EQ(sampled.exit_code, 0) << sampled.out << sampled.err;
  EXPECT_EQ(sampled.out, "ranges anchors=0\n");
  fs::remove_all(dir);
  fs::remove_all(sampled_dir);
}

// $JOULEPROF_TRACE_SAMPLE_SWITCH=global (a diagnostic): the global switch, and the trace says so.
TEST(InjectPause, TheSampledModeCanSwitchGlobally) {
  const std::string dir = temp_dir("jp-sampled-global");
  const auto r = run_pause_probe(dir, {"JOULEPROF_TRACE_SAMPLE=50", "JOULEPROF_TRACE_SAMPLE_PERIOD_MS=2", "JOULEPROF_TRACE_SAMPLE_SWITCH=global"},
                                 {"sampled"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("sampled per-context=0 ever-global=1 launched=", 0), 0u) << r.out;
  auto t = read_trace_dir(dir);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->processes.size(), 1u);
  ASSERT_EQ(t->processes[0].notes.size(), 1u);
  EXPECT_NE(t->processes[0].notes[0].find("switched globally"), std::string::npos);
  fs::remove_all(dir);
}

// `trace --cuda-graph-trace node`: the graph-level kind stays off and each node's kernel is
// recorded, with its graph's id.
TEST(InjectPause, GraphNodesRecordedOneByOneOnRequest) {
  const std::string dir = temp_dir("jp-graph-nodes");
  const auto r = run_pause_probe(dir, {"JOULEPROF_TRACE_CUDA_GRAPHS=node"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("graph-level=0\n"), std::string::npos) << r.out;
  auto t = read_trace_dir(dir);
  ASSERT_TRUE(t) << t.error().message;
  int nodes = 0, graphs = 0;
  for (const Activity& a : t->activities) {
    if (a.kind != Activity::Kind::kernel) continue;
    if (a.name == "graph_node_kernel") {
      ++nodes;
      EXPECT_EQ(a.graph_id, 7u);
    }
    if (a.name.str().rfind("CUDA graph", 0) == 0) ++graphs;
  }
  EXPECT_EQ(nodes, 6);
  EXPECT_EQ(graphs, 0);
  fs::remove_all(dir);
}
