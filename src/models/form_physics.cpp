// physics: run time and power shaped by how a GPU works, fitted per GPU (docs/models.md "physics").
//
//   T(f) = A / f + B: the part of the run that scales with the SM clock and the part that does not
//   (memory-, latency- or host-bound). With alpha the 1/f fraction of the run time at f_max,
//     T(f) / T(f0) = (alpha fmax/f + 1 - alpha) / (alpha fmax/f0 + 1 - alpha).
//   alpha of a workload is predicted from its probe: a ridge regression of each training
//   application's own alpha (least squares on its sweep) on the probe's activity and power.
//
//   P(f) = P_static + k g(f),  g(f) = f V(f)^2 / (f_max V(f_max)^2): dynamic power is activity x
//   f x V(f)^2, and the voltage-frequency curve V(f) is the chip's, not the application's. g is
//   learned from every training application at once (alternating least squares: per-application
//   dynamic scale k, the GPU's static power (optionally + a DRAM-activity term: memory power does not
//   follow the SM clock), g at each training clock, kept non-decreasing). A workload's k comes from
//   its probe: k = (P(f0) - P_static) / g(f0).
//
// Further probes (2-3) measure the workload's own scaling: alpha and k are updated from them by
// least squares with the regression's prediction as a prior weighted by the regression's own
// residual spread (a probe that agrees with the prior changes nothing; two probes far apart
// override it), so more probes fit the workload rather than bend a generic curve. The probes'
// precision is scaled by the model's probe weight (chosen in the inner loop): a weight below 1
// shrinks the workload's own fit further toward the prior.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "form.hpp"

namespace jouleprof::models::detail {
namespace {

struct Curve1 {
  std::vector<double> clocks, g;  ///< ascending clocks, g(f) (1 at f_max)
  double at(double f, double fmax) const {
    if (clocks.empty()) return f / fmax;
    // Beyond the learned clocks V is held constant: g scales with f.
    if (f <= clocks.front()) return g.front() * f / clocks.front();
    if (f >= clocks.back()) return g.back() * f / clocks.back();
    const auto it = std::upper_bound(clocks.begin(), clocks.end(), f);
    const auto i = static_cast<std::size_t>(it - clocks.begin());
    const double t = (f - clocks[i - 1]) / (clocks[i] - clocks[i - 1]);
    return g[i - 1] + t * (g[i] - g[i - 1]);
  }
};

/// Pool-adjacent-violators: the weighted least-squares non-decreasing sequence.
std::vector<double> isotonic(const std::vector<double>& y, const std::vector<double>& w) {
  std::vector<double> v, wt;
  std::vector<std::size_t> len;
  for (std::size_t i = 0; i < y.size(); ++i) {
    v.push_back(y[i]);
    wt.push_back(std::max(w[i], 1e-12));
    len.push_back(1);
    while (v.size() > 1 && v[v.size() - 2] > v.back()) {
      const double W = wt[wt.size() - 2] + wt.back();
      const double m = (v[v.size() - 2] * wt[wt.size() - 2] + v.back() * wt.back()) / W;
      const std::size_t L = len[len.size() - 2] + len.back();
      v.pop_back(), wt.pop_back(), len.pop_back();
      v.back() = m, wt.back() = W, len.back() = L;
    }
  }
  std::vector<double> out;
  for (std::size_t b = 0; b < v.size(); ++b) out.insert(out.end(), len[b], v[b]);
  return out;
}

class Physics final : public FormImpl {
 public:
  struct Params {
    double fmax = 0, pref = 1;
    std::vector<double> mean, scale;  ///< feature standardisation (activity..., probe power / pref)
    std::vector<double> alpha_w;      ///< alpha = clamp(w . (1, z))
    double alpha_sd = 0.2;            ///< residual spread of alpha around the regression
    double time_noise = 0.01;         ///< residual of the a/f + b law on one point (relative)
    double static_w = 0, static_dram_w = 0;  ///< P_static = static_w + static_dram_w x dram
    double static_sd = 5;             ///< spread of the per-application static power (W)
    double power_noise = 0.01;        ///< residual of the power law on one point (relative)
    int dram_col = -1;
    double ridge = 0.1;
    bool dram_static = false;
    Curve1 g;
  };
  explicit Physics(Params p) : p_(std::move(p)) {}

