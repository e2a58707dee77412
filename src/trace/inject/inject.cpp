// The CUPTI injection library: CUDA loads it through CUDA_INJECTION64_PATH (set by
// `jouleprof trace`) and calls InitializeInjection() when the process initialises CUDA. It
// records kernels, copies and memsets (synchronisation and every launch call on request) and
// writes them to $JOULEPROF_TRACE_DIR/trace-PID.jpt. It is also the NVTX injection
// (NVTX_INJECTION64_PATH, InitializeInjectionNvtx2): it records NVTX ranges itself, each with an
// anchor that ties kernels to it (nvtx_tool.hpp).
//
// Only the activity API is used: no subscriber, no profiler or PM sampling (those take the GPU's
// performance counters, which a DCGM host engine or another profiler may hold).
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cupti_api.hpp"
#include "duty_cycle.hpp"
#include "nvtx_tool.hpp"
#include "records.hpp"
#include "writer.hpp"

namespace jouleprof::inject {
namespace {

using namespace trace_format;

CuptiApi g_api;
std::once_flag g_api_once;
TraceWriter g_writer;
std::atomic<pid_t> g_owner{0};
std::atomic<bool> g_closed{false};
size_t g_buffer_bytes = 8u << 20;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_previous[sizeof(kSignals) / sizeof(kSignals[0])];

int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// A bracketed reading of CUPTI's clock against CLOCK_REALTIME.
void add_clock(uint32_t when) {
  if (g_api.GetTimestamp == nullptr) return;
  const int64_t r0 = realtime_ns();
  uint64_t c = 0;
  g_api.GetTimestamp(&c);
  const int64_t r1 = realtime_ns();
  ClockRecord r{c, r0 + (r1 - r0) / 2, (r1 - r0) / 2, when, 0};
  g_writer.add(RecordType::clock, r);
}

std::atomic<uint64_t> g_cupti_records{0};  // CUPTI activity records received in our buffers

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, g_buffer_bytes));
  *size = *buffer != nullptr ? g_buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t /*size*/, size_t valid) {
  if (g_owner.load() == getpid()) {
    std::lock_guard<std::mutex> lock(g_writer.lock());
    if (buffer != nullptr && valid > 0) g_cupti_records += convert_buffer(buffer, valid, g_api.ActivityGetNextRecord, g_writer);
    size_t dropped = 0;
    if (g_api.ActivityGetNumDroppedRecords != nullptr &&
        g_api.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0) {
      DroppedRecord d{dropped, 0, stream};
      g_writer.add(RecordType::dropped, d);
      g_writer.count_dropped(dropped);
    }
    write_nvtx_events(g_writer);
    add_clock(clock_periodic);
    g_writer.commit();
  }
  std::free(buffer);
}

// Sampled mode (duty_cycle.hpp): the kinds switched on and off by the timer thread.
std::vector<CUpti_ActivityKind> g_sampled_kinds;
std::vector<CUpti_ActivityKind> g_global_kinds;  // per-context mode: those CUPTI would not switch per context
// Switched per context (cuptiActivityEnableContext on each device's primary context) rather than
// globally: once enabled globally, the kernel and copy records leave a cost on every later launch
// after they are disabled (+7...+11% on an eager HF generate() on an H200), and switched per
// context they leave none (scripts/validation/trace/eager_ops.py --cupti-steps
// context --hf; docs/validation/trace.md). Only primary contexts are switched: those of the CUDA
// runtime (PyTorch, JAX, TensorFlow); a context made with cuCtxCreate is not recorded in sampled mode.
bool g_per_context = false;
// $JOULEPROF_TRACE_SAMPLE_SWITCH=global: the sampled mode switches globally (a diagnostic: the
// cost of the global switch, scripts/device-trace.sh sampledcost).
constexpr const char* kSampleSwitchEnv = "JOULEPROF_TRACE_SAMPLE_SWITCH";
// The driver library (libcuda.so.1; a fake's in the tests, $JOULEPROF_CUDA_DRIVER_LIB).
constexpr const char* kCudaDriverLibEnv = "JOULEPROF_CUDA_DRIVER_LIB";
struct PrimaryContextApi {
  int (*device_count)(int*) = nullptr;
  int (*device)(int*, int) = nullptr;
  int (*state)(int, unsigned*, int*) = nullptr;
  int (*retain)(CUcontext*, int) = nullptr;
  int (*release)(int) = nullptr;
  bool ok() const { return device_count && device && state && retain && release; }
} g_primary;
DutyCycle g_cycle;
SampleLog g_sample_log;
// Never destroyed: a joinable std::thread destroyed at exit would terminate the process.
std::thread* g_duty_thread = nullptr;
std::mutex g_duty_mu;
std::condition_variable g_duty_cv;
bool g_duty_stop = false;

