// `jouleprof sweep`: a workload measured at every combination of clocks, memory clocks, power
// limits and workload parameters, each point a tagged run in the store, the GPUs always
// restored (session.hpp). A plan is a JSON file so that the workers of a multi-GPU sweep and
// the tasks of a SLURM job array run exactly the same schedule (each its shard).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/control/control.hpp"
#include "jouleprof/measure/measure.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof::control {

struct SweepParam {
  std::string key;
  std::vector<std::string> values;
  bool operator==(const SweepParam&) const = default;
};

/// What the user asked for (flags of `jouleprof sweep`), serialisable as a plan file.
struct SweepSpec {
  std::vector<std::string> command;  ///< `{key}` replaced by a parameter's value; empty: built-in workload
  std::string device = "auto";       ///< auto | nvml | sim
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string sim_scenario;
  std::vector<std::string> gpus;     ///< ids ("all" / empty: every GPU)
  std::string clocks;                ///< "" (unchanged) | "all" | "step:N" | "1980,1410,..."
  std::vector<unsigned> mem_clocks_mhz;
  std::vector<unsigned> power_limits_w;
  std::vector<SweepParam> params;
  std::string mode = "custom";       ///< baseline (no change) | dvfs (every clock unless --clocks) | custom
  std::string order = "random";      ///< random | interleaved | sequential
  uint64_t seed = 1;
  int runs = 3, warmup = 1;
  double idle_s = 2.0;
  bool cooldown = false;
  bool observe_only = false;
  std::string multi_gpu = "split";   ///< split: points spread over the GPUs in parallel; together: all GPUs each point
  std::string sweep_id;              ///< empty: derived from the rest (so a rerun resumes)
  // What every point records. Here, not in SweepRunOptions::measure, so that they travel in the
  // plan file to the multi-GPU workers and the SLURM tasks.
  bool metrics = false;              ///< activity metrics at every point (measure --metrics)
  std::string metrics_source = "auto";
  double sim_power_w = 450;          ///< the simulated GPU's power while a command runs, at full clock
  bool read_cpu = true;              ///< CPU energy (RAPL)
  std::map<std::string, std::string> tags;  ///< --tag KEY=VALUE, with every point
  std::vector<std::string> invocation;      ///< the command line that asked for the sweep (provenance)
  bool operator==(const SweepSpec&) const = default;
};

/// One setting × parameter combination, and one visit of it (`pass`; interleaved order visits
/// every point once per repeat).
struct SweepPoint {
  int index = 0;  ///< position in the cross product
  Setting setting;
  std::map<std::string, std::string> params;
  std::string key;  ///< stable name, e.g. "clock=1410 pl=- batch=8"
  int pass = 0;     ///< interleaved: which repeat; otherwise 0
  int runs = 1;     ///< measured runs in this visit
  int warmup = 0;
};

struct SweepPlan {
  std::string sweep_id;
  SweepSpec spec;
  std::vector<SweepPoint> units;  ///< in execution order
};

/// Parses "1980,1410", "all" or "step:N" against the supported clocks (highest first).
Result<std::vector<unsigned>> expand_clocks(const std::string& spec, const std::vector<unsigned>& supported);
/// Parses "key=v1,v2".
Result<SweepParam> parse_param(const std::string& text);
/// The command with every `{key}` replaced; an unknown `{key}` is an error.
Result<std::vector<std::string>> substitute(const std::vector<std::string>& command,
                                            const std::map<std::string, std::string>& params);

/// The cross product, validated against every selected GPU (a clock not supported names the
/// nearest; a power limit outside the range names it), in the requested order.
Result<SweepPlan> plan_sweep(const SweepSpec& spec, const std::vector<GpuCapabilities>& gpus);

/// The same plan without any GPU to ask (a SLURM login node: no GPU, no NVML): clocks must be a
/// list (all / step:N need the GPU's list), and the settings are not checked against a GPU. The
/// plan's tasks check them inside the job, on the node (docs/sweep.md "On a cluster").
Result<SweepPlan> plan_sweep_unchecked(const SweepSpec& spec);

