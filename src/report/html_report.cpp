// The HTML report: tables written here (all user text escaped), charts by the embedded
// charting library from the specifications in charts.cpp.
#include "jouleprof/report/html_report.hpp"
#include "jouleprof/measure/repeat_label.hpp"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "jouleprof/core/units.hpp"
#include "jouleprof/report/assets.hpp"
#include "jouleprof/report/section_views.hpp"
#include "html_parts.hpp"
#include "jouleprof/store/compare.hpp"

namespace jouleprof {

namespace html {

std::string num(double v, int prec) { return fmt::format("{:.{}g}", v, prec); }
std::string opt_num(const std::optional<double>& v, const char* unit, int prec) { return v ? num(*v, prec) + unit : "–"; }

void chart_div(std::string& h, const ChartSpec& c) {
  if (c.option_json.empty()) return;
  h += fmt::format("<div class=\"chart\" id=\"{}\" data-title=\"{}\" style=\"height:{}px\"></div>\n", html_escape(c.id),
                   html_escape(c.title), c.height_px);
}

}  // namespace html

namespace {

using html::chart_div;
using html::num;
using html::opt_num;

std::string iso_utc(int64_t ns) {
  const auto t = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}


std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string tags_html(const std::map<std::string, std::string>& tags) {
  std::string s;
  for (const auto& [k, v] : tags) s += "<span class=\"tag\">" + html_escape(k) + "=" + html_escape(v) + "</span> ";
  return s;
}

std::string pm(const Summary& s, int prec = 4) {
  return s.n >= 2 ? num(s.mean, prec) + " ± " + num(s.ci95_half_width, 2) : num(s.mean, prec);
}

void runs_table(std::string& h, const std::vector<ReportRun>& runs) {
  h += "<table class=\"data\"><thead><tr><th>run</th><th>started</th><th>host</th><th>GPUs</th><th>tags</th><th>command</th>"
       "<th>measured runs</th><th>GPU energy / run (J)</th><th>time / run (s)</th><th>mean power (W)</th><th>status</th></tr>"
       "</thead><tbody>\n";
  for (const auto& r : runs) {
    const Measurement& m = *r.m;
    auto vals = repeat_values(m);
    std::vector<std::string> gpus;
    for (const auto& g : m.gpus) gpus.push_back(g.name);
    auto cell = [&](const char* key) {
      auto it = vals.find(key);
      return it == vals.end() || it->second.empty() ? std::string("–") : pm(summarize(it->second));
    };
    const std::size_t n = vals.count("gpu_energy_j") != 0 ? vals["gpu_energy_j"].size() : 0;
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td>"
                     "<td>{}</td><td>{}</td><td>{}{}</td></tr>\n",
                     html_escape(r.label), iso_utc(m.origin_realtime_ns), html_escape(m.host), html_escape(join(gpus, ", ")),
                     tags_html(m.tags), html_escape(join(m.command, " ")), n, cell("gpu_energy_j"), cell("duration_s"),
                     cell("mean_power_w"), m.complete ? "complete" : "incomplete: " + html_escape(m.incomplete_reason),
                     m.simulated ? " <span class=\"sim\">simulated</span>" : "");
  }
  h += "</tbody></table>\n";
}

void compare_table(std::string& h, const std::vector<ReportRun>& runs, const std::string& phase) {
  std::vector<const Measurement*> ms;
  for (const auto& r : runs) ms.push_back(r.m);
  const Comparison c = compare_runs(ms, phase);
  if (c.keys.empty()) return;
  h += "<table class=\"data\"><thead><tr><th>quantity</th>";
  for (const auto& r : runs) h += "<th>" + html_escape(r.label) + "</th>";
  h += "</tr></thead><tbody>\n";
  for (std::size_t k = 0; k < c.keys.size(); ++k) {
    h += "<tr><td><code>" + html_escape(c.keys[k]) + "</code></td>";
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const CompareCell& cell = c.cells[r][k];
      std::string v = cell.value ? pm(*cell.value) : "–";
      if (cell.diff_rel) {
        const bool sig = cell.significant.value_or(false);
        v += fmt::format(" <span class=\"{}\">({:+.1f}%{})</span>", sig ? "sig" : "nsig", 100 * *cell.diff_rel, sig ? "*" : "");
      }
      h += "<td>" + v + "</td>";
    }
    h += "</tr>\n";
  }
  h += "</tbody></table>\n";
}

