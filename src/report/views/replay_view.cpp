// `jouleprof replay` runs (the "replay" section, docs/replay.md).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "../html_parts.hpp"
#include "views.hpp"

namespace jouleprof {
namespace {

using html::num;

// `jouleprof replay` runs (the "replay" section, docs/replay.md): the prediction against the
// measured run, the gaps' power, and the per-tier and per-phase tables.
void replay_tables(std::string& h, const nlohmann::json& r) {
  auto pct = [](const nlohmann::json& j, const char* k) {
    return j.contains(k) && j[k].is_number() ? fmt::format("{:+.1f}%", 100 * j[k].get<double>()) : std::string("–");
  };
  auto val = [](const nlohmann::json& j, const char* k, int digits = 4) {
    return j.contains(k) && j[k].is_number() ? num(j[k].get<double>(), digits) : std::string("–");
  };
  const nlohmann::json p = r.value("prediction", nlohmann::json::object());
  const nlohmann::json c = r.value("comparison", nlohmann::json::object());
  const nlohmann::json cx = r.value("context", nlohmann::json::object());
  h += "<table class=\"data\"><thead><tr><th></th><th>duration (s)</th><th>GPU energy (J)</th></tr></thead><tbody>\n";
  h += fmt::format("<tr><td>predicted</td><td>{}</td><td>{}</td></tr>\n", val(p, "predicted_duration_s", 5), val(p, "predicted_energy_j", 5));
  if (!c.empty()) {
    h += fmt::format("<tr><td>measured ({}, window {})</td><td>{}</td><td>{}</td></tr>\n", html_escape(c.value("measured_run", std::string())),
                     html_escape(c.value("window", std::string())), val(c, "measured_duration_s", 5), val(c, "measured_energy_j", 5));
    h += fmt::format("<tr><td>error</td><td>{}</td><td>{}</td></tr>\n", pct(c, "duration_error"), pct(c, "energy_error"));
  }
  h += "</tbody></table>\n";
  h += fmt::format("<p><small>Replayed on {}; gaps {} s at {} W ({}), around a lone tiny kernel {} W, idle {} W.", html_escape(r.value("replay_gpu", std::string("?"))),
                   val(p, "gap_duration_s"), val(r, "gap_power_w"), cx.value("measured", false) ? "in context" : "isolated",
                   val(r, "isolated_gap_power_w"), val(r, "idle_power_w"));
  if (cx.contains("pass_duration_s")) {
    h += fmt::format(" Context replay: {} activities in {} ms, {} J; the same kernels in isolation {} ms, {} J.", cx.value("activities", 0),
                     num(1e3 * cx.value("pass_duration_s", 0.0)), val(cx, "pass_energy_j"), num(1e3 * cx.value("isolated_duration_s", 0.0)),
                     val(cx, "isolated_energy_j"));
  } else if (cx.contains("reason")) {
    h += " No context replay: " + html_escape(cx.value("reason", std::string())) + ".";
  }
  h += "</small></p>\n<h3>Per tier (predicted)</h3>\n<table class=\"data\"><thead><tr><th>tier</th><th>rows</th><th>replayed</th><th>extrapolated</th>"
       "<th>traced (ms)</th><th>predicted (ms)</th><th>predicted (J)</th></tr></thead><tbody>\n";
  for (const auto& t : r.value("tiers", nlohmann::json::array())) {
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(t.value("tier", std::string())),
                     t.value("rows", 0), t.value("replayed_rows", 0), t.value("extrapolated_rows", 0), num(1e3 * t.value("traced_duration_s", 0.0)),
                     num(1e3 * t.value("predicted_duration_s", 0.0)), val(t, "predicted_energy_j"));
  }
  h += fmt::format("<tr><td>gaps</td><td></td><td></td><td></td><td>{}</td><td>{}</td><td>{}</td></tr>\n", num(1e3 * p.value("gap_duration_s", 0.0)),
                   num(1e3 * p.value("gap_duration_s", 0.0)), val(p, "gap_energy_j"));
  h += "</tbody></table>\n";
  const nlohmann::json phases = r.value("phases", nlohmann::json::array());
  if (phases.is_array() && !phases.empty()) {
    h += "<h3>Per phase (predicted vs measured)</h3>\n<table class=\"data\"><thead><tr><th>phase</th><th>ranges</th><th>predicted (s)</th>"
         "<th>measured (s)</th><th>time error</th><th>predicted (J)</th><th>measured (J)</th><th>energy error</th></tr></thead><tbody>\n";
    for (const auto& ph : phases) {
      h += fmt::format("<tr class=\"phase\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       html_escape(ph.value("phase", std::string())), ph.value("ranges", 0), val(ph, "predicted_duration_s", 5),
                       val(ph, "measured_duration_s", 5), pct(ph, "duration_error"), val(ph, "predicted_energy_j", 5), val(ph, "measured_energy_j", 5),
                       pct(ph, "energy_error"));
    }
    h += "</tbody></table>\n";
  }
}

}  // namespace

/// A "Replay prediction" section per replay run.
static void render_replay_view(const std::vector<ReportRun>& runs, const ReportOptions& /*o*/, std::string& body, std::vector<ChartSpec>& /*specs*/) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    auto it = runs[i].m->sections.find("replay");
    if (it == runs[i].m->sections.end()) continue;
    const nlohmann::json rp = nlohmann::json::parse(it->second, nullptr, false);
    if (!rp.is_object() || !rp.contains("prediction")) continue;
    body += "<section id=\"replay-" + std::to_string(i) + "\"><h2>Replay prediction — " + html_escape(runs[i].label) +
            "</h2>\n<p><small>jouleprof replay: each unique kernel of a trace measured in isolation; predicted = Σ count × "
            "per-call figures + the trace's gaps at the gaps' power in context (docs/replay.md).</small></p>\n";
    replay_tables(body, rp);
    body += "</section>\n";
  }
}

const SectionView kReplayView{SectionView::Place::after_summaries, 1, &render_replay_view};

}  // namespace jouleprof
