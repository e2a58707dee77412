// `jouleprof kernels TRACE... [--json FILE] [--csv FILE]`: the unique-kernel table of a traced run
// (PyTorch profiler / Kineto trace, plain or .gz; jouleprof trace files), with tiers and shapes.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "jouleprof/core/progress.hpp"
#include "jouleprof/core/text.hpp"
#include "jouleprof/replay/kernel_table.hpp"
#include "options.hpp"

namespace jouleprof::cli {
namespace {

struct KernelsFlags {
  std::vector<std::string> traces;
  std::string json, csv, classes, tiers;
  std::size_t top = 20;
  bool quiet = false;
};

Result<KernelTable> load_table(const std::vector<std::string>& traces, const std::string& classes_file, const std::string& tiers_file,
                               bool quiet) {
  auto classes = KernelClassifier::load_default(classes_file);
  if (!classes) return classes.error();
  auto tiers = KernelClassifier::load(tiers_file.empty() ? default_replay_tiers_path() : tiers_file);
  if (!tiers) return tiers.error();
  KernelTableOptions o;
  o.classes = &*classes;
  o.tiers = &*tiers;
  // Long steps (a trace of gigabytes, a million rows) say where they are, after the first second.
  const bool show = !quiet && Progress::wanted(global_flags().progress);
  const double t0 = Progress::steady_clock();
  if (show) {
    o.progress = [t0](const std::string& what) {
      const double s = Progress::steady_clock() - t0;
      if (s >= 1.0) std::fprintf(stderr, "jouleprof: kernels: %s (%s)\n", for_terminal(what).c_str(), format_duration(s).c_str());
    };
  }
  return read_kernel_table(traces, o);
}

int run(const KernelsFlags& f) {
  auto t = load_table(f.traces, f.classes, f.tiers, f.quiet || global_flags().quiet);
  if (!t) return report(t.error());
  int rc = 0;
  if (!f.json.empty()) {
    if (auto w = write_output(f.json, kernel_table_json(*t)); !w) rc = report(w.error());
  }
  if (!f.csv.empty()) {
    if (auto w = write_output(f.csv, kernel_table_csv(*t)); !w) rc = report(w.error());
  }
  const bool table_to_stdout = is_stdout(f.json) || is_stdout(f.csv);
  if (!f.quiet && !global_flags().quiet) {
    (table_to_stdout ? std::cerr : std::cout) << kernel_table_text(*t, f.top);
  }
  return rc;
}

Runner add_kernels(CLI::App& app) {
  auto f = std::make_shared<KernelsFlags>();
  CLI::App* c = app.add_subcommand("kernels", "Unique kernels of a traced run: counts, times, tiers, GEMM/attention shapes");
  c->footer("TRACE: a PyTorch profiler / Kineto Chrome trace (.json or .json.gz; several files = several ranks), a jouleprof\n"
            "trace file (.jpt) or a folder of them (jouleprof trace --keep-trace DIR). Counts and times are the trace's, exactly.\n"
            "Record PyTorch traces with record_shapes=True: GEMM and attention shapes come from the launching op's inputs.");
  c->add_option("trace", f->traces, "trace file(s)")->required();
  add_json_option(c, f->json, "the kernel table as JSON");
  c->add_option("--csv", f->csv, "the kernel table as CSV ('-': stdout)");
  c->add_option("--classes", f->classes, "extra kernel class rules (CLASS<TAB>REGEX), tried before the built-in ones");
  c->add_option("--tiers", f->tiers, "replay tier rules instead of the built-in data/replay-tiers.tsv");
  checked(c->add_option("--top", f->top, "rows to print"), IntRange{.min = 0, .max = 1000000})->capture_default_str();
  c->add_flag("-q,--quiet", f->quiet, "print nothing but errors");
  return [f] { return run(*f); };
}

const bool registered = register_command(add_kernels);

}  // namespace
}  // namespace jouleprof::cli