void windows_table(std::string& h, const Measurement& m) {
  h += "<table class=\"data\"><thead><tr><th>window</th><th>kind</th><th>start (s)</th><th>duration (s)</th>"
       "<th>GPU energy (J)</th><th>above idle (J)</th><th>mean power (W)</th><th>method (GPU 0)</th><th>counts</th>"
       "<th>energy per count</th></tr></thead><tbody>\n";
  for (const WindowResult& w : m.windows) {
    std::string name = w.name;
    if (w.kind == "run" || w.kind == "warmup") name = repeat_label(m, w.run);
    std::string counts, per;
    for (const auto& [k, v] : w.counts) {
      counts += html_escape(k) + "=" + num(v, 6) + " ";
      if (v > 0) per += num(w.gpu_energy_j / v) + " J/" + html_escape(per_unit_name(k)) + " ";
    }
    h += fmt::format("<tr class=\"{}\"><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                     "<td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     w.kind == "phase" ? "phase" : "", html_escape(name), w.complete ? "" : " (incomplete)",
                     html_escape(w.kind), num(w.t0_s, 5), num(w.duration_s(), 5), num(w.gpu_energy_j, 6),
                     opt_num(w.gpu_above_idle_j, "", 6), w.duration_s() > 0 ? num(w.gpu_energy_j / w.duration_s()) : "–",
                     w.gpus.empty() ? "–" : html_escape(w.gpus[0].method) + (w.gpus[0].uncertainty_j > 0 ? " ± " + num(w.gpus[0].uncertainty_j, 2) + " J" : ""),
                     counts, per);
  }
  h += "</tbody></table>\n";
}

void provenance_table(std::string& h, const Measurement& m) {
  auto row = [&](const std::string& k, const std::string& v_escaped) {
    h += "<tr><th>" + html_escape(k) + "</th><td>" + v_escaped + "</td></tr>\n";
  };
  h += "<table class=\"prov\"><tbody>\n";
  row("command", "<code>" + html_escape(join(m.command, " ")) + "</code>");
  row("tags", tags_html(m.tags));
  row("started", iso_utc(m.origin_realtime_ns) + fmt::format(" (duration {:.3f} s)", m.duration_s));
  row("host / kernel", html_escape(m.host) + " / " + html_escape(m.kernel));
  row("tool", "jouleprof " + html_escape(m.tool_version) + " (" + html_escape(m.git_revision) + ", " + html_escape(m.build_type) + ")");
  row("backend", html_escape(m.backend) + (m.simulated ? " <span class=\"sim\">simulated</span>" : "") +
                     (m.device_note.empty() ? "" : " — " + html_escape(m.device_note)));
  for (std::size_t g = 0; g < m.gpus.size(); ++g) {
    const GpuInfo& i = m.gpus[g];
    std::string v = html_escape(i.name) + "<br><small>" + html_escape(i.uuid) + " · PCI " + html_escape(i.pci_bus_id) + " · driver " +
                    html_escape(i.driver_version) + " · power limit " + opt_num(i.power_limit_w, " W");
    if (i.persistence_mode) v += std::string(" · persistence ") + (*i.persistence_mode ? "on" : "off");
    if (i.mig_enabled) v += std::string(" · MIG ") + (*i.mig_enabled ? "on" : "off");
    if (g < m.gpu_state.size()) {
      const GpuRunState& s = m.gpu_state[g];
      v += "<br>idle " + opt_num(s.idle_power_w, " W") + " (" + html_escape(s.idle_source) + ")";
      if (s.temperature_min_c) v += " · " + num(*s.temperature_min_c, 3) + "–" + opt_num(s.temperature_max_c, " °C", 3);
      if (s.sm_clock_min_mhz) v += " · SM " + num(*s.sm_clock_min_mhz, 4) + "–" + opt_num(s.sm_clock_max_mhz, " MHz");
      if (!s.throttle_reasons_seen.empty()) v += " · clock events: " + html_escape(join(s.throttle_reasons_seen, ", "));
      if (s.error_count > 0) v += fmt::format(" · {} sensor errors", s.error_count);
    }
    row("GPU " + std::to_string(i.index), v + "</small>");
  }
  row("CPU energy", m.cpu_domains.empty() ? "unavailable (" + html_escape(m.cpu_unavailable_reason) + ")"
                                          : html_escape(join(m.cpu_domains, ", ")));
  if (!m.meter_source.empty()) row("meter", html_escape(m.meter_source));
  for (const auto& w : m.warnings) row("warning", html_escape(w));
  h += "</tbody></table>\n";
}

