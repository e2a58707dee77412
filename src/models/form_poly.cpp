// poly: log power and log run time relative to the probe, as a polynomial in u = f / f_max whose
// coefficients are linear in the probe's activity and power:
//   ln P(f)/P(f0) = sum_k [bP_k(u) - bP_k(u0)] (w_k . z),   bP = (ln u, u - 1, (u - 1)^2)
//   ln T(f)/T(f0) = sum_k [bT_k(u) - bT_k(u0)] (v_k . z),   bT = (ln u, (ln u)^2, u - 1)
//   z = (1, activity at f0 ..., P(f0) / P_ref)
// Anchoring at the probe's own power and time leaves only the curve's shape to predict, which is
// what the optimizer needs; ln u carries the 1/f run-time law of compute-bound work.
#include <Eigen/Dense>
#include <cmath>

#include "form.hpp"

namespace jouleprof::models::detail {
namespace {

constexpr std::size_t kBasis = 3;

std::array<double, kBasis> basis_power(double u) { return {std::log(u), u - 1, (u - 1) * (u - 1)}; }
std::array<double, kBasis> basis_time(double u) { return {std::log(u), std::log(u) * std::log(u), u - 1}; }

class Poly final : public FormImpl {
 public:
  Poly(double fmax, double pref, std::vector<double> wp, std::vector<double> wt, double ridge, nlohmann::json selection)
      : fmax_(fmax), pref_(pref), wp_(std::move(wp)), wt_(std::move(wt)), ridge_(ridge), selection_(std::move(selection)) {}

  static std::vector<double> z_of(const std::vector<double>& activity, double power_w, double pref) {
    std::vector<double> z{1.0};
    z.insert(z.end(), activity.begin(), activity.end());
    z.push_back(power_w / pref);
    return z;
  }
  template <class B>
  static std::vector<double> row(B basis, double u, double u0, const std::vector<double>& z) {
    const auto b = basis(u), b0 = basis(u0);
    std::vector<double> r;
    r.reserve(kBasis * z.size());
    for (std::size_t k = 0; k < kBasis; ++k)
      for (double zi : z) r.push_back((b[k] - b0[k]) * zi);
    return r;
  }

  void predict(const Probe& probe, const std::vector<double>& clocks, std::vector<double>& power_w,
               std::vector<double>& time_s) const override {
    const auto z = z_of(probe.activity, probe.power_w, pref_);
    const double u0 = probe.clock_mhz / fmax_;
    power_w.clear();
    time_s.clear();
    for (double f : clocks) {
      const double u = f / fmax_;
      power_w.push_back(probe.power_w * std::exp(dot(row(basis_power, u, u0, z), wp_)));
      time_s.push_back(probe.time_s * std::exp(dot(row(basis_time, u, u0, z), wt_)));
    }
  }
  nlohmann::json params() const override {
    return {{"basis_power", "ln u, u-1, (u-1)^2"}, {"basis_time", "ln u, (ln u)^2, u-1"},
            {"z", "1, activity..., probe power / power_ref_w"}, {"power_ref_w", pref_},
            {"power_coefficients", wp_}, {"time_coefficients", wt_}, {"ridge", ridge_}, {"ridge_selection", selection_}};
  }