// The NVTX handlers anchor while kernels are recorded: always in full tracing, only inside the
// windows in sampled mode, never with $JOULEPROF_TRACE_KERNELS=0.
std::atomic<bool> g_anchoring{true};

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

uint64_t cupti_now_ns();
void driver_anchor_call();
void set_launch_api_records(bool on);

// Pausing (jouleprof_trace_pause/resume) and the duty cycle switch through one control.
RecordingControl g_control;
std::atomic<bool> g_nvtx_on{true};     // the NVTX handlers record (off while paused)
// 0: CUDA has not started the trace yet; 1: the control is set up; 2: this trace cannot pause.
std::atomic<int> g_started{0};
std::atomic<bool> g_pause_asked{false};  // paused before CUDA started: applied by initialize()

// A warning of the switches, written to the trace file (from the timer thread).
void add_note(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_writer.lock());
  if (g_owner.load() != getpid() || g_closed.load() || !g_writer.is_open()) return;
  g_writer.add_text(RecordType::note, text);
  g_writer.commit();
}

// Each device's primary context that is active now, retained while `f` runs (a context being
// made or destroyed meanwhile is switched at the next window).
template <class F>
void for_each_primary_context(F f) {
  int n = 0;
  if (g_primary.device_count(&n) != 0) return;
  for (int i = 0; i < n; ++i) {
    int dev = 0, active = 0;
    unsigned flags = 0;
    if (g_primary.device(&dev, i) != 0 || g_primary.state(dev, &flags, &active) != 0 || active == 0) continue;
    CUcontext ctx = nullptr;
    if (g_primary.retain(&ctx, dev) != 0) continue;
    f(ctx);
    g_primary.release(dev);
  }
}

// The sampled kinds per context; a kind CUPTI will not switch per context is switched globally
// from then on (said once).
void set_context_kinds(bool on) {
  std::vector<CUpti_ActivityKind> refused;
  for_each_primary_context([&](CUcontext ctx) {
    for (CUpti_ActivityKind k : g_sampled_kinds) {
      const CUptiResult rc = on ? g_api.ActivityEnableContext(ctx, k) : g_api.ActivityDisableContext(ctx, k);
      if (rc != CUPTI_SUCCESS && on && std::find(refused.begin(), refused.end(), k) == refused.end()) {
        refused.push_back(k);
        add_note("warning: " + g_api.describe("cuptiActivityEnableContext", rc) + " for activity kind " + std::to_string(static_cast<int>(k)) +
                  ": switched globally instead (costs more between windows)");
      }
    }
  });
  for (CUpti_ActivityKind k : refused) {
    g_sampled_kinds.erase(std::find(g_sampled_kinds.begin(), g_sampled_kinds.end(), k));
    g_global_kinds.push_back(k);
    g_api.ActivityEnable(k);
  }
}

SwitchHooks switch_hooks() {
  SwitchHooks h;
  h.cupti_now = cupti_now_ns;
  h.mono_ns = monotonic_ns;
  h.set_kinds = [](bool enable) {
    if (g_per_context) set_context_kinds(enable);
    for (CUpti_ActivityKind k : g_per_context ? g_global_kinds : g_sampled_kinds) enable ? g_api.ActivityEnable(k) : g_api.ActivityDisable(k);
  };
  // The anchor call's record is not switched here: switched from this thread, it came back for
  // this thread's anchors alone (on an H200, CUPTI 13.0, the program's NVTX anchors in the windows
  // were lost and no kernel got its layer, 2026-11-28). Each program thread switches its own at its
  // next range event (NvtxHooks::anchor_record); the calls stop with g_anchoring.
  h.set_api_records = [](bool enable) { set_launch_api_records(enable); };
  h.anchor = driver_anchor_call;
  h.flush = [] { g_api.ActivityFlushAll(0); };
  return h;
}

