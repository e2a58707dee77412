// `jouleprof model fit|eval|predict|validate`: power/run-time models across SM clocks (docs/models.md).
#include <algorithm>
#include <functional>
#include <iostream>
#include <optional>
#include <memory>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "jouleprof/core/progress.hpp"
#include "jouleprof/models/validate.hpp"
#include "jouleprof/models/optimize.hpp"
#include "jouleprof/models/report.hpp"
#include "model_common.hpp"

namespace jouleprof::cli {
namespace {

namespace md = jouleprof::models;

struct ModelFlags {
  DataFlags data;
  OutFlags out;
  std::string form = "auto", model, output, split = "loao";
  std::size_t locked = 0;
  unsigned locked_seed = 34;
  bool report_locked = false;
  std::vector<std::string> objectives{"energy", "edp", "slowdown:5"};
  std::vector<double> clocks;
  double max_clock = 0, ridge = 0;
  int folds = 5, xgb_rounds = 400;
};

Result<md::FitOptions> fit_options(const ModelFlags& f) {
  auto form = md::parse_form(f.form);
  if (!form) return form.error();
  md::FitOptions o;
  o.form = *form;
  o.max_clock_mhz = f.max_clock;
  o.probe_clock_mhz = f.data.probe.probe_clock_mhz;
  o.ridge = f.ridge;
  o.xgb_rounds = f.xgb_rounds;
  o.gpu = f.data.gpu;
  o.outliers = f.data.outlier_rule();
  o.probes = f.data.probe.probes;
  return o;
}

// "design 3/16 · 4 s elapsed · ETA 12 s" on stderr while a long fit or validation runs.
std::function<void(int, int)> progress_of(const std::string& label, bool quiet, std::unique_ptr<Progress>& holder) {
  if (quiet || !Progress::wanted(global_flags().progress)) return {};
  return [label, &holder](int done, int total) {
    if (!holder) holder = std::make_unique<Progress>(label, total, true);
    while (holder->completed() < done) holder->step();
  };
}

Result<std::vector<std::vector<md::Choice>>> choices_for(const ModelFlags& f, const std::vector<md::Curve>& curves) {
  std::vector<std::vector<md::Choice>> all;
  for (const auto& s : f.objectives) {
    auto o = md::parse_objective(s);
    if (!o) return o.error();
    all.push_back(md::optimize(curves, *o));
  }
  return all;
}

int emit_eval(const ModelFlags& f, const md::EvalContext& ctx, const std::vector<md::Curve>& curves,
              const std::vector<md::Curve>* held = nullptr, const std::vector<md::Curve>* locked = nullptr) {
  const auto ev = md::evaluate(curves);
  auto ch = choices_for(f, curves);
  if (!ch) return report(ch.error());
  std::vector<md::Section> extra;
  for (const auto& [name, cv] : {std::pair<const char*, const std::vector<md::Curve>*>{"held_out", held}, {"locked_set", locked}}) {
    if (!cv) continue;
    auto c2 = choices_for(f, *cv);
    if (!c2) return report(c2.error());
    extra.push_back(md::Section{name, *cv, md::evaluate(*cv), std::move(*c2)});
  }
  if (!f.out.json.empty())
    if (auto w = write_text(f.out.json, md::eval_json(ctx, curves, ev, *ch, extra)); !w) return report(w.error());
  if (!f.out.csv.empty())
    if (auto w = write_text(f.out.csv, md::eval_csv(curves, ev)); !w) return report(w.error());
  if (!f.out.latex.empty())
    if (auto w = write_text(f.out.latex, md::eval_latex(ev, *ch)); !w) return report(w.error());
  if (!f.out.svg_dir.empty()) {
    std::vector<std::pair<std::string, std::string>> charts;
    for (const char* q : {"power", "time", "energy"})
      charts.emplace_back(std::string("predicted-vs-measured-") + q, md::predicted_vs_measured_chart_option(curves, q, ctx.simulated));
    if (!ch->empty())
      for (const auto& c : ch->front())
        for (const auto& cv : curves)
          if (cv.application == c.application) charts.emplace_back("ucurve-" + c.application, md::ucurve_chart_option(cv, c, ctx.simulated));
    if (auto w = write_svgs(f.out.svg_dir, charts, f.out.quiet); !w) return report(w.error());
  }
  if (f.out.text()) std::cout << md::eval_text(ctx, curves, ev, *ch, extra);
  return 0;
}

std::size_t outliers_in(const ModelFlags& f, md::Dataset d) { return md::flag_outliers(d, f.data.outlier_rule()); }

int run_fit(const ModelFlags& f) {
  auto o = fit_options(f);
  if (!o) return report(o.error());
  auto d = f.data.load();
  if (!d) return report(d.error());
  std::unique_ptr<Progress> bar;
  o->progress = progress_of("design", f.out.quiet, bar);
  auto m = md::fit(std::move(*d), *o);
  bar.reset();
  if (!m) return report(m.error());
  if (auto w = md::save_model(*m, f.output); !w) return report(w.error());
  if (!f.out.quiet) {
    const auto& i = m->info();
    std::cerr << "jouleprof: " << md::to_string(i.form) << " model of " << i.training_applications.size() << " applications ("
              << i.training_rows - i.training_outliers << " rows, " << i.training_outliers << " outlier rows left out), max clock "
              << i.max_clock_mhz << " MHz, activity:";
    for (const auto& a : i.activity) std::cerr << " " << a;
    std::cerr << "\n";
    if (!i.chosen_design.empty())
      std::cerr << "jouleprof: design chosen by leave-one-application-out over the training applications: " << i.chosen_design << " (of "
                << i.designs.size() << " designs tried)\n";
    std::cerr << "jouleprof: wrote " << f.output << "\n";
  }
  return 0;
}

int run_eval(const ModelFlags& f) {
  if (f.data.map.pred_power.empty() != f.data.map.pred_time.empty())
    return report(make_error(Errc::invalid_argument, "another model's predictions need both --pred-power-col and --pred-time-col"));
  if (f.model.empty()) {  // another model's predictions, from the data's own columns
    if (f.data.map.pred_power.empty() || f.data.map.pred_time.empty())
      return report(make_error(Errc::invalid_argument, "model eval needs a MODEL file, or --pred-power-col and --pred-time-col"));
    auto d = f.data.load();
    if (!d) return report(d.error());
    md::EvalContext ctx = eval_ctx("columns " + f.data.map.pred_power + ", " + f.data.map.pred_time, "external", f.data.source(), "", f.data.probe, outliers_in(f, *d));
    ctx.simulated = d->simulated;
    auto curves = md::measured_curves(std::move(*d), f.data.outlier_rule());
    if (!curves) return report(curves.error());
    return emit_eval(f, ctx, *curves);
  }
  auto m = md::load_model(f.model);
  if (!m) return report(m.error());
  if (auto g = check_gpu(*m, f.data, f.out.quiet); !g) return report(g.error());
  auto d = f.data.load();
  if (!d) return report(d.error());
  md::EvalContext ctx = eval_ctx(f.model, md::to_string(m->info().form), f.data.source(), "", f.data.probe, outliers_in(f, *d));
  ctx.simulated = d->simulated;
  // Applications the model was trained on are predicted in-sample: their figures flatter it. Say so,
  // and show the held-out figures: each such application predicted by the same design fitted without it.
  const auto& trained = m->info().training_applications;
  for (const auto& a : d->applications())
    if (std::find(trained.begin(), trained.end(), a) != trained.end()) ctx.in_sample.push_back(a);
  std::optional<std::vector<md::Curve>> held;
  if (!ctx.in_sample.empty()) {
    if (!f.out.quiet)
      std::cerr << "jouleprof: warning: " << ctx.in_sample.size() << " of " << d->applications().size()
                << " applications were in the model's training data: their figures are in-sample (optimistic)"
                << (ctx.in_sample.size() >= 4 ? "; held-out figures (each left out of a refit) follow" : "") << "\n";
    if (ctx.in_sample.size() >= 4) {
      md::FitOptions o = m->info().options;
      o.form = m->info().form;
      o.gpu = m->info().gpu;
      o.max_clock_mhz = m->info().max_clock_mhz;
      o.probe_clock_mhz = m->info().probe_clock_mhz;
      std::unique_ptr<Progress> bar;
      auto cv = md::cross_validate(md::subset(*d, ctx.in_sample), o, f.data.probe, md::Split::leave_one_application_out, 5,
                                   progress_of("held-out fold", f.out.quiet, bar));
      if (!cv) return report(make_error(cv.error().code, "held-out figures: " + cv.error().message));
      held = std::move(*cv);
    }
  }
  auto curves = md::predict_curves(*m, std::move(*d), f.data.probe);
  if (!curves) return report(curves.error());
  warn_outside(*curves, f.out.quiet);
  return emit_eval(f, ctx, *curves, held ? &*held : nullptr);
}

int run_validate(const ModelFlags& f) {
  auto o = fit_options(f);
  if (!o) return report(o.error());
  auto d = f.data.load();
  if (!d) return report(d.error());
  const bool loao = f.split == "loao";
  md::EvalContext ctx = eval_ctx("", f.form, f.data.source(), loao ? "leave-one-application-out" : "kfold:" + std::to_string(f.folds), f.data.probe,
                      outliers_in(f, *d));
  ctx.simulated = d->simulated;
  // auto chooses the design and the probe handling inside each fold; a concrete form with 2-3 probes
  // (and its inner pass) chooses the probe handling.
  const bool inner_pass = o->form == md::Form::physics || o->form == md::Form::poly || o->form == md::Form::fgcs;
  ctx.nested = o->form == md::Form::automatic || (inner_pass && o->probes > 1);
  if (ctx.nested) {
    ctx.designs = (o->form == md::Form::automatic ? md::auto_designs(*o).size() : 1) * md::probe_handlings(o->probes).size();
    ctx.criterion = "mean measured-energy excess over the optimum at the clock optimize chooses (energy objective, expected energy "
                    "and upper-bound guard), inner leave-one-application-out";
  }
  // The locked test set: drawn once by the seed, never seen by any design choice; its figures only
  // with --report-locked (when the design is final).
  md::Dataset dev = *d;
  std::optional<md::Dataset> locked_data;
  if (f.locked > 0) {
    const auto apps = d->applications().size();
    if (f.locked + md::kMinNestedApplications > apps)
      return report(make_error(Errc::invalid_argument, "--locked " + std::to_string(f.locked) + " leaves " +
                                                           std::to_string(apps > f.locked ? apps - f.locked : 0) +
                                                           " development applications; nested validation needs >= " +
                                                           std::to_string(md::kMinNestedApplications)));
    const auto split = md::locked_split(*d, f.locked, f.locked_seed);
    ctx.locked = split.locked;
    ctx.locked_seed = f.locked_seed;
    dev = md::subset(*d, split.development);
    locked_data = md::subset(*d, split.locked);
  }
  std::unique_ptr<Progress> bar;
  auto curves = md::cross_validate(dev, *o, f.data.probe, loao ? md::Split::leave_one_application_out : md::Split::kfold, f.folds,
                                   progress_of("outer fold", f.out.quiet, bar));
  bar.reset();
  if (!curves) return report(curves.error());
  std::optional<std::vector<md::Curve>> locked_curves;
  if (locked_data && f.report_locked) {
    auto m = md::fit(dev, *o);
    if (!m) return report(m.error());
    auto lc = md::predict_curves(*m, *locked_data, f.data.probe);
    if (!lc) return report(lc.error());
    const std::string design = m->info().chosen_design.empty() ? md::to_string(m->info().form) : m->info().chosen_design;
    for (auto& c : *lc) c.design = design;
    locked_curves = std::move(*lc);
  }
  return emit_eval(f, ctx, *curves, nullptr, locked_curves ? &*locked_curves : nullptr);
}

int run_predict(const ModelFlags& f) {
  auto m = md::load_model(f.model);
  if (!m) return report(m.error());
  if (auto g = check_gpu(*m, f.data, f.out.quiet); !g) return report(g.error());
  auto d = f.data.load();
  if (!d) return report(d.error());
  auto cols = md::model_columns(*m, *d);
  if (!cols) return report(cols.error());
  const std::vector<double> clocks = f.clocks.empty() ? m->info().clocks_mhz : f.clocks;
  std::vector<md::Curve> curves;
  for (const auto& app : d->applications()) {
    auto probes = md::select_probes(*d, app, *cols, f.data.probe);
    if (!probes) return report(probes.error());
    auto pts = m->predict(*probes, clocks);
    if (!pts) return report(make_error(pts.error().code, app + ": " + pts.error().message));
    md::Curve c;
    c.application = app;
    for (const auto& p : *probes) c.probe_clocks_mhz.push_back(p.clock_mhz);
    for (const auto& p : *pts) {
      md::CurvePoint cp;
      cp.clock_mhz = p.clock_mhz;
      cp.pred_power_w = p.power_w;
      cp.pred_time_s = p.time_s;
      c.points.push_back(cp);
    }
    curves.push_back(std::move(c));
  }
  const std::string js = md::curves_json(f.model, curves);
  if (!f.out.json.empty())
    if (auto w = write_text(f.out.json, js); !w) return report(w.error());
  if (!f.out.csv.empty()) {
    std::string csv = "application,clock_mhz,power_w,time_s,energy_j\n";
    for (const auto& c : curves)
      for (const auto& p : c.points)
        csv += c.application + "," + std::to_string(p.clock_mhz) + "," + std::to_string(p.pred_power_w) + "," +
               std::to_string(p.pred_time_s) + "," + std::to_string(p.pred_energy_j()) + "\n";
    if (auto w = write_text(f.out.csv, csv); !w) return report(w.error());
  }
  if (f.out.text()) {
    for (const auto& c : curves) {
      std::cout << c.application << " (probe " << c.probe_clocks_mhz.front() << " MHz):\n";
      for (const auto& p : c.points)
        std::cout << "  " << p.clock_mhz << " MHz  " << p.pred_power_w << " W  " << p.pred_time_s << " s  " << p.pred_energy_j() << " J\n";
    }
  }
  return 0;
}

// Ranges of the numeric options (issue 22): a clock in MHz (0: the default), a penalty, a
// number of boosting rounds that finishes.
constexpr DoubleRange kClockRange{.min = 0, .max = 100000};
constexpr DoubleRange kRidgeRange{.min = 0, .max = 1e6};
constexpr IntRange kRoundsRange{.min = 1, .max = 100000};

Runner add_model(CLI::App& app) {
  auto f = std::make_shared<ModelFlags>();
  CLI::App* c = app.add_subcommand("model", "Fit, evaluate and apply power/run-time models across SM clocks");
  c->require_subcommand(1);
  c->footer(
      "Examples:\n"
      "  jouleprof model fit --data sweep.csv --form poly -o v100.model.json --gpu V100\n"
      "  jouleprof model eval v100.model.json --data other.csv --json eval.json\n"
      "  jouleprof model validate --data sweep.csv --form fgcs --split loao\n"
      "  jouleprof model predict v100.model.json --data probe.csv\n"
      "See docs/models.md.");
  auto* fit = c->add_subcommand("fit", "fit a model on a sweep CSV and save it");
  f->data.add(fit, false);
  fit->add_option("--form", f->form, "auto (the design chosen by leave-one-application-out), physics, fgcs, poly, xgboost, knn or ensemble")
      ->check(CLI::IsMember({"auto", "physics", "fgcs", "poly", "xgboost", "knn", "ensemble"}))->capture_default_str();
  fit->add_option("--probes", f->data.probe.probes, "probe runs per workload the model is chosen and its spread estimated for (1-3)")
      ->check(CLI::Range(1, 3))->capture_default_str();
  fit->add_option("-o,--output", f->output, "model file to write")->required();
  checked(fit->add_option("--max-clock", f->max_clock, "the GPU's maximum SM clock in MHz (default: the highest in the data)"), kClockRange);
  checked(fit->add_option("--probe-clock", f->data.probe.probe_clock_mhz, "training probe clock (default: each application's highest)"), kClockRange);
  checked(fit->add_option("--ridge", f->ridge, "poly/ensemble: L2 penalty (0: chosen by inner leave-one-application-out)"), kRidgeRange)->capture_default_str();
  checked(fit->add_option("--xgb-rounds", f->xgb_rounds, "xgboost: boosting rounds"), kRoundsRange)->capture_default_str();
  f->out.add(fit);

  auto* ev = c->add_subcommand("eval", "per application MAPE of power, time and energy of a saved model on a CSV");
  ev->add_option("model", f->model, "model file (or --pred-power-col/--pred-time-col: predictions in the data)");
  f->data.add(ev, true);
  ev->add_option("--objective", f->objectives, "optimizer objectives reported next to the errors")->delimiter(',')->capture_default_str();
  f->out.add(ev);

  auto* va = c->add_subcommand("validate", "cross-validation: each application predicted by a model fitted without it");
  f->data.add(va, true);
  va->add_option("--form", f->form, "auto (nested: the design chosen inside each fold), physics, fgcs, poly, xgboost, knn or ensemble")
      ->check(CLI::IsMember({"auto", "physics", "fgcs", "poly", "xgboost", "knn", "ensemble"}))->capture_default_str();
  checked(va->add_option("--locked", f->locked, "hold out this many applications as a locked test set (drawn by --locked-seed); designs never see them"),
          IntRange{.min = 0, .max = 100000})->capture_default_str();
  va->add_option("--locked-seed", f->locked_seed, "seed of the locked set's draw")->capture_default_str();
  va->add_flag("--report-locked", f->report_locked, "evaluate the locked set (once the design is final): fit on the rest, predict it");
  va->add_option("--split", f->split, "loao (leave one application out) or kfold")->check(CLI::IsMember({"loao", "kfold"}))->capture_default_str();
  checked(va->add_option("--folds", f->folds, "kfold: folds of applications"), IntRange{.min = 2, .max = 100000})->capture_default_str();
  checked(va->add_option("--max-clock", f->max_clock, "the GPU's maximum SM clock in MHz (default: the highest in the data)"), kClockRange);
  checked(va->add_option("--ridge", f->ridge, "poly/ensemble: L2 penalty (0: chosen by inner leave-one-application-out)"), kRidgeRange)->capture_default_str();
  checked(va->add_option("--xgb-rounds", f->xgb_rounds, "xgboost: boosting rounds"), kRoundsRange)->capture_default_str();
  va->add_option("--objective", f->objectives, "optimizer objectives reported for each held-out application")->delimiter(',')->capture_default_str();
  f->out.add(va);

  auto* pr = c->add_subcommand("predict", "predict power, time and energy at every clock from probe runs in a CSV");
  pr->add_option("model", f->model, "model file")->required();
  f->data.add(pr, true);
  checked(pr->add_option("--clocks", f->clocks, "clocks to predict (MHz; default: the model's training clocks)")->delimiter(','),
          DoubleRange{.min = 0, .max = 100000, .min_exclusive = true});
  f->out.add(pr);

  return [f, fit, ev, va, pr] {
    if (fit->parsed()) return run_fit(*f);
    if (ev->parsed()) return run_eval(*f);
    if (va->parsed()) return run_validate(*f);
    if (pr->parsed()) return run_predict(*f);
    return 2;
  };
}

const bool registered = register_command(add_model);

}  // namespace
}  // namespace jouleprof::cli
