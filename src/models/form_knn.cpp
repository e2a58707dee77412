// knn: a held-out workload's power and run-time *shape* versus clock is that of its nearest
// training applications in probe space (activity at the probe clock, probe power / P_ref and,
// where the model has DRAM and FP activity, memory-boundness dram / (dram + fp)), each feature
// standardised over the training applications:
//   ln P(f)/P(f0) = sum_j w_j [sP_j(f) - sP_j(f0)],   ln T(f)/T(f0) likewise with sT_j,
//   sP_j = ln P_j/P_j(anchor_j) on j's measured clocks, smoothed (none, moving mean of 7 or 13
//   clocks, or a quartic in f), interpolated linearly in f between them,
//   w_j proportional to 1 / (distance_j + eps) over the k nearest.
// k, the distance (every feature, the activity only, the probe power only, or probe power +
// memory-boundness) and the smoothings of power and of time (each separately: where neighbours share
// a real feature of their time curves, smoothing it away loses it) are chosen at fit time by a
// leave-one-application-out pass over the TRAINING applications only (energy MAPE of each training
// application predicted from its own probe by the others, against its measured, unsmoothed curve,
// averaged over applications), so a held-out workload never
// influences them. The smoothing keeps a neighbour's 1-3% dips between clocks (run-to-run noise)
// from deciding where the predicted minimum falls. The model file holds the measured training
// curves; the smoothing is applied when it is loaded.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "form.hpp"

namespace jouleprof::models::detail {
namespace {

constexpr double kEps = 1e-3;
const std::vector<int> kCandidatesK{1, 2, 3, 4, 6, 8};
const std::vector<std::string> kSmoothings{"none", "mean7", "mean13", "quartic"};

/// `g` over `clocks` (ascending) smoothed by one of kSmoothings; every smoother keeps constants.
std::vector<double> smooth(const std::vector<double>& clocks, const std::vector<double>& g, const std::string& how) {
  const std::size_t n = g.size();
  if (how == "mean7" || how == "mean13") {
    const std::size_t w = how == "mean7" ? 3 : 6;
    std::vector<double> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t lo = i >= w ? i - w : 0, hi = std::min(n - 1, i + w);
      double s = 0;
      for (std::size_t j = lo; j <= hi; ++j) s += g[j];
      out[i] = s / static_cast<double>(hi - lo + 1);
    }
    return out;
  }
  if (how == "quartic" && n >= 2) {
    const auto deg = static_cast<Eigen::Index>(std::min<std::size_t>(4, n - 1));
    const double mid = 0.5 * (clocks.front() + clocks.back()), half = std::max(0.5 * (clocks.back() - clocks.front()), 1e-9);
    Eigen::MatrixXd X(static_cast<Eigen::Index>(n), deg + 1);
    Eigen::VectorXd y(static_cast<Eigen::Index>(n));
    for (std::size_t i = 0; i < n; ++i) {
      const double x = (clocks[i] - mid) / half;
      double v = 1;
      for (Eigen::Index c = 0; c <= deg; ++c, v *= x) X(static_cast<Eigen::Index>(i), c) = v;
      y(static_cast<Eigen::Index>(i)) = g[i];
    }
    const Eigen::VectorXd fit = X * X.colPivHouseholderQr().solve(y);
    return {fit.data(), fit.data() + n};
  }
  return g;
}

struct TrainCurve {
  std::string application;
  std::vector<double> x;             ///< standardised features
  std::vector<double> clocks, gP, gT;  ///< measured ln P/P(anchor), ln T/T(anchor)
  std::vector<double> sP, sT;          ///< the same, smoothed (what predictions use)
  /// g at clock f: linear between measured clocks, the end value held beyond them.
  double at(const std::vector<double>& g, double f) const {
    const auto& c = clocks;
    if (f <= c.front()) return g.front();
    if (f >= c.back()) return g.back();
    const auto it = std::upper_bound(c.begin(), c.end(), f);
    const auto i = static_cast<std::size_t>(it - c.begin());
    const double t = (f - c[i - 1]) / (c[i] - c[i - 1]);
    return g[i - 1] + t * (g[i] - g[i - 1]);
  }
};

/// The memory-boundness feature's columns (DRAM, FP) in the model's activity, or -1s without one.
std::pair<int, int> memory_columns(const std::vector<std::string>& activity) {
  int dram = -1, fp = -1;
  for (std::size_t i = 0; i < activity.size(); ++i) {
    if (activity[i] == "dram_active") dram = static_cast<int>(i);
    if (activity[i] == "fp_active") fp = static_cast<int>(i);
  }
  return dram >= 0 && fp >= 0 ? std::pair{dram, fp} : std::pair{-1, -1};
}

std::vector<double> raw_features(const std::vector<double>& activity, double power_w, double pref, std::pair<int, int> mem) {
  std::vector<double> x = activity;
  x.push_back(power_w / pref);
  if (mem.first >= 0) {
    const double dram = activity[static_cast<std::size_t>(mem.first)], fp = activity[static_cast<std::size_t>(mem.second)];
    x.push_back(dram / (dram + fp + kEps));
  }
  return x;
}

class Knn final : public FormImpl {
 public:
  Knn(double pref, std::pair<int, int> mem, std::vector<std::string> mem_names, std::vector<double> mean, std::vector<double> scale,
      std::vector<TrainCurve> curves, int k, std::vector<double> weight, std::string smooth_p, std::string smooth_t)
      : pref_(pref), mem_(mem), mem_names_(std::move(mem_names)), mean_(std::move(mean)), scale_(std::move(scale)),
        curves_(std::move(curves)), k_(k), weight_(std::move(weight)) {
    set_smoothing(std::move(smooth_p), std::move(smooth_t));
  }

