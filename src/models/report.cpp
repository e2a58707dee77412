#include "jouleprof/models/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
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
            {"measured_slowdown_pct", opt_or_null(c.measured_slowdown_pct)},
            {"measured_time_at_chosen_s", opt_or_null(c.measured_time_at_chosen_s)}};
  if (c.predicted_savings_interval)
    j["predicted_savings_ci95_pct"] = {r3(c.predicted_savings_interval->low), r3(c.predicted_savings_interval->high)};
  else
    j["predicted_savings_ci95_pct"] = nullptr;
  if (!c.outside_training.empty()) j["outside_training"] = c.outside_training;
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
  json j = {{"model", c.model}, {"form", c.form}, {"data", c.data}, {"split", c.split},
            {"probe", {{"probe_clock_mhz", c.probe.probe_clock_mhz > 0 ? json(c.probe.probe_clock_mhz) : json("highest")}, {"probes", c.probe.probes}}},
            {"outlier_rows", c.outlier_rows}, {"simulated", c.simulated}};
  if (!c.in_sample.empty()) j["in_sample_applications"] = c.in_sample;
  if (!c.split.empty())
    j["protocol"] = {{"nested", c.nested}, {"designs_per_inner_loop", c.designs}, {"inner_criterion", c.criterion},
                     {"locked_set", c.locked}, {"locked_seed", c.locked.empty() ? json(nullptr) : json(c.locked_seed)}};
  return j;
}

// How often each design was chosen over the folds ("physics ridge=0.1 x 14, poly x 2").
std::string designs_chosen(const std::vector<Curve>& curves) {
  std::map<std::string, int> n;
  for (const auto& c : curves)
    if (!c.design.empty()) ++n[c.design];
  std::string out;
  for (const auto& [d, k] : n) out += fmt::format("{}{} x {}", out.empty() ? "" : ", ", d, k);
  return out;
}