 private:
  double fmax_, pref_;
  std::vector<double> wp_, wt_;
  double ridge_;
  nlohmann::json selection_;
};

}  // namespace

namespace {

Result<std::unique_ptr<FormImpl>> fit_poly_with(const FitContext& c, double ridge, nlohmann::json selection);

// --ridge 0 (the default): the L2 penalty minimising the energy MAPE of a leave-one-application-out
// pass over the TRAINING applications only (each predicted from its own probe). Linear in the
// number of applications: the normal equations are summed once and each application's share is
// taken out of them for its fold (the power reference is the whole training set's).
Result<double> choose_ridge(const FitContext& c, nlohmann::json& selection) {
  double pref = 0;
  for (const auto& s : c.sweeps)
    for (const auto& p : s.points) pref = std::max(pref, p.power_w);
  const std::size_t A = c.sweeps.size();
  const auto p = static_cast<Eigen::Index>(kBasis * (c.activity.size() + 2));
  std::vector<Eigen::MatrixXd> GP(A, Eigen::MatrixXd::Zero(p, p)), GT(A, Eigen::MatrixXd::Zero(p, p));
  std::vector<Eigen::VectorXd> bP(A, Eigen::VectorXd::Zero(p)), bT(A, Eigen::VectorXd::Zero(p));
  Eigen::MatrixXd SP = Eigen::MatrixXd::Zero(p, p), ST = SP;
  Eigen::VectorXd sP = Eigen::VectorXd::Zero(p), sT = sP;
  for (std::size_t j = 0; j < A; ++j) {
    const AppSweep& s = c.sweeps[j];
    const AppPoint& a = s.points[s.anchor];
    const auto z = Poly::z_of(a.activity, a.power_w, pref);
    const double u0 = a.clock_mhz / c.max_clock_mhz, w = 1.0 / static_cast<double>(s.points.size());
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      if (i == s.anchor) continue;
      const AppPoint& q = s.points[i];
      const double u = q.clock_mhz / c.max_clock_mhz;
      const auto rp = Poly::row(basis_power, u, u0, z), rt = Poly::row(basis_time, u, u0, z);
      const Eigen::Map<const Eigen::VectorXd> xp(rp.data(), p), xt(rt.data(), p);
      GP[j].selfadjointView<Eigen::Lower>().rankUpdate(xp, w);
      GT[j].selfadjointView<Eigen::Lower>().rankUpdate(xt, w);
      bP[j] += w * std::log(q.power_w / a.power_w) * xp;
      bT[j] += w * std::log(q.time_s / a.time_s) * xt;
    }
    GP[j] = GP[j].selfadjointView<Eigen::Lower>();
    GT[j] = GT[j].selfadjointView<Eigen::Lower>();
    SP += GP[j], ST += GT[j], sP += bP[j], sT += bT[j];
  }
  double best = 0, best_err = 1e300;
  for (double ridge : {1e-3, 1e-4, 1e-5, 1e-6, 1e-7}) {
    double err = 0;
    std::size_t n = 0;
    for (std::size_t j = 0; j < A; ++j) {
      auto solve = [&](const Eigen::MatrixXd& S, const Eigen::MatrixXd& G, const Eigen::VectorXd& b) {
        Eigen::MatrixXd M = S - G;
        const double scale = M.diagonal().mean();
        M.diagonal().array() += ridge * (scale > 0 ? scale : 1.0);
        return Eigen::VectorXd(M.ldlt().solve(b));
      };
      const Eigen::VectorXd wp = solve(SP, GP[j], sP - bP[j]), wt = solve(ST, GT[j], sT - bT[j]);
      if (!wp.allFinite() || !wt.allFinite()) return make_error(Errc::invalid_argument, "the least-squares system is singular");
      const Poly m(c.max_clock_mhz, pref, {wp.data(), wp.data() + p}, {wt.data(), wt.data() + p}, ridge, nullptr);
      const AppSweep& s = c.sweeps[j];
      const AppPoint& a = s.points[s.anchor];
      std::vector<double> clocks, P, T;
      for (const auto& q : s.points) clocks.push_back(q.clock_mhz);
      m.predict(Probe{a.clock_mhz, a.activity, a.power_w, a.time_s}, clocks, P, T);
      for (std::size_t i = 0; i < clocks.size(); ++i)
        err += std::abs(P[i] * T[i] / (s.points[i].power_w * s.points[i].time_s) - 1);
      n += clocks.size();
    }
    selection.push_back({{"ridge", ridge}, {"energy_mape_pct", 100 * err / static_cast<double>(n)}});
    if (err < best_err) {
      best_err = err;
      best = ridge;
    }
  }
  return best;
}

}  // namespace

Result<std::unique_ptr<FormImpl>> fit_poly(const FitContext& c) {
  if (c.options.ridge > 0) return fit_poly_with(c, c.options.ridge, nullptr);
  nlohmann::json selection = nlohmann::json::array();
  auto ridge = choose_ridge(c, selection);
  if (!ridge) return ridge.error();
  return fit_poly_with(c, *ridge, std::move(selection));
}

namespace {

Result<std::unique_ptr<FormImpl>> fit_poly_with(const FitContext& c, double ridge, nlohmann::json selection) {
  double pref = 0;
  for (const auto& s : c.sweeps)
    for (const auto& p : s.points) pref = std::max(pref, p.power_w);
  std::vector<std::vector<double>> XP, XT;
  std::vector<double> yP, yT, w;
  for (const auto& s : c.sweeps) {
    const AppPoint& a = s.points[s.anchor];
    const auto z = Poly::z_of(a.activity, a.power_w, pref);
    const double u0 = a.clock_mhz / c.max_clock_mhz;
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      if (i == s.anchor) continue;
      const AppPoint& p = s.points[i];
      const double u = p.clock_mhz / c.max_clock_mhz;
      XP.push_back(Poly::row(basis_power, u, u0, z));
      XT.push_back(Poly::row(basis_time, u, u0, z));
      yP.push_back(std::log(p.power_w / a.power_w));
      yT.push_back(std::log(p.time_s / a.time_s));
      w.push_back(1.0 / static_cast<double>(s.points.size()));  // each application weighs the same
    }
  }
  auto wp = ridge_solve(XP, yP, w, ridge);
  if (!wp) return wp.error();
  auto wt = ridge_solve(XT, yT, w, ridge);
  if (!wt) return wt.error();
  return std::unique_ptr<FormImpl>(new Poly(c.max_clock_mhz, pref, std::move(*wp), std::move(*wt), ridge, std::move(selection)));
}

}  // namespace

Result<std::unique_ptr<FormImpl>> load_poly(const nlohmann::json& p, const ModelInfo& info) {
  try {
    auto wp = p.at("power_coefficients").get<std::vector<double>>();
    auto wt = p.at("time_coefficients").get<std::vector<double>>();
    const std::size_t n = kBasis * (info.activity.size() + 2);
    if (wp.size() != n || wt.size() != n)
      return make_error(Errc::parse, "poly model: " + std::to_string(n) + " coefficients expected per target");
    return std::unique_ptr<FormImpl>(new Poly(info.max_clock_mhz, p.at("power_ref_w").get<double>(), std::move(wp), std::move(wt),
                                              p.value("ridge", 0.0), p.value("ridge_selection", nlohmann::json())));
  } catch (const std::exception& e) {
    return make_error(Errc::parse, std::string("poly model parameters: ") + e.what());
  }
}

}  // namespace jouleprof::models::detail