void set_sampled_tracing(bool on) { g_control.duty(on, switch_hooks(), g_anchoring); }

void duty_thread_main() {
  DutyHooks h;
  h.now_ns = realtime_ns;
  h.wait_until = [](int64_t t) {
    std::unique_lock<std::mutex> lock(g_duty_mu);
    const auto until = std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(t)));
    g_duty_cv.wait_until(lock, until, [] { return g_duty_stop; });
    return !g_duty_stop;
  };
  h.set_tracing = set_sampled_tracing;
  run_duty_cycle(g_cycle, !g_per_context, h);  // per context: nothing recorded before the first window
}

// Stops the timer thread (at exit; a signal only asks it to stop: joining there is not safe). An
// open window ends where the process's records do (the reader closes it).
void stop_duty_cycle(bool join) {
  {
    std::lock_guard<std::mutex> lock(g_duty_mu);
    g_duty_stop = true;
  }
  g_duty_cv.notify_all();
  if (join && g_duty_thread != nullptr && g_duty_thread->joinable()) g_duty_thread->join();
}

// Sets up the switches: sampled mode when $JOULEPROF_TRACE_SAMPLE asks for it (a CUPTI without
// cuptiActivityDisable traces in full and says so), pausing always (where cuptiActivityDisable is).
// Called without the writer's lock (its notes take it).
void start_switches(const std::string& dir, const std::vector<CUpti_ActivityKind>& kinds, bool records) {
  for (CUpti_ActivityKind k : kinds) {
    if (records && k != CUPTI_ACTIVITY_KIND_DEVICE) g_sampled_kinds.push_back(k);
  }
  const uint64_t t0 = cupti_now_ns();
  if (g_api.ActivityDisable == nullptr) {
    if (g_cycle.active()) add_note("warning: this CUPTI has no cuptiActivityDisable: sampled mode off, every kernel traced");
    if (g_pause_asked.load()) add_note("warning: this CUPTI has no cuptiActivityDisable: jouleprof_trace_pause() ignored");
    g_started = 2;
    g_nvtx_on = true;
    return;
  }
  if (g_cycle.active() && !g_sample_log.open(dir, getpid(), g_cycle)) {
    add_note("warning: cannot write the sampled mode's switch log in " + dir + ": every kernel traced");
    if (g_per_context) {
      for (CUpti_ActivityKind k : g_sampled_kinds) g_api.ActivityEnable(k);
      g_per_context = false;
    }
    g_started = 2;
    g_nvtx_on = true;
    return;
  }
  // initialize() enabled the kinds globally: on until the thread's first switch
  if (g_cycle.active() && !g_per_context) g_sample_log.mark(true, t0);
  // Per context, nothing is recorded before the first window: no anchors either, as between windows.
  if (g_per_context) g_anchoring = false;
  g_control.start(g_cycle, &g_sample_log, dir, getpid(), t0, records, !g_per_context);
  g_started = 1;
  if (g_pause_asked.load()) g_control.pause(switch_hooks(), g_anchoring, g_nvtx_on);
  if (g_cycle.active()) g_duty_thread = new std::thread(duty_thread_main);
}

// The anchor: cuDriverGetVersion, whose API record alone is enabled (kAnchorDriverCbid).
using DriverGetVersionFn = int (*)(int*);
DriverGetVersionFn g_driver_get_version = nullptr;

