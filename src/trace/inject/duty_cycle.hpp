// Sampled mode's duty cycle (`trace --sample P%`, format.hpp DutyCycle): a timer thread of the
// injection library switches the kernel and copy records on for the first P% of every period and
// off for the rest, and logs each switch to DIR/sample-PID.txt so the analysis knows which
// windows were traced. Separate from CUPTI so that CI drives it with a fake clock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "jouleprof/trace/format.hpp"

namespace jouleprof::inject {

/// "0": no kernel, copy or memset records at all, nor the NVTX anchors (nothing to tie to a range):
/// the NVTX ranges alone. A diagnostic (scripts/device-trace.sh sampledcost): the floor under the
/// sampled mode's off phase.
inline constexpr const char* kKernelsEnv = "JOULEPROF_TRACE_KERNELS";
bool kernels_off(const char* value);

/// $JOULEPROF_TRACE_CUDA_GRAPHS (`trace --cuda-graph-trace`): "node" records each graph node's
/// kernel; anything else (the default) one record per graph launch, as Nsight Systems does.
bool graphs_by_node(const char* value);

/// $JOULEPROF_TRACE_SAMPLE (percent, 0 < P < 100) and $JOULEPROF_TRACE_SAMPLE_PERIOD_MS (default
/// 1000) as a duty cycle; inactive (full tracing) when unset or not a valid number.
trace_format::DutyCycle duty_cycle_from(const char* percent, const char* period_ms);

struct DutyHooks {
  std::function<int64_t()> now_ns;              ///< CLOCK_REALTIME
  std::function<bool(int64_t)> wait_until;      ///< sleeps until that CLOCK_REALTIME; false: stop now
  std::function<void(bool on)> set_tracing;     ///< enables or disables the kinds (flushes when off)
};

/// Runs the cycle from state `on` (the kinds as initialize() left them) until wait_until says
/// stop: at each switch of `c`, set_tracing. Returns the state it leaves.
bool run_duty_cycle(const trace_format::DutyCycle& c, bool on, const DutyHooks& h);

/// The switch log, DIR/sample-PID.txt: every line one write(2) (O_APPEND), so a killed process
/// leaves every switch before the kill. A switch's line carries how long its CUPTI calls took
/// (`took_ns=`), the flush after a window its own comment line: the switches' cost, on the device.
class SampleLog {
 public:
  bool open(const std::string& dir, int64_t pid, const trace_format::DutyCycle& c);
  bool is_open() const { return fd_ >= 0; }
  void mark(bool on, uint64_t cupti_ns, int64_t took_ns = -1);
  /// A pause span's ends ("pause T" / "resume T", jouleprof_trace_pause/resume).
  void mark_pause(bool paused, uint64_t cupti_ns);
  void note_flush(int64_t took_ns);
  /// In a forked child: forget the parent's file without writing to it.
  void abandon();
  ~SampleLog() { abandon(); }

 private:
  int fd_ = -1;
};

/// What a switch calls: CUPTI's functions in inject.cpp, fakes in the tests.
struct SwitchHooks {
  std::function<uint64_t()> cupti_now;           ///< the switch's time in the log
  std::function<int64_t()> mono_ns;              ///< CLOCK_MONOTONIC: how long the calls took
  std::function<void(bool on)> set_kinds;        ///< the kernel, copy and memset records
  std::function<void(bool on)> set_api_records;  ///< with --record-launches, the launch calls' API records
  std::function<void()> anchor;                  ///< one anchor call (on the timer thread)
  std::function<void()> flush;                   ///< the window's records to the file
};

/// One switch of the sampled mode. The off phase keeps the NVTX ranges only (a timestamp and a
/// slot in a per-thread buffer each): `anchoring` goes false first, so the NVTX handlers stop
/// anchoring (a driver call and an API record each, for kernels that are not recorded), then the
/// launch calls' API records (--record-launches) and the kinds are disabled, the switch logged,
/// the window flushed. The anchor call's own record stays enabled: no call, no record.
/// On: logged first (the window holds every record it keeps), kinds and API records enabled,
/// anchoring resumes, and one anchor from the timer thread itself: a kernel launched before its
/// thread's next range event then has no range path, not the one of the previous window.
void switch_tracing(bool on, const SwitchHooks& h, SampleLog& log, std::atomic<bool>& anchoring);

/// Who switches the records: the duty cycle's timer thread (sampled mode) and the program itself
/// (jouleprof_trace_pause/resume, any thread). One mutex orders the switches; a pause overrides
/// the duty cycle until resume, which restores what the cycle wants at that moment (on without
/// one). Pausing also stops the NVTX handlers (`nvtx_on`): no range events, no anchors.
class RecordingControl {
 public:
  /// `cycle`: the duty cycle (inactive: full tracing); `log`: its switch log, opened here on the
  /// first pause of a fully traced process (`dir`, `pid`; its first window from `start_cupti_ns`).
  /// `records`: false with $JOULEPROF_TRACE_KERNELS=0 (NVTX ranges only: a pause stops those alone).
  /// `records_on`: the kinds are on now (initialize() enabled them globally); false when the
  /// sampled mode switches them per context, from its first window on.
  void start(const trace_format::DutyCycle& cycle, SampleLog* log, const std::string& dir, int64_t pid, uint64_t start_cupti_ns,
             bool records = true, bool records_on = true);
  /// The timer thread's switch: the cycle's phase; applied unless paused.
  void duty(bool on, const SwitchHooks& h, std::atomic<bool>& anchoring);
  /// False when already paused (nothing done).
  bool pause(const SwitchHooks& h, std::atomic<bool>& anchoring, std::atomic<bool>& nvtx_on);
  /// False when not paused.
  bool resume(const SwitchHooks& h, std::atomic<bool>& anchoring, std::atomic<bool>& nvtx_on);
  bool paused() const;
  bool recording_kernels() const;  ///< the kinds are on now

 private:
  bool ensure_log(uint64_t now_cupti);
  mutable std::mutex mu_;
  trace_format::DutyCycle cycle_;
  SampleLog* log_ = nullptr;
  std::string dir_;
  int64_t pid_ = 0;
  uint64_t start_cupti_ns_ = 0;
  bool records_ = true, cycle_on_ = true, on_ = true, paused_ = false;
};

}  // namespace jouleprof::inject
