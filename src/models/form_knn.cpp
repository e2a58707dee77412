// knn: a held-out workload's power and run-time *shape* versus clock is that of its nearest
// training applications in probe space (activity at the probe clock, probe power / P_ref),
// each standardised over the training applications:
//   ln P(f)/P(f0) = sum_j w_j [gP_j(f) - gP_j(f0)],   ln T(f)/T(f0) likewise with gT_j,
//   gP_j(f) = ln P_j(f)/P_j(anchor_j), interpolated linearly in f between j's measured clocks,
//   w_j proportional to 1 / (distance_j + eps) over the k nearest.
// k and the distance (every feature, the activity only, or the probe power only) are chosen at fit
// time by a leave-one-application-out pass over the TRAINING applications only
// (energy MAPE of each training application predicted from its own probe by the others), so a
// held-out workload never influences it. The model file holds the training curves themselves.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "form.hpp"

namespace jouleprof::models::detail {
namespace {

constexpr double kEps = 1e-3;
const std::vector<int> kCandidatesK{1, 2, 3, 4, 6, 8};

struct TrainCurve {
  std::string application;
  std::vector<double> x;  ///< standardised features
  std::vector<double> clocks, gP, gT;
  /// gP/gT at clock f: linear between measured clocks, the end value held beyond them.
  static double at(const std::vector<double>& c, const std::vector<double>& g, double f) {
    if (f <= c.front()) return g.front();
    if (f >= c.back()) return g.back();
    const auto it = std::upper_bound(c.begin(), c.end(), f);
    const auto i = static_cast<std::size_t>(it - c.begin());
    const double t = (f - c[i - 1]) / (c[i] - c[i - 1]);
    return g[i - 1] + t * (g[i] - g[i - 1]);
  }
};

std::vector<double> raw_features(const std::vector<double>& activity, double power_w, double pref) {
  std::vector<double> x = activity;
  x.push_back(power_w / pref);
  return x;
}

class Knn final : public FormImpl {
 public:
  Knn(double pref, std::vector<double> mean, std::vector<double> scale, std::vector<TrainCurve> curves, int k,
      std::vector<double> weight)
      : pref_(pref), mean_(std::move(mean)), scale_(std::move(scale)), curves_(std::move(curves)), k_(k), weight_(std::move(weight)) {}

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
      const double p0 = TrainCurve::at(c.clocks, c.gP, f0), t0 = TrainCurve::at(c.clocks, c.gT, f0);
      for (std::size_t m = 0; m < clocks.size(); ++m) {
        lnP[m] += w * (TrainCurve::at(c.clocks, c.gP, clocks[m]) - p0);
        lnT[m] += w * (TrainCurve::at(c.clocks, c.gT, clocks[m]) - t0);
      }
    }
  }

  void predict(const Probe& probe, const std::vector<double>& clocks, std::vector<double>& power_w,
               std::vector<double>& time_s) const override {
    std::vector<double> lnP, lnT;
    predict_k(standardise(raw_features(probe.activity, probe.power_w, pref_)), probe.clock_mhz, clocks, k_,
              curves_.size(), lnP, lnT);
    power_w.clear();
    time_s.clear();
    for (std::size_t m = 0; m < clocks.size(); ++m) {
      power_w.push_back(probe.power_w * std::exp(lnP[m]));
      time_s.push_back(probe.time_s * std::exp(lnT[m]));
    }
  }

  /// Energy MAPE (%) of every training curve predicted from its anchor by the others with k neighbours.
  double inner_energy_mape(int k, const std::vector<double>& anchors) const {
    double s = 0;
    std::size_t n = 0;
    std::vector<double> lnP, lnT;
    for (std::size_t j = 0; j < curves_.size(); ++j) {
      const TrainCurve& c = curves_[j];
      predict_k(c.x, anchors[j], c.clocks, k, j, lnP, lnT);
      const double e0 = TrainCurve::at(c.clocks, c.gP, anchors[j]) + TrainCurve::at(c.clocks, c.gT, anchors[j]);
      for (std::size_t m = 0; m < c.clocks.size(); ++m) {
        // measured ln E(f)/E(f0) vs predicted
        const double meas = c.gP[m] + c.gT[m] - e0;
        s += std::abs(std::exp(lnP[m] + lnT[m] - meas) - 1);
        ++n;
      }
    }
    return n ? 100 * s / static_cast<double>(n) : 0;
  }
  void set_k(int k) { k_ = k; }
  void set_weight(std::vector<double> w) { weight_ = std::move(w); }
  int k() const { return k_; }