  std::vector<double> standardise(const std::vector<double>& raw) const {
    std::vector<double> x(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) x[i] = (raw[i] - mean_[i]) / scale_[i];
    return x;
  }

  /// Predicts with k neighbours among curves_, leaving out index `skip` (inner cross-validation).
  void predict_k(const std::vector<double>& x, double f0, const std::vector<double>& clocks, int k, std::size_t skip,
                 std::vector<double>& lnP, std::vector<double>& lnT) const {
    std::vector<std::pair<double, std::size_t>> d;
    for (std::size_t j = 0; j < curves_.size(); ++j) {
      if (j == skip) continue;
      double s = 0;
      for (std::size_t i = 0; i < x.size(); ++i) s += weight_[i] * (x[i] - curves_[j].x[i]) * (x[i] - curves_[j].x[i]);
      d.emplace_back(std::sqrt(s), j);
    }
    const auto n = std::min(d.size(), static_cast<std::size_t>(k));
    std::partial_sort(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(n), d.end());
    double wsum = 0;
    for (std::size_t i = 0; i < n; ++i) wsum += 1 / (d[i].first + kEps);
    lnP.assign(clocks.size(), 0.0);
    lnT.assign(clocks.size(), 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      const TrainCurve& c = curves_[d[i].second];
      const double w = 1 / (d[i].first + kEps) / wsum;
      const double p0 = c.at(c.sP, f0), t0 = c.at(c.sT, f0);
      for (std::size_t m = 0; m < clocks.size(); ++m) {
        lnP[m] += w * (c.at(c.sP, clocks[m]) - p0);
        lnT[m] += w * (c.at(c.sT, clocks[m]) - t0);
      }
    }
  }

  void predict(const Probe& probe, const std::vector<double>& clocks, std::vector<double>& power_w,
               std::vector<double>& time_s) const override {
    std::vector<double> lnP, lnT;
    predict_k(standardise(raw_features(probe.activity, probe.power_w, pref_, mem_)), probe.clock_mhz, clocks, k_,
              curves_.size(), lnP, lnT);
    power_w.clear();
    time_s.clear();
    for (std::size_t m = 0; m < clocks.size(); ++m) {
      power_w.push_back(probe.power_w * std::exp(lnP[m]));
      time_s.push_back(probe.time_s * std::exp(lnT[m]));
    }
  }

  /// Energy MAPE (%) of every training curve predicted from its anchor by the others with k
  /// neighbours, against its measured (unsmoothed) curve.
  double inner_energy_mape(int k, const std::vector<double>& anchors) const {
    double s = 0;
    std::size_t n = 0;
    std::vector<double> lnP, lnT;
    for (std::size_t j = 0; j < curves_.size(); ++j) {
      const TrainCurve& c = curves_[j];
      predict_k(c.x, anchors[j], c.clocks, k, j, lnP, lnT);
      const double e0 = c.at(c.gP, anchors[j]) + c.at(c.gT, anchors[j]);
      double sj = 0;
      for (std::size_t m = 0; m < c.clocks.size(); ++m) {
        const double meas = c.gP[m] + c.gT[m] - e0;  // measured ln E(f)/E(f0)
        sj += std::abs(std::exp(lnP[m] + lnT[m] - meas) - 1);
      }
      s += sj / static_cast<double>(c.clocks.size());  // each application weighs the same
      ++n;
    }
    return n ? 100 * s / static_cast<double>(n) : 0;
  }
  void set_k(int k) { k_ = k; }
  void set_weight(std::vector<double> w) { weight_ = std::move(w); }
  void set_smoothing(std::string p, std::string t) {
    smooth_p_ = std::move(p);
    smooth_t_ = std::move(t);
    for (auto& c : curves_) {
      c.sP = smooth(c.clocks, c.gP, smooth_p_);
      c.sT = smooth(c.clocks, c.gT, smooth_t_);
    }
  }

