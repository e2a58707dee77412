// `jouleprof bench llm` in the run store: a sweep becomes one run per configuration
// (docs/bench-llm.md, "The run store"). Part of the jouleprof CLI only: jouleprof-llm links no
// SQLite; the CLI records from the JSON it writes (or from the in-process result on --device sim).
#pragma once

#include <cstdint>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/result/result.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof::llm {

/// A whole `bench llm` sweep: an "llm" section (kBenchSchema) whose points name their run
/// windows, and not one configuration already split off.
bool is_bench_sweep(const Measurement& m);

/// One measurement per configuration (point) of a sweep, in sweep order:
/// - its run window (renamed "run", run 0) and the windows inside it with the configuration's
///   name prefix removed ("prefill" and "decode" as phases with their token counts,
///   "component/NAME", "step", "layer/N"); statistics over that one run;
/// - the samples from 0.25 s before to 0.25 s after the run window, on a time base whose origin
///   is that start (so each configuration has its own start time);
/// - the idle baseline of the sweep (GPU state), provenance, the sweep's tags plus bench=llm,
///   model, dtype, batch, prompt, gen, variant, device (sim or the GPU's name) and sweep (the
///   sweep's start, UTC), which take precedence; the command that reruns this configuration;
/// - sections["llm"]: the sweep's section with this one point (window indices renumbered) and
///   "configuration": {index, of, sweep, sweep_command};
/// - status: complete, or incomplete with the point's reason (skipped, interrupted, engine error).
Result<std::vector<Measurement>> split_bench_sweep(const Measurement& sweep);

/// Splits the sweep and stores each configuration (one transaction each, in sweep order) in
/// the store at o.db_path (or resolve_db_path()); returns the run ids.
Result<std::vector<int64_t>> record_bench_sweep(const Measurement& sweep, const StoreOptions& o);

}  // namespace jouleprof::llm
