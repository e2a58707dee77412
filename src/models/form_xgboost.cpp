// xgboost: gradient-boosted regression trees for ln P(f)/P(f0) and ln T(f)/T(f0) from
// (u, ln u, u0, activity at f0 ..., P(f0)/P_ref), u = f / f_max — the poly form's inputs without
// its polynomial shape. Trees fit piecewise-constant curves: predictions step between clocks.
#include <cmath>
#include <memory>

#include "form.hpp"
#include "xgboost_lib.hpp"

namespace jouleprof::models::detail {
namespace {

struct Booster {
  const XgbApi* api = nullptr;
  XgbHandle h = nullptr;
  ~Booster() {
    if (h) api->XGBoosterFree(h);
  }
};
struct Matrix {
  const XgbApi* api = nullptr;
  XgbHandle h = nullptr;
  ~Matrix() {
    if (h) api->XGDMatrixFree(h);
  }
};

std::vector<float> features(double u, double u0, const std::vector<double>& activity, double power_w, double pref) {
  std::vector<float> r{static_cast<float>(u), static_cast<float>(std::log(u)), static_cast<float>(u0)};
  for (double a : activity) r.push_back(static_cast<float>(a));
  r.push_back(static_cast<float>(power_w / pref));
  return r;
}

class Xgb final : public FormImpl {
 public:
  Xgb(const XgbApi* api, double fmax, double pref, std::shared_ptr<Booster> p, std::shared_ptr<Booster> t,
      nlohmann::json pj, nlohmann::json tj)
      : api_(api), fmax_(fmax), pref_(pref), p_(std::move(p)), t_(std::move(t)), pj_(std::move(pj)), tj_(std::move(tj)) {}

  void predict(const Probe& probe, const std::vector<double>& clocks, std::vector<double>& power_w,
               std::vector<double>& time_s) const override {
    power_w.assign(clocks.size(), probe.power_w);
    time_s.assign(clocks.size(), probe.time_s);
    if (clocks.empty()) return;
    std::vector<float> X;
    std::size_t ncol = 0;
    for (double f : clocks) {
      auto r = features(f / fmax_, probe.clock_mhz / fmax_, probe.activity, probe.power_w, pref_);
      ncol = r.size();
      X.insert(X.end(), r.begin(), r.end());
    }
    Matrix m{api_, nullptr};
    if (api_->XGDMatrixCreateFromMat(X.data(), clocks.size(), ncol, NAN, &m.h) != 0) return;
    auto run = [&](const Booster& b, std::vector<double>& out, double base) {
      XgbUlong n = 0;
      const float* res = nullptr;
      if (api_->XGBoosterPredict(b.h, m.h, 0, 0, 0, &n, &res) != 0 || n != clocks.size()) return;
      for (std::size_t i = 0; i < n; ++i) out[i] = base * std::exp(static_cast<double>(res[i]));
    };
    run(*p_, power_w, probe.power_w);
    run(*t_, time_s, probe.time_s);
  }
  nlohmann::json params() const override {
    return {{"features", "u, ln u, u0, activity..., probe power / power_ref_w"}, {"power_ref_w", pref_},
            {"power_booster", pj_}, {"time_booster", tj_}};
  }

