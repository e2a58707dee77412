// `jouleprof plot RUN... --svg FILE | --png FILE`: static figures from the report's chart specifications.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>

#include "db_option.hpp"
#include "jouleprof/core/files.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "options.hpp"
#include "jouleprof/report/assets.hpp"
#include "jouleprof/report/charts.hpp"
#include "jouleprof/store/run_source.hpp"

namespace jouleprof::cli {
namespace {

struct PlotFlags {
  std::string db, svg, png, chart = "timeline", by;
  std::vector<std::string> refs;
  int width = 1000, height = 420;
  std::size_t max_points = 3000;
};

int run(const PlotFlags& f) {
  if (f.svg.empty() == f.png.empty()) return report(make_error(Errc::invalid_argument, "plot needs one of --svg FILE or --png FILE"));
  auto runs = load_runs(f.refs, f.db, f.chart == "timeline" || f.chart == "clocks");
  if (!runs) return report(runs.error());
  std::vector<ReportRun> rr;
  for (const auto& r : *runs) rr.push_back({r.label, r.id, &r.m});
  ChartOptions o;
  o.for_static = true;
  o.by_tag = f.by;
  o.max_points = f.max_points;
  o.width_px = f.width;
  if (f.chart == "compare" || f.chart == "repeats" || f.chart == "tokens") {
    if (const std::string w = by_tag_warning(rr, o); !w.empty()) fmt::print(stderr, "jouleprof: warning: {}\n", w);
  }
  ChartSpec spec;
  if (f.chart == "timeline") spec = timeline_chart(rr.front(), 0, o);
  if (f.chart == "clocks") spec = clocks_chart(rr.front(), 0, o);
  if (f.chart == "windows") spec = windows_chart(rr.front(), 0, o);
  if (f.chart == "repeats") spec = repeats_chart(rr, o);
  if (f.chart == "compare") spec = compare_chart(rr, o);
  if (f.chart == "tokens") spec = per_count_chart(rr, o);
  if (f.chart == "scaling" || f.chart == "throughput" || f.chart == "components") {
    // bench llm: J/token or tokens/s along --by (prompt, batch or model; default: the first that varies).
    const auto points = bench_points(rr);
    if (points.empty()) return report(make_error(Errc::invalid_argument, "--chart " + f.chart + " needs bench llm runs"));
    std::optional<BenchAxis> axis;
    if (!f.by.empty()) {
      axis = bench_axis_from_name(f.by);
      if (!axis) return report(make_error(Errc::invalid_argument, "--by for --chart " + f.chart + " is prompt, batch or model"));
      const auto varying = bench_axes(points);
      if (std::find(varying.begin(), varying.end(), *axis) == varying.end()) {
        fmt::print(stderr, "jouleprof: warning: --by {} does not vary across these runs: the chart has one point per line\n", f.by);
      }
    } else if (const auto axes = bench_axes(points); !axes.empty()) {
      axis = axes.front();
    }
    if (f.chart == "components") {
      spec = bench_components_chart(points, o);
    } else if (!axis) {
      return report(make_error(Errc::invalid_argument, "the runs vary in no sweep dimension (prompt, batch, model): nothing to scale"));
    } else {
      spec = f.chart == "scaling" ? bench_energy_chart(points, *axis, o) : bench_throughput_chart(points, *axis, o);
    }
    if (spec.option_json.empty()) return report(make_error(Errc::invalid_argument, "the runs have no figures for --chart " + f.chart));
  }
  if (rr.size() > 1 && (f.chart == "timeline" || f.chart == "clocks" || f.chart == "windows")) {
    fmt::print(stderr, "jouleprof: note: --chart {} draws the first run only\n", f.chart);
  }
  auto svg = render_svg(spec, f.width, f.height);
  if (!svg) return report(svg.error());
  if (!f.svg.empty()) {
    if (auto w = write_output(f.svg, *svg); !w) return report(w.error());
  } else {
    // PNG: the SVG goes through a temporary file to the converter.
    const std::string svg_path =
        (std::filesystem::temp_directory_path() / ("jouleprof-plot-" + std::to_string(getpid()) + ".svg")).string();
    if (auto w = write_output(svg_path, *svg); !w) return report(w.error());
    auto p = write_output_with(f.png, [&](const std::string& png) { return svg_to_png(svg_path, png, f.width, f.height); });
    std::remove(svg_path.c_str());
    if (!p) return report(p.error());
  }
  const std::string written = f.svg.empty() ? f.png : f.svg;
  if (!is_stdout(written)) fmt::print(stderr, "jouleprof: wrote {}\n", written);
  return 0;
}

Runner add_plot(CLI::App& app) {
  auto f = std::make_shared<PlotFlags>();
  CLI::App* c = app.add_subcommand("plot", "Static figures (SVG or PNG) for papers, from the report's chart specifications");
  c->footer("Charts: timeline (power per GPU, windows shaded, idle baseline), clocks, windows (energy per window),\n"
            "repeats (distribution over repeats), compare (energy vs a tag, --by), tokens (energy per count);\n"
            "bench llm runs: scaling (J/token vs --by prompt|batch|model), throughput (tokens/s), components (stacked).\n"
            "Needs Node.js; PNG also rsvg-convert or chromium. Example: jouleprof plot 12 13 14 --chart compare --by batch --svg cmp.svg");
  c->add_option("run", f->refs, "RUN...: run ids, 'last', 'last~N' or result JSON files")->required();
  c->add_option("--svg", f->svg, "write an SVG here ('-': stdout)");
  c->add_option("--png", f->png, "write a PNG here ('-': stdout)");
  c->add_option("--chart", f->chart, "which chart")
      ->check(CLI::IsMember({"timeline", "clocks", "windows", "repeats", "compare", "tokens", "scaling", "throughput", "components"}))
      ->capture_default_str();
  c->add_option("--by", f->by, "tag for --chart compare (default: the first tag whose values differ); prompt, batch or model "
                               "for scaling and throughput (default: the first that varies)");
  checked(c->add_option("--width", f->width, "pixels"), IntRange{.min = 200, .max = 8000})->capture_default_str();
  checked(c->add_option("--height", f->height, "pixels"), IntRange{.min = 150, .max = 8000})->capture_default_str();
  c->add_option("--db", f->db, kDbOptionHelp);
  return [f] { return run(*f); };
}

const bool registered = register_command(add_plot);

}  // namespace
}  // namespace jouleprof::cli
