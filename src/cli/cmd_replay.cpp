// `jouleprof replay TRACE... [--measured RUN]`: replays every unique kernel of a traced run in
// isolation on this GPU (jouleprof-replay), predicts the run's time and energy from the per-kernel
// figures, compares with a measured run of the same work and stores the result (docs/replay.md).
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "jouleprof/replay/replay_run.hpp"
#include "options.hpp"

namespace jouleprof::cli {
namespace {

struct ReplayFlags {
  ReplayRequest r;  // the flags of the pipeline (replay_run.hpp)
  std::string json, csv;
  MeasuringFlags measuring{.idle_s = 1.0};  // --device, --idle
  std::size_t top = 15;
  bool no_store = false, quiet = false;
};

int run(const ReplayFlags& f) {
  ReplayRequest r = f.r;
  r.plan_only = !r.plan_out.empty() && r.from.empty() && r.engine.empty() && r.measured.empty();  // --plan alone
  r.store = !f.no_store;
  r.measure.invocation = invocation();
  if (auto a = apply_measuring_flags(f.measuring, r.measure); !a) return report(a.error());
  const bool quiet = f.quiet || global_flags().quiet;
  if (!quiet) r.measure.progress = [](const std::string& line) { std::cerr << "jouleprof: " << line << "\n"; };
  auto out = replay_command(r);
  if (!out) return report(out.error());
  if (!out->prediction) return 0;  // the plan only
  const ReplayPrediction& p = *out->prediction;
  int rc = 0;
  if (!f.json.empty()) {
    if (auto w = write_output(f.json, replay_json(out->table, p)); !w) rc = report(w.error());
  }
  if (!f.csv.empty()) {
    if (auto w = write_output(f.csv, replay_csv(out->table, p)); !w) rc = report(w.error());
  }
  if (out->store_error) {
    rc = report(*out->store_error);
  } else if (out->run_id && !quiet) {
    std::cerr << fmt::format("jouleprof: stored as run {}\n", *out->run_id);
  }
  if (!quiet) (is_stdout(f.json) || is_stdout(f.csv) ? std::cerr : std::cout) << replay_text(out->table, p, f.top);
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
  c->add_option("trace", f->r.traces, "trace file(s)")->required();
  c->add_option("--measured", f->r.measured, "a measured run of the same work: run id, 'last', 'last~N' or a result JSON file");
  c->add_option("--window", f->r.window, "the measured run's window that holds the traced work")->capture_default_str();
  c->add_option("--from", f->r.from, "use this earlier output of jouleprof-replay instead of replaying now");
  c->add_option("--plan", f->r.plan_out, "write the replay plan (JSON) here; alone: only the plan");
  c->add_option("--keep-measurements", f->r.keep_measurements, "save the engine's per-kernel measurements here (for --from)");
  c->add_option("--engine", f->r.engine, "the replay engine (default: jouleprof-replay beside jouleprof)");
  add_json_option(c, f->json, "the per-kernel and per-tier tables and the comparison as JSON");
  c->add_option("--csv", f->csv, "the per-kernel table as CSV ('-': stdout)");
  c->add_option("--db", f->r.db, "run store (default: $JOULEPROF_DB, else the XDG data folder)");
  c->add_flag("--no-store", f->no_store, "do not record the replay session and its result in the run store");
  add_measuring_flags(c, f->measuring, {.gpus = false, .idle_from = false, .nvml_lib = false, .sim_power = false, .sim_scenario = false,
                                        .no_cpu = false, .device_help = "GPU backend measuring the replay session: {}",
                                        .idle_help = "seconds of idle baseline before the replay session"});
  c->add_option("--phase", f->r.phases, "a phase: the trace's record_function ranges and the measured run's windows of this name "
                                     "(repeatable; default: the names the trace and the measured run share)");
  checked(c->add_option("--context-activities", f->r.options.context_activities,
                        "activities of the trace replayed in sequence with their gaps (the gaps' power in context)"),
          IntRange{.min = 1, .max = 200000})->capture_default_str();
  checked(c->add_option("--context-trials", f->r.options.context_trials,
                        "trials of >= 1 s of the context replay (more: a narrower band on the gaps' power, which the prediction's +- shows)"),
          IntRange{.min = 2, .max = 60})->capture_default_str();
  checked(c->add_option("--ci-target", f->r.options.ci_target, "per-kernel energy CI half-width sought (kernels >= 10 us): longer trials until met"),
          DoubleRange{.min = 0.001, .max = 1.0})->capture_default_str();
  checked(c->add_option("--long-trial-s", f->r.options.long_trial_s, "seconds per trial when the CI target is not met with --trial-s"),
          DoubleRange{.min = 0.05, .max = 60.0})->capture_default_str();
  c->add_option("--classes", f->r.classes, "extra kernel class rules (CLASS<TAB>REGEX)");
  c->add_option("--tiers", f->r.tiers, "replay tier rules instead of the built-in data/replay-tiers.tsv");
  checked(c->add_option("--coverage", f->r.options.coverage, "replay rows, longest first, until this share of GPU time"),
          DoubleRange{.min = 0.0, .max = 1.0})->capture_default_str();
  checked(c->add_option("--max-rows", f->r.options.max_rows, "replay at most this many rows"), IntRange{.min = 1, .max = 100000})->capture_default_str();
  checked(c->add_option("--trials", f->r.options.trials, "trials per kernel"), IntRange{.min = 2, .max = 60})->capture_default_str();
  checked(c->add_option("--trial-s", f->r.options.trial_s, "seconds per trial"), DoubleRange{.min = 0.05, .max = 60.0})->capture_default_str();
  checked(c->add_option("--warmup-s", f->r.options.warmup_s, "warm-up seconds before the first kernel"), DoubleRange{.min = 0.0, .max = 600.0})
      ->capture_default_str();
  checked(c->add_option("--top", f->top, "rows to print"), IntRange{.min = 0, .max = 1000000})->capture_default_str();
  c->add_flag("-q,--quiet", f->quiet, "print nothing but errors");
  return [f] { return run(*f); };
}

const bool registered = register_command(add_replay);

}  // namespace
}  // namespace jouleprof::cli
