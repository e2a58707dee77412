#include "jouleprof/models/report.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace jouleprof::models {

using nlohmann::json;

namespace {

double r3(double v) { return std::round(v * 1000) / 1000; }

json errors_json(const Errors& e) {
  return {{"points", e.points},           {"power_mape_pct", r3(e.power_mape_pct)}, {"time_mape_pct", r3(e.time_mape_pct)},
          {"energy_mape_pct", r3(e.energy_mape_pct)}, {"power_r2", r3(e.power_r2)},     {"time_r2", r3(e.time_r2)},
          {"energy_r2", r3(e.energy_r2)}};
}

json opt_or_null(const std::optional<double>& v) { return v ? json(r3(*v)) : json(nullptr); }

json choice_json(const Choice& c) {
  json j = {{"application", c.application},
            {"chosen_clock_mhz", c.chosen_clock_mhz},
            {"chosen_power_limit_w", opt_or_null(c.chosen_power_limit_w)},
            {"optimum_power_limit_w", opt_or_null(c.optimum_power_limit_w)},
            {"reference_power_limit_w", opt_or_null(c.reference_power_limit_w)},
            {"predicted_energy_j", r3(c.predicted_energy_j)},
            {"predicted_power_w", r3(c.predicted_power_w)},
            {"predicted_time_s", r3(c.predicted_time_s)},
            {"measured_energy_at_chosen_j", opt_or_null(c.measured_energy_at_chosen_j)},
            {"optimum_clock_mhz", opt_or_null(c.optimum_clock_mhz)},
            {"optimum_energy_j", opt_or_null(c.optimum_energy_j)},
            {"energy_excess_pct", opt_or_null(c.energy_excess_pct)},
            {"objective_excess_pct", opt_or_null(c.objective_excess_pct)},
            {"reference_clock_mhz", c.reference_clock_mhz},
            {"predicted_savings_pct", r3(c.predicted_savings_pct)},
            {"predicted_slowdown_pct", r3(c.predicted_slowdown_pct)},
            {"measured_slowdown_pct", opt_or_null(c.measured_slowdown_pct)}};
  if (c.measured_savings_pct) {
    j["measured_savings_pct"] = r3(c.measured_savings_pct->value);
    j["measured_savings_ci95_pct"] = {r3(c.measured_savings_pct->low), r3(c.measured_savings_pct->high)};
  } else {
    j["measured_savings_pct"] = nullptr;
    j["measured_savings_ci95_pct"] = nullptr;
  }
  return j;
}

json summary_json(const std::vector<Choice>& ch) {
  const auto s = summarize(ch);
  return {{"objective", ch.empty() ? "" : ch.front().objective.name()},
          {"applications", s.applications},
          {"compared_with_measured", s.compared},
          {"mean_energy_excess_pct", r3(s.mean_energy_excess_pct)},
          {"max_energy_excess_pct", r3(s.max_energy_excess_pct)},
          {"mean_objective_excess_pct", r3(s.mean_objective_excess_pct)},
          {"within_2pct", s.within}};
}

json ctx_json(const EvalContext& c) {
  return {{"model", c.model}, {"form", c.form}, {"data", c.data}, {"split", c.split},
          {"probe", {{"probe_clock_mhz", c.probe.probe_clock_mhz > 0 ? json(c.probe.probe_clock_mhz) : json("highest")}, {"probes", c.probe.probes}}},
          {"outlier_rows", c.outlier_rows}, {"simulated", c.simulated}};
}

}  // namespace

ExcessSummary summarize(const std::vector<Choice>& choices, double within_pct) {
  ExcessSummary s;
  s.applications = choices.size();
  for (const auto& c : choices) {
    if (!c.energy_excess_pct) continue;
    ++s.compared;
    s.mean_energy_excess_pct += *c.energy_excess_pct;
    s.mean_objective_excess_pct += *c.objective_excess_pct;
    s.max_energy_excess_pct = std::max(s.max_energy_excess_pct, *c.energy_excess_pct);
    if (*c.objective_excess_pct <= within_pct) ++s.within;
  }
  if (s.compared) {
    s.mean_energy_excess_pct /= static_cast<double>(s.compared);
    s.mean_objective_excess_pct /= static_cast<double>(s.compared);
  }
  return s;
}

