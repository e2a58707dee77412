// `jouleprof bench llm` sweeps (the "llm" section, docs/bench-llm.md): the configurations'
// table and the charts along each swept dimension.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "../html_parts.hpp"
#include "views.hpp"

namespace jouleprof {
namespace {

using html::chart_div;
using html::num;
using html::opt_num;

void bench_table(std::string& h, const std::vector<BenchPoint>& pts) {
  h += "<table class=\"data\"><thead><tr><th>run</th><th>model</th><th>dtype</th><th>batch</th><th>prompt</th><th>gen</th>"
       "<th>variant</th><th>prefill tok/s</th><th>prefill mJ/token</th><th>above idle</th><th>W</th><th>decode tok/s</th>"
       "<th>ms/step</th><th>decode mJ/token</th><th>above idle</th><th>W</th><th>status</th></tr></thead><tbody>\n";
  auto mj = [](const std::optional<double>& v) { return v ? num(*v * 1e3) : std::string("–"); };
  for (const BenchPoint& p : pts) {
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                     "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td></tr>\n",
                     html_escape(p.run), html_escape(p.model), html_escape(p.dtype), p.batch, num(p.prompt, 6), p.gen,
                     html_escape(p.variant), opt_num(p.prefill_tokens_per_s, "", 6), mj(p.prefill_j_per_token),
                     mj(p.prefill_above_idle_j_per_token), opt_num(p.prefill_mean_power_w), opt_num(p.decode_tokens_per_s, "", 6),
                     opt_num(p.decode_ms_per_step), mj(p.decode_j_per_token), mj(p.decode_above_idle_j_per_token),
                     opt_num(p.decode_mean_power_w), html_escape(p.status), p.simulated ? " <span class=\"sim\">simulated</span>" : "");
  }
  h += "</tbody></table>\n";
}

}  // namespace

/// The "LLM benchmark" section: every bench llm point of the runs.
static void render_bench_view(const std::vector<ReportRun>& runs, const ReportOptions& o, std::string& body, std::vector<ChartSpec>& specs) {
  if (const std::vector<BenchPoint> bench = bench_points(runs); !bench.empty()) {
    body += "<section id=\"bench\"><h2>LLM benchmark</h2>\n<p><small>jouleprof bench llm: energy per token (prefill over "
            "the prompt tokens, decode per generated token; above idle dashed) and tokens per second along each swept "
            "dimension, one line per combination of the other values (docs/bench-llm.md).</small></p>\n";
    bench_table(body, bench);
    for (BenchAxis a : bench_axes(bench)) {
      specs.push_back(bench_energy_chart(bench, a, o.charts));
      chart_div(body, specs.back());
      specs.push_back(bench_throughput_chart(bench, a, o.charts));
      chart_div(body, specs.back());
    }
    specs.push_back(bench_components_chart(bench, o.charts));
    chart_div(body, specs.back());
    body += "</section>\n";
  }
}

const SectionView kBenchView{SectionView::Place::after_runs, 0, &render_bench_view};

}  // namespace jouleprof