// Flushes CUPTI and closes the file once (exit, fatal signal). At a normal exit, a probe first:
// one anchor call, whose record the forced flush must hand to buffer_completed; if nothing
// arrives, another CUPTI client took the buffers or disabled the kinds (kRecordsStoppedNote).
void finish(int signal) {
  if (g_owner.load() != getpid() || g_closed.exchange(true)) return;
  stop_duty_cycle(signal == 0);
  const uint64_t before = g_cupti_records.load();
  const bool probe = signal == 0 && g_driver_get_version != nullptr && g_api.ActivityFlushAll != nullptr;
  if (probe) {
    // Its record is off with JOULEPROF_TRACE_KERNELS=0: on for the probe.
    if (g_api.ActivityEnableDriverApi != nullptr) g_api.ActivityEnableDriverApi(kAnchorDriverCbid, 1);
    int version = 0;
    g_driver_get_version(&version);
  }
  if (g_api.ActivityFlushAll != nullptr) g_api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_writer.lock());
  if (probe && g_cupti_records.load() == before) g_writer.add_text(RecordType::note, kRecordsStoppedNote);
  write_nvtx_events(g_writer);
  add_clock(clock_end);
  g_writer.close(signal);
}

void at_exit() { finish(0); }

void on_signal(int sig, siginfo_t* info, void* uctx) {
  std::size_t i = 0;
  while (i < std::size(kSignals) && kSignals[i] != sig) ++i;
  const struct sigaction& prev = g_previous[i];
  const bool prev_handles = (prev.sa_flags & SA_SIGINFO) != 0 ? prev.sa_sigaction != nullptr
                                                             : prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN;
  const bool fatal = sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT;
  // A handler the program installed (Python's SIGINT → KeyboardInterrupt) decides; the process
  // then exits normally and at_exit() writes the rest. Otherwise the signal ends the process:
  // write what CUPTI holds first (best effort for crashes).
  if (!prev_handles || fatal) finish(sig);
  if (prev_handles) {
    if ((prev.sa_flags & SA_SIGINFO) != 0) {
      prev.sa_sigaction(sig, info, uctx);
    } else {
      prev.sa_handler(sig);
    }
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_signal_handlers() {
  for (std::size_t i = 0; i < std::size(kSignals); ++i) {
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(kSignals[i], &sa, &g_previous[i]);
  }
}

// A forked child that never execs shares nothing with the parent's trace: it must not write to
// the parent's file, and CUPTI does not trace in it (CUDA cannot be used after fork).
void after_fork_in_child() {
  g_writer.abandon();
  g_sample_log.abandon();
  g_duty_thread = nullptr;  // not running in the child: fork copies only the forking thread
  discard_nvtx_events();
}

size_t env_size(const char* name, size_t fallback, size_t unit) {
  const char* v = std::getenv(name);
  if (v == nullptr || v[0] == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  return (end != nullptr && *end == '\0' && n > 0) ? static_cast<size_t>(n) * unit : fallback;
}

std::string g_nvtx_note;  // written to the trace file once it is open

void* cuda_driver_library() {
  static void* const handle = [] {
    const char* lib = std::getenv(kCudaDriverLibEnv);
    return dlopen(lib != nullptr && lib[0] != '\0' ? lib : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  }();
  return handle;
}

// The sampled mode switches its kinds per context where CUPTI and the driver allow it.
bool sample_per_context() {
  if (!g_cycle.active()) return false;  // full tracing: the kinds stay on, nothing to look up
  if (void* cuda = cuda_driver_library(); cuda != nullptr) {
    g_primary.device_count = reinterpret_cast<int (*)(int*)>(dlsym(cuda, "cuDeviceGetCount"));
    g_primary.device = reinterpret_cast<int (*)(int*, int)>(dlsym(cuda, "cuDeviceGet"));
    g_primary.state = reinterpret_cast<int (*)(int, unsigned*, int*)>(dlsym(cuda, "cuDevicePrimaryCtxGetState"));
    g_primary.retain = reinterpret_cast<int (*)(CUcontext*, int)>(dlsym(cuda, "cuDevicePrimaryCtxRetain"));
    g_primary.release = reinterpret_cast<int (*)(int)>(dlsym(cuda, "cuDevicePrimaryCtxRelease_v2"));
  }
  const char* sw = std::getenv(kSampleSwitchEnv);
  if (sw != nullptr && std::strcmp(sw, "global") == 0) {
    g_writer.add_text(RecordType::note, std::string("warning: ") + kSampleSwitchEnv + "=global: the sampled kinds are switched globally (a diagnostic)");
    return false;
  }
  return g_primary.ok() && g_api.ActivityEnableContext != nullptr && g_api.ActivityDisableContext != nullptr &&
         g_api.ActivityDisable != nullptr;
}

void driver_anchor_call() {
  if (g_driver_get_version == nullptr) return;
  int v = 0;
  g_driver_get_version(&v);
}

uint64_t cupti_now_ns() {
  uint64_t t = 0;
  if (g_api.GetTimestamp != nullptr) g_api.GetTimestamp(&t);
  return t;
}

// CUPTI's thread id type is set to the system's (initialize()), so the ids match its API records.
uint64_t system_thread_id() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

// A thread's batch of NVTX events is full: write every thread's pending events.
void flush_nvtx() {
  std::lock_guard<std::mutex> lock(g_writer.lock());
  if (g_owner.load() != getpid() || g_closed.load() || !g_writer.is_open()) return;
  write_nvtx_events(g_writer);
  g_writer.commit();
}

void load_api() {
  std::call_once(g_api_once, [] { g_api = load_cupti(); });
}

int initialize_nvtx(NvtxGetExportTableFunc_t get) {
  const char* dir = std::getenv(kDirEnv);
  if (dir == nullptr || dir[0] == '\0') return 0;  // not under jouleprof trace: NVTX calls become no-ops
  load_api();  // NVTX may start before CUDA does: the events' timestamps need CUPTI's clock
  if (void* cuda = cuda_driver_library(); cuda != nullptr) {
    g_driver_get_version = reinterpret_cast<DriverGetVersionFn>(dlsym(cuda, "cuDriverGetVersion"));
  }
  if (g_driver_get_version == nullptr) g_nvtx_note = "warning: libcuda's cuDriverGetVersion not found: NVTX ranges are not anchored";
  NvtxHooks hooks;
  hooks.now_ns = cupti_now_ns;
  hooks.thread_id = system_thread_id;
  hooks.anchor = g_driver_get_version != nullptr ? driver_anchor_call : nullptr;
  hooks.anchoring = &g_anchoring;
  hooks.anchor_record = [](bool on) {
    if (g_api.ActivityEnableDriverApi != nullptr) g_api.ActivityEnableDriverApi(kAnchorDriverCbid, on ? 1 : 0);
  };
  hooks.recording = &g_nvtx_on;
  hooks.flush = flush_nvtx;
  return install_nvtx_tool(get, hooks);
}

// Launch-type API calls only: the CPU-side record of each kernel/copy launch.
bool is_launch_call(const char* name) {
  return name != nullptr && (std::strstr(name, "Launch") != nullptr || std::strstr(name, "Memcpy") != nullptr ||
                             std::strstr(name, "Memset") != nullptr);
}

// The launch calls' callback ids (--record-launches), listed once: sampled mode switches them with
// the kernels.
std::vector<uint32_t> g_launch_runtime_cbids, g_launch_driver_cbids;

std::vector<uint32_t> launch_calls(CUpti_CallbackDomain domain, uint32_t cbid_end) {
  std::vector<uint32_t> out;
  for (uint32_t cbid = 1; g_api.GetCallbackName != nullptr && cbid < cbid_end; ++cbid) {
    const char* name = nullptr;
    if (g_api.GetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && is_launch_call(name)) out.push_back(cbid);
  }
  return out;
}

void set_launch_api_records(bool on) {
  if (g_api.ActivityEnableRuntimeApi != nullptr) {
    for (uint32_t cbid : g_launch_runtime_cbids) g_api.ActivityEnableRuntimeApi(cbid, on ? 1 : 0);
  }
  if (g_api.ActivityEnableDriverApi != nullptr) {
    for (uint32_t cbid : g_launch_driver_cbids) g_api.ActivityEnableDriverApi(cbid, on ? 1 : 0);
  }
}

std::string command_line() {
  std::string out;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    char buf[4096];
    const size_t n = std::fread(buf, 1, sizeof(buf), f);
    out.assign(buf, n);
    std::fclose(f);
  }
  return out;
}

int initialize() {
  const char* dir = std::getenv(kDirEnv);
  if (dir == nullptr || dir[0] == '\0') return 1;  // not started by jouleprof trace: do nothing
  if (g_owner.load() == getpid()) return 1;
  load_api();
  uint32_t version = 0;
  if (g_api.GetVersion != nullptr) g_api.GetVersion(&version);
  if (!g_writer.open(dir, getpid(), getppid(), realtime_ns(), version)) return 1;
  g_owner = getpid();
  g_closed = false;
  std::unique_lock<std::mutex> lock(g_writer.lock());
  g_writer.add_text(RecordType::command, command_line());
  if (!g_nvtx_note.empty()) g_writer.add_text(RecordType::note, g_nvtx_note);
  auto fail = [](const std::string& why) {
    g_writer.add_text(RecordType::note, "error: " + why);
    g_writer.close(0);
    g_closed = true;
    return 1;
  };
  if (!g_api.ok()) {
    std::string why = g_api.error;
    for (const auto& m : g_api.missing_required) why += (why.empty() ? "" : ", ") + std::string("missing symbol ") + m;
    return fail(why + " (CUPTI " + g_api.library + ")");
  }
  // Our records are read with this build's struct layouts; an older CUPTI has other layouts.
  if (version != 0 && version < CUPTI_API_VERSION) {
    return fail("CUPTI version mismatch: the library reports API version " + std::to_string(version) +
                ", the injection library was built for " + std::to_string(CUPTI_API_VERSION) + " or later");
  }
  g_buffer_bytes = env_size(kBufferEnv, 8u << 20, 1u << 20);
  // API records carry the system thread id, as the NVTX events do (nvtx_tool.hpp).
  if (g_api.SetThreadIdType == nullptr || g_api.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) != CUPTI_SUCCESS) {
    g_writer.add_text(RecordType::note, "warning: cannot set CUPTI's thread ids to the system's: NVTX ranges may not match launches");
  }
  if (CUptiResult rc = g_api.ActivityRegisterCallbacks(buffer_requested, buffer_completed); rc != CUPTI_SUCCESS) {
    return fail(g_api.describe("cuptiActivityRegisterCallbacks", rc));
  }
  if (g_api.ActivitySetAttribute != nullptr) {
    size_t device_bytes = 16u << 20, sz = sizeof(device_bytes);
    g_api.ActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &sz, &device_bytes);
  }
  // Synchronisation records only on request: they cost ~+20-40% on a launch-bound program
  // (HF eager generate on an H100, docs/validation/trace.md), the other kinds much less.
  const char* sync = std::getenv(kSyncEnv);
  const bool record_sync = sync != nullptr && std::strcmp(sync, "1") == 0;
  std::vector<CUpti_ActivityKind> kinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                           CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
                                           CUPTI_ACTIVITY_KIND_DEVICE};
  if (record_sync) kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  const bool nvtx_only = kernels_off(std::getenv(kKernelsEnv));
  if (nvtx_only) {
    kinds = {CUPTI_ACTIVITY_KIND_DEVICE};
    g_anchoring = false;
    g_writer.add_text(RecordType::note, std::string("warning: ") + kKernelsEnv + "=0: NVTX ranges only, no kernel, copy or memset records (a diagnostic)");
  }
  // A CUDA graph's launch as one record, after the kernels: CUPTI then records the kernels of
  // graphs that way and every other kernel alone. Recording each node costs ~0.3 us per node on
  // every launch, and a graph instantiated while the nodes were recorded keeps that cost when
  // recording stops (H200, workloads/cupti_probe).
  if (!nvtx_only && !graphs_by_node(std::getenv(kGraphsEnv))) kinds.push_back(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  g_cycle = nvtx_only ? DutyCycle{} : duty_cycle_from(std::getenv(kSampleEnv), std::getenv(kSamplePeriodEnv));
  g_per_context = sample_per_context();
  std::vector<CUpti_ActivityKind> enabled;
  for (CUpti_ActivityKind k : kinds) {
    if (g_per_context && k != CUPTI_ACTIVITY_KIND_DEVICE) {  // enabled per context, from the first window
      enabled.push_back(k);
      continue;
    }
    if (CUptiResult rc = g_api.ActivityEnable(k); rc != CUPTI_SUCCESS) {
      if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        // Typically CUPTI_ERROR_INSUFFICIENT_PRIVILEGES or a profiler that already holds CUPTI.
        return fail(g_api.describe("cuptiActivityEnable(CONCURRENT_KERNEL)", rc));
      }
      g_writer.add_text(RecordType::note, k == CUPTI_ACTIVITY_KIND_GRAPH_TRACE
                                              ? "warning: " + g_api.describe("cuptiActivityEnable(GRAPH_TRACE)", rc) +
                                                    ": CUDA graphs are recorded node by node"
                                              : "warning: " + g_api.describe("cuptiActivityEnable", rc) + " for activity kind " +
                                                    std::to_string(static_cast<int>(k)));
      continue;
    }
    enabled.push_back(k);
  }
  kinds = enabled;
  // Every launch call's record ties each kernel to its thread exactly but costs ~+13% on a
  // launch-bound program; by default only the NVTX anchors are recorded.
  const char* launches = std::getenv(kLaunchesEnv);
  if (!nvtx_only && launches != nullptr && std::strcmp(launches, "1") == 0) {
    g_launch_runtime_cbids = launch_calls(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
    g_launch_driver_cbids = launch_calls(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
    set_launch_api_records(true);
  }
  if (!nvtx_only && g_api.ActivityEnableDriverApi != nullptr) g_api.ActivityEnableDriverApi(kAnchorDriverCbid, 1);
  if (g_api.ActivityFlushPeriod != nullptr) {
    g_api.ActivityFlushPeriod(static_cast<uint32_t>(env_size(kFlushEnv, 500, 1)));
  }
  // Without the writer's lock: a switch takes the control's lock and then, through CUPTI's flush,
  // the writer's (buffer_completed); holding the writer's here would order the two locks both ways.
  g_writer.commit();
  lock.unlock();
  start_switches(dir, kinds, !nvtx_only);
  lock.lock();
  add_clock(clock_start);
  g_writer.commit();
  std::atexit(at_exit);
  install_signal_handlers();
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
  return 1;
}

}  // namespace
}  // namespace jouleprof::inject