  nlohmann::json params() const override {
    nlohmann::json cs = nlohmann::json::array();
    for (const auto& c : curves_)
      cs.push_back({{"application", c.application}, {"x", c.x}, {"clocks_mhz", c.clocks}, {"ln_power_ratio", c.gP},
                    {"ln_time_ratio", c.gT}});
    return {{"rule", "inverse-distance weighted mean of the k nearest training curves (ln P/P0, ln T/T0)"},
            {"features", "activity at the probe..., probe power / power_ref_w; standardised by feature_mean/feature_scale"},
            {"k", k_}, {"feature_weight", weight_}, {"k_selection", inner_},
            {"power_ref_w", pref_}, {"feature_mean", mean_}, {"feature_scale", scale_}, {"curves", cs}};
  }
  nlohmann::json inner_ = nlohmann::json::array();  ///< the inner cross-validation's energy MAPE per k

 private:
  double pref_;
  std::vector<double> mean_, scale_;
  std::vector<TrainCurve> curves_;
  int k_;
  std::vector<double> weight_;  ///< per feature in the distance: 1 or 0
};

}  // namespace

Result<std::unique_ptr<FormImpl>> fit_knn(const FitContext& c) {
  if (c.sweeps.size() < 3) return make_error(Errc::invalid_argument, "the knn form needs >= 3 training applications");
  double pref = 0;
  for (const auto& s : c.sweeps)
    for (const auto& p : s.points) pref = std::max(pref, p.power_w);
  std::vector<std::vector<double>> raw;
  for (const auto& s : c.sweeps) {
    const AppPoint& a = s.points[s.anchor];
    raw.push_back(raw_features(a.activity, a.power_w, pref));
  }
  const std::size_t nf = raw.front().size();
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
  // Candidate distances: every feature, the activity only, the probe power only.
  std::vector<std::pair<std::string, std::vector<double>>> metrics{{"activity+power", std::vector<double>(nf, 1.0)}};
  if (nf > 1) {
    std::vector<double> act(nf, 1.0), pow(nf, 0.0);
    act.back() = 0;
    pow.back() = 1;
    metrics.emplace_back("activity", act);
    metrics.emplace_back("power", pow);
  }
  auto knn = std::make_unique<Knn>(pref, mean, scale, std::move(curves), 1, metrics.front().second);
  double best = 1e300;
  int best_k = 1;
  std::size_t best_m = 0;
  for (std::size_t mi = 0; mi < metrics.size(); ++mi) {
    knn->set_weight(metrics[mi].second);
    for (int k : kCandidatesK) {
      if (static_cast<std::size_t>(k) >= c.sweeps.size()) break;
      const double e = knn->inner_energy_mape(k, anchors);
      knn->inner_.push_back({{"k", k}, {"distance", metrics[mi].first}, {"energy_mape_pct", e}});
      if (e < best) {
        best = e;
        best_k = k;
        best_m = mi;
      }
    }
  }
  knn->set_k(best_k);
  knn->set_weight(metrics[best_m].second);
  return std::unique_ptr<FormImpl>(std::move(knn));
}

Result<std::unique_ptr<FormImpl>> load_knn(const nlohmann::json& p, const ModelInfo& info) {
  try {
    auto mean = p.at("feature_mean").get<std::vector<double>>();
    auto scale = p.at("feature_scale").get<std::vector<double>>();
    const std::size_t nf = info.activity.size() + 1;
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
    if (curves.empty() || k < 1 || weight.size() != nf) return make_error(Errc::parse, "knn model: no curves, k < 1 or wrong feature_weight");
    return std::unique_ptr<FormImpl>(new Knn(p.at("power_ref_w").get<double>(), std::move(mean), std::move(scale), std::move(curves), k,
                                             std::move(weight)));
  } catch (const std::exception& e) {
    return make_error(Errc::parse, std::string("knn model parameters: ") + e.what());
  }
}

}  // namespace jouleprof::models::detail