 private:
  const XgbApi* api_;
  double fmax_, pref_;
  std::shared_ptr<Booster> p_, t_;
  nlohmann::json pj_, tj_;
};

Result<nlohmann::json> save(const XgbApi& api, const Booster& b) {
  XgbUlong len = 0;
  const char* buf = nullptr;
  if (auto e = xgb_check(api, api.XGBoosterSaveModelToBuffer(b.h, "{\"format\": \"json\"}", &len, &buf), "XGBoosterSaveModelToBuffer"); !e)
    return e.error();
  try {
    return nlohmann::json::parse(std::string(buf, len));
  } catch (const std::exception& e) {
    return make_error(Errc::internal, std::string("xgboost model JSON: ") + e.what());
  }
}

Result<std::shared_ptr<Booster>> load(const XgbApi& api, const nlohmann::json& j) {
  auto b = std::make_shared<Booster>();
  b->api = &api;
  if (auto e = xgb_check(api, api.XGBoosterCreate(nullptr, 0, &b->h), "XGBoosterCreate"); !e) return e.error();
  const std::string text = j.dump();
  if (auto e = xgb_check(api, api.XGBoosterLoadModelFromBuffer(b->h, text.data(), text.size()), "XGBoosterLoadModelFromBuffer"); !e)
    return make_error(Errc::parse, "xgboost model: a booster libxgboost cannot load (" + e.error().message + ")");
  return b;
}

}  // namespace

Result<std::unique_ptr<FormImpl>> fit_xgboost(const FitContext& c) {
  auto apir = xgboost_api();
  if (!apir) return apir.error();
  const XgbApi& api = **apir;
  double pref = 0;
  for (const auto& s : c.sweeps)
    for (const auto& p : s.points) pref = std::max(pref, p.power_w);
  std::vector<float> X, yP, yT, w;
  std::size_t ncol = 0, nrow = 0;
  for (const auto& s : c.sweeps) {
    const AppPoint& a = s.points[s.anchor];
    for (const auto& p : s.points) {
      auto r = features(p.clock_mhz / c.max_clock_mhz, a.clock_mhz / c.max_clock_mhz, a.activity, a.power_w, pref);
      ncol = r.size();
      X.insert(X.end(), r.begin(), r.end());
      yP.push_back(static_cast<float>(std::log(p.power_w / a.power_w)));
      yT.push_back(static_cast<float>(std::log(p.time_s / a.time_s)));
      w.push_back(static_cast<float>(1.0 / static_cast<double>(s.points.size())));
      ++nrow;
    }
  }
  if (nrow < 10) return make_error(Errc::invalid_argument, "too few points to fit the xgboost form: " + std::to_string(nrow));
  auto train = [&](const std::vector<float>& y) -> Result<std::shared_ptr<Booster>> {
    Matrix m{&api, nullptr};
    if (auto e = xgb_check(api, api.XGDMatrixCreateFromMat(X.data(), nrow, ncol, NAN, &m.h), "XGDMatrixCreateFromMat"); !e)
      return e.error();
    if (auto e = xgb_check(api, api.XGDMatrixSetFloatInfo(m.h, "label", y.data(), nrow), "XGDMatrixSetFloatInfo"); !e)
      return e.error();
    if (auto e = xgb_check(api, api.XGDMatrixSetFloatInfo(m.h, "weight", w.data(), nrow), "XGDMatrixSetFloatInfo"); !e)
      return e.error();
    auto b = std::make_shared<Booster>();
    b->api = &api;
    if (auto e = xgb_check(api, api.XGBoosterCreate(&m.h, 1, &b->h), "XGBoosterCreate"); !e) return e.error();
    const std::string depth = std::to_string(c.options.xgb_depth), eta = std::to_string(c.options.xgb_eta);
    const std::pair<const char*, const char*> params[] = {
        {"objective", "reg:squarederror"}, {"max_depth", depth.c_str()}, {"eta", eta.c_str()}, {"subsample", "1"},
        {"base_score", "0"}, {"nthread", "1"}, {"seed", "1"}, {"verbosity", "0"}};
    for (const auto& [k, v] : params)
      if (auto e = xgb_check(api, api.XGBoosterSetParam(b->h, k, v), "XGBoosterSetParam"); !e) return e.error();
    for (int it = 0; it < c.options.xgb_rounds; ++it)
      if (auto e = xgb_check(api, api.XGBoosterUpdateOneIter(b->h, it, m.h), "XGBoosterUpdateOneIter"); !e) return e.error();
    return b;
  };
  auto bp = train(yP);
  if (!bp) return bp.error();
  auto bt = train(yT);
  if (!bt) return bt.error();
  auto pj = save(api, **bp);
  if (!pj) return pj.error();
  auto tj = save(api, **bt);
  if (!tj) return tj.error();
  return std::unique_ptr<FormImpl>(new Xgb(&api, c.max_clock_mhz, pref, *bp, *bt, std::move(*pj), std::move(*tj)));
}

Result<std::unique_ptr<FormImpl>> load_xgboost(const nlohmann::json& p, const ModelInfo& info) {
  auto apir = xgboost_api();
  if (!apir) return apir.error();
  try {
    auto bp = load(**apir, p.at("power_booster"));
    if (!bp) return bp.error();
    auto bt = load(**apir, p.at("time_booster"));
    if (!bt) return bt.error();
    return std::unique_ptr<FormImpl>(new Xgb(*apir, info.max_clock_mhz, p.at("power_ref_w").get<double>(), *bp, *bt,
                                             p.at("power_booster"), p.at("time_booster")));
  } catch (const std::exception& e) {
    return make_error(Errc::parse, std::string("xgboost model parameters: ") + e.what());
  }
}

}  // namespace jouleprof::models::detail
