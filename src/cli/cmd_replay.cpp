// `jouleprof replay TRACE... [--measured RUN]`: replays every unique kernel of a traced run in
// isolation on this GPU (jouleprof-replay), predicts the run's time and energy from the per-kernel
// figures, compares with a measured run of the same work and stores the result (docs/replay.md).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "jouleprof/core/self_exe.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/measure/measure.hpp"
#include "jouleprof/replay/replay.hpp"
#include "jouleprof/store/run_source.hpp"
#include "jouleprof/store/store.hpp"
#include "options.hpp"

namespace jouleprof::cli {
namespace {

namespace fs = std::filesystem;

struct ReplayFlags {
  std::vector<std::string> traces, phases;
  std::string measured, window = "work", from, plan_out, engine, json, csv, db, classes, tiers, keep;
  ReplayOptions o;
  MeasuringFlags measuring{.idle_s = 1.0};  // --device, --idle
  std::size_t top = 15;
  bool no_store = false, quiet = false;
};

fs::path engine_path(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("JOULEPROF_REPLAY_ENGINE"); env != nullptr && *env != '\0') return env;
  const fs::path dir = self_exe_dir();
  return dir.empty() ? fs::path("jouleprof-replay") : dir / "jouleprof-replay";
}

Result<std::string> read_file(const std::string& path) { return read_text_file(path); }  // bounded (core/files)

Result<KernelTable> load_table(const ReplayFlags& f) {
  auto classes = KernelClassifier::load_default(f.classes);
  if (!classes) return classes.error();
  auto tiers = KernelClassifier::load(f.tiers.empty() ? default_replay_tiers_path() : f.tiers);
  if (!tiers) return tiers.error();
  KernelTableOptions o;
  o.classes = &*classes;
  o.tiers = &*tiers;
  return read_kernel_table(f.traces, o);
}

struct EngineRun {
  std::string measurements;  ///< the engine's output JSON
  Measurement m;             ///< the replay session, measured like any workload (stored with the result)
};

// Runs the engine on the plan under the measurement core (its whole session measured and stored
// as the run that carries the replay section); returns its output and that measurement.
Result<EngineRun> run_engine(const ReplayFlags& f, const std::string& plan) {
  const fs::path engine = engine_path(f.engine);
  std::error_code ec;
  if (!f.engine.empty() && !fs::exists(engine, ec)) return make_error(Errc::invalid_argument, "no replay engine at " + f.engine);
  if (f.engine.empty() && !fs::exists(engine, ec)) {
    return make_error(Errc::unavailable, "the replay engine (jouleprof-replay) is not installed beside jouleprof; it is built where nvcc "
                                         "is found (give --engine PATH, or --from FILE with its earlier output; without a GPU, "
                                         "--plan FILE writes the replay plan)");
  }
  char dir_tmpl[] = "/tmp/jouleprof-replay-XXXXXX";
  if (mkdtemp(dir_tmpl) == nullptr) return make_error(Errc::io, "cannot create a temporary directory");
  const fs::path dir = dir_tmpl;
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(d, e);
    }
  } cleanup{dir};
  const std::string plan_file = (dir / "plan.json").string(), out_file = (dir / "measurements.json").string();
  if (auto w = write_output(plan_file, plan); !w) return w.error();
  MeasureOptions o;
  o.command = {engine.string(), plan_file, out_file};
  o.invocation = invocation();
  if (auto a = apply_measuring_flags(f.measuring, o); !a) return a.error();
  o.tags["replay"] = "true";
  if (!f.quiet && !global_flags().quiet) o.progress = [](const std::string& line) { std::cerr << "jouleprof: " << line << "\n"; };
  // The engine runs the trace's kernels on an NVIDIA GPU; --device sim simulates only the sensors.
  static const std::string kNoGpu = "replay runs the trace's kernels on an NVIDIA GPU (--device sim simulates only the power "
                                    "sensors); without a GPU, --plan FILE writes the replay plan and --from FILE reads an "
                                    "earlier engine output";
  auto m = run_measure(o);
  if (!m) {
    Error e = m.error();
    if (const auto at = e.message.find(" (use --device sim"); at != std::string::npos) e.message = e.message.substr(0, at) + ": " + kNoGpu;
    return e;
  }
  if (m->exit_code != 0) {
    return make_error(m->exit_code == 3 || f.measuring.device == "sim" ? Errc::unavailable : Errc::internal,
                      fmt::format("the replay engine failed (exit {}): see its messages above{}", m->exit_code,
                                  f.measuring.device == "sim" ? "; " + kNoGpu : std::string()));
  }
  auto text = read_file(out_file);
  if (!text) return text.error();
  return EngineRun{*text, std::move(*m)};
}

