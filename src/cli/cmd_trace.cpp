// `jouleprof trace [measure options] -- CMD ARGS...`: measure a command while the CUPTI injection
// library records its kernels, copies and NVTX ranges; attribute the measured energy to them.
// `jouleprof trace --from RUN`: the same tables and outputs for a traced run of the store, with
// other attribution options, without running anything (one path from the placed trace on).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "jouleprof/core/files.hpp"
#include "exit_codes.hpp"
#include "jouleprof/core/self_exe.hpp"
#include "jouleprof/analysis/attribution_replay.hpp"
#include "jouleprof/analysis/trace_profile.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/analysis/trace_store.hpp"
#include "jouleprof/measure/measure.hpp"
#include "jouleprof/measure/output.hpp"
#include "jouleprof/report/trace.hpp"
#include "jouleprof/sensors/gpu_sensor.hpp"
#include "jouleprof/store/activities.hpp"
#include "jouleprof/store/run_source.hpp"
#include "jouleprof/store/store.hpp"
#include "jouleprof/trace/format.hpp"

namespace jouleprof::cli {
namespace {

namespace fs = std::filesystem;

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
  std::vector<std::string> command;
  std::string from;                     ///< a stored run to attribute again
  std::vector<CLI::Option*> run_only;   ///< options of running a command (refused with --from)
};

fs::path self_dir() { return self_exe_dir(); }

// The injection library: --inject-lib, $JOULEPROF_INJECT_LIB, else beside jouleprof (../lib, .).
std::string find_inject_lib(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* e = std::getenv("JOULEPROF_INJECT_LIB"); e != nullptr && e[0] != '\0') return e;
  std::error_code ec;
  for (const fs::path& p : {self_dir() / "../lib/libjouleprof_inject.so", self_dir() / "libjouleprof_inject.so"}) {
    if (fs::exists(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return "";
}

// CUPTI: --cupti-lib, $JOULEPROF_CUPTI_LIB, else the CUDA toolkit's usual places. NVTX's injection
// needs a path (NVTX_INJECTION64_PATH), so a soname is not enough.
std::string find_cupti(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* e = std::getenv(trace_format::kCuptiLibEnv); e != nullptr && e[0] != '\0') return e;
  std::vector<fs::path> dirs;
  if (const char* h = std::getenv("CUDA_HOME"); h != nullptr) {
    dirs.push_back(fs::path(h) / "lib64");
    dirs.push_back(fs::path(h) / "extras/CUPTI/lib64");
  }
  for (const char* d : {"/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                        "/usr/lib/x86_64-linux-gnu"}) {
    dirs.emplace_back(d);
  }
  std::error_code ec;
  for (const fs::path& d : dirs) {
    for (const char* n : {"libcupti.so", "libcupti.so.13", "libcupti.so.12"}) {
      if (fs::exists(d / n, ec)) return (d / n).string();
    }
  }
  return "";
}

// The tables and outputs of a placed trace: the same for a run just traced (`store`: record it)
// and a stored run read back (--from).
// --replay: a replay's output file (its JSON, or a result with its "replay" section), else a run
// of the store that holds one.
Result<ReplayReference> load_replay(const std::string& ref, const std::string& db) {
  std::error_code ec;
  if (fs::is_regular_file(ref, ec)) {
    auto text = read_text_file(ref);
    if (!text) return text.error();
    return parse_replay_reference(*text, ref);
  }
  auto runs = load_runs({ref}, db, false);
  if (!runs) return make_error(runs.error().code, "--replay " + ref + ": " + runs.error().message);
  const LoadedRun& r = runs->front();
  auto it = r.m.sections.find("replay");
  if (it == r.m.sections.end()) return make_error(Errc::invalid_argument, "--replay " + ref + ": " + r.label + " is not a replay (no replay section)");
  return parse_replay_reference(it->second, r.label);
}

int attribute(const TraceFlags& f, Measurement& m, TraceData& traced, const KernelClassifier& classes, int rc, bool store) {
  TraceProfileOptions po;
  po.method = f.method;
  std::optional<ReplayReference> replay;
  if (!f.replay.empty()) {
    auto r = load_replay(f.replay, f.db);
    if (!r) return report(make_error(r.error().code == Errc::parse ? Errc::invalid_argument : r.error().code, r.error().message));
    replay = std::move(*r);
    po.replay = &*replay;
  }
  if (f.lag_ms || f.window_ms) {
    po.fit_sensor = false;
    if (f.lag_ms) po.sensor.lag_s = *f.lag_ms / 1000.0;
    if (f.window_ms) po.sensor.window_s = *f.window_ms / 1000.0;
  }
  po.min_interval_s = f.min_interval_ms / 1000.0;
  po.path_depth = f.path_depth;
  auto profile = analyze_trace(m, traced, classes, po);
  if (!profile) return report(profile.error());

  if (!f.json.empty()) {
    if (auto w = write_result_json(m, f.json); !w) rc = report(w.error());
  }
  if (!f.kernels.empty()) {
    if (auto w = write_unique_kernels(profile->kernels, f.kernels); !w) rc = report(w.error());
  }
  if (f.csv == "-") {
    std::cout << unique_kernel_csv(profile->kernels);
  } else if (!f.csv.empty()) {
    std::ofstream out(f.csv, std::ios::binary);
    out << unique_kernel_csv(profile->kernels);
    if (!out) rc = report(make_error(Errc::io, "cannot write " + f.csv));
  }
  if (!f.perfetto.empty()) {
    const std::vector<TraceSlice> slices = trace_slices(m, traced);
    TraceOptions to;
    to.slices = &slices;
    if (auto w = write_chrome_trace(m, f.perfetto, to); !w) rc = report(w.error());
  }
  if (store) {
    StoreOptions so;
    so.db_path = f.db;
    so.source = "trace";
    if (auto id = record_measurement(m, so); !id) {
      const int e = report(id.error());
      if (rc == 0) rc = e;
    } else if (auto st = store_activities(resolve_db_path(f.db), *id, stored_activities(m, traced)); !st) {
      const int e = report(st.error());
      if (rc == 0) rc = e;
    } else if (!f.quiet) {
      std::cerr << "jouleprof: recorded as run " << *id << " with " << *st << " activities in " << resolve_db_path(f.db) << "\n";
    }
  }
  if (!f.quiet) {
    // The trace's warnings once: the trace text below prints them, so the summary does not.
    Measurement shown = m;
    std::erase_if(shown.warnings, [](const std::string& w) { return w.rfind("trace: ", 0) == 0; });
    print_summary(shown, std::cout);
    std::cout << trace_profile_text(*profile, f.top);
  }
  // A trace that recorded nothing is a failed trace, not a result (issue 35 item 7), stored or not;
  // `--from` re-attributes a stored run and says what it finds.
  if (f.from.empty() && traced.activities.empty() && rc == 0) {
    rc = report(make_error(f.measuring.device == "sim" ? Errc::unavailable : Errc::unsupported,
                           "nothing was traced: the command recorded no CUDA activity (it never used a GPU through CUDA" +
                               std::string(f.measuring.device == "sim" ? "; --device sim simulates only the power sensors, and tracing "
                                                               "needs a CUDA GPU" : "") +
                               ")" + std::string(store ? "; the measurement itself was stored" : "")));
  }
  return rc;
}

// --from RUN: the stored run, its activities and its trace section → the placed trace again.
int attribute_stored(const TraceFlags& f, const KernelClassifier& classes) {
  auto runs = load_runs({f.from}, f.db, true);
  if (!runs) return report(runs.error());
  LoadedRun& r = runs->front();
  if (r.id == 0) {
    return report(make_error(Errc::invalid_argument,
                             "--from " + f.from + ": a result file keeps no activities; give a run of the store (ID, last or last~N)"));
  }
  auto rows = load_activities(resolve_db_path(f.db), r.id);
  if (!rows) return report(rows.error());
  auto traced = trace_from_store(r.m, *rows);
  if (!traced) return report(make_error(traced.error().code, "cannot attribute " + r.label + " again: " + traced.error().message));
  // The trace warnings of its first analysis are given again by this one.
  std::erase_if(r.m.warnings, [](const std::string& w) { return w.rfind("trace: ", 0) == 0; });
  if (!f.quiet) std::cerr << "jouleprof: " << r.label << " attributed again from " << resolve_db_path(f.db) << " (nothing run, nothing stored)\n";
  return attribute(f, r.m, *traced, classes, 0, false);
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
  auto classes = KernelClassifier::load(default_kernel_classes_path());
  if (!classes) return report(classes.error());
  if (!f.classes.empty()) {
    auto extra = KernelClassifier::load(f.classes);
    if (!extra) return report(extra.error());
    classes->prepend(*extra);
  }
  if (!f.from.empty()) return attribute_stored(f, *classes);
  if (!f.inject_lib.empty()) {
    // A shared library: a regular ELF file (not a folder, /dev/zero, a FIFO or a text file).
    auto lib = InputFile::open(f.inject_lib);
    if (!lib) return report(make_error(Errc::invalid_argument, "cannot read the injection library: " + lib.error().message));
    char magic[4] = {};
    auto got = lib->is_pipe() ? Result<std::size_t>(std::size_t{0}) : lib->read(magic, sizeof(magic));
    if (!got || *got != sizeof(magic) || std::memcmp(magic, "\x7f" "ELF", 4) != 0) {
      return report(make_error(Errc::invalid_argument, "the injection library " + f.inject_lib + " is not a shared library (no ELF header)"));
    }
  }
  const std::string inject = find_inject_lib(f.inject_lib);
  if (inject.empty()) {
    return report(make_error(Errc::unavailable,
                             "the CUPTI injection library (libjouleprof_inject.so) is not installed beside jouleprof; it is built "
                             "where CUPTI's headers are found (give --inject-lib PATH)"));
  }
  const std::string cupti = find_cupti(f.cupti_lib);
  if (cupti.empty() && f.measuring.device != "sim") {
    return report(make_error(Errc::unavailable, "CUPTI (libcupti.so) not found: install the CUDA toolkit's CUPTI or give --cupti-lib PATH"));
  }
  // Per-process trace files: a kept directory, or a temporary one removed afterwards.
  std::string dir = f.keep_dir;
  std::error_code ec;
  if (dir.empty()) {
    char tmpl[] = "/tmp/jouleprof-trace-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return report(make_error(Errc::io, "cannot create a temporary directory"));
    dir = tmpl;
  } else {
    fs::create_directories(dir, ec);
    if (ec) return report(make_error(Errc::io, "cannot create " + dir + ": " + ec.message()));
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == trace_format::kFileSuffix) fs::remove(e.path(), ec);
    }
  }
  struct Cleanup {
    std::string dir;
    bool remove;
    ~Cleanup() {
      std::error_code e;
      if (remove) fs::remove_all(dir, e);
    }
  } cleanup{dir, f.keep_dir.empty()};

  MeasureOptions o;
  o.command = f.command;
  o.invocation = invocation();
  if (auto a = apply_measuring_flags(f.measuring, o); !a) return report(a.error());
  o.monitor.sampler.fast_period_s = f.period_ms / 1000.0;
  auto tags = parse_tags(f.tags);
  if (!tags) return report(tags.error());
  o.tags = std::move(*tags);
  o.tags["traced"] = "true";
  o.env = {"CUDA_INJECTION64_PATH=" + inject, std::string(trace_format::kDirEnv) + "=" + dir};
  if (f.record_sync) o.env.push_back(std::string(trace_format::kSyncEnv) + "=1");
  if (f.record_launches) o.env.push_back(std::string(trace_format::kLaunchesEnv) + "=1");
  if (!cupti.empty()) {
    // The injection library is also NVTX's: CUPTI records the ranges, we add their anchors.
    o.env.push_back(std::string(trace_format::kCuptiLibEnv) + "=" + cupti);
    o.env.push_back("NVTX_INJECTION64_PATH=" + inject);
  }
  if (!f.quiet) o.progress = [](const std::string& s) { std::cerr << "jouleprof: " << s << "\n"; };

  auto result = run_measure(o);
  if (!result) return report(result.error());
  Measurement& m = *result;
  int rc = m.exit_code;

  auto traced = read_trace_dir(dir);
  if (!traced) return report(traced.error());
  place_trace(m, *traced);
  return attribute(f, m, *traced, *classes, rc, !f.no_store);
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
                           "--record-launches", "--inject-lib", "--cupti-lib", "--nvml-lib", "--sim-power", "--no-cpu"}) {
    f->run_only.push_back(c->get_option(name));
  }
  return [f] { return run(*f); };
}

const bool registered = register_command(add_trace);

}  // namespace
}  // namespace jouleprof::cli