json section_json(const std::vector<Curve>& curves, const Evaluation& ev, const std::vector<std::vector<Choice>>& choices) {
  json apps = json::array();
  for (std::size_t i = 0; i < ev.applications.size(); ++i) {
    json a = errors_json(ev.applications[i].errors);
    a["application"] = ev.applications[i].application;
    a["probe_clocks_mhz"] = curves[i].probe_clocks_mhz;
    if (!curves[i].design.empty()) a["design"] = curves[i].design;
    for (const auto& per_obj : choices)
      for (const auto& c : per_obj)
        if (c.application == ev.applications[i].application) a["optimizer"][c.objective.name()] = choice_json(c);
    apps.push_back(a);
  }
  json j;
  j["applications"] = apps;
  j["overall"] = errors_json(ev.overall);
  json opt = json::array();
  for (const auto& per_obj : choices) opt.push_back(summary_json(per_obj));
  j["optimizer"] = opt;
  return j;
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
                      const std::vector<std::vector<Choice>>& choices, const std::vector<Section>& extra) {
  json j = ctx_json(ctx);
  j["schema_version"] = 1;
  j.update(section_json(curves, ev, choices));
  if (ctx.nested) j["protocol"]["designs_chosen"] = designs_chosen(curves);
  for (const auto& x : extra) {
    j[x.name] = section_json(x.curves, x.evaluation, x.choices);
    j[x.name]["designs_chosen"] = designs_chosen(x.curves);
  }
  return j.dump(2, ' ', false, json::error_handler_t::replace);
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

namespace {

std::string table_text(const std::vector<Curve>& curves, const Evaluation& ev, const std::vector<std::vector<Choice>>& choices) {
  std::string out = fmt::format("{:<14} {:>6} {:>7} {:>8} {:>8} {:>8}", "application", "points", "probe", "P MAPE%", "T MAPE%", "E MAPE%");
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

}  // namespace

std::string eval_text(const EvalContext& ctx, const std::vector<Curve>& curves, const Evaluation& ev,
                      const std::vector<std::vector<Choice>>& choices, const std::vector<Section>& extra) {
  std::string out = fmt::format("{} form, {}{}; {} outlier rows left out\n", ctx.form, ctx.split.empty() ? "model " + ctx.model : ctx.split,
                                ctx.probe.probes > 1 ? fmt::format(", {} probes", ctx.probe.probes) : std::string(", 1 probe"),
                                ctx.outlier_rows);
  if (ctx.nested)
    out += fmt::format("nested: in each outer fold the design is chosen among {} by an inner leave-one-application-out over that fold's "
                       "training applications ({}); the figures below are the outer, held-out ones. Chosen: {}\n",
                       ctx.designs, ctx.criterion, designs_chosen(curves));
  if (!ctx.locked.empty()) {
    std::string names;
    for (const auto& a : ctx.locked) names += (names.empty() ? "" : ", ") + a;
    out += fmt::format("locked test set (seed {}, never seen by a design choice): {}\n", ctx.locked_seed, names);
  }
  if (!ctx.in_sample.empty())
    out += fmt::format("IN-SAMPLE: {} of these applications were in the model's training data; their figures are optimistic{}\n",
                       ctx.in_sample.size(), extra.empty() ? "" : " (held-out figures below)");
  out += table_text(curves, ev, choices);
  for (const auto& x : extra) {
    out += x.name == "held_out" ? "\nheld out: each in-sample application predicted by the same form refitted without it\n"
                                : fmt::format("\nlocked test set: the final design ({}) fitted on the development applications\n",
                                              designs_chosen(x.curves));
    out += table_text(x.curves, x.evaluation, x.choices);
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
  return j.dump(2, ' ', false, json::error_handler_t::replace);
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
  const bool measured = ctx.measured;
  const bool slowdown = !choices.empty() && choices.front().objective.kind == ObjectiveKind::slowdown;
  std::string out = fmt::format("objective {}; {}\n", choices.empty() ? "" : choices.front().objective.name(),
                                measured ? "measured sweep (no model: every figure is measured)" : "model " + ctx.model);
  // Measured sweeps have measured figures only: "E J", "time s", "saving%" — no "pred".
  const char* e_head = measured ? "E J" : "pred E J";
  const char* t_head = measured ? "time s" : "pred t s";
  out += fmt::format("{:<14} {:>10} {:>10} {:>9} {:>9} {:>20} {:>9} {:>10} {:>9}\n", "application", "clock", e_head, t_head,
                     measured ? "slowdn%" : "pred sd%", measured ? "saving% (95% CI)" : "pred sav% (95% CI)", "meas sav%", "optimum", "excess%");
  auto setting = [](double clock, const std::optional<double>& pl) {
    return pl ? fmt::format("{:.0f}@{:.0f}W", clock, *pl) : fmt::format("{:.0f}", clock);
  };
  std::vector<std::string> notes;
  for (const auto& c : choices) {
    std::string sav;
    if (measured && c.measured_savings_pct)
      sav = c.measured_savings_pct->low != c.measured_savings_pct->high
                ? fmt::format("{:.1f} [{:.1f}, {:.1f}]", c.measured_savings_pct->value, c.measured_savings_pct->low, c.measured_savings_pct->high)
                : fmt::format("{:.1f}", c.measured_savings_pct->value);
    else if (c.predicted_savings_interval)
      sav = fmt::format("{:.1f} [{:.1f}, {:.1f}]", c.predicted_savings_pct, c.predicted_savings_interval->low, c.predicted_savings_interval->high);
    else
      sav = fmt::format("{:.1f}", c.predicted_savings_pct);
    const double sd = measured && c.measured_slowdown_pct ? *c.measured_slowdown_pct : c.predicted_slowdown_pct;
    out += fmt::format("{:<14} {:>10} {:>10.1f} {:>9.3g} {:>9.1f} {:>20} {:>9} {:>10} {:>9}\n", c.application,
                       setting(c.chosen_clock_mhz, c.chosen_power_limit_w), c.predicted_energy_j, c.predicted_time_s, sd, sav,
                       c.measured_savings_pct && !measured ? fmt::format("{:.1f}", c.measured_savings_pct->value) : "-",
                       c.optimum_clock_mhz ? setting(*c.optimum_clock_mhz, c.optimum_power_limit_w) : "-",
                       c.objective_excess_pct ? fmt::format("{:.2f}", *c.objective_excess_pct) : "-");
    if (!c.outside_training.empty()) notes.push_back(c.application + ": probe outside the training range (" + c.outside_training + ")");
  }
  if (slowdown)
    out += fmt::format("slowdown = run time at the chosen clock vs the highest clock ({}); the bound is {:g}%\n",
                       measured ? "measured" : "predicted", choices.front().objective.slowdown_pct);
  if (!measured && std::any_of(choices.begin(), choices.end(), [](const Choice& c) { return c.predicted_savings_interval.has_value(); }))
    out += "pred sav%: the predicted saving vs the highest clock with its 95% interval from the model's held-out spread; the choice "
           "minimises the expected objective and never takes a clock whose energy's upper 95% bound exceeds the highest clock's\n";
  const auto s = summarize(choices);
  if (s.compared)
    out += fmt::format("optimum: the measured optimum of the same objective; excess%: the measured objective at the chosen clock above it. "
                       "Mean excess {:.2f}% (energy {:.2f}%), within 2%: {} of {}\n",
                       s.mean_objective_excess_pct, s.mean_energy_excess_pct, s.within, s.compared);
  for (const auto& n : notes) out += "note: " + n + "\n";
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
  return json{{"schema_version", 1}, {"model", model}, {"applications", apps}}.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace jouleprof::models