constexpr const char* kStyle = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#1f3a5f;color:#fff;padding:14px 24px}header h1{margin:0;font-size:20px}header p{margin:4px 0 0;font-size:12px;opacity:.85}
main{padding:8px 24px 40px;max-width:1400px}section{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:12px 16px;margin:14px 0}
h2{font-size:16px;margin:4px 0 10px}h3{font-size:14px;margin:14px 0 6px}
table{border-collapse:collapse;font-size:12px;margin:6px 0}table.data th,table.data td{border-bottom:1px solid #eee;padding:3px 8px;text-align:right}
table.data th:first-child,table.data td:first-child{text-align:left}table.data thead th{background:#f3f5f8}
table.prov th{text-align:left;vertical-align:top;padding:3px 12px 3px 0;color:#555}table.prov td{padding:3px 0}
tr.phase td:first-child{padding-left:22px}.tag{background:#eef2f8;border-radius:3px;padding:0 4px;margin-right:2px;white-space:nowrap}
.sim{background:#ffe8b3;color:#7a5300;border-radius:3px;padding:0 5px;font-size:11px}.sig{color:#b0301c;font-weight:600}.nsig{color:#777}
.chart{width:100%;min-height:240px}code{font-size:11px}footer{font-size:11px;color:#777;padding:0 24px 20px}
)css";

// Before anything else: record script errors and console.error calls (also those raised while
// the library loads) so that a headless browser test can read them from the DOM.
constexpr const char* kEarly = R"js(
window.__jpErrors = [];
window.addEventListener('error', function (e) { window.__jpErrors.push(String(e && e.message)); });
(function () { var ce = console.error; console.error = function () {
  window.__jpErrors.push(Array.prototype.join.call(arguments, ' ')); return ce.apply(console, arguments); }; })();
)js";

// Glue only: turns each specification into a chart and records the outcome on <body> so that
// a headless browser can check it (data-jp-charts, data-jp-errors).
constexpr const char* kGlue = R"js(
(function () {
  function publish() {
    document.body.setAttribute('data-jp-errors', String(window.__jpErrors.length));
    document.body.setAttribute('data-jp-error-text', window.__jpErrors.join(' | ').slice(0, 500));
  }
  function fail(msg) { console.error(msg); publish(); }
  window.addEventListener('error', publish);
  var specs = JSON.parse(document.getElementById('jp-charts').textContent);
  var charts = [], done = 0;
  specs.forEach(function (s) {
    var el = document.getElementById(s.id);
    if (!el) { fail('jouleprof report: no element ' + s.id); return; }
    try {
      var c = echarts.init(el, null, {renderer: 'canvas'});
      c.setOption(s.option);
      charts.push(c);
      el.setAttribute('data-jp-rendered', 'true');
      done++;
    } catch (e) { fail('jouleprof report: chart ' + s.id + ': ' + e); }
  });
  document.body.setAttribute('data-jp-charts', String(done));
  publish();
  window.addEventListener('resize', function () { charts.forEach(function (c) { c.resize(); }); });
})();
)js";

}  // namespace

std::string html_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string script_safe_json(std::string_view json) {
  std::string o;
  o.reserve(json.size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<') {
      o += "\\u003c";
    } else if (c == '>') {
      o += "\\u003e";
    } else if (c == '&') {
      o += "\\u0026";
    } else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' && (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      o += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      o += c;
    }
  }
  return o;
}

