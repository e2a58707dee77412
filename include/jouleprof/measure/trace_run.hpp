// `jouleprof trace` as library calls (docs/trace.md): run the command under the CUPTI injection
// library → read its per-process files → place them on the run's time base → attribute → store
// the run and its activities in one transaction. The CLI is flags → one of these → print; the
// outputs (JSON, kernel tables, Perfetto: report/trace.hpp) are written from the TracedRun.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "jouleprof/analysis/trace_profile.hpp"
#include "jouleprof/core/error.hpp"
#include "jouleprof/measure/measure.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof {

struct TraceRunOptions {
  MeasureOptions measure;         ///< the command and how to measure it; the tracing environment is added to `env`
  std::string inject_lib;         ///< empty: $JOULEPROF_INJECT_LIB, else libjouleprof_inject.so beside jouleprof
  std::string cupti_lib;          ///< empty: $JOULEPROF_CUPTI_LIB, else the CUDA toolkit's
  std::string keep_dir;           ///< keep the per-process files here (empty: a temporary folder, removed)
  bool record_sync = false, record_launches = false;
  bool graph_nodes = false;       ///< each CUDA graph node's records (`--cuda-graph-trace node`); default one per graph launch
  double sample_percent = 0;      ///< sampled mode: kernels traced this % of each period (0: all)
  double sample_period_s = 1;     ///< sampled mode's period
  std::string replay;             ///< replayed kernels: a `jouleprof replay --json` file, or a stored replay run
  TraceProfileOptions profile;    ///< the attribution (its `replay` is set from `replay`)
  KernelClassifier classes;       ///< the kernel-class rules
  bool store = true;              ///< record the run and its activities (StoreOptions: db_path ...)
  StoreOptions store_options;
};

struct TracedRun {
  Measurement m;        ///< with its "trace" section
  TraceData trace;      ///< the placed trace (Perfetto slices: report/trace.hpp)
  TraceProfile profile;
  std::string label;    ///< a stored run: "run 12"
  std::optional<int64_t> run_id;        ///< where it was stored
  std::size_t stored_activities = 0;
  std::optional<Error> store_error;     ///< measured and attributed, but not stored
};

/// The sampled mode's settings checked: 0 < percent < 100 and a traced window (percent × period)
/// of at least 20 ms, the slowest power sensor's sample (Errc::invalid_argument, one line).
Result<void> check_sampling(double percent, double period_s);

/// Traces `o.measure.command`: measured as `jouleprof measure` does, attributed, stored when
/// o.store. Errors before the run (no injection library, no CUPTI, bad replay data) are returned;
/// a store that fails after the run is `store_error`.
Result<TracedRun> trace_command(TraceRunOptions o);

/// A traced run of the store (`ref`: id, last, last~N) attributed again with `o.profile`,
/// `o.classes` and `o.replay`: nothing run, nothing stored.
Result<TracedRun> trace_stored_run(const std::string& ref, TraceRunOptions o);

}  // namespace jouleprof