  std::vector<double> z_of(const Probe& pr) const {
    std::vector<double> z{1.0};
    for (std::size_t i = 0; i < pr.activity.size(); ++i) z.push_back((pr.activity[i] - p_.mean[i]) / p_.scale[i]);
    const std::size_t k = pr.activity.size();
    z.push_back((pr.power_w / p_.pref - p_.mean[k]) / p_.scale[k]);
    return z;
  }
  double alpha_prior(const Probe& pr) const { return std::clamp(dot(z_of(pr), p_.alpha_w), 0.0, 1.0); }
  double static_of(const Probe& pr) const {
    double s = p_.static_w;
    if (p_.dram_static && p_.dram_col >= 0) s += p_.static_dram_w * pr.activity[static_cast<std::size_t>(p_.dram_col)];
    return std::clamp(s, 0.0, 0.95 * pr.power_w);
  }
  // T(f)/T(f0) with alpha at f_max.
  double time_ratio(double alpha, double f, double f0) const {
    return (alpha * p_.fmax / f + 1 - alpha) / (alpha * p_.fmax / f0 + 1 - alpha);
  }

  void predict(const Probe& probe, const std::vector<double>& clocks, std::vector<double>& power_w,
               std::vector<double>& time_s) const override {
    predict_probes({probe}, clocks, 1.0, 1.0, power_w, time_s);
  }

  bool predict_probes(const std::vector<Probe>& probes, const std::vector<double>& clocks, double w_power, double w_time,
                      std::vector<double>& power_w, std::vector<double>& time_s) const override {
    const Probe& p0 = probes.front();
    const double f0 = p0.clock_mhz;
    // Time: y = T_k/T0 is linear in alpha once the anchor's denominator is written out:
    //   T_k/T0 (alpha c0 + 1 - alpha) = alpha c_k + 1 - alpha,  c = fmax / f.
    // Least squares in alpha with the prior alpha_hat (sd alpha_sd) and each probe's noise.
    double alpha = alpha_prior(p0);
    {
      double num = alpha / (p_.alpha_sd * p_.alpha_sd), den = 1 / (p_.alpha_sd * p_.alpha_sd);
      const double c0 = p_.fmax / f0;
      for (std::size_t k = 1; k < probes.size(); ++k) {
        const double ck = p_.fmax / probes[k].clock_mhz, y = probes[k].time_s / p0.time_s;
        // y (alpha (c0 - 1) + 1) = alpha (ck - 1) + 1  ->  alpha (y (c0 - 1) - (ck - 1)) = 1 - y
        const double a = y * (c0 - 1) - (ck - 1), b = 1 - y;
        const double s2 = p_.time_noise * p_.time_noise * y * y;
        num += w_time * a * b / s2;
        den += w_time * a * a / s2;
      }
      alpha = std::clamp(num / den, 0.0, 1.0);
    }
    // Power: P(f) = P0 + k (g(f) - g(f0)); the prior k = (P0 - static) / g(f0), sd from static_sd.
    const double g0 = p_.g.at(f0, p_.fmax);
    double k = (p0.power_w - static_of(p0)) / g0;
    {
      const double ksd = std::max(p_.static_sd / g0, 1e-6);
      double num = k / (ksd * ksd), den = 1 / (ksd * ksd);
      for (std::size_t j = 1; j < probes.size(); ++j) {
        const double a = p_.g.at(probes[j].clock_mhz, p_.fmax) - g0, b = probes[j].power_w - p0.power_w;
        const double s2 = std::pow(p_.power_noise * probes[j].power_w, 2);
        num += w_power * a * b / s2;
        den += w_power * a * a / s2;
      }
      k = std::max(num / den, 0.0);
    }
    power_w.clear();
    time_s.clear();
    for (double f : clocks) {
      power_w.push_back(std::max(p0.power_w + k * (p_.g.at(f, p_.fmax) - g0), 0.05 * p0.power_w));
      time_s.push_back(p0.time_s * time_ratio(alpha, f, f0));
    }
    return true;
  }

