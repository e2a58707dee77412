// `jouleprof trace [measure options] -- CMD ARGS...`: measure a command while the CUPTI injection
// library records its kernels, copies and NVTX ranges; attribute the measured energy to them.
// `jouleprof trace --from RUN`: the same tables and outputs for a traced run of the store, with
// other attribution options, without running anything (one path from the placed trace on).
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "jouleprof/analysis/trace_profile.hpp"
#include "jouleprof/core/parse.hpp"
#include "jouleprof/measure/output.hpp"
#include "jouleprof/measure/trace_run.hpp"
#include "jouleprof/report/trace.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof::cli {
namespace {

// --sample: "10%" or "10".
Result<double> parse_percent(std::string text) {
  if (!text.empty() && text.back() == '%') text.pop_back();
  double p = 0;
  if (!parse_finite_double(text, p)) return make_error(Errc::invalid_argument, "--sample takes a percentage such as 10%, got '" + text + "'");
  return p;
}

struct TraceFlags {
  MeasuringFlags measuring;  // --device, --gpus, --idle, --idle-from, --nvml-lib, --sim-power, --no-cpu
  double period_ms = 100;
  std::vector<std::string> tags;
  std::string json, csv, kernels, perfetto, keep_dir;
  std::string method;  ///< empty: replay where --replay is given, else split
  std::string replay;  ///< replayed kernels: `jouleprof replay --json` output, or a stored replay run
  std::string classes;
  std::optional<double> lag_ms, window_ms;  ///< either given: the sensor model as given, not fitted
  double min_interval_ms = 100;
  std::size_t top = 10, path_depth = 0;
  std::string inject_lib, cupti_lib;
  std::string db;
  bool record_sync = false, record_launches = false, no_store = false, quiet = false;
  std::string cuda_graph_trace = "graph";
  std::vector<std::string> command;
  std::string sample;                   ///< --sample P%: kernels traced P% of each period
  double sample_period_s = 1;
  std::string from;                     ///< a stored run to attribute again
  std::vector<CLI::Option*> run_only;   ///< options of running a command (refused with --from)
};

// The outputs of a traced or re-attributed run, then the summary and tables.
int print_outputs(const TraceFlags& f, TracedRun& r, int rc) {
  if (!f.json.empty()) {
    if (auto w = write_result_json(r.m, f.json); !w) rc = report(w.error());
  }
  if (!f.kernels.empty()) {
    if (auto w = write_unique_kernels(r.profile.kernels, f.kernels); !w) rc = report(w.error());
  }
  if (f.csv == "-") {
    std::cout << unique_kernel_csv(r.profile.kernels);
  } else if (!f.csv.empty()) {
    std::ofstream out(f.csv, std::ios::binary);
    out << unique_kernel_csv(r.profile.kernels);
    if (!out) rc = report(make_error(Errc::io, "cannot write " + f.csv));
  }
  if (!f.perfetto.empty()) {
    const std::vector<TraceSlice> slices = trace_slices(r.m, r.trace);
    TraceOptions to;
    to.slices = &slices;
    if (auto w = write_chrome_trace(r.m, f.perfetto, to); !w) rc = report(w.error());
  }
  if (r.store_error) {
    const int e = report(*r.store_error);
    if (rc == 0) rc = e;
  } else if (r.run_id && !f.quiet) {
    std::cerr << "jouleprof: recorded as run " << *r.run_id << " with " << r.stored_activities << " activities in " << resolve_db_path(f.db)
              << "\n";
  }
  if (!f.quiet) {
    // The trace's warnings once: the trace text below prints them, so the summary does not.
    Measurement shown = r.m;
    std::erase_if(shown.warnings, [](const std::string& w) { return w.rfind("trace: ", 0) == 0; });
    print_summary(shown, std::cout);
    std::cout << trace_profile_text(r.profile, f.top);
  }
  // A trace that recorded nothing is a failed trace, not a result (issue 35 item 7), stored or not;
  // `--from` re-attributes a stored run and says what it finds.
  if (f.from.empty() && r.trace.activities.empty() && rc == 0) {
    rc = report(make_error(f.measuring.device == "sim" ? Errc::unavailable : Errc::unsupported,
                           "nothing was traced: the command recorded no CUDA activity (it never used a GPU through CUDA" +
                               std::string(f.measuring.device == "sim" ? "; --device sim simulates only the power sensors, and tracing "
                                                               "needs a CUDA GPU" : "") +
                               ")" + std::string(r.run_id ? "; the measurement itself was stored" : "")));
  }
  return rc;
}

// Flags → the library's options (the attribution's, and running the command's).
Result<TraceRunOptions> run_options(const TraceFlags& f) {
  TraceRunOptions o;
  o.profile.method = f.method;
  if (f.lag_ms || f.window_ms) {
    o.profile.fit_sensor = false;
    if (f.lag_ms) o.profile.sensor.lag_s = *f.lag_ms / 1000.0;
    if (f.window_ms) o.profile.sensor.window_s = *f.window_ms / 1000.0;
  }
  o.profile.min_interval_s = f.min_interval_ms / 1000.0;
  o.profile.path_depth = f.path_depth;
  o.replay = f.replay;
  o.store = !f.no_store;
  o.store_options.db_path = f.db;
  auto classes = KernelClassifier::load_default(f.classes);
  if (!classes) return classes.error();
  o.classes = std::move(*classes);
  if (!f.from.empty()) return o;
  if (!f.sample.empty()) {
    auto p = parse_percent(f.sample);
    if (!p) return p.error();
    if (auto c = check_sampling(*p, f.sample_period_s); !c) return c.error();
    o.sample_percent = *p;
  }
  o.sample_period_s = f.sample_period_s;
  o.inject_lib = f.inject_lib;
  o.cupti_lib = f.cupti_lib;
  o.keep_dir = f.keep_dir;
  o.record_sync = f.record_sync;
  o.record_launches = f.record_launches;
  o.graph_nodes = f.cuda_graph_trace == "node";
  o.measure.command = f.command;
  o.measure.invocation = invocation();
  if (auto a = apply_measuring_flags(f.measuring, o.measure); !a) return a.error();
  o.measure.monitor.sampler.fast_period_s = f.period_ms / 1000.0;
  auto tags = parse_tags(f.tags);
  if (!tags) return tags.error();
  o.measure.tags = std::move(*tags);
  if (!f.quiet) o.measure.progress = [](const std::string& s) { std::cerr << "jouleprof: " << s << "\n"; };
  return o;
}

int run(TraceFlags f) {
  if (!command_after_dashes().empty()) f.command = command_after_dashes();
  if (!f.from.empty()) {
    if (!f.command.empty()) return report(make_error(Errc::invalid_argument, "--from attributes a stored run again: give no command after --"));
    for (const CLI::Option* o : f.run_only) {
      if (o->count() > 0) {
        return report(make_error(Errc::invalid_argument, o->get_name() + " is an option of running a command; --from runs nothing"));
      }
    }
  } else if (f.command.empty()) {
    return report(make_error(Errc::invalid_argument, "give the command to trace after -- (or a stored run with --from RUN)"));
  }
  if (!f.method.empty() && !make_attribution_method(f.method)) {
    return report(make_error(Errc::invalid_argument, "--method must be " + attribution_method_choices() + ", got '" + f.method + "'"));
  }
  if (f.method == "replay" && f.replay.empty()) {
    return report(make_error(Errc::invalid_argument, "--method replay needs the run's kernels replayed: give --replay FILE"));
  }
  auto o = run_options(f);
  if (!o) return report(o.error());
  if (!f.from.empty()) {
    auto r = trace_stored_run(f.from, std::move(*o));
    if (!r) return report(r.error());
    if (!f.quiet) std::cerr << "jouleprof: " << r->label << " attributed again from " << resolve_db_path(f.db) << " (nothing run, nothing stored)\n";
    return print_outputs(f, *r, 0);
  }
  auto r = trace_command(std::move(*o));
  if (!r) return report(r.error());
  int rc = print_outputs(f, *r, r->m.exit_code);
  // A trace that recorded nothing is a failed trace, not a result (issue 35 item 7).
  if (!f.no_store && r->trace.activities.empty() && rc == 0) {
    rc = report(make_error(f.measuring.device == "sim" ? Errc::unavailable : Errc::unsupported,
                           "nothing was traced: the command recorded no CUDA activity (it never used a GPU through CUDA" +
                               std::string(f.measuring.device == "sim" ? "; --device sim simulates only the power sensors, and tracing "
                                                                         "needs a CUDA GPU" : "") +
                               "); the measurement itself was kept"));
  }
  return rc;
}

// The registry's methods, one line each, for --help.
std::string method_help() {
  std::string s;
  for (const AttributionMethodEntry& e : attribution_methods()) s += fmt::format("  {:<11} {}\n", e.name, e.help);
  return s;
}

Runner add_trace(CLI::App& app) {
  auto f = std::make_shared<TraceFlags>();
  CLI::App* c = app.add_subcommand("trace", "Measure a CUDA program and attribute its energy to kernels, classes, NVTX ranges and phases");
  c->footer(
      "Examples:\n"
      "  jouleprof trace -- python generate.py\n"
      "  jouleprof trace --kernels kernels.jsonl --perfetto run.trace.json --json run.json -- ./my_app\n"
      "  jouleprof trace --from last --method regression --lag-ms 30   (the stored run again, nothing run)\n"
      "  jouleprof trace --from last --replay replay.json   (replay-informed: each kernel's replayed energy)\n"
      "  jouleprof trace --sample 10% -- python generate.py   (kernels recorded 10% of each second)\n"
      "The program is not changed: CUDA loads the CUPTI injection library (CUDA_INJECTION64_PATH) into it and\n"
      "every child process. Every table row has one estimate and an interval covering the methods' spread,\n"
      "their uncertainty and the sensor's limits. Methods (all computed per class; --method picks the tables'):\n" +
      method_help() + "docs/trace.md.");
  add_measuring_flags(c, f->measuring, {.sim_scenario = false, .idle_help = "seconds of idle baseline before the run (0: none)"});
  checked(c->add_option("--period-ms", f->period_ms, "sampler period"), DoubleRange{.min = 10, .max = 2000})->capture_default_str();
  c->add_option("--tag", f->tags, "KEY=VALUE recorded with the result (repeatable)");
  c->add_option("--json", f->json, "write the result JSON (with its \"trace\" section) here ('-': stdout)");
  c->add_option("--csv", f->csv, "write the unique-kernel table as CSV here ('-': stdout)");
  c->add_option("--kernels", f->kernels, "write the unique-kernel table here: JSON Lines, or CSV for a .csv name");
  c->add_option("--perfetto", f->perfetto, "write a Chrome/Perfetto trace with kernel slices and NVTX ranges here");
  c->add_option("--keep-trace", f->keep_dir, "keep the per-process trace files in this directory");
  c->add_option("--method", f->method,
                "attribution method of the tables: " + attribution_method_choices() + " (default: replay with --replay, else split)");
  c->add_option("--replay", f->replay,
                "the run's kernels replayed in isolation (`jouleprof replay --json` output, or its stored run): replay-informed tables");
  c->add_flag("--record-sync", f->record_sync,
              "also record CUDA synchronisation (cudaStreamSynchronize, events): costs up to ~40% on launch-bound programs");
  c->add_flag("--record-launches", f->record_launches,
              "also record every launch call: ties kernels to NVTX ranges opened on other threads than their launch, "
              "and checks the range anchors (costs ~10% on launch-bound programs)");
  c->add_option("--cuda-graph-trace", f->cuda_graph_trace,
                 "graph: one record per CUDA graph launch (its kernels not listed one by one; cheapest); node: each node's "
                 "kernel (~0.3 us more per node and launch, H200)")
      ->check(CLI::IsMember({"graph", "node"}))
      ->capture_default_str();
  c->add_option("--sample", f->sample,
                "sampled mode: record kernels and copies only P% of each --sample-period (e.g. 10%), NVTX ranges always; the tables "
                "apply the traced windows' shares to the whole run's energy. Records the devices' primary contexts (the CUDA "
                "runtime's: PyTorch, JAX); a context made with cuCtxCreate is not recorded");
  checked(c->add_option("--sample-period", f->sample_period_s, "sampled mode's period in seconds (NVML's power samples are 20-100 ms)"),
          DoubleRange{.min = 0.05, .max = 3600})->capture_default_str();
  c->add_option("--classes", f->classes, "extra kernel-class rules (CLASS<TAB>REGEX lines), tried before the built-in ones");
  // Sensor models of seconds, not of 1e35 ms (issue 22).
  checked(c->add_option("--lag-ms", f->lag_ms,
                         "sensor lag modelled by split/regression/interval (default: fitted to each GPU's samples, with the window)"),
          DoubleRange{.min = -1000, .max = 10000});
  checked(c->add_option("--window-ms", f->window_ms,
                         "sensor averaging window modelled by split/regression (default: fitted, with the lag)"),
          DoubleRange{.min = 0, .max = 10000});
  checked(c->add_option("--min-interval-ms", f->min_interval_ms, "interval method: shortest busy stretch integrated directly"),
          DoubleRange{.min = 0, .max = 3600000, .min_exclusive = true})->capture_default_str();
  checked(c->add_option("--top", f->top, "rows per summary table"), IntRange{.min = 1, .max = 1000000})->capture_default_str();
  checked(c->add_option("--path-depth", f->path_depth, "NVTX path levels kept in the by-path table (0: all)"), IntRange{.min = 0, .max = 1000})
      ->capture_default_str();
  c->add_option("--inject-lib", f->inject_lib, "the injection library (default: libjouleprof_inject.so beside jouleprof, or $JOULEPROF_INJECT_LIB)");
  c->add_option("--cupti-lib", f->cupti_lib, "libcupti to load (default: $JOULEPROF_CUPTI_LIB, else the CUDA toolkit's)");
  c->add_option("--db", f->db, "run store to record into, or to read --from (default: $JOULEPROF_DB, else the XDG data folder)");
  c->add_flag("--no-store", f->no_store, "do not record the run in the run store");
  c->add_flag("-q,--quiet", f->quiet, "no progress and no summary");
  c->add_option("--from", f->from,
                "attribute a traced run of the store again (ID, last or last~N) with the options given: nothing is run or stored");
  c->add_option("command", f->command, "the program and its arguments, after --")->expected(-1);
  for (const char* name : {"--device", "--gpus", "--idle", "--idle-from", "--period-ms", "--tag", "--keep-trace", "--record-sync",
                           "--record-launches", "--cuda-graph-trace", "--sample", "--sample-period", "--inject-lib", "--cupti-lib", "--nvml-lib", "--sim-power",
                           "--no-cpu"}) {
    f->run_only.push_back(c->get_option(name));
  }
  return [f] { return run(*f); };
}

const bool registered = register_command(add_trace);

}  // namespace
}  // namespace jouleprof::cli