  nlohmann::json params() const override {
    nlohmann::json cs = nlohmann::json::array();
    for (const auto& c : curves_)
      cs.push_back({{"application", c.application}, {"x", c.x}, {"clocks_mhz", c.clocks}, {"ln_power_ratio", c.gP},
                    {"ln_time_ratio", c.gT}});
    return {{"rule", "inverse-distance weighted mean of the k nearest training curves (ln P/P0, ln T/T0), smoothed"},
            {"features", "activity at the probe..., probe power / power_ref_w[, dram/(dram+fp)]; standardised by feature_mean/feature_scale"},
            {"memory_boundness_columns", mem_names_},
            {"k", k_}, {"feature_weight", weight_}, {"power_smoothing", smooth_p_}, {"time_smoothing", smooth_t_}, {"selection", inner_},
            {"power_ref_w", pref_}, {"feature_mean", mean_}, {"feature_scale", scale_}, {"curves", cs}};
  }
  nlohmann::json inner_ = nlohmann::json::array();  ///< the inner cross-validation's energy MAPE per candidate

 private:
  double pref_;
  std::pair<int, int> mem_;
  std::vector<std::string> mem_names_;  ///< [dram, fp] names, or empty
  std::vector<double> mean_, scale_;
  std::vector<TrainCurve> curves_;
  int k_;
  std::vector<double> weight_;  ///< per feature in the distance: 1 or 0
  std::string smooth_p_, smooth_t_;
};

}  // namespace

Result<std::unique_ptr<FormImpl>> fit_knn(const FitContext& c) {
  if (c.sweeps.size() < 3) return make_error(Errc::invalid_argument, "the knn form needs >= 3 training applications");
  double pref = 0;
  for (const auto& s : c.sweeps)
    for (const auto& p : s.points) pref = std::max(pref, p.power_w);
  const auto mem = memory_columns(c.activity);
  std::vector<std::string> mem_names;
  if (mem.first >= 0) mem_names = {c.activity[static_cast<std::size_t>(mem.first)], c.activity[static_cast<std::size_t>(mem.second)]};
  std::vector<std::vector<double>> raw;
  for (const auto& s : c.sweeps) {
    const AppPoint& a = s.points[s.anchor];
    raw.push_back(raw_features(a.activity, a.power_w, pref, mem));
  }
  const std::size_t nf = raw.front().size(), na = c.activity.size();
  std::vector<double> mean(nf, 0.0), scale(nf, 0.0);
  for (const auto& r : raw)
    for (std::size_t i = 0; i < nf; ++i) mean[i] += r[i] / static_cast<double>(raw.size());
  for (const auto& r : raw)
    for (std::size_t i = 0; i < nf; ++i) scale[i] += (r[i] - mean[i]) * (r[i] - mean[i]) / static_cast<double>(raw.size());
  for (auto& v : scale) v = v > 1e-24 ? std::sqrt(v) : 1.0;
  std::vector<TrainCurve> curves;
  std::vector<double> anchors;
  for (std::size_t j = 0; j < c.sweeps.size(); ++j) {
    const auto& s = c.sweeps[j];
    TrainCurve tc;
    tc.application = s.application;
    for (std::size_t i = 0; i < nf; ++i) tc.x.push_back((raw[j][i] - mean[i]) / scale[i]);
    const AppPoint& a = s.points[s.anchor];
    for (const auto& p : s.points) {
      tc.clocks.push_back(p.clock_mhz);
      tc.gP.push_back(std::log(p.power_w / a.power_w));
      tc.gT.push_back(std::log(p.time_s / a.time_s));
    }
    anchors.push_back(a.clock_mhz);
    curves.push_back(std::move(tc));
  }
  // Candidate distances: every feature, the activity only, the probe power only, and the probe
  // power with memory-boundness (the physical pair: how hard the probe drew, on what).
  std::vector<std::pair<std::string, std::vector<double>>> metrics{{"all", std::vector<double>(nf, 1.0)}};
  if (na > 0) {
    std::vector<double> act(nf, 0.0), pow(nf, 0.0);
    std::fill(act.begin(), act.begin() + static_cast<std::ptrdiff_t>(na), 1.0);
    pow[na] = 1;
    metrics.emplace_back("activity", act);
    metrics.emplace_back("power", pow);
    if (mem.first >= 0) {
      std::vector<double> phys(nf, 0.0);
      phys[na] = phys[na + 1] = 1;
      metrics.emplace_back("power+memory", phys);
    }
  }
  // One model per smoothing (the curves smoothed once each); every candidate scored the same way.
  std::vector<std::unique_ptr<Knn>> by_smoothing;
  std::vector<std::pair<std::string, std::string>> smoothings;
  for (const auto& sp : kSmoothings)
    for (const auto& st : kSmoothings) {
      smoothings.emplace_back(sp, st);
      by_smoothing.push_back(std::make_unique<Knn>(pref, mem, mem_names, mean, scale, curves, 1, metrics.front().second, sp, st));
    }
  nlohmann::json selection = nlohmann::json::array();
  double best = 1e300;
  int best_k = 1;
  std::size_t best_m = 0, best_s = 0;
  for (int k : kCandidatesK) {
    if (static_cast<std::size_t>(k) >= c.sweeps.size()) break;
    for (std::size_t mi = 0; mi < metrics.size(); ++mi)
      for (std::size_t si = 0; si < smoothings.size(); ++si) {
        Knn& knn = *by_smoothing[si];
        knn.set_weight(metrics[mi].second);
        const double e = knn.inner_energy_mape(k, anchors);
        selection.push_back({{"k", k}, {"distance", metrics[mi].first}, {"power_smoothing", smoothings[si].first}, {"time_smoothing", smoothings[si].second}, {"energy_mape_pct", e}});
        if (e < best) {
          best = e;
          best_k = k;
          best_m = mi;
          best_s = si;
        }
      }
  }
  auto knn = std::move(by_smoothing[best_s]);
  knn->set_k(best_k);
  knn->set_weight(metrics[best_m].second);
  knn->inner_ = std::move(selection);
  return std::unique_ptr<FormImpl>(std::move(knn));
}

