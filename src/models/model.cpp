#include "jouleprof/models/model.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sstream>

#include "form.hpp"
#include "jouleprof/models/optimize.hpp"
#include "jouleprof/models/report.hpp"
#include "jouleprof/models/validate.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/core/parse.hpp"
#include "jouleprof/config.hpp"

namespace jouleprof::models {

const char* to_string(Form f) {
  switch (f) {
    case Form::fgcs: return "fgcs";
    case Form::poly: return "poly";
    case Form::xgboost: return "xgboost";
    case Form::knn: return "knn";
    case Form::ensemble: return "ensemble";
    case Form::physics: return "physics";
    case Form::automatic: return "auto";
  }
  return "?";
}

Result<Form> parse_form(const std::string& s) {
  if (s == "fgcs") return Form::fgcs;
  if (s == "poly") return Form::poly;
  if (s == "xgboost") return Form::xgboost;
  if (s == "knn") return Form::knn;
  if (s == "ensemble") return Form::ensemble;
  if (s == "physics") return Form::physics;
  if (s == "auto") return Form::automatic;
  return make_error(Errc::invalid_argument, "unknown model form '" + s + "' (auto, physics, fgcs, poly, xgboost, knn or ensemble)");
}

namespace detail {

std::vector<AppSweep> sweeps_of(const Dataset& d, const std::vector<int>& columns, double probe_clock_mhz,
                                std::size_t min_points) {
  std::vector<AppSweep> out;
  for (const auto& [app, rows] : d.groups()) {
    AppSweep s;
    s.application = app;
    std::map<double, std::vector<std::size_t>> by_clock;
    for (auto i : rows)
      if (!d.rows[i].outlier) by_clock[d.rows[i].clock_mhz].push_back(i);
    for (const auto& [clock, idx] : by_clock) {
      AppPoint p;
      p.clock_mhz = clock;
      p.activity.assign(columns.size(), 0.0);
      for (auto i : idx) {
        const Row& r = d.rows[i];
        p.power_w += r.power_w / static_cast<double>(idx.size());
        p.time_s += r.time_s / static_cast<double>(idx.size());
        for (std::size_t c = 0; c < columns.size(); ++c)
          p.activity[c] += r.activity[static_cast<std::size_t>(columns[c])] / static_cast<double>(idx.size());
      }
      s.points.push_back(std::move(p));
    }
    if (s.points.size() < min_points || s.points.empty()) continue;
    s.anchor = s.points.size() - 1;
    if (probe_clock_mhz > 0) {
      double best = 1e300;
      for (std::size_t i = 0; i < s.points.size(); ++i)
        if (std::abs(s.points[i].clock_mhz - probe_clock_mhz) < best) {
          best = std::abs(s.points[i].clock_mhz - probe_clock_mhz);
          s.anchor = i;
        }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace detail

Model::Model(ModelInfo info, std::shared_ptr<const detail::FormImpl> impl) : info_(std::move(info)), impl_(std::move(impl)) {}

namespace {

std::string now_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<std::unique_ptr<detail::FormImpl>> load_form(Form f, const nlohmann::json& p, const ModelInfo& info) {
  switch (f) {
    case Form::fgcs: return detail::load_fgcs(p, info);
    case Form::poly: return detail::load_poly(p, info);
    case Form::xgboost: return detail::load_xgboost(p, info);
    case Form::knn: return detail::load_knn(p, info);
    case Form::ensemble: return detail::load_ensemble(p, info);
    case Form::physics: return detail::load_physics(p, info);
    case Form::automatic: break;
  }
  return make_error(Errc::parse, "a model file names a concrete form, not auto");
}

// The activity columns a form uses: the fgcs form its named ones; the others every column with
// information. Columns constant over the training applications' probes, or linear combinations of
// others, are dropped when the columns were chosen automatically and are an error when named.
Result<std::vector<int>> choose_columns(const Dataset& d, Form form, double probe_clock, std::vector<std::string>& dropped) {
  std::vector<int> cand;
  if (form == Form::fgcs) {
    for (const char* n : {"fp_active", "fp64_active", "fp32_active", "dram_active", "TENSO", "tensor_active"}) {
      const int i = d.activity_index(n);
      if (i < 0) continue;
      if ((std::string(n) == "fp64_active" || std::string(n) == "fp32_active") && d.activity_index("fp_active") >= 0) continue;
      cand.push_back(i);
    }
  } else {
    for (std::size_t i = 0; i < d.activity.size(); ++i) cand.push_back(static_cast<int>(i));
  }
  std::vector<int> all(d.activity.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  const auto sweeps = detail::sweeps_of(d, all, probe_clock);
  // Each application's probe activity: what the model's coefficients are identified from.
  std::vector<int> kept;
  Eigen::MatrixXd Z(static_cast<Eigen::Index>(sweeps.size()), 1);
  Z.col(0).setOnes();
  for (int c : cand) {
    Eigen::VectorXd col(static_cast<Eigen::Index>(sweeps.size()));
    double lo = 1e300, hi = -1e300;
    for (std::size_t s = 0; s < sweeps.size(); ++s) {
      const double v = sweeps[s].points[sweeps[s].anchor].activity[static_cast<std::size_t>(c)];
      col(static_cast<Eigen::Index>(s)) = v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const std::string& name = d.activity[static_cast<std::size_t>(c)];
    const bool is_tensor = name == "TENSO" || name == "tensor_active";
    if (hi - lo <= 1e-9 * std::max(1.0, std::abs(hi))) {
      if (d.activity_explicit && !is_tensor)
        return make_error(Errc::invalid_argument, "activity column " + name + " is constant over the training data: it cannot be fitted (drop it from --activity)");
      dropped.push_back(name + " (constant)");
      continue;
    }
    Eigen::MatrixXd Z2(Z.rows(), Z.cols() + 1);
    Z2 << Z, (col.array() - col.mean()) / (hi - lo);
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(Z2);
    qr.setThreshold(1e-6);
    if (qr.rank() < Z2.cols()) {
      if (d.activity_explicit)
        return make_error(Errc::invalid_argument, "activity column " + name + " is collinear with the others over the training applications (drop it from --activity)");
      dropped.push_back(name + " (collinear)");
      continue;
    }
    Z = Z2;
    kept.push_back(c);
  }
  if (form == Form::fgcs) {
    bool fp = false, dram = false;
    for (int c : kept) {
      const auto& n = d.activity[static_cast<std::size_t>(c)];
      fp = fp || n == "fp_active" || n == "fp64_active";
      dram = dram || n == "dram_active";
    }
    if (!fp || !dram) return make_error(Errc::invalid_argument, "the fgcs form needs fp_active (or fp64_active + fp32_active) and dram_active that vary over the training applications");
  }
  return kept;
}

}  // namespace

namespace {

Result<Model> fit_one(Dataset data, const FitOptions& o) {
  if (varies_power_limit(data)) return make_error(Errc::invalid_argument, kPowerLimitModelError);
  ModelInfo info;
  info.form = o.form;
  info.gpu = o.gpu;
  info.options = o;
  info.training_source = data.source;
  info.training_rows = data.rows.size();
  info.training_outliers = flag_outliers(data, o.outliers);
  info.probe_clock_mhz = o.probe_clock_mhz;
  std::vector<std::string> dropped;
  auto cols = choose_columns(data, o.form, o.probe_clock_mhz, dropped);
  if (!cols) return cols.error();
  for (int c : *cols) info.activity.push_back(data.activity[static_cast<std::size_t>(c)]);
  info.dropped_activity = dropped;
  const auto sweeps = detail::sweeps_of(data, *cols, o.probe_clock_mhz, 3);
  if (sweeps.size() < 2)
    return make_error(Errc::invalid_argument, "too few points to fit: " + std::to_string(sweeps.size()) +
                                                  " application(s) with >= 3 clocks (at least 2 are needed)");
  const std::size_t params_needed = 3 * (info.activity.size() + 2);
  if ((o.form == Form::poly || o.form == Form::ensemble) && sweeps.size() < info.activity.size() + 2)
    return make_error(Errc::invalid_argument, "too few applications (" + std::to_string(sweeps.size()) + ") for " +
                                                  std::to_string(info.activity.size()) + " activity columns: name fewer with --activity");
  std::size_t points = 0;
  double fmax = 0;
  std::vector<double> clocks;
  for (const auto& s : sweeps) {
    info.training_applications.push_back(s.application);
    points += s.points.size();
    for (const auto& p : s.points) {
      fmax = std::max(fmax, p.clock_mhz);
      clocks.push_back(p.clock_mhz);
    }
  }
  if (points < params_needed)
    return make_error(Errc::invalid_argument, "too few points to fit: " + std::to_string(points) + " for " + std::to_string(params_needed) + " parameters");
  std::sort(clocks.begin(), clocks.end());
  clocks.erase(std::unique(clocks.begin(), clocks.end()), clocks.end());
  info.clocks_mhz = clocks;
  info.max_clock_mhz = o.max_clock_mhz > 0 ? o.max_clock_mhz : fmax;
  // The range of the training probes: a workload outside it is an extrapolation (said when applied).
  info.probe_activity_min.assign(info.activity.size(), HUGE_VAL);
  info.probe_activity_max.assign(info.activity.size(), -HUGE_VAL);
  info.probe_power_min_w = HUGE_VAL;
  info.probe_power_max_w = 0;
  for (const auto& s : sweeps) {
    const auto& a = s.points[s.anchor];
    for (std::size_t c = 0; c < a.activity.size(); ++c) {
      info.probe_activity_min[c] = std::min(info.probe_activity_min[c], a.activity[c]);
      info.probe_activity_max[c] = std::max(info.probe_activity_max[c], a.activity[c]);
    }
    info.probe_power_min_w = std::min(info.probe_power_min_w, a.power_w);
    info.probe_power_max_w = std::max(info.probe_power_max_w, a.power_w);
  }
  info.created_utc = now_utc();
  info.tool_version = std::string(JOULEPROF_VERSION) + " (" + JOULEPROF_GIT_REVISION + ")";
  detail::FitContext ctx{sweeps, info.activity, info.max_clock_mhz, o};
  Result<std::unique_ptr<detail::FormImpl>> impl = make_error(Errc::internal, "no form");
  switch (o.form) {
    case Form::fgcs: impl = detail::fit_fgcs(ctx); break;
    case Form::poly: impl = detail::fit_poly(ctx); break;
    case Form::xgboost: impl = detail::fit_xgboost(ctx); break;
    case Form::knn: impl = detail::fit_knn(ctx); break;
    case Form::ensemble: impl = detail::fit_ensemble(ctx); break;
    case Form::physics: impl = detail::fit_physics(ctx); break;
    case Form::automatic: break;
  }
  if (!impl) return impl.error();
  return Model(std::move(info), std::shared_ptr<const detail::FormImpl>(std::move(*impl)));
}

// The predictive spread from held-out curves: residuals of ln P, ln T, ln E binned by the distance
// x = |ln(f / f_probe)| from the first probe; root mean square per bin, non-decreasing with x.
// Kept as sums so that one curve's own residuals can be taken out again (the inner figure).
struct SpreadSums {
  static constexpr std::array<double, 8> kEdges = {0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.2};
  std::array<double, 8> sp{}, st{}, se{}, n{};
  void add(const Curve& c) {
    if (c.probe_clocks_mhz.empty()) return;
    const double f0 = c.probe_clocks_mhz.front();
    for (const auto& p : c.points) {
      if (p.outlier || !p.power_w || !p.time_s || !(p.pred_power_w > 0) || !(p.pred_time_s > 0)) continue;
      const double x = std::abs(std::log(p.clock_mhz / f0));
      std::size_t b = 0;
      while (b + 1 < kEdges.size() && x > kEdges[b]) ++b;
      const double rp = std::log(*p.power_w / p.pred_power_w), rt = std::log(*p.time_s / p.pred_time_s);
      sp[b] += rp * rp, st[b] += rt * rt, se[b] += (rp + rt) * (rp + rt), n[b] += 1;
    }
  }
  SpreadSums minus(const SpreadSums& o) const {
    SpreadSums r = *this;
    for (std::size_t b = 0; b < kEdges.size(); ++b)
      r.sp[b] -= o.sp[b], r.st[b] -= o.st[b], r.se[b] -= o.se[b], r.n[b] -= o.n[b];
    return r;
  }
  Uncertainty spread(const std::string& method) const {
    Uncertainty u;
    u.x_edges.assign(kEdges.begin(), kEdges.end());
    double mp = 0, mt = 0, me = 0;
    for (std::size_t b = 0; b < kEdges.size(); ++b) {
      if (n[b] > 0.5) {
        mp = std::max(mp, std::sqrt(std::max(sp[b], 0.0) / n[b]));
        mt = std::max(mt, std::sqrt(std::max(st[b], 0.0) / n[b]));
        me = std::max(me, std::sqrt(std::max(se[b], 0.0) / n[b]));
      }
      u.log_power.push_back(mp);
      u.log_time.push_back(mt);
      u.log_energy.push_back(me);
    }
    u.method = method;
    return u;
  }
};

Uncertainty uncertainty_of(const std::vector<Curve>& curves, const std::string& method) {
  SpreadSums s;
  for (const auto& c : curves) s.add(c);
  return s.spread(method);
}

// The inner pass leaves out one application at a time up to kMaxInnerLoao applications, and one of
// kInnerFolds folds of applications beyond (fixed seed): the fit stays linear in the applications
// (a leave-one-out over 5000 applications would be 5000 fits).
constexpr std::size_t kMaxInnerLoao = 40;
constexpr int kInnerFolds = 10;
Split inner_split(std::size_t apps) { return apps <= kMaxInnerLoao ? Split::leave_one_application_out : Split::kfold; }

// The inner figure of a design is what the product delivers: each training application, held
// out, gets the spread of the OTHER applications' held-out residuals (as a new workload gets the
// spread of the model's training applications), `optimize` chooses its clock with it (expected
// energy, the upper-bound guard), and the measured energy there is compared with the measured
// optimum. Mean over the applications; energy MAPE breaks near ties (excess + 1e-3 x MAPE).
constexpr const char* kInnerCriterion =
    "mean measured-energy excess over the measured optimum at the clock optimize chooses (energy objective, "
    "expected energy and upper-bound guard with the spread of the other applications' residuals), "
    "leave-one-application-out over the training applications; energy MAPE breaks near ties";

// The best probe handling of one fitted design: its label, inner figure and held-out curves.
struct Scored {
  std::size_t handling = 0;
  double figure = HUGE_VAL;
  std::vector<Curve> curves;
};

// Every handling's figure is appended to `tried` as "PREFIX[, HANDLING]"; the lowest wins (the
// first, i.e. the fewer probes, on a tie).
Scored score_handlings(std::vector<std::vector<Curve>>& sets, const std::vector<ProbeHandling>& handlings, const std::string& prefix,
                       bool with_spread, std::vector<std::pair<std::string, double>>& tried) {
  Scored best;
  for (std::size_t h = 0; h < sets.size(); ++h) {
    const double fig = inner_figure(sets[h], with_spread);
    tried.emplace_back(handlings.size() > 1 ? prefix + ", " + handlings[h].label() : prefix, fig);
    if (fig < best.figure) {
      best.handling = h;
      best.figure = fig;
      best.curves = std::move(sets[h]);
    }
  }
  return best;
}

// Only a handling chosen among several is kept: a model fitted for one probe uses every probe it
// is given, as it did before the handling was a choice.
void set_handling(ModelInfo& info, const std::vector<ProbeHandling>& handlings, std::size_t chosen) {
  if (handlings.size() < 2) return;
  info.options.probes_used = handlings[chosen].used;
  info.options.probe_weight = handlings[chosen].weight;
  info.options.probe_noise = handlings[chosen].noise;
}

// A concrete form: its hyper-parameters inside its own fit; the probe handling and the spread from
// one inner leave-one-application-out pass over the training applications (the costly forms go
// without: every probe, weight 1, no spread).
Result<Model> fit_form(Dataset data, const FitOptions& o) {
  auto m = fit_one(data, o);
  const std::size_t n = data.applications().size();
  if (!m || !o.uncertainty || n < 4 || o.form == Form::knn || o.form == Form::xgboost || o.form == Form::ensemble) return m;
  FitOptions inner = o;
  inner.uncertainty = false;
  inner.progress = nullptr;
  const auto handlings = probe_handlings(o.probes);
  auto sets = cross_validate_handlings(data, inner, ProbeOptions{o.probe_clock_mhz, o.probes}, handlings, inner_split(n), kInnerFolds);
  if (!sets) return m;
  ModelInfo info = m->info();
  std::vector<std::pair<std::string, double>> tried;
  const Scored best = score_handlings(*sets, handlings, to_string(o.form), o.uncertainty, tried);
  set_handling(info, handlings, best.handling);
  if (handlings.size() > 1) {
    info.designs = std::move(tried);
    info.chosen_design = std::string(to_string(o.form)) + ", " + handlings[best.handling].label();
    info.inner_criterion = kInnerCriterion;
  }
  info.uncertainty = uncertainty_of(best.curves, fmt::format("leave-one-application-out residuals over the {} training applications, {} probe(s)",
                                                             best.curves.size(), o.probes));
  return Model(std::move(info), m->impl());
}

}  // namespace

double inner_figure(std::vector<Curve> curves, bool with_spread) {
  if (with_spread) {
    std::vector<SpreadSums> own(curves.size());
    SpreadSums all;
    for (std::size_t i = 0; i < curves.size(); ++i) {
      own[i].add(curves[i]);
      all.add(curves[i]);
    }
    for (std::size_t i = 0; i < curves.size(); ++i) {
      if (curves[i].probe_clocks_mhz.empty()) continue;
      const Uncertainty u = all.minus(own[i]).spread("");
      const double f0 = curves[i].probe_clocks_mhz.front();
      for (auto& p : curves[i].points) u.at(std::abs(std::log(p.clock_mhz / f0)), p.sigma_log_power, p.sigma_log_time, p.sigma_log_energy);
    }
  }
  const auto s = summarize(optimize(curves, Objective{}));
  return s.mean_energy_excess_pct + 1e-3 * evaluate(curves).overall.energy_mape_pct;
}

std::string ProbeHandling::label() const {
  if (used <= 1) return "1 probe";
  return noise > 0 ? fmt::format("{} probes js={:g}", used, noise) : fmt::format("{} probes w={:g}", used, weight);
}

std::vector<ProbeHandling> probe_handlings(int probes) {
  std::vector<ProbeHandling> out{{1, 1.0}};
  for (int used = 2; used <= probes; ++used) {
    for (double w : kProbeWeights) out.push_back({used, w, 0});
    for (double s : kProbeNoise) out.push_back({used, 1, s});
  }
  return out;
}

std::vector<Design> auto_designs(const FitOptions& base) {
  std::vector<Design> out;
  auto add = [&](Form f, double ridge, bool dram, bool time_outliers) {
    Design d;
    d.options = base;
    d.options.form = f;
    d.options.physics_ridge = ridge;
    d.options.physics_dram_static = dram;
    d.label = f == Form::physics ? fmt::format("physics ridge={:g}{}", ridge, dram ? " static+dram" : "") : std::string(to_string(f));
    // The outlier rule is a choice too: with the run-time check (a run-time glitch is not a curve).
    if (time_outliers) {
      if (base.outliers.time_tol > 0 || !base.outliers.enabled) return;
      d.options.outliers.time_tol = 0.15;
      d.label += " +time-outliers";
    }
    d.options.uncertainty = false;
    d.options.progress = nullptr;
    out.push_back(d);
  };
  for (double ridge : {0.1, 1.0})
    for (bool dram : {false, true}) add(Form::physics, ridge, dram, false);
  add(Form::poly, 0, false, false);
  add(Form::fgcs, 0, false, false);
  add(Form::physics, 0.1, false, true);
  add(Form::poly, 0, false, true);
  return out;
}

// `--form auto`: every design x probe handling scored by the inner figure over the training
// applications (one inner pass per design: the handlings reuse its fits); the best is fitted on all.
Result<Model> fit(Dataset data, const FitOptions& o) {
  if (o.form != Form::automatic) return fit_form(std::move(data), o);
  const auto apps = data.applications();
  if (apps.size() < kMinAutoApplications)
    return make_error(Errc::invalid_argument, fmt::format("--form auto chooses the design by leaving out each training application: it needs "
                                                          ">= {} applications, the data has {} (name a --form)",
                                                          kMinAutoApplications, apps.size()));
  const ProbeOptions po{o.probe_clock_mhz, o.probes};
  const auto designs = auto_designs(o);
  const auto handlings = probe_handlings(o.probes);
  std::vector<std::pair<std::string, double>> tried;
  Scored best;
  std::size_t best_i = designs.size();
  std::string first_error;
  for (std::size_t i = 0; i < designs.size(); ++i) {
    auto sets = cross_validate_handlings(data, designs[i].options, po, handlings, inner_split(apps.size()), kInnerFolds);
    if (!sets) {
      if (first_error.empty()) first_error = designs[i].label + ": " + sets.error().message;
      for (const auto& h : handlings) tried.emplace_back(handlings.size() > 1 ? designs[i].label + ", " + h.label() : designs[i].label, HUGE_VAL);
    } else if (Scored s = score_handlings(*sets, handlings, designs[i].label, o.uncertainty, tried); s.figure < best.figure) {
      best = std::move(s);
      best_i = i;
    }
    if (o.progress) o.progress(static_cast<int>(i + 1), static_cast<int>(designs.size()));
  }
  if (best_i == designs.size())
    return make_error(Errc::invalid_argument, "--form auto: no design could be fitted to this data (" + first_error + ")");
  auto m = fit_one(std::move(data), designs[best_i].options);
  if (!m) return m.error();
  ModelInfo info = m->info();
  const ProbeHandling& h = handlings[best.handling];
  info.designs = std::move(tried);
  info.chosen_design = handlings.size() > 1 ? designs[best_i].label + ", " + h.label() : designs[best_i].label;
  info.inner_criterion = kInnerCriterion;
  info.options.uncertainty = o.uncertainty;
  info.options.probes = o.probes;
  set_handling(info, handlings, best.handling);
  if (o.uncertainty)
    info.uncertainty = uncertainty_of(best.curves, fmt::format("leave-one-application-out residuals of the chosen design over the {} "
                                                               "training applications, {} probe(s)",
                                                               best.curves.size(), o.probes));
  return Model(std::move(info), m->impl());
}

void Uncertainty::at(double x, double& sp, double& st, double& se) const {
  sp = st = se = 0;
  if (x_edges.empty()) return;
  std::size_t b = 0;
  while (b + 1 < x_edges.size() && x > x_edges[b]) ++b;
  // Linear within the first bin from 0 at the probe.
  const double scale = b == 0 ? std::min(1.0, x / x_edges[0]) : 1.0;
  sp = scale * log_power[b];
  st = scale * log_time[b];
  se = scale * log_energy[b];
}

std::string outside_training(const ModelInfo& info, const Probe& probe) {
  std::string out;
  for (std::size_t c = 0; c < info.activity.size() && c < info.probe_activity_min.size() && c < probe.activity.size(); ++c) {
    const double lo = info.probe_activity_min[c], hi = info.probe_activity_max[c], slack = 0.02 * (hi - lo) + 1e-3;
    const double v = probe.activity[c];
    if (v < lo - slack || v > hi + slack)
      out += fmt::format("{}{} {:.3g} (trained {:.3g}-{:.3g})", out.empty() ? "" : ", ", info.activity[c], v, lo, hi);
  }
  if (info.probe_power_max_w > 0) {
    const double lo = info.probe_power_min_w, hi = info.probe_power_max_w, slack = 0.02 * (hi - lo) + 1;
    if (probe.power_w < lo - slack || probe.power_w > hi + slack)
      out += fmt::format("{}probe power {:.3g} W (trained {:.3g}-{:.3g} W)", out.empty() ? "" : ", ", probe.power_w, lo, hi);
  }
  return out;
}

Result<std::vector<Point>> Model::predict(const std::vector<Probe>& probes, const std::vector<double>& clocks) const {
  if (probes.empty() || probes.size() > 3) return make_error(Errc::invalid_argument, "1 to 3 probes are needed");
  for (const auto& p : probes) {
    if (p.activity.size() != info_.activity.size())
      return make_error(Errc::invalid_argument, "a probe has " + std::to_string(p.activity.size()) + " activity values, the model needs " + std::to_string(info_.activity.size()));
    if (!(p.clock_mhz > 0 && p.power_w > 0 && p.time_s > 0))
      return make_error(Errc::invalid_argument, "a probe needs a clock, power and time > 0");
  }
  // The probe handling chosen in the inner loop: the first `probes_used` probes, the extra ones'
  // own fit weighted against the population's (one-probe) curve.
  const auto& opt = info_.options;
  const std::vector<Probe> used(probes.begin(), probes.begin() + (opt.probes_used > 0 ? std::min<std::ptrdiff_t>(opt.probes_used, std::ssize(probes))
                                                                                      : std::ssize(probes)));
  const Probe& p0 = used.front();
  std::vector<double> all = clocks;
  for (std::size_t k = 1; k < used.size(); ++k) {
    if (std::abs(std::log(used[k].clock_mhz / p0.clock_mhz)) < 1e-6) return make_error(Errc::invalid_argument, "probe clocks must differ");
    all.push_back(used[k].clock_mhz);
  }
  std::vector<double> P, T;
  impl_->predict(p0, all, P, T);
  // The extra probes' disagreement with the one-probe curve, r = ln(measured / predicted), and the
  // weights: the handling's, times the positive-part James-Stein factor when it has a noise.
  std::vector<double> rP, rT;
  for (std::size_t k = 1; k < used.size(); ++k) {
    rP.push_back(std::log(used[k].power_w / P[clocks.size() + k - 1]));
    rT.push_back(std::log(used[k].time_s / T[clocks.size() + k - 1]));
  }
  auto weight_of = [&](const std::vector<double>& r) {
    if (opt.probe_noise <= 0 || r.empty()) return opt.probe_weight;
    double ms = 0;
    for (double x : r) ms += x * x / static_cast<double>(r.size());
    return opt.probe_weight * std::max(0.0, 1 - opt.probe_noise * opt.probe_noise / std::max(ms, 1e-300));
  };
  const double wP = weight_of(rP), wT = weight_of(rT);
  const bool own = used.size() > 1 && impl_->predict_probes(used, clocks, wP, wT, P, T);
  // Other forms: the curve is corrected by c1 phi + c2 phi^2 through the extra probes, phi =
  // ln(f / f0) (zero at the first probe, so the anchor stays exact), times the weight: the
  // correction through 2-3 points is noisy, the population's curve is the prior it shrinks to.
  std::vector<double> cP(2, 0.0), cT(2, 0.0);
  if (used.size() > 1 && !own) {
    const std::size_t m = used.size() - 1;
    Eigen::MatrixXd A(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(m));
    Eigen::VectorXd eP(static_cast<Eigen::Index>(m)), eT(static_cast<Eigen::Index>(m));
    for (std::size_t k = 0; k < m; ++k) {
      const double phi = std::log(used[k + 1].clock_mhz / p0.clock_mhz);
      const auto i = static_cast<Eigen::Index>(k);
      A(i, 0) = phi;
      if (m > 1) A(i, 1) = phi * phi;
      eP(i) = rP[k];
      eT(i) = rT[k];
    }
    const Eigen::VectorXd sP = A.colPivHouseholderQr().solve(eP), sT = A.colPivHouseholderQr().solve(eT);
    for (Eigen::Index j = 0; j < sP.size(); ++j) {
      cP[static_cast<std::size_t>(j)] = wP * sP(j);
      cT[static_cast<std::size_t>(j)] = wT * sT(j);
    }
  }
  std::vector<Point> out;
  for (std::size_t i = 0; i < clocks.size(); ++i) {
    const double phi = std::log(clocks[i] / p0.clock_mhz);
    Point pt;
    pt.clock_mhz = clocks[i];
    pt.power_w = P[i] * std::exp(cP[0] * phi + cP[1] * phi * phi);
    pt.time_s = T[i] * std::exp(cT[0] * phi + cT[1] * phi * phi);
    info_.uncertainty.at(std::abs(phi), pt.sigma_log_power, pt.sigma_log_time, pt.sigma_log_energy);
    if (!std::isfinite(pt.power_w) || !std::isfinite(pt.time_s))
      return make_error(Errc::invalid_argument, fmt::format("the model gives no finite prediction at {:g} MHz", clocks[i]));
    out.push_back(pt);
  }
  return out;
}

namespace {

bool finite_all(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

Result<void> validate_info(const ModelInfo& i) {
  auto bad = [](const std::string& m) { return make_error(Errc::parse, m); };
  if (!(i.max_clock_mhz > 0 && i.max_clock_mhz <= 100000)) return bad("max_clock_mhz must be in (0, 100000] MHz");
  if (!(i.probe_clock_mhz >= 0 && i.probe_clock_mhz <= 100000)) return bad("probe_clock_mhz must be in [0, 100000] MHz");
  if (i.clocks_mhz.empty()) return bad("clocks_mhz is empty");
  for (double f : i.clocks_mhz)
    if (!(f > 0 && f <= 100000)) return bad("clocks_mhz: each clock must be in (0, 100000] MHz");
  for (std::size_t k = 0; k < i.activity.size(); ++k) {
    if (i.activity[k].empty()) return bad("activity: an empty column name");
    for (std::size_t l = 0; l < k; ++l)
      if (i.activity[l] == i.activity[k]) return bad("activity: column " + i.activity[k] + " twice");
  }
  const auto& r = i.options.outliers;
  if (r.window < 1 || r.window > 1000) return bad("training.outlier_rule.window must be 1-1000 clocks on each side");
  if (!(r.power_tol > 0 && r.power_tol <= 100) || !(r.time_tol >= 0 && r.time_tol <= 100) || !(r.activity_abs >= 0 && r.activity_abs <= 100) ||
      !(r.activity_rel >= 0 && r.activity_rel <= 100))
    return bad("training.outlier_rule: power_tol must be in (0, 100], time_tol, activity_abs and activity_rel in [0, 100]");
  if (!(i.options.ridge >= 0 && i.options.ridge <= 1e6) || !(i.options.physics_ridge >= 0 && i.options.physics_ridge <= 1e6))
    return bad("options: ridge must be in [0, 1e6]");
  if (i.options.probes < 1 || i.options.probes > 3) return bad("options.probes must be 1, 2 or 3");
  if (i.options.probes_used < 0 || i.options.probes_used > 3 || !(i.options.probe_weight >= 0 && i.options.probe_weight <= 1) ||
      !(i.options.probe_noise >= 0 && i.options.probe_noise <= 1))
    return bad("options: probes_used must be 0-3, probe_weight in [0, 1] and probe_noise in [0, 1]");
  if (!i.probe_activity_min.empty() || !i.probe_activity_max.empty()) {
    if (i.probe_activity_min.size() != i.activity.size() || i.probe_activity_max.size() != i.activity.size() ||
        !finite_all(i.probe_activity_min) || !finite_all(i.probe_activity_max))
      return bad("probe_range: one finite minimum and maximum per activity column");
    for (std::size_t k = 0; k < i.activity.size(); ++k)
      if (i.probe_activity_min[k] > i.probe_activity_max[k]) return bad("probe_range: a minimum above its maximum");
    if (!(i.probe_power_min_w >= 0 && i.probe_power_min_w <= i.probe_power_max_w && i.probe_power_max_w < 1e5))
      return bad("probe_range: power_min_w <= power_max_w, both in [0, 1e5) W");
  }
  const auto& u = i.uncertainty;
  if (!u.x_edges.empty()) {
    const std::size_t n = u.x_edges.size();
    if (u.log_power.size() != n || u.log_time.size() != n || u.log_energy.size() != n)
      return bad("uncertainty: one sigma_log_power, sigma_log_time and sigma_log_energy per bin");
    if (!std::is_sorted(u.x_edges.begin(), u.x_edges.end()) || !(u.x_edges.front() > 0) || !finite_all(u.x_edges))
      return bad("uncertainty: x_edges must be ascending and > 0");
    for (const auto* v : {&u.log_power, &u.log_time, &u.log_energy})
      for (double x : *v)
        if (!(x >= 0 && x <= 10)) return bad("uncertainty: each sigma must be in [0, 10]");
  }
  return {};
}

}  // namespace

std::string Model::to_json() const {
  const auto& i = info_;
  nlohmann::json j;
  j["schema_version"] = 1;
  j["kind"] = "jouleprof-model";
  j["form"] = to_string(i.form);
  j["gpu"] = i.gpu;
  j["max_clock_mhz"] = i.max_clock_mhz;
  j["probe_clock_mhz"] = i.probe_clock_mhz;
  j["activity"] = i.activity;
  j["dropped_activity"] = i.dropped_activity;
  j["clocks_mhz"] = i.clocks_mhz;
  j["training"] = {{"source", i.training_source},
                   {"rows", i.training_rows},
                   {"outlier_rows", i.training_outliers},
                   {"outlier_rule",
                    {{"enabled", i.options.outliers.enabled},
                     {"window", i.options.outliers.window},
                     {"power_tol", i.options.outliers.power_tol},
                     {"time_tol", i.options.outliers.time_tol},
                     {"activity_abs", i.options.outliers.activity_abs},
                     {"activity_rel", i.options.outliers.activity_rel}}},
                   {"applications", i.training_applications},
                   {"created_utc", i.created_utc},
                   {"tool_version", i.tool_version}};
  j["options"] = {{"ridge", i.options.ridge}, {"xgb_rounds", i.options.xgb_rounds}, {"xgb_depth", i.options.xgb_depth}, {"xgb_eta", i.options.xgb_eta},
                  {"physics_ridge", i.options.physics_ridge}, {"physics_dram_static", i.options.physics_dram_static}, {"probes", i.options.probes},
                  {"probes_used", i.options.probes_used}, {"probe_weight", i.options.probe_weight}, {"probe_noise", i.options.probe_noise}};
  j["probe_range"] = {{"activity_min", i.probe_activity_min}, {"activity_max", i.probe_activity_max},
                      {"power_min_w", i.probe_power_min_w}, {"power_max_w", i.probe_power_max_w}};
  if (!i.uncertainty.empty())
    j["uncertainty"] = {{"x", "|ln(f / f_probe)|, upper bin edges"}, {"x_edges", i.uncertainty.x_edges},
                        {"sigma_log_power", i.uncertainty.log_power}, {"sigma_log_time", i.uncertainty.log_time},
                        {"sigma_log_energy", i.uncertainty.log_energy}, {"method", i.uncertainty.method}};
  if (!i.designs.empty()) {
    nlohmann::json d = nlohmann::json::array();
    for (const auto& [label, fig] : i.designs) d.push_back({{"design", label}, {"inner_figure", std::isfinite(fig) ? nlohmann::json(fig) : nlohmann::json()}});
    j["selection"] = {{"criterion", i.inner_criterion}, {"designs_tried", i.designs.size()}, {"designs", d}, {"chosen", i.chosen_design}};
  }
  j["params"] = impl_->params();
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<Model> Model::from_json(const std::string& text, const std::string& source) {
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.value("kind", "") != "jouleprof-model") return make_error(Errc::parse, source + ": not a jouleprof model file");
    if (j.value("schema_version", 0) != 1) return make_error(Errc::parse, source + ": unsupported model schema_version");
    ModelInfo i;
    auto f = parse_form(j.at("form").get<std::string>());
    if (!f) return make_error(Errc::parse, source + ": " + f.error().message);
    i.form = *f;
    i.options.form = *f;
    i.gpu = j.value("gpu", "");
    i.max_clock_mhz = j.at("max_clock_mhz").get<double>();
    i.probe_clock_mhz = j.value("probe_clock_mhz", 0.0);
    i.activity = j.at("activity").get<std::vector<std::string>>();
    i.dropped_activity = j.value("dropped_activity", std::vector<std::string>{});
    i.clocks_mhz = j.at("clocks_mhz").get<std::vector<double>>();
    const auto& t = j.at("training");
    i.training_source = t.value("source", "");
    i.training_rows = t.value("rows", std::size_t{0});
    i.training_outliers = t.value("outlier_rows", std::size_t{0});
    i.training_applications = t.value("applications", std::vector<std::string>{});
    i.created_utc = t.value("created_utc", "");
    i.tool_version = t.value("tool_version", "");
    if (t.contains("outlier_rule")) {
      const auto& r = t.at("outlier_rule");
      i.options.outliers.enabled = r.value("enabled", true);
      i.options.outliers.window = r.value("window", 3);
      i.options.outliers.power_tol = r.value("power_tol", 0.15);
      i.options.outliers.time_tol = r.value("time_tol", 0.0);
      i.options.outliers.activity_abs = r.value("activity_abs", 0.05);
      i.options.outliers.activity_rel = r.value("activity_rel", 0.15);
    }
    if (j.contains("options")) {
      const auto& o = j.at("options");
      i.options.ridge = o.value("ridge", 0.0);
      i.options.physics_ridge = o.value("physics_ridge", 0.1);
      i.options.physics_dram_static = o.value("physics_dram_static", false);
      i.options.probes = o.value("probes", 1);
      i.options.probes_used = o.value("probes_used", 0);
      i.options.probe_weight = o.value("probe_weight", 1.0);
      i.options.probe_noise = o.value("probe_noise", 0.0);
    }
    if (j.contains("probe_range")) {
      const auto& r = j.at("probe_range");
      i.probe_activity_min = r.at("activity_min").get<std::vector<double>>();
      i.probe_activity_max = r.at("activity_max").get<std::vector<double>>();
      i.probe_power_min_w = r.at("power_min_w").get<double>();
      i.probe_power_max_w = r.at("power_max_w").get<double>();
    }
    if (j.contains("uncertainty")) {
      const auto& u = j.at("uncertainty");
      i.uncertainty.x_edges = u.at("x_edges").get<std::vector<double>>();
      i.uncertainty.log_power = u.at("sigma_log_power").get<std::vector<double>>();
      i.uncertainty.log_time = u.at("sigma_log_time").get<std::vector<double>>();
      i.uncertainty.log_energy = u.at("sigma_log_energy").get<std::vector<double>>();
      i.uncertainty.method = u.value("method", "");
    }
    if (j.contains("selection")) {
      const auto& sel = j.at("selection");
      i.inner_criterion = sel.value("criterion", "");
      i.chosen_design = sel.value("chosen", "");
      for (const auto& d : sel.at("designs"))
        i.designs.emplace_back(d.at("design").get<std::string>(), d.at("inner_figure").is_null() ? HUGE_VAL : d.at("inner_figure").get<double>());
    }
    // Every figure read from the file is range-checked as a typed option would be (a model file
    // is input, not trusted state).
    if (auto v = validate_info(i); !v) return make_error(Errc::parse, source + ": " + v.error().message);
    auto impl = load_form(i.form, j.at("params"), i);
    if (!impl) return make_error(impl.error().code, source + ": " + impl.error().message);
    return Model(std::move(i), std::shared_ptr<const detail::FormImpl>(std::move(*impl)));
  } catch (const std::exception& e) {
    return make_error(Errc::parse, source + ": " + e.what());
  }
}

Result<Model> load_model(const std::string& path) {
  // A model file is kilobytes (knn's holds its training curves: megabytes); 256 MiB is not one.
  auto text = read_text_file(path, std::size_t{256} << 20);
  if (!text)
    return make_error(text.error().code, text.error().code == Errc::not_found ? "cannot open model " + path + ": no such file"
                                                                                : "cannot read model " + path + ": " + text.error().message);
  if (auto depth = json_too_deep(*text)) return make_error(Errc::parse, path + ": JSON nested too deep (at byte " + std::to_string(*depth) + ")");
  return Model::from_json(*text, path);
}

Result<void> save_model(const Model& m, const std::string& path) { return write_file_atomic(path, m.to_json() + "\n"); }

}  // namespace jouleprof::models
