// Figures (ECharts options, rendered to SVG by the CLI as the sweep report's are) and LaTeX
// tables of model evaluations and optimizer choices.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "jouleprof/models/report.hpp"

namespace jouleprof::models {

using nlohmann::json;

namespace {

json chart(const std::string& title, const std::string& x_name, const std::string& y_name, json series, bool legend) {
  json opt = {{"animation", false},
              {"grid", {{"left", 75}, {"right", 30}, {"top", legend ? 70 : 50}, {"bottom", 50}}},
              {"xAxis", {{"type", "value"}, {"name", x_name}, {"nameLocation", "middle"}, {"nameGap", 28}, {"scale", true}}},
              {"yAxis", {{"type", "value"}, {"name", y_name}, {"nameLocation", "middle"}, {"nameGap", 55}, {"scale", true}}},
              {"title", {{"text", title}, {"left", "center"}, {"top", 4}, {"textStyle", {{"fontSize", 14}}}}},
              {"series", std::move(series)}};
  // Many series (21 applications) get a scrolling legend so every colour is named.
  if (legend) opt["legend"] = {{"top", 30}, {"type", opt["series"].size() > 12 ? "scroll" : "plain"}};
  return opt;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// 95% half-width of the mean of repeats (normal approximation; 0 for one repeat).
double ci95(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return 1.96 * std::sqrt(s / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()));
}

std::string tex(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '_' || c == '%' || c == '&' || c == '#' || c == '$' || c == '{' || c == '}') o += '\\';
    o += c;
  }
  return o;
}

std::string opt_num(const std::optional<double>& v, const char* f = "{:.1f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : std::string("--");
}

}  // namespace

