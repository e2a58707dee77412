// The result of a measurement: runs, windows with their energies, provenance, timelines.
// The ground floor of the layers above core: written by result_to_json and read by
// measurement_from_json (result_json.hpp, result_io.hpp; schema in docs/result-schema.md).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/stats.hpp"
#include "jouleprof/core/timebase.hpp"
#include "jouleprof/core/series.hpp"
#include "jouleprof/result/timeline.hpp"

namespace jouleprof {

inline constexpr int kResultSchemaVersion = 1;

/// One GPU's energy over one window, by every method available.
struct GpuEnergy {
  double energy_j = 0;        ///< best estimate (see method)
  std::string method;  ///< counter | timeline | timeline(response) | timeline(instant) | timeline(average) | none
  double uncertainty_j = 0;   ///< bound for the chosen method (sensor calibration not included)
  std::optional<double> counter_j;     ///< energy-counter difference, edges aligned with the timeline
  std::string counter_note;            ///< why the counter was not used
  std::optional<double> timeline_j;    ///< trapezoid over the power timeline
  double timeline_uncertainty_j = 0;   ///< edge uncertainty of the timeline integral
  std::size_t timeline_samples = 0;
  std::optional<double> response_j;    ///< short isolated window: level before × duration + excess response
  double response_uncertainty_j = 0;
  std::optional<double> disagreement;  ///< (timeline - counter) / counter, for counter-method windows
  std::string note;                    ///< how the figure was obtained when not obvious
  std::string uncertainty_basis;       ///< which bound gave a counter figure's uncertainty_j: staleness, timeline cross-check, repeats
  std::optional<double> idle_power_w;
  std::optional<double> above_idle_j;
  double mean_power_w = 0;
};

struct CpuEnergy {
  std::string domain;
  double energy_j = 0;
};

struct WindowResult {
  std::string name;
  std::string kind;  ///< idle | warmup | run | phase | window
  int run = -1;      ///< run index (-1: outside runs)
  int parent = -1;   ///< index of the enclosing window
  double t0_s = 0, t1_s = 0;
  bool complete = true;
  std::vector<GpuEnergy> gpus;
  double gpu_energy_j = 0;                 ///< sum over GPUs (best estimates)
  std::optional<double> gpu_above_idle_j;  ///< sum over GPUs
  std::vector<CpuEnergy> cpu;
  std::optional<double> meter_j;
  double meter_uncertainty_j = 0;
  std::map<std::string, double> counts;  ///< e.g. tokens=128 from markers
  double duration_s() const { return t1_s - t0_s; }
};

struct RunInfo {
  int index = 0;
  bool warmup = false;
  int window = -1;  ///< index into windows
  int exit_code = 0;
  int signal = 0;
  bool complete = true;
  std::string reason;
};

/// A statistic over the measured (non-warm-up, complete) runs.
struct RepeatStat {
  std::string what;  ///< "gpu_energy_j", "duration_s", "phase:prefill:gpu_energy_j" ...
  Summary summary;
};

struct GpuRunState {
  std::optional<double> temperature_min_c, temperature_max_c;
  std::optional<double> sm_clock_min_mhz, sm_clock_max_mhz, mem_clock_mhz;
  std::optional<double> power_limit_w;
  std::vector<std::string> throttle_reasons_seen;
  std::vector<SensorError> errors;
  std::size_t error_count = 0;
  std::optional<double> lost_at_s;
  std::vector<std::string> unsupported;  ///< metrics this GPU does not provide
  std::optional<double> idle_power_w;
  std::string idle_source;
};

struct Measurement {
  int schema_version = kResultSchemaVersion;
  std::string tool_version, git_revision, build_type;
  std::vector<std::string> command;
  std::vector<std::string> invocation;  ///< jouleprof's own command line
  bool builtin_workload = false;
  std::map<std::string, std::string> tags;
  std::string host, kernel;
  int64_t origin_realtime_ns = 0;  ///< wall time of run-time 0
  /// Identifies this run (core/uuid.hpp): random, minted when the measurement ends; the store's
  /// duplicate check. Empty in results written before it existed.
  std::string run_uuid;
  std::string backend;
  bool simulated = false;
  std::string device_note;
  std::vector<GpuInfo> gpus;
  std::vector<GpuRunState> gpu_state;
  std::vector<TimeBase::Calibration> time_calibrations;
  std::vector<RunInfo> runs;
  std::vector<WindowResult> windows;
  std::vector<RepeatStat> stats;
  std::vector<std::string> warnings;
  std::vector<std::string> cpu_domains;
  std::string cpu_unavailable_reason;
  std::string meter_source;
  bool complete = true;
  std::string incomplete_reason;
  int exit_code = 0;  ///< what jouleprof should exit with (the workload's status)
  double sampler_cpu_s = 0;
  double duration_s = 0;
  /// Further top-level sections of the result JSON, as JSON text by key (e.g. "llm" from
  /// `jouleprof bench llm`): written by result_to_json, read back and stored verbatim.
  std::map<std::string, std::string> sections;

  // Timelines (run time base), shared with the sampler that filled them.
  std::vector<std::shared_ptr<const GpuTimeline>> timelines;
  std::vector<std::vector<Sample>> cpu_energy;  ///< cumulative J per CPU domain
  std::vector<Sample> meter_power;              ///< meter watts on the run time base
};

}  // namespace jouleprof
