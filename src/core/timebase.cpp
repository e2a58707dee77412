#include "jouleprof/core/timebase.hpp"
#include "jouleprof/core/utc.hpp"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

namespace jouleprof {
namespace {

int64_t read_clock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

class SystemClocks final : public ClockSource {
 public:
  int64_t steady_ns() const override { return read_clock(CLOCK_MONOTONIC); }
  int64_t realtime_ns() const override { return read_clock(CLOCK_REALTIME); }
};

}  // namespace

const ClockSource& ClockSource::system() {
  static const SystemClocks clocks;
  return clocks;
}

TimeBase::TimeBase(const ClockSource& clocks) : clocks_(clocks) {
  origin_steady_ns_ = clocks_.steady_ns();
  Calibration c = measure();
  offset_ns_.store(c.offset_ns);
  origin_realtime_ns_ = origin_steady_ns_ + c.offset_ns;
  c.at_s = 0;
  history_.push_back(c);
}

TimeBase::Calibration TimeBase::measure() const {
  // Best of a few bracketed reads: the narrowest bracket bounds the offset's error.
  Calibration best;
  best.uncertainty_ns = INT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const int64_t a = clocks_.steady_ns();
    const int64_t r = clocks_.realtime_ns();
    const int64_t b = clocks_.steady_ns();
    const int64_t half = (b - a) / 2;
    if (half < best.uncertainty_ns) {
      best.uncertainty_ns = half;
      best.offset_ns = r - (a + half);
      best.at_s = static_cast<double>(a + half - origin_steady_ns_) * 1e-9;
    }
  }
  return best;
}

double TimeBase::now_s() const { return from_steady_ns(clocks_.steady_ns()); }

double TimeBase::from_steady_ns(int64_t steady) const {
  return static_cast<double>(steady - origin_steady_ns_) * 1e-9;
}

double TimeBase::from_realtime_ns(int64_t realtime) const {
  return from_steady_ns(realtime - offset_ns_.load(std::memory_order_relaxed));
}

int64_t TimeBase::to_realtime_ns(double run_s) const {
  return origin_steady_ns_ + static_cast<int64_t>(run_s * 1e9) +
         offset_ns_.load(std::memory_order_relaxed);
}

TimeBase::Calibration TimeBase::recalibrate() {
  Calibration c = measure();
  offset_ns_.store(c.offset_ns, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  history_.push_back(c);
  return c;
}

std::vector<TimeBase::Calibration> TimeBase::calibrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return history_;
}

int64_t TimeBase::max_offset_change_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t worst = 0;
  for (const auto& c : history_) {
    const int64_t d = c.offset_ns - history_.front().offset_ns;
    worst = std::max<int64_t>(worst, d < 0 ? -d : d);
  }
  return worst;
}

std::string iso_utc_ms(int64_t realtime_ns) {
  const auto t = static_cast<std::time_t>(realtime_ns / 1000000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[64];
  std::snprintf(out, sizeof(out), "%s.%03dZ", buf, static_cast<int>((realtime_ns / 1000000) % 1000));
  return out;
}

}  // namespace jouleprof
