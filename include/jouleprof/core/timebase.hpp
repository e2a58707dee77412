// One monotonic run time base, with conversion from the wall-clock timestamps vendors use.
//
// NVML sample timestamps are CLOCK_REALTIME microseconds and CUPTI's are CLOCK_REALTIME
// nanoseconds (measured on our H100, see docs/ARCHITECTURE.md). The run time base is
// steady_clock seconds since the run's origin. The realtime-steady offset is measured by
// bracketing (steady, realtime, steady) reads, at start and again periodically; the history
// of offsets is kept in the result so a clock step (NTP) or drift is visible.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace jouleprof {

/// Seam over the OS clocks so that tests can step or drift the wall clock.
class ClockSource {
 public:
  virtual ~ClockSource() = default;
  virtual int64_t steady_ns() const = 0;
  virtual int64_t realtime_ns() const = 0;
  static const ClockSource& system();
};

class TimeBase {
 public:
  struct Calibration {
    double at_s = 0;             ///< run time at which the offset was measured
    int64_t offset_ns = 0;       ///< realtime - steady
    int64_t uncertainty_ns = 0;  ///< half the bracketing interval
  };

  explicit TimeBase(const ClockSource& clocks = ClockSource::system());

  /// Seconds since the origin on the run time base.
  double now_s() const;
  double from_steady_ns(int64_t steady) const;
  /// Converts a CLOCK_REALTIME timestamp with the most recent offset.
  double from_realtime_ns(int64_t realtime) const;
  double from_realtime_us(uint64_t realtime_us) const {
    return from_realtime_ns(static_cast<int64_t>(realtime_us) * 1000);
  }
  /// Inverse: run seconds to CLOCK_REALTIME ns (for exporting wall times).
  int64_t to_realtime_ns(double run_s) const;

  /// Re-measures the offset (cheap: a few clock reads). Thread safe.
  Calibration recalibrate();
  std::vector<Calibration> calibrations() const;
  /// Largest change of the offset seen since the origin, in ns (drift or step).
  int64_t max_offset_change_ns() const;
  int64_t origin_steady_ns() const { return origin_steady_ns_; }
  int64_t origin_realtime_ns() const { return origin_realtime_ns_; }

 private:
  Calibration measure() const;

  const ClockSource& clocks_;
  int64_t origin_steady_ns_ = 0;
  int64_t origin_realtime_ns_ = 0;
  std::atomic<int64_t> offset_ns_{0};
  mutable std::mutex mu_;
  std::vector<Calibration> history_;
};

}  // namespace jouleprof
