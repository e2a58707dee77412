// Background sampling of GPU (and CPU) sensors into timelines on the run time base.
//
// One thread drains the driver's power-sample buffer and polls the short-window/1-s power
// fields every `fast_period_s`, the slower fields every `slow_period_s`, and reads the costly
// energy counter only when asked (window edges) or every `counter_period_s`. The workload
// never waits on the sampler: requests are an atomic flag and a condition-variable notify.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "jouleprof/core/series.hpp"
#include "jouleprof/core/timebase.hpp"
#include "jouleprof/result/timeline.hpp"  // GpuTimeline, SensorError
#include "jouleprof/sensors/gpu_sensor.hpp"
#include "jouleprof/sensors/rapl.hpp"

namespace jouleprof {

struct SamplerConfig {
  double fast_period_s = 0.1;      ///< drain sample buffer, read power fields
  double slow_period_s = 0.5;      ///< clocks, temperature, utilization, memory, limit, throttle
  double counter_period_s = 5.0;   ///< background energy-counter reads (0: edges only)
  double recalibrate_period_s = 1.0;
  std::size_t max_samples_in_memory = std::size_t{1} << 21;  ///< per series, then spill
  bool read_cpu = true;
  /// Tests: no thread. Counter reads are served when asked, and poll_due() runs one pass of the
  /// sampling loop at the time base's now (a fake clock the test advances; no real waiting).
  bool manual = false;
};

struct CpuTimeline {
  std::vector<std::string> domains;
  std::vector<Series> energy_j;  ///< cumulative, unwrapped, per domain
  std::string unavailable_reason;
};

class Sampler {
 public:
  Sampler(GpuSet& gpus, TimeBase& tb, SamplerConfig cfg);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void start();
  void stop();
  bool running() const { return thread_.joinable(); }

  /// Asks for an energy-counter read as soon as possible. Cheap, callable from any thread.
  void request_counter_read();
  /// Blocks until every queued counter read has been done (used at run boundaries).
  void flush_counter_reads();
  /// Manual mode (SamplerConfig::manual): polls what is due at the time base's now, as one
  /// pass of the sampler thread would.
  void poll_due();

  std::size_t gpu_count() const { return timelines_.size(); }
  /// Snapshot of a series' samples in [t0, t1] (plus neighbours); takes the data lock briefly.
  std::vector<Sample> slice(std::size_t gpu, Metric m, double t0, double t1) const;
  /// Direct access: only after stop().
  const GpuTimeline& timeline(std::size_t gpu) const { return *timelines_[gpu]; }
  std::shared_ptr<const GpuTimeline> shared_timeline(std::size_t gpu) const { return timelines_[gpu]; }
  const CpuTimeline& cpu() const { return cpu_; }
  std::vector<Sample> cpu_slice(std::size_t domain, double t0, double t1) const;
  /// Seconds of CPU time the sampler thread used (from CLOCK_THREAD_CPUTIME_ID).
  double thread_cpu_s() const { return thread_cpu_s_.load(); }
  std::size_t loop_count() const { return loops_.load(); }

 private:
  void loop();
  void begin_schedule();
  /// One pass of the loop: serves counter requests, polls what is due; the next due time.
  double pass();
  void final_reads();
  void poll_fast(double now);
  void poll_slow(double now);
  void read_counters();
  void read_cpu(double now);
  void record_error(std::size_t gpu, Metric m, const Error& e, double now);

  GpuSet& gpus_;
  TimeBase& tb_;
  SamplerConfig cfg_;
  std::vector<std::shared_ptr<GpuTimeline>> timelines_;
  CpuTimeline cpu_;
  std::optional<Rapl> rapl_;
  mutable std::mutex data_mu_;  // guards timelines_ contents against concurrent slice()
  std::mutex wake_mu_;
  std::condition_variable wake_;
  std::condition_variable done_cv_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> counter_requests_{0};
  std::atomic<uint64_t> counter_served_{0};
  std::atomic<double> thread_cpu_s_{0};
  std::atomic<std::size_t> loops_{0};
  std::vector<Sample> scratch_;
  double next_fast_ = 0, next_slow_ = 0, next_recal_ = 0, next_counter_ = 0;
  bool manual_running_ = false;
  std::thread thread_;
};

}  // namespace jouleprof
