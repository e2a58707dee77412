// `jouleprof replay` as one library call (replay_run.hpp): plan → engine → predict → compare →
// store. Moved out of the CLI so that the Python package predicts through the same steps.
#include "jouleprof/replay/replay_run.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "jouleprof/core/files.hpp"
#include "jouleprof/core/self_exe.hpp"
#include "jouleprof/store/run_source.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof {
namespace {

namespace fs = std::filesystem;

fs::path engine_path(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("JOULEPROF_REPLAY_ENGINE"); env != nullptr && *env != '\0') return env;
  const fs::path dir = self_exe_dir();
  return dir.empty() ? fs::path("jouleprof-replay") : dir / "jouleprof-replay";
}

Result<KernelTable> load_table(const ReplayRequest& r) {
  auto classes = KernelClassifier::load_default(r.classes);
  if (!classes) return classes.error();
  auto tiers = KernelClassifier::load(r.tiers.empty() ? default_replay_tiers_path() : r.tiers);
  if (!tiers) return tiers.error();
  KernelTableOptions o;
  o.classes = &*classes;
  o.tiers = &*tiers;
  return read_kernel_table(r.traces, o);
}

struct EngineRun {
  std::string measurements;  ///< the engine's output JSON
  Measurement m;             ///< the replay session, measured like any workload (stored with the result)
};

// A temporary folder, removed with everything in it.
struct TempDir {
  fs::path d;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  explicit TempDir(fs::path p) : d(std::move(p)) {}
  ~TempDir() {
    std::error_code e;
    fs::remove_all(d, e);
  }
};

// Runs the engine on the plan under the measurement core (its whole session measured and stored
// as the run that carries the replay section); returns its output and that measurement.
Result<EngineRun> run_engine(const ReplayRequest& r, const std::string& plan) {
  const fs::path engine = engine_path(r.engine);
  std::error_code ec;
  if (!r.engine.empty() && !fs::exists(engine, ec)) return make_error(Errc::invalid_argument, "no replay engine at " + r.engine);
  if (r.engine.empty() && !fs::exists(engine, ec)) {
    return make_error(Errc::unavailable, "the replay engine (jouleprof-replay) is not installed beside jouleprof; it is built where nvcc "
                                         "is found (give --engine PATH, or --from FILE with its earlier output; without a GPU, "
                                         "--plan FILE writes the replay plan)");
  }
  char dir_tmpl[] = "/tmp/jouleprof-replay-XXXXXX";
  if (mkdtemp(dir_tmpl) == nullptr) return make_error(Errc::io, "cannot create a temporary directory");
  const TempDir dir{fs::path(dir_tmpl)};
  const std::string plan_file = (dir.d / "plan.json").string(), out_file = (dir.d / "measurements.json").string();
  if (auto w = write_file_atomic(plan_file, plan); !w) return w.error();
  MeasureOptions o = r.measure;
  o.command = {engine.string(), plan_file, out_file};
  o.tags["replay"] = "true";
  // The engine runs the trace's kernels on an NVIDIA GPU; --device sim simulates only the sensors.
  static const std::string kNoGpu = "replay runs the trace's kernels on an NVIDIA GPU (--device sim simulates only the power "
                                    "sensors); without a GPU, --plan FILE writes the replay plan and --from FILE reads an "
                                    "earlier engine output";
  const bool sim = o.monitor.gpus.backend == "sim";
  auto m = run_measure(o);
  if (!m) {
    Error e = m.error();
    if (const auto at = e.message.find(" (use --device sim"); at != std::string::npos) e.message = e.message.substr(0, at) + ": " + kNoGpu;
    return e;
  }
  if (m->exit_code != 0) {
    return make_error(m->exit_code == 3 || sim ? Errc::unavailable : Errc::internal,
                      fmt::format("the replay engine failed (exit {}): see its messages above{}", m->exit_code,
                                  sim ? "; " + kNoGpu : std::string()));
  }
  auto text = read_text_file(out_file);
  if (!text) return text.error();
  return EngineRun{*text, std::move(*m)};
}

// The engine's output: run now (the session kept for the store), or read from an earlier run.
Result<std::string> engine_output(const ReplayRequest& r, const std::string& plan, std::optional<EngineRun>& session) {
  if (!r.from.empty()) return read_text_file(r.from);
  auto e = run_engine(r, plan);
  if (!e) return e.error();
  session = std::move(*e);
  if (!r.keep_measurements.empty()) {
    if (auto w = write_file_atomic(r.keep_measurements, session->measurements); !w) return w.error();
  }
  return session->measurements;
}

// Phases: the named ones, else the trace's annotations that are also windows of the measured run.
void add_phases(const ReplayRequest& r, const KernelTable& t, const LoadedRun* measured, ReplayPrediction& p) {
  std::vector<std::string> names = r.phases;
  if (names.empty() && measured != nullptr) names = common_phase_names(t, measured->m, r.window);
  std::vector<std::string> missing;
  predict_phases(t, p, names, missing);
  for (const std::string& n : missing) p.warnings.push_back("phase '" + n + "': the trace has no record_function range of that name");
  if (measured != nullptr) compare_phases(p, measured->m);
}

// The run store keeps the replay session (a measurement of the engine's run) with the result as
// its "replay" section.
void store_session(const ReplayRequest& r, EngineRun& session, const LoadedRun* measured, ReplayOutcome& out) {
  Measurement& m = session.m;
  m.tags["replay.trace"] = r.traces.front();
  if (measured != nullptr) m.tags["replay.measured"] = measured->label;
  m.sections["replay"] = replay_json(out.table, *out.prediction);
  StoreOptions so;
  so.db_path = r.db;
  so.source = "replay";
  auto id = record_measurement(m, so);
  if (id) {
    out.run_id = *id;
  } else {
    out.store_error = id.error();
  }
}

}  // namespace

Result<ReplayOutcome> replay_command(const ReplayRequest& r) {
  if (r.traces.empty()) return make_error(Errc::invalid_argument, "replay needs at least one trace");
  ReplayOutcome out;
  auto table = load_table(r);
  if (!table) return table.error();
  out.table = std::move(*table);
  out.plan = replay_plan_json(out.table, r.options);
  if (!r.plan_out.empty()) {
    if (auto w = write_file_atomic(r.plan_out, out.plan); !w) return w.error();
  }
  if (r.plan_only) return out;
  // Load the measured run first: a wrong reference fails before minutes of replay.
  std::optional<LoadedRun> measured;
  if (!r.measured.empty()) {
    auto runs = load_runs({r.measured}, r.db, false);
    if (!runs) return runs.error();
    measured = std::move(runs->front());
  }
  std::optional<EngineRun> session;
  auto measurements = engine_output(r, out.plan, session);
  if (!measurements) return measurements.error();
  auto p = predict_from_replay(out.table, *measurements);
  if (!p) return p.error();
  const LoadedRun* ref = measured ? &*measured : nullptr;
  if (ref != nullptr) {
    if (auto c = compare_with_measurement(*p, ref->m, ref->label, r.window); !c) return c.error();
  }
  add_phases(r, out.table, ref, *p);
  out.prediction = std::move(*p);
  // A prediction recomputed from an earlier output has no session to store.
  if (r.store && session) store_session(r, *session, ref, out);
  return out;
}

}  // namespace jouleprof
