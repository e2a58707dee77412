// `jouleprof export-trace RUN -o run.json`: Chrome trace-event JSON for Perfetto / chrome://tracing.
#include <fmt/format.h>

#include <memory>

#include "db_option.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "options.hpp"
#include "jouleprof/analysis/trace_store.hpp"
#include "jouleprof/report/trace.hpp"
#include "jouleprof/store/activities.hpp"
#include "jouleprof/store/run_source.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof::cli {
namespace {

struct TraceFlags {
  std::string db, ref, output;
  std::size_t max_points = 0;
};

int run(const TraceFlags& f) {
  auto runs = load_runs({f.ref}, f.db, true);
  if (!runs) return report(runs.error());
  const LoadedRun& r = runs->front();
  TraceOptions o;
  o.max_points = f.max_points;
  o.label = r.label;
  // A traced run of the store: its kernels, copies and NVTX ranges as slices, as `trace --perfetto`.
  std::vector<TraceSlice> slices;
  if (r.id != 0 && r.m.sections.count("trace") != 0) {
    auto rows = load_activities(resolve_db_path(f.db), r.id);
    if (!rows) return report(rows.error());
    auto traced = trace_from_store(r.m, *rows);
    if (!traced) return report(make_error(traced.error().code, r.label + ": " + traced.error().message));
    slices = trace_slices(r.m, *traced);
    o.slices = &slices;
  }
  const std::string out = f.output.empty() ? (r.id != 0 ? "run-" + std::to_string(r.id) : std::string("run")) + ".trace.json" : f.output;
  if (auto w = write_output(out, chrome_trace_json(r.m, o)); !w) return report(w.error());
  if (!is_stdout(out)) fmt::print(stderr, "jouleprof: wrote {} (open in ui.perfetto.dev or chrome://tracing)\n", out);
  return 0;
}

Runner add_export_trace(CLI::App& app) {
  auto f = std::make_shared<TraceFlags>();
  CLI::App* c = app.add_subcommand("export-trace", "Write a run as Chrome trace-event JSON (Perfetto, chrome://tracing)");
  c->footer("Counter tracks per GPU for every sampled metric, CPU and meter power; slices for idle, runs and phases;\n"
            "for a traced run of the store also its kernels, copies and NVTX ranges (as `trace --perfetto`).\n"
            "Times are microseconds on the run time base; otherData.origin_realtime_ns is its wall-clock origin.");
  c->add_option("run", f->ref, "RUN: a run id, 'last', 'last~N' or a result JSON file")->required();
  c->add_option("-o,--output", f->output, "the trace file (default: run-ID.trace.json; '-': stdout)");
  c->add_option("--db", f->db, kDbOptionHelp);
  checked(c->add_option("--max-points", f->max_points, "downsample each counter track to about this many points (0: all)"),
          IntRange{.min = 0, .max = 100000000})->capture_default_str();
  return [f] { return run(*f); };
}

const bool registered = register_command(add_export_trace);

}  // namespace
}  // namespace jouleprof::cli
