// `jouleprof trace` runs (the "trace" section, docs/trace.md): where the energy went, by kernel
// class, layer, component and kernel.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "../html_parts.hpp"
#include "views.hpp"

namespace jouleprof {
namespace {

using html::chart_div;
using html::num;

// A `jouleprof trace` table (by class, component, kernel …) of one GPU: its first `top` rows.
void trace_table(std::string& h, const nlohmann::json& rows, const char* what, std::size_t top) {
  if (!rows.is_array() || rows.empty()) return;
  h += fmt::format("<table class=\"data\"><thead><tr><th>{}</th><th>energy (J)</th><th>share</th><th>busy (ms)</th>"
                   "<th>count</th><th>mean W above idle</th><th>± (J)</th></tr></thead><tbody>\n", what);
  std::size_t n = 0;
  for (const auto& r : rows) {
    if (n++ >= top) break;
    const bool below = r.value("below_resolution", false);
    h += fmt::format("<tr><td>{}</td><td>{}{}</td><td>{:.1f}%</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     html_escape(r.value("key", std::string("?"))), num(r.value("energy_j", 0.0)),
                     below ? " <small title=\"below the sensor's resolution\">(below resolution)</small>" : "",
                     100 * r.value("share", 0.0), num(1e3 * r.value("busy_s", 0.0)), r.value("count", 0),
                     num(r.value("mean_power_above_idle_w", 0.0)), num(r.value("uncertainty_j", 0.0), 2));
  }
  h += "</tbody></table>\n";
}

}  // namespace

/// A "Kernels and layers" section per traced run.
static void render_trace_view(const std::vector<ReportRun>& runs, const ReportOptions& o, std::string& body, std::vector<ChartSpec>& specs) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    auto it = runs[i].m->sections.find("trace");
    if (it == runs[i].m->sections.end()) continue;
    const nlohmann::json t = nlohmann::json::parse(it->second, nullptr, false);
    if (!t.is_object() || !t.contains("gpus") || !t["gpus"].is_array()) continue;
    body += "<section id=\"trace-" + std::to_string(i) + "\"><h2>Kernels and layers — " + html_escape(runs[i].label) +
            "</h2>\n<p><small>jouleprof trace: the measured energy attributed to the kernels (method named per GPU; "
            "attributed + idle/static + unattributed = measured), grouped by kernel class, NVTX layer and component "
            "(docs/trace.md). Figures below the sensor's resolution are marked.</small></p>\n";
    specs.push_back(trace_breakdown_chart(runs[i], i, o.charts));
    chart_div(body, specs.back());
    if (ChartSpec layers = trace_layers_chart(runs[i], i, o.charts); !layers.option_json.empty()) {
      specs.push_back(layers);
      chart_div(body, specs.back());
    }
    for (const auto& g : t["gpus"]) {
      body += fmt::format("<h3>GPU {} — method {}</h3>\n", g.value("gpu", 0), html_escape(g.value("table_method", std::string("split"))));
      trace_table(body, g.value("by_class", nlohmann::json::array()), "class", 20);
      trace_table(body, g.value("by_component", nlohmann::json::array()), "component", 20);
      trace_table(body, g.value("by_kernel", nlohmann::json::array()), "kernel (top 15)", 15);
    }
    body += "</section>\n";
  }
}

const SectionView kTraceView{SectionView::Place::after_summaries, 0, &render_trace_view};

}  // namespace jouleprof