int run(const ReplayFlags& f) {
  auto table = load_table(f);
  if (!table) return report(table.error());
  const std::string plan = replay_plan_json(*table, f.o);
  if (!f.plan_out.empty()) {
    if (auto w = write_output(f.plan_out, plan); !w) return report(w.error());
    if (f.from.empty() && f.engine.empty() && f.measured.empty()) return 0;  // the plan only
  }
  // Load the measured run first: a wrong reference fails before minutes of replay.
  std::optional<LoadedRun> measured;
  if (!f.measured.empty()) {
    auto runs = load_runs({f.measured}, f.db, false);
    if (!runs) return report(runs.error());
    measured = std::move(runs->front());
  }
  std::optional<EngineRun> engine_run;
  std::string measurements;
  if (f.from.empty()) {
    auto r = run_engine(f, plan);
    if (!r) return report(r.error());
    engine_run = std::move(*r);
    measurements = engine_run->measurements;
    if (!f.keep.empty()) {
      if (auto w = write_output(f.keep, measurements); !w) return report(w.error());
    }
  } else {
    auto r = read_file(f.from);
    if (!r) return report(r.error());
    measurements = std::move(*r);
  }
  auto p = predict_from_replay(*table, measurements);
  if (!p) return report(p.error());
  if (measured) {
    if (auto c = compare_with_measurement(*p, measured->m, measured->label, f.window); !c) return report(c.error());
  }
  // Phases: the named ones, else the trace's annotations that are also windows of the measured run.
  {
    std::vector<std::string> names = f.phases;
    if (names.empty() && measured) names = common_phase_names(*table, measured->m, f.window);
    std::vector<std::string> missing;
    predict_phases(*table, *p, names, missing);
    for (const std::string& n : missing) p->warnings.push_back("phase '" + n + "': the trace has no record_function range of that name");
    if (measured) compare_phases(*p, measured->m);
  }
  int rc = 0;
  const std::string json = replay_json(*table, *p);
  if (!f.json.empty()) {
    if (auto w = write_output(f.json, json); !w) rc = report(w.error());
  }
  if (!f.csv.empty()) {
    if (auto w = write_output(f.csv, replay_csv(*table, *p)); !w) rc = report(w.error());
  }
  // The run store keeps the replay session (a measurement of the engine's run) with the result
  // as its "replay" section. A prediction recomputed --from an earlier output has no session.
  if (!f.no_store && engine_run) {
    Measurement& m = engine_run->m;
    m.tags["replay.trace"] = f.traces.front();
    if (measured) m.tags["replay.measured"] = measured->label;
    m.sections["replay"] = json;
    StoreOptions so;
    so.db_path = f.db;
    so.source = "replay";
    auto id = record_measurement(m, so);
    if (!id) {
      rc = report(id.error());
    } else if (!f.quiet && !global_flags().quiet) {
      std::cerr << fmt::format("jouleprof: stored as run {}\n", *id);
    }
  }
  if (!f.quiet && !global_flags().quiet) {
    (is_stdout(f.json) || is_stdout(f.csv) ? std::cerr : std::cout) << replay_text(*table, *p, f.top);
  }
  return rc;
}

