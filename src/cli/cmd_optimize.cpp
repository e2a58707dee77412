// `jouleprof optimize`: the clock minimising energy, EDP, ED2P or energy under a slowdown bound,
// per application (and phase), from a model applied to probe runs or from a measured sweep.
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "jouleprof/core/parse.hpp"
#include "jouleprof/models/optimize.hpp"
#include "jouleprof/models/report.hpp"
#include "model_common.hpp"

namespace jouleprof::cli {
namespace {

namespace md = jouleprof::models;

struct OptimizeFlags {
  DataFlags data;
  OutFlags out;
  std::string model, objective = "energy", power_limits;
  bool pareto = false;
};

// "W1,W2,..." or "MIN:MAX:STEP" (watts).
Result<std::vector<double>> parse_limits(const std::string& text) {
  auto bad = [&] { return make_error(Errc::invalid_argument, "--power-limits takes W1,W2,... or MIN:MAX:STEP in watts, got '" + text + "'"); };
  std::vector<double> out;
  if (text.find(':') != std::string::npos) {
    std::stringstream ss(text);
    std::string a, b, c;
    double lo = 0, hi = 0, step = 0;
    if (!std::getline(ss, a, ':') || !std::getline(ss, b, ':') || !std::getline(ss, c) || !parse_finite_double(a, lo) ||
        !parse_finite_double(b, hi) || !parse_finite_double(c, step) || step <= 0 || hi < lo || (hi - lo) / step > 10000)
      return bad();
    for (double w = lo; w <= hi + 1e-9; w += step) out.push_back(w);
    return out;
  }
  std::stringstream ss(text);
  std::string t;
  while (std::getline(ss, t, ',')) {
    double w = 0;
    if (!parse_finite_double(t, w)) return bad();
    out.push_back(w);
  }
  return out;
}

int run(const OptimizeFlags& f) {
  auto obj = md::parse_objective(f.objective);
  if (!obj) return report(obj.error());
  std::vector<double> limits;
  if (!f.power_limits.empty()) {
    if (f.model.empty())
      return report(make_error(Errc::invalid_argument,
                               "--power-limits predicts the GPU under each limit with --model; a measured sweep over limits gives them as a column (--power-limit-col) or sweep runs"));
    auto l = parse_limits(f.power_limits);
    if (!l) return report(l.error());
    limits = std::move(*l);
  }
  auto d = f.data.load();
  if (!d) return report(d.error());
  md::EvalContext ctx = eval_ctx(f.model.empty() && !f.data.map.pred_power.empty() ? "columns " + f.data.map.pred_power + ", " + f.data.map.pred_time : f.model,
                      "", f.data.source(), "", f.data.probe, 0);
  ctx.simulated = d->simulated;
  ctx.measured = f.model.empty() && f.data.map.pred_power.empty();
  {
    md::Dataset copy = *d;
    ctx.outlier_rows = md::flag_outliers(copy, f.data.outlier_rule());
  }
  Result<std::vector<md::Curve>> curves = std::vector<md::Curve>{};
  if (f.model.empty()) {
    curves = md::measured_curves(std::move(*d), f.data.outlier_rule());
  } else {
    auto m = md::load_model(f.model);
    if (!m) return report(m.error());
    if (auto g = check_gpu(*m, f.data, f.out.quiet); !g) return report(g.error());
    ctx.form = md::to_string(m->info().form);
    curves = md::predict_curves(*m, std::move(*d), f.data.probe);
    if (curves) warn_outside(*curves, f.out.quiet);
    if (curves && !f.power_limits.empty()) curves = md::power_limit_curves(*curves, limits);
  }
  if (!curves) return report(curves.error());
  const auto choices = md::optimize(*curves, *obj);
  if (!f.out.json.empty())
    if (auto w = write_text(f.out.json, md::optimize_json(ctx, *curves, choices, f.pareto)); !w) return report(w.error());
  if (!f.out.csv.empty())
    if (auto w = write_text(f.out.csv, md::optimize_csv(choices)); !w) return report(w.error());
  if (!f.out.latex.empty())
    if (auto w = write_text(f.out.latex, md::optimize_latex(choices)); !w) return report(w.error());
  if (!f.out.svg_dir.empty()) {
    std::vector<std::pair<std::string, std::string>> charts;
    for (const auto& ch : choices)
      for (const auto& cv : *curves)
        if (cv.application == ch.application) charts.emplace_back("ucurve-" + ch.application, md::ucurve_chart_option(cv, ch, ctx.simulated));
    if (!f.model.empty()) charts.emplace_back("predicted-vs-measured-energy", md::predicted_vs_measured_chart_option(*curves, "energy", ctx.simulated));
    if (auto w = write_svgs(f.out.svg_dir, charts, f.out.quiet); !w) return report(w.error());
  }
  if (f.out.text()) std::cout << md::optimize_text(ctx, choices);
  return 0;
}

Runner add_optimize(CLI::App& app) {
  auto f = std::make_shared<OptimizeFlags>();
  CLI::App* c = app.add_subcommand("optimize", "The energy-, EDP-, ED2P-optimal clock, or the least energy within a slowdown");
  c->footer(
      "Examples:\n"
      "  jouleprof optimize --model v100.model.json --data probes.csv --objective energy --json out.json\n"
      "  jouleprof optimize --data sweep.csv --objective slowdown:5        (measured sweep, no model)\n"
      "  jouleprof optimize --data sweep.csv --quality-col accuracy --pareto --json -\n"
      "  jouleprof optimize --sweep SWEEP_ID --phases --objective slowdown:5 --latex table.tex --svg-dir figs\n"
      "  jouleprof optimize --model h100.model.json --data probe.csv --power-limits 200:700:25   (the limit to set)\n"
      "Each application is predicted from its probe clock(s) only; measured fields are filled where the\n"
      "data has the chosen clock. See docs/models.md.");
  c->add_option("--model", f->model, "model file (default: optimize the measured sweep itself)");
  f->data.add(c, true);
  c->add_option("--objective", f->objective, "energy, edp, ed2p or slowdown:PCT")->capture_default_str();
  c->add_option("--power-limits", f->power_limits,
                "with --model: choose a power limit instead of a clock (W1,W2,... or MIN:MAX:STEP, watts); each limit is "
                "predicted at the clock the GPU settles at under it");
  c->add_flag("--pareto", f->pareto, "add each application's Pareto front (energy, time, quality) to the JSON");
  f->out.add(c);
  return [f] { return run(*f); };
}

const bool registered = register_command(add_optimize);

}  // namespace
}  // namespace jouleprof::cli