// The program's own switch (include/jouleprof/trace_control.h, python/jouleprof/trace.py). Not
// under jouleprof trace (no $JOULEPROF_TRACE_DIR, or another process's trace): 0, nothing done.
namespace jouleprof::inject {
namespace {
bool traced_here() {
  const char* dir = std::getenv(kDirEnv);
  if (dir == nullptr || dir[0] == '\0' || g_closed.load()) return false;
  const int started = g_started.load();
  return started == 0 || (started == 1 && g_owner.load() == getpid());
}

// 1: the state asked for holds now; 0: not traced here (or the pause could not be made).
int set_paused(bool pause) {
  if (!traced_here()) return 0;
  if (g_started.load() == 0) {  // before CUDA started (the library loaded by the program): applied then
    g_pause_asked = pause;
    g_nvtx_on = !pause;
    return 1;
  }
  if (pause) {
    g_control.pause(switch_hooks(), g_anchoring, g_nvtx_on);
  } else {
    g_control.resume(switch_hooks(), g_anchoring, g_nvtx_on);
  }
  return g_control.paused() == pause ? 1 : 0;
}
}  // namespace
}  // namespace jouleprof::inject

extern "C" __attribute__((visibility("default"))) int jouleprof_trace_pause(void) { return jouleprof::inject::set_paused(true); }

extern "C" __attribute__((visibility("default"))) int jouleprof_trace_resume(void) { return jouleprof::inject::set_paused(false); }

extern "C" __attribute__((visibility("default"))) int jouleprof_trace_recording(void) {
  using namespace jouleprof::inject;
  if (!traced_here()) return -1;
  return (g_started.load() != 0 ? g_control.paused() : g_pause_asked.load()) ? 0 : 1;
}

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  return jouleprof::inject::initialize();
}

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  return jouleprof::inject::initialize_nvtx(get);
}