std::string eval_json(const EvalContext& ctx, const std::vector<Curve>& curves, const Evaluation& ev,
                      const std::vector<std::vector<Choice>>& choices) {
  json j = ctx_json(ctx);
  j["schema_version"] = 1;
  json apps = json::array();
  for (std::size_t i = 0; i < ev.applications.size(); ++i) {
    json a = errors_json(ev.applications[i].errors);
    a["application"] = ev.applications[i].application;
    a["probe_clocks_mhz"] = curves[i].probe_clocks_mhz;
    for (const auto& per_obj : choices)
      for (const auto& c : per_obj)
        if (c.application == a["application"]) a["optimizer"][c.objective.name()] = choice_json(c);
    apps.push_back(a);
  }
  j["applications"] = apps;
  j["overall"] = errors_json(ev.overall);
  json opt = json::array();
  for (const auto& per_obj : choices) opt.push_back(summary_json(per_obj));
  j["optimizer"] = opt;
  return j.dump(2);
}

std::string eval_csv(const std::vector<Curve>& curves, const Evaluation& ev) {
  std::string out = "application,points,probe_clock_mhz,power_mape_pct,time_mape_pct,energy_mape_pct,power_r2,time_r2,energy_r2\n";
  for (std::size_t i = 0; i < ev.applications.size(); ++i) {
    const auto& e = ev.applications[i].errors;
    out += fmt::format("{},{},{},{:.3f},{:.3f},{:.3f},{:.4f},{:.4f},{:.4f}\n", ev.applications[i].application, e.points,
                       curves[i].probe_clocks_mhz.empty() ? 0.0 : curves[i].probe_clocks_mhz.front(), e.power_mape_pct,
                       e.time_mape_pct, e.energy_mape_pct, e.power_r2, e.time_r2, e.energy_r2);
  }
  const auto& e = ev.overall;
  out += fmt::format("ALL,{},,{:.3f},{:.3f},{:.3f},{:.4f},{:.4f},{:.4f}\n", e.points, e.power_mape_pct, e.time_mape_pct,
                     e.energy_mape_pct, e.power_r2, e.time_r2, e.energy_r2);
  return out;
}

std::string eval_text(const EvalContext& ctx, const std::vector<Curve>& curves, const Evaluation& ev,
                      const std::vector<std::vector<Choice>>& choices) {
  std::string out = fmt::format("{} form, {}{}; {} outlier rows left out\n", ctx.form, ctx.split.empty() ? "model " + ctx.model : ctx.split,
                                ctx.probe.probes > 1 ? fmt::format(", {} probes", ctx.probe.probes) : std::string(", 1 probe"),
                                ctx.outlier_rows);
  out += fmt::format("{:<14} {:>6} {:>7} {:>8} {:>8} {:>8}", "application", "points", "probe", "P MAPE%", "T MAPE%", "E MAPE%");
  for (const auto& per : choices)
    if (!per.empty()) out += fmt::format(" {:>14}", per.front().objective.name() + " exc%");
  out += "\n";
  for (std::size_t i = 0; i < ev.applications.size(); ++i) {
    const auto& e = ev.applications[i].errors;
    out += fmt::format("{:<14} {:>6} {:>7.0f} {:>8.2f} {:>8.2f} {:>8.2f}", ev.applications[i].application, e.points,
                       curves[i].probe_clocks_mhz.empty() ? 0.0 : curves[i].probe_clocks_mhz.front(), e.power_mape_pct,
                       e.time_mape_pct, e.energy_mape_pct);
    for (const auto& per : choices)
      for (const auto& c : per)
        if (c.application == ev.applications[i].application)
          out += c.objective_excess_pct ? fmt::format(" {:>14.2f}", *c.objective_excess_pct) : fmt::format(" {:>14}", "-");
    out += "\n";
  }
  const auto& e = ev.overall;
  out += fmt::format("{:<14} {:>6} {:>7} {:>8.2f} {:>8.2f} {:>8.2f}\n", "all rows", e.points, "", e.power_mape_pct, e.time_mape_pct, e.energy_mape_pct);
  for (const auto& per : choices) {
    const auto s = summarize(per);
    if (per.empty()) continue;
    out += fmt::format("{}: measured {} at the chosen clock is {:.2f}% above the measured optimum on average (max {:.2f}% in energy); within 2%: {} of {}\n",
                       per.front().objective.name(), per.front().objective.kind == ObjectiveKind::edp ? "EDP" : per.front().objective.kind == ObjectiveKind::ed2p ? "ED2P" : "energy",
                       s.mean_objective_excess_pct, s.max_energy_excess_pct, s.within, s.compared);
  }
  return out;
}