  nlohmann::json params() const override {
    std::vector<double> v;
    for (std::size_t i = 0; i < p_.g.clocks.size(); ++i) v.push_back(std::sqrt(p_.g.g[i] * p_.fmax / p_.g.clocks[i]));
    return {{"time_law", "T(f) = T(f0) (alpha fmax/f + 1 - alpha) / (alpha fmax/f0 + 1 - alpha)"},
            {"power_law", "P(f) = P_static + k g(f), g(f) = f V(f)^2 / (fmax V(fmax)^2), k from the probe"},
            {"features", "1, standardised activity..., probe power / power_ref_w"},
            {"feature_mean", p_.mean},
            {"feature_scale", p_.scale},
            {"power_ref_w", p_.pref},
            {"alpha_coefficients", p_.alpha_w},
            {"alpha_sd", p_.alpha_sd},
            {"time_noise", p_.time_noise},
            {"static_w", p_.static_w},
            {"static_dram_w", p_.static_dram_w},
            {"static_sd_w", p_.static_sd},
            {"power_noise", p_.power_noise},
            {"dram_static", p_.dram_static},
            {"dram_column", p_.dram_col},
            {"ridge", p_.ridge},
            {"g_clocks_mhz", p_.g.clocks},
            {"g", p_.g.g},
            {"voltage_relative", v}};
  }

  const Params& p() const { return p_; }

