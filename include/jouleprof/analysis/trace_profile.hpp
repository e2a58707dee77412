// `jouleprof trace`'s analysis: a measurement plus the traced activity → energy per GPU by
// kernel, class, NVTX path, layer, component and phase, by each attribution method, with the
// books balanced (docs/trace.md).
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/analysis/attribution.hpp"
#include "jouleprof/result/result.hpp"
#include "jouleprof/trace/kernel_classes.hpp"
#include "jouleprof/trace/trace.hpp"
#include "jouleprof/trace/unique_kernels.hpp"

namespace jouleprof {

inline constexpr int kTraceSchemaVersion = 1;

struct ReplayReference;

struct TraceProfileOptions {
  /// The method of the tables (every registered method gives class books): empty: replay where
  /// replay data is given, else split.
  std::string method;
  const ReplayReference* replay = nullptr;  ///< replayed kernels (replay-informed attribution), or none
  SensorModel sensor;       ///< the model given, or the default where a run cannot determine one
  bool fit_sensor = true;   ///< fit lag and window to each GPU's samples (fit_sensor_model)
  double min_interval_s = 0.1;
  std::size_t path_depth = 0;  ///< 0: full NVTX paths
};

struct GroupRow {
  std::string key;
  double energy_j = 0;
  double uncertainty_j = 0;
  double busy_s = 0;
  uint64_t count = 0;
  double share = 0;           ///< of the attributed energy
  double mean_power_w = 0;    ///< energy / busy time (above idle)
  bool below_resolution = false;  ///< busy for less than 5 sensor periods in total
  /// The interval the estimate lies in: the methods' figures for the row and their own
  /// uncertainty (regression ± 1.96 σ, the replay's 95% CI), [0, the power limit's worth] where
  /// the sensor cannot resolve the row; never above (limit - idle) × busy time.
  double low_j = 0, high_j = 0;
  std::map<std::string, double> by_method;  ///< each method's figure (activity-level methods; class rows: all)
  std::size_t merged = 0;     ///< rows below resolution summed into this one (0: a row of its own)
  /// Those rows, each with its own point estimate (J, the table's method): what a longer run
  /// would resolve; the sum's interval is the one to read.
  std::vector<std::pair<std::string, double>> members;
};

struct MethodBooks {
  std::string method;
  double measured_j = 0, timeline_j = 0, idle_j = 0, attributed_j = 0, unattributed_j = 0;
  std::optional<double> intercept_w;
  double r_squared = 0;
  std::vector<GroupRow> by_class;
  std::map<std::string, GroupFit> class_fits;  ///< regression
  std::vector<std::string> notes;
};

struct GpuProfile {
  int gpu = 0;               ///< index into Measurement::gpus
  std::string uuid;
  std::vector<uint32_t> cuda_devices;  ///< ordinals seen in the traced processes
  std::string measured_method;
  double window_t0_s = 0, window_t1_s = 0;
  double idle_w = 0;
  std::optional<double> power_limit_w;  ///< the board's: no row's mean power above it minus idle
  SensorFit sensor;                  ///< the sensor model the methods used, and where it came from
  std::vector<MethodBooks> methods;  ///< interval, split, regression
  std::string table_method;
  std::vector<GroupRow> by_kernel, by_class, by_path, by_layer, by_component, by_phase;
  uint64_t kernels = 0, copies = 0;
  double busy_s = 0;
  /// How well the run determines the split: the share of the table's energy in kernels busy
  /// long enough for the sensor to resolve, and the by-class table's interval as a share of its
  /// energy (half its summed width).
  double resolved_share = 0, class_interval_share = 0;
  // Replay-informed attribution (table method "replay").
  std::string replay_source;
  std::optional<double> replay_scale;
  double replay_unmatched_share = 0;  ///< of the busy time: kernels without a replayed row
  std::vector<std::string> replay_marks;  ///< why the replay may not fit this run (driver, clock)
  /// Sampled mode: the table method's factor from the traced windows' energy above idle/static to
  /// the whole run's (every row's energy is its traced share × the run's).
  std::optional<double> sampling_scale;
};

/// Sampled mode (`trace --sample`): what was traced of the run.
/// Sampled mode and/or the program's pauses: the time with kernel records is `windows_s` only.
struct TraceSamplingInfo {
  double on_s = 0, period_s = 0;    ///< the duty cycle (0: none, only pauses)
  double traced_s = 0, run_s = 0;   ///< traced time inside the run window, the run's duration
  std::vector<std::pair<double, double>> windows_s;  ///< the traced windows (run time base)
  std::vector<std::pair<double, double>> pauses_s;   ///< the program's pauses (run time base)
  double paused_s = 0;                               ///< paused time inside the run window
  double fraction() const { return run_s > 0 ? traced_s / run_s : 0; }
};

struct PhaseEnergy {
  std::string name;
  double duration_s = 0, energy_j = 0, above_idle_j = 0;
  std::string method;
  std::map<std::string, double> counts;
  std::optional<double> energy_per_token_j;
};

struct TraceProfile {
  int schema_version = kTraceSchemaVersion;
  std::vector<GpuProfile> gpus;
  std::vector<UniqueKernel> kernels;
  std::vector<PhaseEnergy> phases;  ///< measure's phase windows (markers), summed by name
  struct Process {
    int64_t pid = 0, ppid = 0;
    std::string command;
    uint64_t records = 0, dropped = 0;
    bool ended = false;
    int signal = 0;
    std::string damage;
    bool records_stopped = false;  ///< another CUPTI client took the records before the end
    double clock_offset_start_ns = 0, clock_offset_end_ns = 0, clock_drift_ppm = 0;
  };
  std::vector<Process> processes;
  TraceData::RangeAssignment range_assignment;  ///< how kernels were tied to NVTX ranges
  uint64_t activities = 0, dropped = 0;
  bool complete = true;
  std::optional<TraceSamplingInfo> sampling;  ///< sampled mode, else none
  std::vector<std::string> warnings;
};

/// Puts `t`, as read from the per-process files, on the measurement's time base (align_trace) and
/// ties its GPU activities to NVTX ranges (assign_ranges). Done once, when the run is traced: the
/// store keeps the placed activities (trace_store.hpp).
void place_trace(const Measurement& m, TraceData& t);

/// The measured GPU (index into m.gpus) a GPU activity ran on, by its process's CUDA device UUIDs
/// (else its ordinal); -1 for a GPU that was not measured and for CPU-side activities.
int measured_gpu(const Measurement& m, const TraceData& t, const Activity& a);

/// Classifies and groups the activities of a placed trace and attributes each GPU's run energy
/// with every registered method (the stages: classify, per-GPU input, sensor fit, methods, tables).
/// Replay data of another GPU, or matching none of the run's kernels: Errc::invalid_argument. The same for a run just traced and one read back from the store.
Result<TraceProfile> build_trace_profile(const Measurement& m, TraceData& t, const KernelClassifier& classes,
                                         const TraceProfileOptions& o = {});

/// The attribute stage of `jouleprof trace` as a library call: build_trace_profile, then the
/// profile into `m` (its "trace" section, its warnings prefixed "trace: ", incomplete where the
/// trace is). The same for a run just traced and a stored run read back (trace_store.hpp).
Result<TraceProfile> analyze_trace(Measurement& m, TraceData& t, const KernelClassifier& classes, const TraceProfileOptions& o = {});

/// analyze_trace for a trace of either mode: a sampled one (t.sampling active: kernels recorded
/// only in windows) is attributed over its traced windows alone — their power samples and
/// activities put end to end — and each row's share of that is applied to the whole run's
/// measured energy above idle/static; the rows' intervals widen by the spread of their busy share
/// between the windows (a 95% interval, with the finite-population correction). The books stay
/// balanced against the run's measured energy. A run shorter than one sampling period is said.
Result<TraceProfile> analyze_placed_trace(Measurement& m, TraceData& t, const KernelClassifier& classes, const TraceProfileOptions& o = {});

/// The profile as JSON (the "trace" section of `jouleprof trace --json`).
std::string trace_profile_json(const TraceProfile& p);
/// Summary tables for the terminal.
std::string trace_profile_text(const TraceProfile& p, std::size_t top = 10);

/// Layer ("layers.12") and component (attention, mlp, norm, embedding, lm_head, other) of an
/// NVTX module path such as "decode/model.layers.12/self_attn/q_proj".
std::string layer_of_path(const std::string& path);
std::string component_of_path(const std::string& path);

}  // namespace jouleprof