Result<std::unique_ptr<FormImpl>> load_knn(const nlohmann::json& p, const ModelInfo& info) {
  try {
    auto mem_names = p.value("memory_boundness_columns", std::vector<std::string>{});
    std::pair<int, int> mem{-1, -1};
    if (!mem_names.empty()) {
      mem = memory_columns(info.activity);
      if (mem_names.size() != 2 || mem.first < 0 || info.activity[static_cast<std::size_t>(mem.first)] != mem_names[0] ||
          info.activity[static_cast<std::size_t>(mem.second)] != mem_names[1])
        return make_error(Errc::parse, "knn model: memory_boundness_columns must name the model's dram_active and fp_active");
    }
    auto mean = p.at("feature_mean").get<std::vector<double>>();
    auto scale = p.at("feature_scale").get<std::vector<double>>();
    const std::size_t nf = info.activity.size() + 1 + (mem.first >= 0 ? 1 : 0);
    if (mean.size() != nf || scale.size() != nf) return make_error(Errc::parse, "knn model: " + std::to_string(nf) + " features expected");
    std::vector<TrainCurve> curves;
    for (const auto& j : p.at("curves")) {
      TrainCurve c;
      c.application = j.at("application").get<std::string>();
      c.x = j.at("x").get<std::vector<double>>();
      c.clocks = j.at("clocks_mhz").get<std::vector<double>>();
      c.gP = j.at("ln_power_ratio").get<std::vector<double>>();
      c.gT = j.at("ln_time_ratio").get<std::vector<double>>();
      if (c.x.size() != nf || c.clocks.empty() || c.gP.size() != c.clocks.size() || c.gT.size() != c.clocks.size() ||
          !std::is_sorted(c.clocks.begin(), c.clocks.end()))
        return make_error(Errc::parse, "knn model: curve of " + c.application + " is malformed");
      curves.push_back(std::move(c));
    }
    const int k = p.at("k").get<int>();
    auto weight = p.value("feature_weight", std::vector<double>(nf, 1.0));
    const auto sp = p.value("power_smoothing", std::string("none")), st = p.value("time_smoothing", std::string("none"));
    for (const auto& s : {sp, st})
      if (std::find(kSmoothings.begin(), kSmoothings.end(), s) == kSmoothings.end())
        return make_error(Errc::parse, "knn model: unknown smoothing '" + s + "'");
    if (curves.empty() || k < 1 || weight.size() != nf) return make_error(Errc::parse, "knn model: no curves, k < 1 or wrong feature_weight");
    return std::unique_ptr<FormImpl>(new Knn(p.at("power_ref_w").get<double>(), mem, std::move(mem_names), std::move(mean), std::move(scale),
                                             std::move(curves), k, std::move(weight), sp, st));
  } catch (const std::exception& e) {
    return make_error(Errc::parse, std::string("knn model parameters: ") + e.what());
  }
}

}  // namespace jouleprof::models::detail
