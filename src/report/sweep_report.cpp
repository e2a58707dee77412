// The report of a sweep: statistics per point from the stored runs (docs/sweep.md).
#include "jouleprof/report/sweep_report.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sstream>

namespace jouleprof {
namespace {

using nlohmann::json;

std::optional<double> tag_number(const std::map<std::string, std::string>& t, const std::string& k) {
  auto it = t.find(k);
  if (it == t.end()) return std::nullopt;
  try {
    return std::stod(it->second);
  } catch (...) {
    return std::nullopt;
  }
}

bool is_param(const std::string& k) {
  static const char* fixed[] = {"sweep", "point", "pass", "clock_mhz", "mem_clock_mhz", "power_limit_w", "control", "simulated"};
  for (const char* f : fixed) {
    if (k == f) return false;
  }
  return k.rfind("observed_", 0) != 0;
}

const Summary& metric_of(const SweepRow& r, const std::string& metric) {
  if (metric == "duration_s") return r.duration_s;
  if (metric == "power_w") return r.power_w;
  if (metric == "edp_js") return r.edp_js;
  if (metric == "ed2p_js2") return r.ed2p_js2;
  return r.energy_j;
}

std::string opt_text(const std::optional<double>& v) { return v ? fmt::format("{:.0f}", *v) : std::string("-"); }

json opt_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json summary_json(const Summary& s) {
  return {{"n", s.n}, {"mean", s.mean}, {"ci95_half_width", s.ci95_half_width}, {"stdev", s.stdev}, {"min", s.min}, {"max", s.max}};
}

// Every marked phase of the sweep, in first-seen order of the sorted rows.
std::vector<std::string> phase_names(const SweepReport& r) {
  std::vector<std::string> out;
  for (const auto& row : r.rows) {
    for (const auto& [name, v] : row.phases) {
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
  }
  return out;
}

}  // namespace

// The best setting per application: each combination of --param values (an application, a batch
// size ...) gets its own mark; one mark across all of them named only the cheapest application.
void mark_best_rows(std::vector<SweepRow>& rows) {
  auto mark = [&](const std::string& metric, bool SweepRow::*flag) {
    std::map<std::map<std::string, std::string>, SweepRow*> best;
    for (auto& r : rows) {
      r.*flag = false;
      if (metric_of(r, metric).n == 0) continue;
      SweepRow*& b = best[r.params];
      if (b == nullptr || metric_of(r, metric).mean < metric_of(*b, metric).mean) b = &r;
    }
    for (auto& entry : best) entry.second->*flag = true;
  };
  mark("energy_j", &SweepRow::best_energy);
  mark("edp_js", &SweepRow::best_edp);
  mark("ed2p_js2", &SweepRow::best_ed2p);
}

Result<SweepReport> sweep_report(Store& store, const std::string& sweep_id) {
  RunFilter f;
  f.tags.push_back({"sweep", sweep_id});
  auto runs = store.list(f);
  if (!runs) return runs.error();
  // Only `jouleprof sweep`'s runs (they carry their point): `bench llm` configurations share a
  // sweep tag too, and their figures over different configurations are no point's repeats.
  std::erase_if(*runs, [](const RunSummary& r) { return !r.tags.count("point"); });
  if (runs->empty()) return make_error(Errc::not_found, "no stored run of `jouleprof sweep` belongs to sweep '" + sweep_id + "'");
  SweepReport rep;
  rep.sweep_id = sweep_id;
  std::map<std::string, SweepRow> rows;
  std::map<std::string, std::vector<double>> e, t, p, edp, ed2p;
  std::map<std::string, std::map<std::string, std::pair<std::vector<double>, std::vector<double>>>> ph;
  bool any_phase = false;
  for (const RunSummary& s : *runs) {
    auto m = store.load(s.id, false);
    if (!m) return m.error();
    rep.simulated = rep.simulated || m->simulated;
    const std::string key = m->tags.count("point") ? m->tags.at("point") : "";
    if (!m->complete) rep.failures.push_back(fmt::format("run {} ({}): {}", s.id, key, m->incomplete_reason));
    SweepRow& row = rows[key];
    row.point = key;
    row.clock_mhz = tag_number(m->tags, "clock_mhz");
    row.mem_clock_mhz = tag_number(m->tags, "mem_clock_mhz");
    row.power_limit_w = tag_number(m->tags, "power_limit_w");
    if (auto oc = tag_number(m->tags, "observed_clock_mhz")) row.observed_clock_mhz = oc;
    for (const auto& [k, v] : m->tags) {
      if (is_param(k)) row.params[k] = v;
    }
    row.run_ids.push_back(s.id);
    for (const RunInfo& r : m->runs) {
      if (r.warmup || !r.complete || r.window < 0) continue;
      // The measured region: the marked phases when the workload marks any, else the run.
      double energy = 0, seconds = 0;
      bool phases = false;
      for (const WindowResult& w : m->windows) {
        if (w.run != r.index || w.kind != "phase" || !w.complete) continue;
        phases = true;
        energy += w.gpu_energy_j;
        seconds += w.duration_s();
        ph[key][w.name].first.push_back(w.gpu_energy_j);
        ph[key][w.name].second.push_back(w.duration_s());
      }
      if (!phases) {
        const WindowResult& w = m->windows[static_cast<std::size_t>(r.window)];
        energy = w.gpu_energy_j;
        seconds = w.duration_s();
      }
      any_phase = any_phase || phases;
      if (seconds <= 0) continue;
      e[key].push_back(energy);
      t[key].push_back(seconds);
      p[key].push_back(energy / seconds);
      edp[key].push_back(energy * seconds);
      ed2p[key].push_back(energy * seconds * seconds);
    }
  }
  rep.region = any_phase ? "marked phases" : "whole runs";
  for (auto& [key, row] : rows) {
    row.energy_j = summarize(e[key]);
    row.duration_s = summarize(t[key]);
    row.power_w = summarize(p[key]);
    row.edp_js = summarize(edp[key]);
    row.ed2p_js2 = summarize(ed2p[key]);
    for (auto& [name, v] : ph[key]) row.phases[name] = {summarize(v.first), summarize(v.second)};
    rep.rows.push_back(row);
  }
  std::sort(rep.rows.begin(), rep.rows.end(), [](const SweepRow& a, const SweepRow& b) {
    auto k = [](const SweepRow& r) {
      return std::make_tuple(r.clock_mhz.value_or(1e9), r.mem_clock_mhz.value_or(1e9), r.power_limit_w.value_or(1e9), r.params);
    };
    return k(a) < k(b);
  });
  mark_best_rows(rep.rows);
  return rep;
}

std::string sweep_report_csv(const SweepReport& r) {
  std::vector<std::string> pkeys;
  for (const auto& row : r.rows) {
    for (const auto& [k, v] : row.params) {
      if (std::find(pkeys.begin(), pkeys.end(), k) == pkeys.end()) pkeys.push_back(k);
    }
  }
  const std::vector<std::string> phases = phase_names(r);
  std::ostringstream out;
  out << "sweep,point,clock_mhz,mem_clock_mhz,power_limit_w,observed_clock_mhz";
  for (const auto& k : pkeys) out << ",param_" << k;
  out << ",runs,energy_j,energy_ci95_j,duration_s,duration_ci95_s,power_w,power_ci95_w,edp_js,edp_ci95_js,ed2p_js2,"
         "ed2p_ci95_js2,best_energy,best_edp,best_ed2p,simulated";
  for (const auto& ph : phases) {
    out << fmt::format(",phase_{0}_energy_j,phase_{0}_energy_ci95_j,phase_{0}_duration_s,phase_{0}_duration_ci95_s", ph);
  }
  out << "\n";
  auto o = [](const std::optional<double>& v) { return v ? fmt::format("{}", *v) : std::string(); };
  for (const auto& row : r.rows) {
    out << r.sweep_id << ",\"" << row.point << "\"," << o(row.clock_mhz) << "," << o(row.mem_clock_mhz) << ","
        << o(row.power_limit_w) << "," << o(row.observed_clock_mhz);
    for (const auto& k : pkeys) out << "," << (row.params.count(k) ? row.params.at(k) : "");
    out << "," << row.energy_j.n;
    for (const Summary* s : {&row.energy_j, &row.duration_s, &row.power_w, &row.edp_js, &row.ed2p_js2}) {
      out << fmt::format(",{:.6g},{:.6g}", s->mean, s->ci95_half_width);
    }
    out << "," << row.best_energy << "," << row.best_edp << "," << row.best_ed2p << "," << r.simulated;
    for (const auto& ph : phases) {
      auto it = row.phases.find(ph);
      if (it == row.phases.end()) {
        out << ",,,,";
      } else {
        out << fmt::format(",{:.6g},{:.6g},{:.6g},{:.6g}", it->second.first.mean, it->second.first.ci95_half_width,
                           it->second.second.mean, it->second.second.ci95_half_width);
      }
    }
    out << "\n";
  }
  return out.str();
}

std::string sweep_report_text(const SweepReport& r) {
  std::string s = fmt::format("sweep {}{}: {} points, region: {}; mean ± 95% CI over repeats (n=1: one repeat, no interval); * = lowest per application (each set of --param values)\n", r.sweep_id,
                              r.simulated ? " [simulated]" : "", r.rows.size(), r.region);
  s += fmt::format("{:>6} {:>6} {:>5} {:>6}  {:>18} {:>16} {:>8} {:>18} {:>18}  {}\n", "clock", "mem", "PL W", "seen",
                   "energy J", "time s", "power W", "EDP J·s", "ED²P J·s²", "parameters");
  // One repeat has no interval: "± 0" would claim a certainty the sweep does not have.
  auto cell = [](const Summary& x, bool best) {
    return x.n >= 2 ? fmt::format("{:.4g} ± {:.2g}{}", x.mean, x.ci95_half_width, best ? "*" : " ")
                    : fmt::format("{:.4g} (n=1){}", x.mean, best ? "*" : " ");
  };
  for (const auto& row : r.rows) {
    std::string params;
    for (const auto& [k, v] : row.params) params += (params.empty() ? "" : " ") + k + "=" + v;
    s += fmt::format("{:>6} {:>6} {:>5} {:>6}  {:>18} {:>16} {:>8.1f} {:>18} {:>19}  {}\n", opt_text(row.clock_mhz),
                     opt_text(row.mem_clock_mhz), opt_text(row.power_limit_w), opt_text(row.observed_clock_mhz),
                     cell(row.energy_j, row.best_energy), cell(row.duration_s, false), row.power_w.mean,
                     cell(row.edp_js, row.best_edp), cell(row.ed2p_js2, row.best_ed2p), params);
  }
  const std::vector<std::string> phases = phase_names(r);
  if (!phases.empty()) {
    s += "per phase: energy J / time s (mean ± 95% CI)\n";
    s += fmt::format("{:>6} {:>6} {:>5}", "clock", "mem", "PL W");
    for (const auto& ph : phases) s += fmt::format("  {:>30}", ph);
    s += "\n";
    for (const auto& row : r.rows) {
      s += fmt::format("{:>6} {:>6} {:>5}", opt_text(row.clock_mhz), opt_text(row.mem_clock_mhz), opt_text(row.power_limit_w));
      for (const auto& ph : phases) {
        auto it = row.phases.find(ph);
        s += fmt::format("  {:>30}", it == row.phases.end() ? std::string("-")
                                                            : cell(it->second.first, false) + "/ " + cell(it->second.second, false));
      }
      s += "\n";
    }
  }
  for (const auto& f : r.failures) s += "failed: " + f + "\n";
  return s;
}

std::string sweep_report_json(const SweepReport& r) {
  json rows = json::array();
  for (const auto& row : r.rows) {
    json phases = json::object();
    for (const auto& [name, v] : row.phases) phases[name] = {{"energy_j", summary_json(v.first)}, {"duration_s", summary_json(v.second)}};
    rows.push_back({{"point", row.point},
                    {"clock_mhz", opt_json(row.clock_mhz)},
                    {"mem_clock_mhz", opt_json(row.mem_clock_mhz)},
                    {"power_limit_w", opt_json(row.power_limit_w)},
                    {"observed_clock_mhz", opt_json(row.observed_clock_mhz)},
                    {"params", row.params},
                    {"run_ids", row.run_ids},
                    {"energy_j", summary_json(row.energy_j)},
                    {"duration_s", summary_json(row.duration_s)},
                    {"power_w", summary_json(row.power_w)},
                    {"edp_js", summary_json(row.edp_js)},
                    {"ed2p_js2", summary_json(row.ed2p_js2)},
                    {"phases", phases},
                    {"best_energy", row.best_energy},
                    {"best_edp", row.best_edp},
                    {"best_ed2p", row.best_ed2p}});
  }
  json j = {{"schema_version", 1}, {"sweep_id", r.sweep_id}, {"simulated", r.simulated}, {"region", r.region},
            {"rows", rows}, {"failures", r.failures}};
  return j.dump(2) + "\n";
}

ChartSpec sweep_chart(const SweepReport& r, const std::string& metric, const std::string& axis, const ChartOptions& o) {
  static const std::map<std::string, std::string> names = {{"energy_j", "energy (J)"}, {"duration_s", "time (s)"},
                                                           {"power_w", "average power (W)"}, {"edp_js", "EDP (J·s)"},
                                                           {"ed2p_js2", "ED²P (J·s²)"}, {"phase_energy_j", "energy per phase (J)"}};
  const std::string y_name = names.count(metric) ? names.at(metric) : metric;
  const std::string x_name = axis == "power_limit_w" ? "power limit (W)" : "clock (MHz)";
  ChartSpec c;
  c.id = "sweep-" + metric + "-" + axis;
  c.title = fmt::format("{} vs {}{}", y_name, x_name, r.simulated ? " (simulated)" : "");
  // One line per combination of everything but the axis (and per phase for phase_energy_j).
  struct Point {
    double x;
    const Summary* s;
    bool best;
  };
  std::map<std::string, std::vector<Point>> lines;
  const bool per_phase = metric == "phase_energy_j";
  for (const auto& row : r.rows) {
    const auto x = axis == "power_limit_w" ? row.power_limit_w : row.clock_mhz;
    if (!x) continue;
    std::string label;
    if (axis != "clock_mhz" && row.clock_mhz) label += fmt::format("clock {:.0f} ", *row.clock_mhz);
    if (axis != "power_limit_w" && row.power_limit_w) label += fmt::format("PL {:.0f} W ", *row.power_limit_w);
    if (row.mem_clock_mhz) label += fmt::format("mem {:.0f} ", *row.mem_clock_mhz);
    for (const auto& [k, v] : row.params) label += k + "=" + v + " ";
    if (per_phase) {
      for (const auto& [name, v] : row.phases) {
        if (v.first.n > 0) lines[label + name].push_back({*x, &v.first, false});
      }
      continue;
    }
    const Summary& s = metric_of(row, metric);
    if (s.n == 0) continue;
    const bool best = metric == "edp_js" ? row.best_edp : metric == "ed2p_js2" ? row.best_ed2p : metric == "energy_j" && row.best_energy;
    lines[label.empty() ? "measured" : label].push_back({*x, &s, best});
  }
  if (lines.empty()) return c;
  json series = json::array(), legend = json::array();
  for (const auto& [label, points] : lines) {
    json data = json::array(), bars = json::array(), ends = json::array(), best = json::array();
    for (const Point& p : points) {
      const double lo = p.s->mean - p.s->ci95_half_width, hi = p.s->mean + p.s->ci95_half_width;
      data.push_back({p.x, p.s->mean});
      bars.push_back({{"coords", {{p.x, lo}, {p.x, hi}}}});
      ends.push_back({p.x, lo});
      ends.push_back({p.x, hi});
      if (p.best) best.push_back({{"coord", {p.x, p.s->mean}}, {"name", "optimum"}, {"value", fmt::format("{:.0f}", p.x)}});
    }
    json line = {{"name", label}, {"type", "line"}, {"data", data}, {"symbolSize", 6}};
    if (!best.empty()) line["markPoint"] = {{"data", best}, {"symbol", "pin"}, {"symbolSize", 44}};
    series.push_back(line);
    legend.push_back(label);
    // Error bars (95% CI) as vertical segments; their invisible ends make the axis cover them.
    series.push_back({{"name", label}, {"type", "lines"}, {"coordinateSystem", "cartesian2d"}, {"data", bars},
                      {"lineStyle", {{"width", 1.5}}}, {"silent", true}});
    series.push_back({{"name", label}, {"type", "scatter"}, {"data", ends}, {"symbolSize", 0}, {"silent", true}});
  }
  // The legend gets its own band under the title, only when there is more than one line.
  const bool show_legend = lines.size() > 1;
  json opt = {{"animation", false},
              {"grid", {{"left", 70}, {"right", 30}, {"top", show_legend ? 70 : 50}, {"bottom", 50}}},
              {"xAxis", {{"type", "value"}, {"name", x_name}, {"nameLocation", "middle"}, {"nameGap", 28}, {"scale", true}}},
              {"yAxis", {{"type", "value"}, {"name", y_name}, {"nameLocation", "middle"}, {"nameGap", 52}, {"scale", true}}},
              {"title", {{"text", c.title}, {"left", "center"}, {"top", 4}, {"textStyle", {{"fontSize", 14}}}}},
              {"series", series}};
  if (show_legend) opt["legend"] = {{"top", 30}, {"data", legend}, {"type", "plain"}};
  if (!o.for_static) opt["tooltip"] = {{"trigger", "axis"}};
  c.option_json = opt.dump();
  return c;
}

}  // namespace jouleprof