std::string optimize_json(const EvalContext& ctx, const std::vector<Curve>& curves, const std::vector<Choice>& choices, bool pareto) {
  json j = ctx_json(ctx);
  j["schema_version"] = 1;
  j["objective"] = choices.empty() ? "" : choices.front().objective.name();
  json apps = json::array();
  for (const auto& c : choices) {
    json a = choice_json(c);
    for (const auto& cv : curves) {
      if (cv.application != c.application) continue;
      a["probe_clocks_mhz"] = cv.probe_clocks_mhz;
      if (pareto) {
        json front = json::array();
        for (const auto& p : pareto_front(cv, ctx.model.empty()))
          front.push_back({{"clock_mhz", p.clock_mhz}, {"power_limit_w", opt_or_null(p.power_limit_w)}, {"energy_j", r3(p.energy_j)},
                           {"time_s", r3(p.time_s)}, {"quality", opt_or_null(p.quality)}});
        a["pareto"] = front;
      }
    }
    apps.push_back(a);
  }
  j["applications"] = apps;
  j["summary"] = summary_json(choices);
  return j.dump(2);
}

std::string optimize_csv(const std::vector<Choice>& choices) {
  std::string out =
      "application,objective,chosen_clock_mhz,predicted_energy_j,measured_energy_at_chosen_j,optimum_clock_mhz,optimum_energy_j,"
      "energy_excess_pct,objective_excess_pct,predicted_savings_pct,measured_savings_pct,measured_savings_ci95_low_pct,"
      "measured_savings_ci95_high_pct,measured_slowdown_pct,chosen_power_limit_w,optimum_power_limit_w\n";
  auto o = [](const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : std::string(); };
  for (const auto& c : choices) {
    out += fmt::format("{},{},{},{:.3f},{},{},{},{},{},{:.3f},{},{},{},{},{},{}\n", c.application, c.objective.name(), c.chosen_clock_mhz,
                       c.predicted_energy_j, o(c.measured_energy_at_chosen_j), o(c.optimum_clock_mhz), o(c.optimum_energy_j),
                       o(c.energy_excess_pct), o(c.objective_excess_pct), c.predicted_savings_pct,
                       c.measured_savings_pct ? fmt::format("{:.3f}", c.measured_savings_pct->value) : "",
                       c.measured_savings_pct ? fmt::format("{:.3f}", c.measured_savings_pct->low) : "",
                       c.measured_savings_pct ? fmt::format("{:.3f}", c.measured_savings_pct->high) : "", o(c.measured_slowdown_pct),
                       o(c.chosen_power_limit_w), o(c.optimum_power_limit_w));
  }
  return out;
}

std::string optimize_text(const EvalContext& ctx, const std::vector<Choice>& choices) {
  std::string out = fmt::format("objective {}; {}\n", choices.empty() ? "" : choices.front().objective.name(),
                                ctx.model.empty() ? "measured sweep" : "model " + ctx.model);
  out += fmt::format("{:<14} {:>8} {:>10} {:>9} {:>9} {:>10} {:>9}\n", "application", "clock", "pred E J", "pred sav%", "meas sav%",
                     "optimum", "excess%");
  // A setting is "clock" or "clock@limit W" in a power-limit sweep.
  auto setting = [](double clock, const std::optional<double>& pl) {
    return pl ? fmt::format("{:.0f}@{:.0f}W", clock, *pl) : fmt::format("{:.0f}", clock);
  };
  for (const auto& c : choices)
    out += fmt::format("{:<14} {:>8} {:>10.1f} {:>9.1f} {:>9} {:>10} {:>9}\n", c.application, setting(c.chosen_clock_mhz, c.chosen_power_limit_w),
                       c.predicted_energy_j, c.predicted_savings_pct,
                       c.measured_savings_pct ? fmt::format("{:.1f}", c.measured_savings_pct->value) : "-",
                       c.optimum_clock_mhz ? setting(*c.optimum_clock_mhz, c.optimum_power_limit_w) : "-",
                       c.objective_excess_pct ? fmt::format("{:.2f}", *c.objective_excess_pct) : "-");
  const auto s = summarize(choices);
  if (s.compared)
    out += fmt::format("mean excess over the measured optimum {:.2f}% (energy {:.2f}%), within 2%: {} of {}\n", s.mean_objective_excess_pct,
                       s.mean_energy_excess_pct, s.within, s.compared);
  return out;
}

std::string curves_json(const std::string& model, const std::vector<Curve>& curves) {
  json apps = json::array();
  for (const auto& c : curves) {
    json pts = json::array();
    for (const auto& p : c.points)
      pts.push_back({{"clock_mhz", p.clock_mhz}, {"power_w", r3(p.pred_power_w)}, {"time_s", r3(p.pred_time_s)}, {"energy_j", r3(p.pred_energy_j())}});
    apps.push_back({{"application", c.application}, {"probe_clocks_mhz", c.probe_clocks_mhz}, {"points", pts}});
  }
  return json{{"schema_version", 1}, {"model", model}, {"applications", apps}}.dump(2);
}

}  // namespace jouleprof::models