 private:
  Params p_;
};

// alpha of one training application: least squares of its sweep on the a/f + b law, relative
// to its anchor; returns the residual sum of squares (relative) through `rss`.
double alpha_of(const AppSweep& s, double fmax, double& rss, std::size_t& n) {
  const AppPoint& a = s.points[s.anchor];
  const double c0 = fmax / a.clock_mhz;
  // T_i / T0 = (alpha c_i + 1 - alpha) / (alpha c0 + 1 - alpha): solve by a 1-D search (the
  // ratio is monotone in alpha), then the residuals.
  auto loss = [&](double al) {
    double l = 0;
    for (const auto& p : s.points) {
      const double pred = (al * fmax / p.clock_mhz + 1 - al) / (al * c0 + 1 - al);
      l += std::pow(std::log(p.time_s / a.time_s) - std::log(pred), 2);
    }
    return l;
  };
  double lo = 0, hi = 1;
  for (int it = 0; it < 60; ++it) {
    const double m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
    if (loss(m1) < loss(m2)) hi = m2;
    else lo = m1;
  }
  const double al = 0.5 * (lo + hi);
  rss += loss(al);
  n += s.points.size() > 1 ? s.points.size() - 1 : 0;
  return al;
}

}  // namespace

namespace {

// Step 1: the probe features of each training application (activity..., probe power / pref),
// and their standardisation into P.mean / P.scale.
std::vector<std::vector<double>> probe_features(const FitContext& c, Physics::Params& P) {
  const std::size_t A = c.sweeps.size(), K = c.activity.size();
  for (const auto& s : c.sweeps)
    for (const auto& p : s.points) P.pref = std::max(P.pref, p.power_w);
  std::vector<std::vector<double>> raw(A);
  for (std::size_t j = 0; j < A; ++j) {
    const AppPoint& a = c.sweeps[j].points[c.sweeps[j].anchor];
    raw[j] = a.activity;
    raw[j].push_back(a.power_w / P.pref);
  }
  P.mean.assign(K + 1, 0.0);
  P.scale.assign(K + 1, 0.0);
  for (std::size_t i = 0; i <= K; ++i) {
    for (std::size_t j = 0; j < A; ++j) P.mean[i] += raw[j][i] / static_cast<double>(A);
    for (std::size_t j = 0; j < A; ++j) P.scale[i] += std::pow(raw[j][i] - P.mean[i], 2) / static_cast<double>(A);
    P.scale[i] = std::sqrt(P.scale[i]);
    if (!(P.scale[i] > 1e-12)) P.scale[i] = 1;
  }
  return raw;
}

// Step 2: alpha per application, then its ridge regression on the standardised features; the
// penalty leaves the intercept free (features centred: the intercept is the mean alpha).
Result<void> fit_alpha(const FitContext& c, const std::vector<std::vector<double>>& raw, Physics::Params& P) {
  const std::size_t A = c.sweeps.size(), K = c.activity.size();
  std::vector<double> alpha(A);
  double trss = 0, amean = 0;
  std::size_t tn = 0;
  for (std::size_t j = 0; j < A; ++j) alpha[j] = alpha_of(c.sweeps[j], P.fmax, trss, tn);
  P.time_noise = std::max(std::sqrt(trss / static_cast<double>(std::max<std::size_t>(tn, 1))), 0.003);
  std::vector<std::vector<double>> X;
  for (std::size_t j = 0; j < A; ++j) {
    std::vector<double> z{1.0};
    for (std::size_t i = 0; i <= K; ++i) z.push_back((raw[j][i] - P.mean[i]) / P.scale[i]);
    X.push_back(std::move(z));
  }
  Eigen::MatrixXd M(static_cast<Eigen::Index>(A), static_cast<Eigen::Index>(K + 1));
  Eigen::VectorXd y(static_cast<Eigen::Index>(A));
  for (std::size_t j = 0; j < A; ++j) amean += alpha[j] / static_cast<double>(A);
  for (std::size_t j = 0; j < A; ++j) {
    for (std::size_t i = 0; i <= K; ++i) M(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(i)) = X[j][i + 1];
    y(static_cast<Eigen::Index>(j)) = alpha[j] - amean;
  }
  Eigen::MatrixXd G = M.transpose() * M;
  G.diagonal().array() += P.ridge * static_cast<double>(A);
  const Eigen::VectorXd b = G.ldlt().solve(M.transpose() * y);
  if (!b.allFinite()) return make_error(Errc::invalid_argument, "the physics form's run-time regression is singular");
  P.alpha_w.assign(1, amean);
  for (Eigen::Index i = 0; i < b.size(); ++i) P.alpha_w.push_back(b(i));
  double r2 = 0;
  for (std::size_t j = 0; j < A; ++j) r2 += std::pow(alpha[j] - std::clamp(dot(X[j], P.alpha_w), 0.0, 1.0), 2);
  P.alpha_sd = std::max(std::sqrt(r2 / static_cast<double>(A)), 0.02);
  return {};
}

// The power fit's data: the training clocks, each application's probe DRAM activity and weight.
struct PowerData {
  std::vector<double> clocks, dram, wapp;
  std::size_t index(double f) const {
    return static_cast<std::size_t>(std::lower_bound(clocks.begin(), clocks.end(), f - 1e-9) - clocks.begin());
  }
  double static_of(const Physics::Params& P, std::size_t j) const { return P.static_w + (P.dram_static ? P.static_dram_w * dram[j] : 0); }
};

// Step 3: alternating least squares for the GPU's static power (+ DRAM term), each
// application's dynamic scale k and g per clock (non-decreasing, 1 at the top clock). It
// converges slowly along the static/g trade-off: iterate until the static power moves by less
// than 10 mW (at most 500 rounds; each is linear in the points).
void fit_power(const FitContext& c, const PowerData& d, Physics::Params& P) {
  const std::size_t A = c.sweeps.size(), C = d.clocks.size();
  P.g.clocks = d.clocks;
  P.g.g.resize(C);
  for (std::size_t i = 0; i < C; ++i) P.g.g[i] = std::pow(d.clocks[i] / P.fmax, 2);
  std::vector<double> k(A, 1.0);
  P.static_w = P.static_dram_w = 0;
  double s_prev = -1;
  for (int it = 0; it < 500 && std::abs(P.static_w - s_prev) > 1e-2; ++it) {
    s_prev = P.static_w;
    for (std::size_t j = 0; j < A; ++j) {  // k given static and g
      double num = 0, den = 0;
      for (const auto& p : c.sweeps[j].points) {
        const double gi = P.g.g[d.index(p.clock_mhz)];
        num += gi * (p.power_w - d.static_of(P, j));
        den += gi * gi;
      }
      k[j] = std::max(num / den, 1e-9);
    }
    double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;  // static (and DRAM term) given k and g
    for (std::size_t j = 0; j < A; ++j)
      for (const auto& p : c.sweeps[j].points) {
        const double r = p.power_w - k[j] * P.g.g[d.index(p.clock_mhz)], w = d.wapp[j], x = d.dram[j];
        a11 += w, a12 += w * x, a22 += w * x * x, b1 += w * r, b2 += w * r * x;
      }
    const double det = a11 * a22 - a12 * a12;
    const bool two = P.dram_static && det > 1e-12 * a11 * a22;
    P.static_w = std::max(two ? (b1 * a22 - b2 * a12) / det : b1 / a11, 0.0);
    P.static_dram_w = two ? (a11 * b2 - a12 * b1) / det : 0;
    std::vector<double> num(C, 0), den(C, 0);  // g given static and k
    for (std::size_t j = 0; j < A; ++j)
      for (const auto& p : c.sweeps[j].points) {
        const auto i = d.index(p.clock_mhz);
        num[i] += d.wapp[j] * k[j] * (p.power_w - d.static_of(P, j));
        den[i] += d.wapp[j] * k[j] * k[j];
      }
    std::vector<double> gy(C);
    for (std::size_t i = 0; i < C; ++i) gy[i] = den[i] > 0 ? num[i] / den[i] : P.g.g[i];
    auto g = isotonic(gy, den);
    const double top = std::max(g.back(), 1e-9);
    for (auto& v : g) v = std::max(v / top, 1e-6);
    P.g.g = std::move(g);
  }
}

// Step 4: the spread of each application's own static power around the GPU's (the prior on k)
// and the per-point residual of the power law.
void power_spreads(const FitContext& c, const PowerData& d, Physics::Params& P) {
  const std::size_t A = c.sweeps.size();
  double ss = 0, pr = 0;
  std::size_t pn = 0;
  for (std::size_t j = 0; j < A; ++j) {
    const auto& s = c.sweeps[j];
    // The application's own best static with its k: P = st_j + k_j g.
    double sg = 0, sgg = 0, sp = 0, spg = 0;
    const double n = static_cast<double>(s.points.size());
    for (const auto& p : s.points) {
      const double gi = P.g.g[d.index(p.clock_mhz)];
      sg += gi, sgg += gi * gi, sp += p.power_w, spg += p.power_w * gi;
    }
    const double det = n * sgg - sg * sg;
    if (det <= 1e-12) continue;
    const double kj = (n * spg - sg * sp) / det, stj = (sp - kj * sg) / n;
    ss += std::pow(stj - d.static_of(P, j), 2);
    for (const auto& p : s.points) {
      pr += std::pow((stj + kj * P.g.g[d.index(p.clock_mhz)]) / p.power_w - 1, 2);
      ++pn;
    }
  }
  P.static_sd = std::max(std::sqrt(ss / static_cast<double>(A)), 1.0);
  P.power_noise = std::max(std::sqrt(pr / static_cast<double>(std::max<std::size_t>(pn, 1))), 0.003);
}

}  // namespace

Result<std::unique_ptr<FormImpl>> fit_physics(const FitContext& c) {
  Physics::Params P;
  P.fmax = c.max_clock_mhz;
  P.ridge = c.options.physics_ridge;
  P.dram_static = c.options.physics_dram_static;
  for (std::size_t i = 0; i < c.activity.size(); ++i)
    if (c.activity[i] == "dram_active") P.dram_col = static_cast<int>(i);
  const std::size_t A = c.sweeps.size();
  if (A < 3) return make_error(Errc::invalid_argument, "the physics form needs >= 3 training applications");
  const auto raw = probe_features(c, P);
  if (auto r = fit_alpha(c, raw, P); !r) return r.error();
  PowerData d;
  for (const auto& s : c.sweeps)
    for (const auto& p : s.points) d.clocks.push_back(p.clock_mhz);
  std::sort(d.clocks.begin(), d.clocks.end());
  d.clocks.erase(std::unique(d.clocks.begin(), d.clocks.end()), d.clocks.end());
  d.dram.assign(A, 0.0);
  d.wapp.assign(A, 1.0);
  for (std::size_t j = 0; j < A; ++j) {
    const auto& s = c.sweeps[j];
    if (P.dram_col >= 0) d.dram[j] = s.points[s.anchor].activity[static_cast<std::size_t>(P.dram_col)];
    double pm = 0;
    for (const auto& p : s.points) pm += p.power_w / static_cast<double>(s.points.size());
    d.wapp[j] = 1.0 / (pm * pm * static_cast<double>(s.points.size()));  // relative errors, each application weighing the same
  }
  fit_power(c, d, P);
  power_spreads(c, d, P);
  return std::unique_ptr<FormImpl>(new Physics(std::move(P)));
}

Result<std::unique_ptr<FormImpl>> load_physics(const nlohmann::json& j, const ModelInfo& info) {
  try {
    Physics::Params P;
    P.fmax = info.max_clock_mhz;
    P.mean = j.at("feature_mean").get<std::vector<double>>();
    P.scale = j.at("feature_scale").get<std::vector<double>>();
    P.pref = j.at("power_ref_w").get<double>();
    P.alpha_w = j.at("alpha_coefficients").get<std::vector<double>>();
    P.alpha_sd = j.at("alpha_sd").get<double>();
    P.time_noise = j.at("time_noise").get<double>();
    P.static_w = j.at("static_w").get<double>();
    P.static_dram_w = j.at("static_dram_w").get<double>();
    P.static_sd = j.at("static_sd_w").get<double>();
    P.power_noise = j.at("power_noise").get<double>();
    P.dram_static = j.at("dram_static").get<bool>();
    P.dram_col = j.at("dram_column").get<int>();
    P.ridge = j.value("ridge", 0.1);
    P.g.clocks = j.at("g_clocks_mhz").get<std::vector<double>>();
    P.g.g = j.at("g").get<std::vector<double>>();
    const std::size_t K = info.activity.size();
    auto finite = [](const std::vector<double>& v) { return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }); };
    if (P.mean.size() != K + 1 || P.scale.size() != K + 1 || P.alpha_w.size() != K + 2)
      return make_error(Errc::parse, fmt::format("physics model: {} features expected (the activity columns + probe power)", K + 1));
    if (!finite(P.mean) || !finite(P.scale) || !finite(P.alpha_w) || !finite(P.g.g) || !finite(P.g.clocks))
      return make_error(Errc::parse, "physics model: a parameter is not a finite number");
    if (std::any_of(P.scale.begin(), P.scale.end(), [](double s) { return !(s > 0); }))
      return make_error(Errc::parse, "physics model: feature_scale must be > 0");
    if (P.g.clocks.empty() || P.g.clocks.size() != P.g.g.size() || !std::is_sorted(P.g.clocks.begin(), P.g.clocks.end()) ||
        std::any_of(P.g.g.begin(), P.g.g.end(), [](double v) { return !(v > 0 && v <= 1.0 + 1e-9); }) ||
        std::any_of(P.g.clocks.begin(), P.g.clocks.end(), [](double v) { return !(v > 0 && v <= 100000); }))
      return make_error(Errc::parse, "physics model: g needs ascending clocks in (0, 100000] MHz and values in (0, 1], one per clock");
    if (!(P.pref > 0 && P.pref < 1e5) || !(P.alpha_sd > 0 && P.alpha_sd <= 10) || !(P.time_noise > 0 && P.time_noise <= 10) ||
        !(P.static_w >= 0 && P.static_w < 1e5) || !std::isfinite(P.static_dram_w) || !(P.static_sd > 0 && P.static_sd < 1e5) ||
        !(P.power_noise > 0 && P.power_noise <= 10) || P.dram_col < -1 || P.dram_col >= static_cast<int>(K))
      return make_error(Errc::parse, "physics model: a parameter is out of range (power_ref_w, alpha_sd, time_noise, static_w, "
                                     "static_sd_w, power_noise or dram_column)");
    return std::unique_ptr<FormImpl>(new Physics(std::move(P)));
  } catch (const std::exception& e) {
    return make_error(Errc::parse, std::string("physics model parameters: ") + e.what());
  }
}

}  // namespace jouleprof::models::detail
