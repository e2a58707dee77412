// Sampled mode's duty cycle (`trace --sample P%`, format.hpp DutyCycle): a timer thread of the
// injection library switches the kernel and copy records on for the first P% of every period and
// off for the rest, and logs each switch to DIR/sample-PID.txt so the analysis knows which
// windows were traced. Separate from CUPTI so that CI drives it with a fake clock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "jouleprof/trace/format.hpp"

namespace jouleprof::inject {

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
/// leaves every switch before the kill.
class SampleLog {
 public:
  bool open(const std::string& dir, int64_t pid, const trace_format::DutyCycle& c);
  void mark(bool on, uint64_t cupti_ns);
  /// In a forked child: forget the parent's file without writing to it.
  void abandon();
  ~SampleLog() { abandon(); }

 private:
  int fd_ = -1;
};

}  // namespace jouleprof::inject
