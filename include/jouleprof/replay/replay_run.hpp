// `jouleprof replay` as one library call (docs/replay.md): the traces' kernel table → the replay
// plan → the engine (jouleprof-replay) run under the measurement core, or an earlier engine output
// → the prediction → its comparison with a measured run, per phase too → the replay session stored
// with the result as its "replay" section. The CLI is flags → replay_command → print; the Python
// package's `jouleprof.replay.predict_trace` calls the same.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/measure/measure.hpp"
#include "jouleprof/replay/replay.hpp"

namespace jouleprof {

struct ReplayRequest {
  std::vector<std::string> traces;  ///< trace files (as for `jouleprof kernels`)
  std::string classes;              ///< extra kernel class rules (CLASS<TAB>REGEX), before the default ones
  std::string tiers;                ///< replay tier rules (empty: the built-in data/replay-tiers.tsv)
  ReplayOptions options;            ///< the plan
  std::string plan_out;             ///< write the plan (JSON) here ('-': stdout)
  bool plan_only = false;           ///< stop after the plan
  std::string measured;             ///< a measured run of the same work: id, last, last~N or a result JSON file
  std::string window = "work";      ///< the measured run's window that holds the traced work
  std::vector<std::string> phases;  ///< phase names (empty: the trace's annotations that are windows of the measured run)
  std::string from;                 ///< an earlier engine output instead of running the engine
  std::string engine;               ///< the engine (empty: $JOULEPROF_REPLAY_ENGINE, else jouleprof-replay beside jouleprof)
  std::string keep_measurements;    ///< save the engine's output here (for `from`)
  /// How the replay session is measured (GPU backend, idle baseline, progress, invocation); the
  /// engine's command and the tag replay=true are added.
  MeasureOptions measure;
  bool store = true;                ///< record the session with its result (a prediction `from` an earlier output has none)
  std::string db;                   ///< run store (empty: $JOULEPROF_DB, else the XDG data folder)
};

struct ReplayOutcome {
  KernelTable table;
  std::string plan;                             ///< the replay plan (JSON)
  std::optional<ReplayPrediction> prediction;   ///< absent: plan only
  std::optional<int64_t> run_id;                ///< where the session was stored
  std::optional<Error> store_error;             ///< predicted, but not stored
};

/// Runs the pipeline of `r`. Errors before the prediction (traces, rules, the measured run, the
/// engine, its output, the comparison) are returned; a store that fails after it is `store_error`.
Result<ReplayOutcome> replay_command(const ReplayRequest& r);

}  // namespace jouleprof
