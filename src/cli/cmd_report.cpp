// `jouleprof report RUN... -o report.html`: one self-contained HTML file (docs/report.md).
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "db_option.hpp"
#include "jouleprof/core/files.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "options.hpp"
#include "jouleprof/report/charts.hpp"
#include "jouleprof/report/html_report.hpp"
#include "jouleprof/store/run_source.hpp"

namespace jouleprof::cli {
namespace {

struct ReportFlags {
  std::string db, output = "report.html", title, by;
  std::vector<std::string> refs;
  std::size_t max_points = 2000;
  bool quiet = false;
};

int run(const ReportFlags& f) {
  auto runs = load_runs(f.refs, f.db, true);
  if (!runs) return report(runs.error());
  std::vector<ReportRun> rr;
  for (const auto& r : *runs) rr.push_back({r.label, r.id, &r.m});
  ReportOptions o;
  o.title = f.title;
  o.charts.by_tag = f.by;
  o.charts.max_points = f.max_points;
  if (const std::string w = by_tag_warning(rr, o.charts); !w.empty() && !f.quiet) {
    fmt::print(stderr, "jouleprof: warning: {}\n", w);
  }
  auto html = render_html_report(rr, o);
  if (!html) return report(html.error());
  if (auto w = write_output(f.output, *html); !w) return report(w.error());
  if (!f.quiet && !is_stdout(f.output)) fmt::print(stderr, "jouleprof: wrote {} ({:.1f} MB, {} run{})\n", f.output, static_cast<double>(html->size()) / 1e6, rr.size(), rr.size() == 1 ? "" : "s");
  return 0;
}

Runner add_report(CLI::App& app) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* c = app.add_subcommand("report", "Write a self-contained HTML report of runs (opens offline)");
  c->footer("RUN is a run id, 'last', 'last~N', or a result JSON file.\n"
            "Example: jouleprof report 12 13 14 --by batch -o batch.html");
  c->add_option("run", f->refs, "RUN...")->required();
  c->add_option("-o,--output", f->output, "the HTML file ('-': stdout)")->capture_default_str();
  c->add_option("--db", f->db, kDbOptionHelp);
  c->add_option("--title", f->title, "report title");
  c->add_option("--by", f->by, "tag to compare runs along (default: the first tag whose values differ)");
  checked(c->add_option("--max-points", f->max_points, "points per timeline series after downsampling"),
          IntRange{.min = 100, .max = 1000000})->capture_default_str();
  c->add_flag("-q,--quiet", f->quiet, "no message");
  return [f] { return run(*f); };
}

const bool registered = register_command(add_report);

}  // namespace
}  // namespace jouleprof::cli
