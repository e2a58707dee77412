#include "jouleprof/models/validate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "form.hpp"

namespace jouleprof::models {

Result<std::vector<int>> model_columns(const Model& m, const Dataset& d) {
  const auto& names = m.info().activity;
  std::vector<int> cols;
  std::string missing;
  for (const auto& n : names) {
    const int i = d.activity_index(n);
    if (i < 0) missing += (missing.empty() ? "" : ", ") + n;
    cols.push_back(i);
  }
  if (!missing.empty())
    return make_error(Errc::invalid_argument, d.source + ": missing activity column(s) the model needs: " + missing);
  return cols;
}

namespace {

Result<std::vector<Probe>> probes_of(const detail::AppSweep& sw, const ProbeOptions& opt) {
  const detail::AppSweep* s = &sw;
  const std::string& app = sw.application;
  std::vector<std::size_t> chosen{s->anchor};
  const double f0 = s->points[s->anchor].clock_mhz;
  for (double frac : {0.75, 0.55}) {
    if (static_cast<int>(chosen.size()) >= opt.probes) break;
    std::size_t best = s->points.size();
    double dist = 1e300;
    for (std::size_t i = 0; i < s->points.size(); ++i) {
      if (std::find(chosen.begin(), chosen.end(), i) != chosen.end()) continue;
      const double dd = std::abs(s->points[i].clock_mhz - frac * f0);
      if (dd < dist) {
        dist = dd;
        best = i;
      }
    }
    if (best == s->points.size())
      return make_error(Errc::invalid_argument, app + ": too few clocks for " + std::to_string(opt.probes) + " probes");
    chosen.push_back(best);
  }
  std::vector<Probe> out;
  for (auto i : chosen) {
    const auto& p = s->points[i];
    out.push_back(Probe{p.clock_mhz, p.activity, p.power_w, p.time_s});
  }
  return out;
}

}  // namespace

Result<std::vector<std::pair<std::string, std::vector<Probe>>>> select_all_probes(const Dataset& d, const std::vector<int>& columns,
                                                                               const ProbeOptions& opt) {
  if (opt.probes < 1 || opt.probes > 3) return make_error(Errc::invalid_argument, "--probes must be 1, 2 or 3");
  const auto sweeps = detail::sweeps_of(d, columns, opt.probe_clock_mhz);
  std::vector<std::pair<std::string, std::vector<Probe>>> out;
  std::size_t k = 0;
  for (const auto& app : d.applications()) {
    if (k >= sweeps.size() || sweeps[k].application != app)
      return make_error(Errc::invalid_argument, app + ": no clock without outliers to probe");
    auto p = probes_of(sweeps[k++], opt);
    if (!p) return p.error();
    out.emplace_back(app, std::move(*p));
  }
  return out;
}

Result<std::vector<Probe>> select_probes(const Dataset& d, const std::string& app, const std::vector<int>& columns,
                                         const ProbeOptions& opt) {
  if (opt.probes < 1 || opt.probes > 3) return make_error(Errc::invalid_argument, "--probes must be 1, 2 or 3");
  const auto sweeps = detail::sweeps_of(d, columns, opt.probe_clock_mhz);
  for (const auto& sw : sweeps)
    if (sw.application == app) return probes_of(sw, opt);
  return make_error(Errc::invalid_argument, app + ": no clock without outliers to probe");
}

namespace {

// One curve point per clock of the application: repeats averaged over non-outlier rows.
Curve measured_points(const Dataset& d, const std::string& app, const std::vector<std::size_t>& rows) {
  Curve c;
  c.application = app;
  // One point per (clock, power limit); no limit (the GPU's default) sorts last.
  std::map<std::pair<double, double>, std::vector<std::size_t>> by_setting;
  for (auto i : rows)
    by_setting[{d.rows[i].clock_mhz, d.rows[i].power_limit_w.value_or(HUGE_VAL)}].push_back(i);
  for (const auto& [setting, idx] : by_setting) {
    CurvePoint cp;
    cp.clock_mhz = setting.first;
    if (std::isfinite(setting.second)) cp.power_limit_w = setting.second;
    std::vector<std::size_t> good;
    for (auto i : idx)
      if (!d.rows[i].outlier) good.push_back(i);
    cp.outlier = good.empty();
    const auto& use = good.empty() ? idx : good;
    double P = 0, T = 0, Q = 0, PP = 0, PT = 0;
    bool has_q = true;
    for (auto i : use) {
      if (d.rows[i].pred_power_w) {
        PP += *d.rows[i].pred_power_w / static_cast<double>(use.size());
        PT += *d.rows[i].pred_time_s / static_cast<double>(use.size());
      }
      P += d.rows[i].power_w / static_cast<double>(use.size());
      T += d.rows[i].time_s / static_cast<double>(use.size());
      if (d.rows[i].quality) Q += *d.rows[i].quality / static_cast<double>(use.size());
      else has_q = false;
      cp.repeat_energy_j.push_back(d.rows[i].energy_j());
    }
    cp.power_w = P;
    cp.time_s = T;
    cp.pred_power_w = PP;
    cp.pred_time_s = PT;
    if (has_q) cp.quality = Q;
    c.points.push_back(std::move(cp));
  }
  return c;
}

}  // namespace

Result<std::vector<Curve>> measured_curves(Dataset d, const OutlierRule& rule) {
  flag_outliers(d, rule);
  std::vector<Curve> out;
  for (const auto& [app, rows] : d.groups()) {
    Curve c = measured_points(d, app, rows);
    const bool external = !d.rows.empty() && d.rows.front().pred_power_w.has_value();
    if (!external)
      for (auto& p : c.points) {
        p.pred_power_w = *p.power_w;
        p.pred_time_s = *p.time_s;
      }
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

// Adds an unmeasured point at each clock of `candidates` the curve lacks, keeping clock order.
void add_candidate_clocks(Curve& c, const std::vector<double>& candidates) {
  for (double f : candidates) {
    const bool have = std::any_of(c.points.begin(), c.points.end(), [&](const CurvePoint& p) { return std::abs(p.clock_mhz - f) < 0.5; });
    if (!have) {
      CurvePoint p;
      p.clock_mhz = f;
      c.points.push_back(p);
    }
  }
  std::stable_sort(c.points.begin(), c.points.end(), [](const CurvePoint& a, const CurvePoint& b) { return a.clock_mhz < b.clock_mhz; });
}

}  // namespace

Result<std::vector<Curve>> predict_curves(const Model& m, Dataset d, const ProbeOptions& opt) {
  if (varies_power_limit(d)) return make_error(Errc::invalid_argument, kPowerLimitModelError);
  auto cols = model_columns(m, d);
  if (!cols) return cols.error();
  flag_outliers(d, m.info().options.outliers);
  auto all_probes = select_all_probes(d, *cols, opt);
  if (!all_probes) return all_probes.error();
  const auto groups = d.groups();
  std::vector<Curve> out;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& [app, rows] = groups[g];
    const auto* probes = &(*all_probes)[g].second;
    Curve c = measured_points(d, app, rows);
    c.outside_training = outside_training(m.info(), probes->front());
    for (const auto& p : *probes) c.probe_clocks_mhz.push_back(p.clock_mhz);
    // An application given by its probe runs alone (no measured curve) is predicted at the
    // model's candidate clocks, so the optimizer has the whole curve to choose from.
    if (c.points.size() < kMinMeasuredCurve) add_candidate_clocks(c, m.info().clocks_mhz);
    std::vector<double> clocks;
    for (const auto& p : c.points) clocks.push_back(p.clock_mhz);
    auto pred = m.predict(*probes, clocks);
    if (!pred) return make_error(pred.error().code, app + ": " + pred.error().message);
    for (std::size_t i = 0; i < clocks.size(); ++i) {
      c.points[i].pred_power_w = (*pred)[i].power_w;
      c.points[i].pred_time_s = (*pred)[i].time_s;
      c.points[i].sigma_log_energy = (*pred)[i].sigma_log_energy;
      c.points[i].sigma_log_time = (*pred)[i].sigma_log_time;
      c.points[i].sigma_log_power = (*pred)[i].sigma_log_power;
    }
    out.push_back(std::move(c));
  }
  return out;
}

LockedSplit locked_split(const Dataset& d, std::size_t n, unsigned seed) {
  auto apps = d.applications();
  std::sort(apps.begin(), apps.end());
  std::mt19937 rng(seed);
  std::shuffle(apps.begin(), apps.end(), rng);
  LockedSplit out;
  for (std::size_t i = 0; i < apps.size(); ++i) (i < n ? out.locked : out.development).push_back(apps[i]);
  std::sort(out.locked.begin(), out.locked.end());
  std::sort(out.development.begin(), out.development.end());
  return out;
}

Dataset subset(const Dataset& d, const std::vector<std::string>& apps) {
  Dataset out = d;
  out.rows.clear();
  const std::set<std::string> keep(apps.begin(), apps.end());
  for (const auto& r : d.rows)
    if (keep.count(r.application)) out.rows.push_back(r);
  return out;
}

Result<std::vector<std::vector<Curve>>> cross_validate_handlings(const Dataset& d, const FitOptions& fo, const ProbeOptions& po,
                                                                 const std::vector<ProbeHandling>& handlings, Split split,
                                                                 int folds, const std::function<void(int, int)>& progress) {
  auto apps = d.applications();
  if (fo.form == Form::automatic && apps.size() < kMinNestedApplications)
    return make_error(Errc::invalid_argument, "nested cross-validation (--form auto: the design chosen inside each fold) needs >= " +
                                                  std::to_string(kMinNestedApplications) + " applications, the data has " +
                                                  std::to_string(apps.size()) + " (name a --form, or add applications)");
  if (apps.size() < 3) return make_error(Errc::invalid_argument, "cross-validation needs >= 3 applications, the data has " + std::to_string(apps.size()));
  std::vector<std::vector<std::string>> groups;
  if (split == Split::leave_one_application_out) {
    for (const auto& a : apps) groups.push_back({a});
  } else {
    if (folds < 2 || folds > static_cast<int>(apps.size()))
      return make_error(Errc::invalid_argument, "--folds must be between 2 and the number of applications (" + std::to_string(apps.size()) + ")");
    std::mt19937 rng(1);
    std::shuffle(apps.begin(), apps.end(), rng);
    groups.resize(static_cast<std::size_t>(folds));
    for (std::size_t i = 0; i < apps.size(); ++i) groups[i % groups.size()].push_back(apps[i]);
  }
  const std::size_t H = std::max<std::size_t>(handlings.size(), 1);
  std::vector<std::map<std::string, Curve>> by_app(H);
  for (const auto& held : groups) {
    Dataset train = d, test = d;
    train.rows.clear();
    test.rows.clear();
    for (const auto& r : d.rows)
      (std::find(held.begin(), held.end(), r.application) != held.end() ? test : train).rows.push_back(r);
    auto m = fit(std::move(train), fo);
    if (!m) return make_error(m.error().code, "fit without " + held.front() + (held.size() > 1 ? " ..." : "") + ": " + m.error().message);
    for (std::size_t h = 0; h < H; ++h) {
      ModelInfo info = m->info();
      if (!handlings.empty()) {
        info.options.probes_used = handlings[h].used;
        info.options.probe_weight = handlings[h].weight;
      }
      auto curves = predict_curves(Model(info, m->impl()), test, po);
      if (!curves) return curves.error();
      const std::string design = info.chosen_design.empty() ? to_string(info.form) : info.chosen_design;
      for (auto& c : *curves) {
        c.design = design;
        by_app[h][c.application] = std::move(c);
      }
    }
    if (progress) progress(static_cast<int>(by_app[0].size()), static_cast<int>(apps.size()));
  }
  std::vector<std::vector<Curve>> out(H);
  for (std::size_t h = 0; h < H; ++h)
    for (const auto& a : d.applications()) out[h].push_back(std::move(by_app[h][a]));
  return out;
}

Result<std::vector<Curve>> cross_validate(const Dataset& d, const FitOptions& fo, const ProbeOptions& po, Split split,
                                          int folds, const std::function<void(int, int)>& progress) {
  auto out = cross_validate_handlings(d, fo, po, {}, split, folds, progress);
  if (!out) return out.error();
  return std::move(out->front());
}

namespace {

struct Acc {
  std::vector<double> p, pp, t, tp, e, ep;
  void add(const CurvePoint& c) {
    p.push_back(*c.power_w);
    pp.push_back(c.pred_power_w);
    t.push_back(*c.time_s);
    tp.push_back(c.pred_time_s);
    e.push_back(*c.energy_j());
    ep.push_back(c.pred_energy_j());
  }
  static double mape(const std::vector<double>& y, const std::vector<double>& f) {
    double s = 0;
    for (std::size_t i = 0; i < y.size(); ++i) s += std::abs(f[i] / y[i] - 1);
    return y.empty() ? 0 : 100 * s / static_cast<double>(y.size());
  }
  static double r2(const std::vector<double>& y, const std::vector<double>& f) {
    if (y.size() < 2) return 0;
    double mean = 0;
    for (double v : y) mean += v / static_cast<double>(y.size());
    double res = 0, tot = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      res += (y[i] - f[i]) * (y[i] - f[i]);
      tot += (y[i] - mean) * (y[i] - mean);
    }
    return tot > 0 ? 1 - res / tot : 0;
  }
  Errors errors() const {
    Errors r;
    r.points = p.size();
    r.power_mape_pct = mape(p, pp);
    r.time_mape_pct = mape(t, tp);
    r.energy_mape_pct = mape(e, ep);
    r.power_r2 = r2(p, pp);
    r.time_r2 = r2(t, tp);
    r.energy_r2 = r2(e, ep);
    return r;
  }
};

}  // namespace

Evaluation evaluate(const std::vector<Curve>& curves) {
  Evaluation ev;
  Acc all;
  for (const auto& c : curves) {
    Acc a;
    for (const auto& p : c.points) {
      if (p.outlier || !p.power_w || !p.time_s) continue;
      a.add(p);
      all.add(p);
    }
    ev.applications.push_back(AppErrors{c.application, a.errors()});
  }
  ev.overall = all.errors();
  return ev;
}

}  // namespace jouleprof::models