std::string ucurve_chart_option(const Curve& c, const Choice& ch, bool simulated) {
  json pred = json::array(), meas = json::array(), bars = json::array(), ends = json::array(), marks = json::array();
  for (const auto& p : c.points) {
    if (p.outlier || p.power_limit_w) continue;  // the clock axis at the default limit
    pred.push_back({p.clock_mhz, p.pred_energy_j()});
    if (!p.energy_j()) continue;
    const double e = *p.energy_j(), h = ci95(p.repeat_energy_j);
    meas.push_back({p.clock_mhz, e});
    if (h > 0) {
      bars.push_back({{"coords", {{p.clock_mhz, e - h}, {p.clock_mhz, e + h}}}});
      ends.push_back({p.clock_mhz, e - h});
      ends.push_back({p.clock_mhz, e + h});
    }
  }
  marks.push_back({{"coord", {ch.chosen_clock_mhz, ch.predicted_energy_j}}, {"name", "chosen"},
                   {"value", fmt::format("{:.0f}", ch.chosen_clock_mhz)}});
  json series = json::array();
  series.push_back({{"name", "predicted"}, {"type", "line"}, {"data", pred}, {"showSymbol", false},
                    {"markPoint", {{"data", marks}, {"symbol", "pin"}, {"symbolSize", 44}}}});
  if (!meas.empty()) {
    json m = {{"name", "measured (±95% CI)"}, {"type", "scatter"}, {"data", meas}, {"symbolSize", 5}};
    if (ch.optimum_clock_mhz && ch.optimum_energy_j)
      m["markPoint"] = {{"data", {{{"coord", {*ch.optimum_clock_mhz, *ch.optimum_energy_j}}, {"name", "optimum"},
                                   {"value", fmt::format("{:.0f}", *ch.optimum_clock_mhz)}}}},
                        {"symbol", "diamond"}, {"symbolSize", 14}};
    series.push_back(m);
    // The diamond explained in the legend: the clock with the lowest measured objective.
    if (ch.optimum_clock_mhz && ch.optimum_energy_j)
      series.push_back({{"name", fmt::format("◆ measured optimum ({} objective): {:.0f} MHz", ch.objective.name(), *ch.optimum_clock_mhz)},
                        {"type", "scatter"}, {"symbol", "diamond"}, {"symbolSize", 10},
                        {"data", {{*ch.optimum_clock_mhz, *ch.optimum_energy_j}}}});
  }
  if (!bars.empty()) {
    series.push_back({{"name", "measured (±95% CI)"}, {"type", "lines"}, {"coordinateSystem", "cartesian2d"}, {"data", bars},
                      {"lineStyle", {{"width", 1.2}}}, {"silent", true}});
    series.push_back({{"name", "measured (±95% CI)"}, {"type", "scatter"}, {"data", ends}, {"symbolSize", 0}, {"silent", true}});
  }
  const std::string title = fmt::format("{}: energy vs clock, {} choice {:.0f} MHz{}", c.application, ch.objective.name(),
                                        ch.chosen_clock_mhz, simulated ? " (simulated)" : "");
  return chart(title, "SM clock (MHz)", "energy (J)", series, !meas.empty()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string predicted_vs_measured_chart_option(const std::vector<Curve>& curves, const std::string& quantity, bool simulated) {
  json series = json::array();
  double lo = HUGE_VAL, hi = 0;
  for (const auto& c : curves) {
    json data = json::array();
    for (const auto& p : c.points) {
      if (p.outlier || !p.energy_j()) continue;
      const double m = quantity == "power" ? *p.power_w : quantity == "time" ? *p.time_s : *p.energy_j();
      const double f = quantity == "power" ? p.pred_power_w : quantity == "time" ? p.pred_time_s : p.pred_energy_j();
      data.push_back({m, f});
      lo = std::min({lo, m, f});
      hi = std::max({hi, m, f});
    }
    if (!data.empty()) series.push_back({{"name", c.application}, {"type", "scatter"}, {"data", data}, {"symbolSize", 4}});
  }
  if (series.empty()) return "";
  series.push_back({{"name", "y = x"}, {"type", "line"}, {"data", {{lo, lo}, {hi, hi}}}, {"showSymbol", false},
                    {"lineStyle", {{"type", "dashed"}, {"color", "#888"}}}});
  const std::string unit = quantity == "power" ? "W" : quantity == "time" ? "s" : "J";
  const std::string title = fmt::format("predicted vs measured {}{}", quantity, simulated ? " (simulated)" : "");
  return chart(title, fmt::format("measured {} ({})", quantity, unit), fmt::format("predicted {} ({})", quantity, unit), series,
               true)
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string optimize_latex(const std::vector<Choice>& choices) {
  const bool pl = std::any_of(choices.begin(), choices.end(), [](const Choice& c) { return c.chosen_power_limit_w.has_value(); });
  std::string o = "% jouleprof optimize: objective " + (choices.empty() ? std::string() : choices.front().objective.name()) + "\n";
  o += pl ? "\\begin{tabular}{lrrrrrr}\n" : "\\begin{tabular}{lrrrrr}\n";
  o += "\\hline\n";
  o += std::string("Application & Clock (MHz)") + (pl ? " & Limit (W)" : "") +
       " & Saving (\\%) & 95\\% CI & Slowdown (\\%) & Excess (\\%) \\\\\n\\hline\n";
  for (const auto& c : choices) {
    o += tex(c.application) + fmt::format(" & {:.0f}", c.chosen_clock_mhz);
    if (pl) o += " & " + opt_num(c.chosen_power_limit_w, "{:.0f}");
    if (c.measured_savings_pct)
      o += fmt::format(" & {:.1f} & [{:.1f}, {:.1f}]", c.measured_savings_pct->value, c.measured_savings_pct->low, c.measured_savings_pct->high);
    else
      o += fmt::format(" & {:.1f} & --", c.predicted_savings_pct);
    o += " & " + opt_num(c.measured_slowdown_pct ? c.measured_slowdown_pct : std::optional<double>(c.predicted_slowdown_pct));
    o += " & " + opt_num(c.objective_excess_pct, "{:.2f}") + " \\\\\n";
  }
  o += "\\hline\n\\end{tabular}\n";
  return o;
}

std::string eval_latex(const Evaluation& ev, const std::vector<std::vector<Choice>>& choices) {
  std::string o = "% jouleprof model eval/validate: MAPE per application; optimizer excess over the measured optimum\n";
  o += "\\begin{tabular}{lrrr" + std::string(choices.size(), 'r') + "}\n\\hline\n";
  o += "Application & Power (\\%) & Time (\\%) & Energy (\\%)";
  for (const auto& cs : choices) o += " & " + tex(cs.empty() ? std::string("?") : cs.front().objective.name()) + " (\\%)";
  o += " \\\\\n\\hline\n";
  auto excess = [](const std::vector<Choice>& cs, const std::string& app) -> std::string {
    for (const auto& c : cs)
      if (c.application == app && c.objective_excess_pct) return fmt::format("{:.2f}", *c.objective_excess_pct);
    return "--";
  };
  for (const auto& a : ev.applications) {
    o += fmt::format("{} & {:.2f} & {:.2f} & {:.2f}", tex(a.application), a.errors.power_mape_pct, a.errors.time_mape_pct,
                     a.errors.energy_mape_pct);
    for (const auto& cs : choices) o += " & " + excess(cs, a.application);
    o += " \\\\\n";
  }
  o += fmt::format("\\hline\nAll & {:.2f} & {:.2f} & {:.2f}", ev.overall.power_mape_pct, ev.overall.time_mape_pct,
                   ev.overall.energy_mape_pct);
  for (const auto& cs : choices) {
    const auto s = summarize(cs);
    o += s.compared ? fmt::format(" & {:.2f}", s.mean_objective_excess_pct) : std::string(" & --");
  }
  o += " \\\\\n\\hline\n\\end{tabular}\n";
  return o;
}

}  // namespace jouleprof::models
