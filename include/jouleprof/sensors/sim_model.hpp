// The simulated GPU: a true power schedule and the sensors an H100 puts on top of it
// (driver sample buffer, short-window and 1-s averaged power fields, a 100-ms-updated energy
// counter). Used by `--device sim` and by the fake libnvidia-ml. Everything it produces is
// simulated and labelled so by its users.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace jouleprof {

/// True power over time: piecewise segments, each constant or a square wave.
class PowerSchedule {
 public:
  struct Segment {
    double t_start = 0;
    bool square = false;
    double high_w = 0, low_w = 0;  ///< constant segments use high_w
    double on_s = 0, off_s = 0;
  };
  explicit PowerSchedule(double initial_w = 0);
  void set_constant(double t, double watts);
  void set_square(double t, double on_s, double off_s, double high_w, double low_w);
  double at(double t) const;
  /// Exact integral in joules over [a, b].
  double integral(double a, double b) const;
  std::vector<Segment> segments() const;

 private:
  void add(Segment s);
  static double segment_integral(const Segment& s, double a, double b);
  mutable std::mutex mu_;
  std::vector<Segment> segs_;
};

/// Per-application behaviour of the simulated GPU (scenario key `application`): a load started
/// while the workload's labels (a sweep point's --param values and tags) hold every KEY=VALUE of
/// `match` draws `power_scale` times the active power (above idle), takes `time_scale` times as
/// long at full clock and, when set, has this compute share (how much of its time follows the
/// graphics clock: 1 compute-bound, 0 memory-bound). The first matching one applies.
struct SimApplication {
  std::vector<std::pair<std::string, std::string>> match;
  double power_scale = 1;
  double time_scale = 1;
  std::optional<double> compute_share;
};

/// The labels of the workload now running on the in-process simulated GPUs (a sweep sets its
/// point's parameters and tags before each point): what `application` lines match.
void set_sim_workload_labels(const std::map<std::string, std::string>& labels);
std::map<std::string, std::string> sim_workload_labels();

struct SimConfig {
  std::string name = "NVIDIA H100 80GB HBM3 (simulated)";
  std::string driver_version = "580.159 (simulated)";
  int gpus = 1;
  double idle_w = 75;
  double tdp_w = 700;
  double sample_period_s = 0.020;   ///< driver power-sample spacing
  double sample_window_s = 0.020;   ///< each sample averages this much before its timestamp
  double update_period_s = 0.100;   ///< fields and energy counter update period
  double instant_window_s = 0.025;  ///< field 186 averaging window
  double average_window_s = 1.0;    ///< GetPowerUsage / field 185 window
  unsigned buffer_samples = 119;    ///< driver buffer depth
  double noise_w = 0;               ///< deterministic pseudo-noise amplitude on samples
  uint64_t energy_start_mj = 0;
  double fail_after_s = -1;         ///< >= 0: every call fails (GPU lost) after this time
  std::vector<std::string> unsupported;  ///< metric/feature names reported unsupported
  bool mig_enabled = false;
  PowerSchedule::Segment initial;   ///< first segment (constant idle by default)
  std::vector<PowerSchedule::Segment> schedule;  ///< further segments from the scenario
  std::string load_file;            ///< lines "realtime_ns watts" appended by a workload
  double workload_time_scale = 1.0; ///< stretches the built-in simulated workload (tests: < 1)
  std::vector<SimApplication> applications;  ///< per-application behaviour (first match applies)
  /// The application the labels select (nullptr: none matches; the load runs as described).
  const SimApplication* application_for(const std::map<std::string, std::string>& labels) const;
};

/// Clock and power-limit settings the simulated GPU obeys (set by jouleprof's control layer
/// through the fake NVML or the in-process simulated backend). Unset: the GPU boosts freely.
struct SimControl {
  std::optional<double> sm_clock_lock_mhz;   ///< locked graphics clock (upper bound)
  std::optional<double> mem_clock_lock_mhz;  ///< locked memory clock
  std::optional<double> power_limit_w;       ///< enforced power limit (default: tdp_w)
};

/// Settings of the in-process simulated GPUs (`--device sim`), by index: they outlive one
/// measurement like a real GPU's settings outlive one process, and die with the process.
SimControl sim_device_control(int index);
void set_sim_device_control(int index, const SimControl& c);

/// The simulated GPU's supported clocks: an H100 SXM's table (memory 2619 and 1593 MHz,
/// graphics 345-1980 MHz in 15 MHz steps, 110 clocks), highest first as NVML lists them.
std::vector<unsigned> sim_supported_mem_clocks();
std::vector<unsigned> sim_supported_gpu_clocks(unsigned mem_clock_mhz);

/// The DVFS law of the simulated GPU, for a load described at full clock by its power
/// (`demand_w`) and the share of its time that scales with the graphics clock (`compute_share`;
/// the rest is memory-bound and scales with the memory clock):
///   power  = idle + (demand - idle) * (share * g(f) + (1 - share) * (0.5 + 0.5 g(f))) * m/m_max
///   time   = t_max * (share * f_max / f + (1 - share) * m_max / m)
/// with g(f) = (f / f_max) * (V(f) / V(f_max))^2 and V flat at 65% below 900 MHz, linear above.
/// A power limit below the demand lowers the clock to the highest supported one that fits.
struct SimOperatingPoint {
  double clock_mhz = 0;
  double mem_clock_mhz = 0;
  double power_w = 0;
  double time_scale = 1;  ///< duration relative to the unconstrained GPU
};
SimOperatingPoint sim_operating_point(const SimConfig& cfg, const SimControl& ctl, double demand_w,
                                      double compute_share);

/// Parses a scenario file's text (see docs/simulated-gpu.md) on top of `base`. Errors name the line.
Result<SimConfig> parse_sim_scenario(const std::string& text, SimConfig base = {});

class SimGpuModel {
 public:
  explicit SimGpuModel(const SimConfig& cfg);
  const SimConfig& config() const { return cfg_; }
  PowerSchedule& schedule() { return sched_; }
  const PowerSchedule& schedule() const { return sched_; }

  struct RawSample {
    double t_s;
    double power_w;
  };
  /// Buffered samples with timestamp in (after_s, now_s], at most the buffer depth.
  std::vector<RawSample> samples(double after_s, double now_s) const;
  double power_instant_w(double now_s) const;
  double power_average_w(double now_s) const;
  uint64_t energy_mj(double now_s) const;
  double temperature_c(double now_s) const;
  double sm_clock_mhz(double now_s) const;
  double mem_clock_mhz(double now_s) const;
  double gpu_util_pct(double now_s) const;
  uint64_t throttle_reasons(double now_s) const;
  bool failed(double now_s) const { return cfg_.fail_after_s >= 0 && now_s >= cfg_.fail_after_s; }
  bool supports(const std::string& feature) const;

  /// Settings the GPU obeys from now on (clocks, power limit).
  void set_control(const SimControl& c);
  SimControl control() const;
  /// Starts a load at time t (see sim_operating_point): the schedule gets its power under the
  /// current settings and the reported clocks follow. Returns the operating point.
  SimOperatingPoint start_load(double t, double demand_w, double compute_share);
  /// Back to idle at time t.
  void stop_load(double t);

 private:
  double last_update(double now_s) const;
  double window_mean(double end, double len) const;
  SimConfig cfg_;
  PowerSchedule sched_;
  mutable std::mutex control_mu_;
  SimControl control_;
  double load_clock_mhz_ = 0;  ///< clock of the running load (0: never started, < 0: ended)
  double load_mem_clock_mhz_ = 0;
};

}  // namespace jouleprof