/// A sweep id given by the user (--sweep-id, a plan file): 1-64 of [A-Za-z0-9._-], not starting
/// with '.' or '-' (it names a folder and a SLURM job).
Result<void> check_sweep_id(const std::string& id);

std::string plan_to_json(const SweepPlan& p);
Result<SweepSpec> spec_from_plan_json(const std::string& text, const std::string& path);

/// Progress after each unit: i/N, elapsed, ETA, the last point's figures.
struct SweepProgress {
  int done = 0, total = 0;
  double elapsed_s = 0, eta_s = 0;
  std::string last;  ///< "clock=1410: 512.3 J, 2.41 s, 212 W"
};

struct UnitOutcome {
  SweepPoint unit;
  std::string gpu_uuid;
  enum class Kind { measured, skipped, failed } kind = Kind::measured;
  std::string message;
  int64_t run_id = 0;
  std::optional<double> energy_j, duration_s;
};

struct SweepSummary {
  std::string sweep_id;
  std::vector<UnitOutcome> units;
  int interrupted_by = 0;      ///< signal that stopped the sweep (0: none)
  bool restored = true;        ///< every GPU back to its original state
  std::string restore_error;
  int count(UnitOutcome::Kind k) const;
};

struct SweepRunOptions {
  SweepSpec spec;
  std::string db;               ///< run store (resolve_db_path rules)
  std::string journal_dir;      ///< empty: default_journal_dir()
  std::optional<std::pair<int, int>> shard;  ///< run only units u with u % N == k (k, N)
  MeasureOptions measure;       ///< base options of every point (monitor, sampler ...); what the
                                ///< spec says (metrics, CPU, tags ...) is set over them
  /// Seam: how a point is measured (tests and the chaos driver replace it).
  std::function<Result<Measurement>(const MeasureOptions&)> run_point = run_measure;
  std::function<void(const SweepProgress&)> progress;
  std::function<void(const std::string&)> note;
  /// Multi-GPU split sweeps start one worker per GPU: this program (jouleprof) with
  /// `sweep --plan FILE --gpus UUID --shard K/N --db DB`; empty: run in this process.
  std::string self_exe;
  bool quiet = false;  ///< -q: the workers say nothing either (only errors)
};

/// Runs the sweep (or this process's shard). Errors only for failures before any change
/// (bad input, no permission, no GPU); later faults are in the summary. The GPUs are restored
/// on every path.
Result<SweepSummary> run_sweep(const SweepRunOptions& o);

/// The SM clock GPU `gpu` ran at while the workload kept it busy (a point's `observed_clock_mhz`):
/// the mean of the clock samples inside the measured (not warm-up) runs whose utilization
/// reading of the same poll is above 0 (every in-run sample where utilization is not read).
/// None without such a sample: idle baselines, warm-ups and the idle clock between runs never
/// count.
std::optional<double> busy_sm_clock_mhz(const Measurement& m, std::size_t gpu);

/// The tags a stored point carries (sweep, point, pass, clock_mhz, mem_clock_mhz, power_limit_w,
/// parameters, control).
std::map<std::string, std::string> point_tags(const SweepPlan& plan, const SweepPoint& u);

/// One sweep of a store (`sweep --list`).
struct SweepListing {
  std::string sweep_id;
  int points = 0, runs = 0, complete = 0;  ///< distinct points; stored runs; complete ones
  std::string first_recorded_utc, last_recorded_utc, command;
  int64_t last_run_id = 0;
  bool simulated = false;
};
/// Every sweep in the store (runs tagged `sweep`), the most recently stored first.
Result<std::vector<SweepListing>> list_sweeps(Store& store);
/// The sweep id `text` stands for: an id, a unique prefix of one, or `last` (the sweep stored
/// most recently). An unknown id lists the known ones; an ambiguous prefix its matches.
Result<std::string> resolve_sweep_id(Store& store, const std::string& text);

}  // namespace jouleprof::control