Runner add_replay(CLI::App& app) {
  auto f = std::make_shared<ReplayFlags>();
  CLI::App* c = app.add_subcommand("replay", "Replay a traced run's kernels in isolation: per-kernel energy and a whole-run prediction");
  c->footer("TRACE as for `jouleprof kernels`. Each unique kernel is re-created (cuBLASLt GEMMs with the traced shapes, copies,\n"
            "memory-bound proxies; time-matched proxies where the trace has no shapes) and repeated in CUDA graphs for N trials\n"
            "of ≥ 10 power-sample periods; predicted run = Σ count × per-call figures + the trace's GPU-idle time at the\n"
            "power of the gaps in context (the trace's own sequence replayed with its gaps, minus the kernels' isolated energy).\n"
            "--measured RUN compares with a measured run's window (default 'work') and, per phase, its windows named as the\n"
            "trace's record_function ranges (prefill, decode ...).");
  c->add_option("trace", f->traces, "trace file(s)")->required();
  c->add_option("--measured", f->measured, "a measured run of the same work: run id, 'last', 'last~N' or a result JSON file");
  c->add_option("--window", f->window, "the measured run's window that holds the traced work")->capture_default_str();
  c->add_option("--from", f->from, "use this earlier output of jouleprof-replay instead of replaying now");
  c->add_option("--plan", f->plan_out, "write the replay plan (JSON) here; alone: only the plan");
  c->add_option("--keep-measurements", f->keep, "save the engine's per-kernel measurements here (for --from)");
  c->add_option("--engine", f->engine, "the replay engine (default: jouleprof-replay beside jouleprof)");
  add_json_option(c, f->json, "the per-kernel and per-tier tables and the comparison as JSON");
  c->add_option("--csv", f->csv, "the per-kernel table as CSV ('-': stdout)");
  c->add_option("--db", f->db, "run store (default: $JOULEPROF_DB, else the XDG data folder)");
  c->add_flag("--no-store", f->no_store, "do not record the replay session and its result in the run store");
  add_measuring_flags(c, f->measuring, {.gpus = false, .idle_from = false, .nvml_lib = false, .sim_power = false, .sim_scenario = false,
                                        .no_cpu = false, .device_help = "GPU backend measuring the replay session: {}",
                                        .idle_help = "seconds of idle baseline before the replay session"});
  c->add_option("--phase", f->phases, "a phase: the trace's record_function ranges and the measured run's windows of this name "
                                     "(repeatable; default: the names the trace and the measured run share)");
  checked(c->add_option("--context-activities", f->o.context_activities,
                        "activities of the trace replayed in sequence with their gaps (the gaps' power in context)"),
          IntRange{.min = 1, .max = 200000})->capture_default_str();
  checked(c->add_option("--context-trials", f->o.context_trials,
                        "trials of >= 1 s of the context replay (more: a narrower band on the gaps' power, which the prediction's +- shows)"),
          IntRange{.min = 2, .max = 60})->capture_default_str();
  checked(c->add_option("--ci-target", f->o.ci_target, "per-kernel energy CI half-width sought (kernels >= 10 us): longer trials until met"),
          DoubleRange{.min = 0.001, .max = 1.0})->capture_default_str();
  checked(c->add_option("--long-trial-s", f->o.long_trial_s, "seconds per trial when the CI target is not met with --trial-s"),
          DoubleRange{.min = 0.05, .max = 60.0})->capture_default_str();
  c->add_option("--classes", f->classes, "extra kernel class rules (CLASS<TAB>REGEX)");
  c->add_option("--tiers", f->tiers, "replay tier rules instead of the built-in data/replay-tiers.tsv");
  checked(c->add_option("--coverage", f->o.coverage, "replay rows, longest first, until this share of GPU time"),
          DoubleRange{.min = 0.0, .max = 1.0})->capture_default_str();
  checked(c->add_option("--max-rows", f->o.max_rows, "replay at most this many rows"), IntRange{.min = 1, .max = 100000})->capture_default_str();
  checked(c->add_option("--trials", f->o.trials, "trials per kernel"), IntRange{.min = 2, .max = 60})->capture_default_str();
  checked(c->add_option("--trial-s", f->o.trial_s, "seconds per trial"), DoubleRange{.min = 0.05, .max = 60.0})->capture_default_str();
  checked(c->add_option("--warmup-s", f->o.warmup_s, "warm-up seconds before the first kernel"), DoubleRange{.min = 0.0, .max = 600.0})
      ->capture_default_str();
  checked(c->add_option("--top", f->top, "rows to print"), IntRange{.min = 0, .max = 1000000})->capture_default_str();
  c->add_flag("-q,--quiet", f->quiet, "print nothing but errors");
  return [f] { return run(*f); };
}

const bool registered = register_command(add_replay);

}  // namespace
}  // namespace jouleprof::cli
