// ensemble: a weighted mean, in log space, of the poly and knn forms' predictions:
//   ln P(f) = a ln P_poly(f) + (1 - a) ln P_knn(f), ln T(f) likewise.
// The weight a (0, 0.25, ..., 1) is chosen at fit time by leave-one-application-out over the
// TRAINING applications only: each is predicted from its own probe by poly and knn fitted
// without it, and a minimises the energy MAPE of those predictions. A held-out workload never
// influences a. The poly form captures the trend in activity; knn the shapes the trend misses.
#include <cmath>

#include "form.hpp"

namespace jouleprof::models::detail {
namespace {

const std::vector<double> kWeights{0.0, 0.25, 0.5, 0.75, 1.0};

class Ensemble final : public FormImpl {
 public:
  Ensemble(std::unique_ptr<FormImpl> poly, std::unique_ptr<FormImpl> knn, double a, nlohmann::json selection)
      : poly_(std::move(poly)), knn_(std::move(knn)), a_(a), selection_(std::move(selection)) {}

  static void blend(const FormImpl& poly, const FormImpl& knn, double a, const Probe& probe,
                    const std::vector<double>& clocks, std::vector<double>& power_w, std::vector<double>& time_s) {
    std::vector<double> P1, T1, P2, T2;
    poly.predict(probe, clocks, P1, T1);
    knn.predict(probe, clocks, P2, T2);
    power_w.resize(clocks.size());
    time_s.resize(clocks.size());
    for (std::size_t i = 0; i < clocks.size(); ++i) {
      power_w[i] = std::exp(a * std::log(P1[i]) + (1 - a) * std::log(P2[i]));
      time_s[i] = std::exp(a * std::log(T1[i]) + (1 - a) * std::log(T2[i]));
    }
  }
  void predict(const Probe& probe, const std::vector<double>& clocks, std::vector<double>& power_w,
               std::vector<double>& time_s) const override {
    blend(*poly_, *knn_, a_, probe, clocks, power_w, time_s);
  }
  nlohmann::json params() const override {
    return {{"rule", "exp(a ln poly + (1 - a) ln knn) for power and time"},
            {"poly_weight", a_},
            {"weight_selection", selection_},
            {"poly", poly_->params()},
            {"knn", knn_->params()}};
  }

 private:
  std::unique_ptr<FormImpl> poly_, knn_;
  double a_;
  nlohmann::json selection_;
};

}  // namespace

Result<std::unique_ptr<FormImpl>> fit_ensemble(const FitContext& c) {
  if (c.sweeps.size() < 4) return make_error(Errc::invalid_argument, "the ensemble form needs >= 4 training applications");
  auto poly_all = fit_poly(c);  // chooses its ridge (inner pass) once; the inner fits reuse it
  if (!poly_all) return poly_all.error();
  FitOptions fixed = c.options;
  fixed.ridge = (*poly_all)->params().at("ridge").get<double>();
  // Inner leave-one-application-out: energy absolute percentage errors per candidate weight.
  std::vector<double> err(kWeights.size(), 0.0);
  std::size_t n = 0;
  for (std::size_t j = 0; j < c.sweeps.size(); ++j) {
    std::vector<AppSweep> rest;
    for (std::size_t i = 0; i < c.sweeps.size(); ++i)
      if (i != j) rest.push_back(c.sweeps[i]);
    const FitContext inner{rest, c.activity, c.max_clock_mhz, fixed};
    auto poly = fit_poly(inner);
    if (!poly) return poly.error();
    auto knn = fit_knn(inner);
    if (!knn) return knn.error();
    const AppSweep& s = c.sweeps[j];
    const AppPoint& a = s.points[s.anchor];
    const Probe probe{a.clock_mhz, a.activity, a.power_w, a.time_s};
    std::vector<double> clocks;
    for (const auto& p : s.points) clocks.push_back(p.clock_mhz);
    std::vector<double> P, T;
    for (std::size_t w = 0; w < kWeights.size(); ++w) {
      Ensemble::blend(**poly, **knn, kWeights[w], probe, clocks, P, T);
      for (std::size_t m = 0; m < clocks.size(); ++m)
        err[w] += std::abs(P[m] * T[m] / (s.points[m].power_w * s.points[m].time_s) - 1);
    }
    n += clocks.size();
  }
  std::size_t best = 0;
  nlohmann::json selection = nlohmann::json::array();
  for (std::size_t w = 0; w < kWeights.size(); ++w) {
    selection.push_back({{"poly_weight", kWeights[w]}, {"energy_mape_pct", 100 * err[w] / static_cast<double>(n)}});
    if (err[w] < err[best]) best = w;
  }
  auto knn = fit_knn(c);
  if (!knn) return knn.error();
  return std::unique_ptr<FormImpl>(new Ensemble(std::move(*poly_all), std::move(*knn), kWeights[best], std::move(selection)));
}

Result<std::unique_ptr<FormImpl>> load_ensemble(const nlohmann::json& p, const ModelInfo& info) {
  try {
    auto poly = load_poly(p.at("poly"), info);
    if (!poly) return poly.error();
    auto knn = load_knn(p.at("knn"), info);
    if (!knn) return knn.error();
    const double a = p.at("poly_weight").get<double>();
    if (!(a >= 0 && a <= 1)) return make_error(Errc::parse, "ensemble model: poly_weight must be in [0, 1]");
    return std::unique_ptr<FormImpl>(new Ensemble(std::move(*poly), std::move(*knn), a, p.value("weight_selection", nlohmann::json::array())));
  } catch (const std::exception& e) {
    return make_error(Errc::parse, std::string("ensemble model parameters: ") + e.what());
  }
}

}  // namespace jouleprof::models::detail