Result<std::string> render_html_report(const std::vector<ReportRun>& runs, const ReportOptions& o) {
  if (runs.empty()) return make_error(Errc::invalid_argument, "a report needs at least one run");
  auto js = charting_library_js();
  if (!js) return js.error();
  const std::string title = o.title.empty() ? "jouleprof report" : o.title;
  bool any_sim = false;
  for (const auto& r : runs) any_sim = any_sim || r.m->simulated;
  std::vector<ChartSpec> specs;
  std::string body;

  body += "<section><h2>Runs</h2>\n";
  runs_table(body, runs);
  body += "</section>\n";

  for (const SectionView* v : section_views()) {
    if (v->place == SectionView::Place::after_runs) v->render(runs, o, body, specs);
  }

  body += "<section><h2>Power</h2>\n<p><small>Phases and windows shaded, run starts and each GPU's idle baseline "
          "dashed.</small></p>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    specs.push_back(timeline_chart(runs[i], i, o.charts));
    chart_div(body, specs.back());
  }
  body += "</section>\n";

  if (runs.size() >= 2) {
    body += "<section><h2>Comparison</h2>\n<p><small>Against " + html_escape(runs[0].label) +
            "; ± is the 95% confidence interval over the repeats; <span class=\"sig\">*</span> marks a difference beyond "
            "it (Welch t-test, 95%).</small></p>\n";
    compare_table(body, runs, "");
    specs.push_back(compare_chart(runs, o.charts));
    chart_div(body, specs.back());
    body += "</section>\n";
  }
  body += "<section><h2>Repeats</h2>\n";
  specs.push_back(repeats_chart(runs, o.charts));
  chart_div(body, specs.back());
  body += "</section>\n";
  {
    ChartSpec tok = per_count_chart(runs, o.charts);
    if (!tok.option_json.empty()) {
      body += "<section><h2>Energy per count</h2>\n";
      specs.push_back(tok);
      chart_div(body, specs.back());
      body += "</section>\n";
    }
  }
  for (const SectionView* v : section_views()) {
    if (v->place == SectionView::Place::after_summaries) v->render(runs, o, body, specs);
  }

  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ReportRun& r = runs[i];
    body += "<section id=\"run-" + std::to_string(i) + "\"><h2>" + html_escape(r.label) +
            (r.m->simulated ? " <span class=\"sim\">simulated</span>" : "") + "</h2>\n";
    ChartSpec clk = clocks_chart(r, i, o.charts);
    if (!clk.option_json.empty()) {
      specs.push_back(clk);
      chart_div(body, specs.back());
    }
    specs.push_back(windows_chart(r, i, o.charts));
    chart_div(body, specs.back());
    body += "<h3>Windows</h3>\n";
    windows_table(body, *r.m);
    body += "<h3>Provenance</h3>\n";
    provenance_table(body, *r.m);
    body += "</section>\n";
  }

  std::string spec_json = "[";
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].option_json.empty()) continue;
    if (spec_json.size() > 1) spec_json += ",";
    spec_json += "{\"id\":\"" + specs[i].id + "\",\"option\":" + specs[i].option_json + "}";
  }
  spec_json += "]";

  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string h;
  h.reserve(js->size() + body.size() + spec_json.size() + 8192);
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       "<meta name=\"generator\" content=\"jouleprof\">\n<title>" +
       html_escape(title) + "</title>\n<style>" + kStyle + "</style>\n<script>" + kEarly + "</script>\n</head>\n<body>\n";
  h += "<header><h1>" + html_escape(title) + (any_sim ? " <span class=\"sim\">simulated data</span>" : "") + "</h1><p>" +
       fmt::format("{} run{} · generated {} · charts: {}", runs.size(), runs.size() == 1 ? "" : "s", iso_utc(now),
                   html_escape(charting_library_name())) +
       "</p></header>\n<main>\n" + body + "</main>\n";
  h += "<footer>Timelines are downsampled for display (minimum and maximum per bucket, at most " +
       std::to_string(o.charts.max_points) +
       " points per series); energies come from the full-resolution data. Drag or scroll on a timeline to zoom.</footer>\n";
  h += "<script type=\"application/json\" id=\"jp-charts\">" + script_safe_json(spec_json) + "</script>\n";
  // The library as shipped (its licence header included); "</script" cannot occur in it.
  std::string lib = *js;
  for (std::size_t p = 0; (p = lib.find("</script", p)) != std::string::npos;) lib.replace(p, 2, "<\\/");
  h += "<script>\n" + lib + "\n</script>\n<script>" + kGlue + "</script>\n</body></html>\n";
  return h;
}

}  // namespace jouleprof
