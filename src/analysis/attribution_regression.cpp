// The regression method: sample power (per sample interval) against the busy fraction of each
// class in the window the sample reflects, fitted by non-negative least squares (Lawson-Hanson,
// weighted by interval length) with the idle/static power as intercept, and each class's power
// pulled toward the classes' common power as far as the data cannot separate them. Each class's
// energy is its active power times its busy time; items share their class's energy by busy time. A class
// with under 1% of the busy time (e.g. cuBLAS's memset before each GEMM: always beside the GEMMs,
// never alone) cannot be told apart by the sensor: it is not fitted, and gets the fitted classes'
// mean power.
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

#include "jouleprof/analysis/attribution.hpp"

namespace jouleprof {
namespace {

// min ||A x - b|| subject to x >= 0 (Lawson & Hanson 1974, ch. 23). Small problems only.
Eigen::VectorXd nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, std::vector<bool>& passive) {
  const Eigen::Index m = A.cols();
  Eigen::VectorXd x = Eigen::VectorXd::Zero(m);
  passive.assign(static_cast<std::size_t>(m), false);
  const double tol = 1e-10 * std::max(1.0, A.norm() * b.norm());
  auto solve_passive = [&]() {
    std::vector<Eigen::Index> idx;
    for (Eigen::Index j = 0; j < m; ++j) {
      if (passive[static_cast<std::size_t>(j)]) idx.push_back(j);
    }
    Eigen::MatrixXd Ap(A.rows(), static_cast<Eigen::Index>(idx.size()));
    for (std::size_t k = 0; k < idx.size(); ++k) Ap.col(static_cast<Eigen::Index>(k)) = A.col(idx[k]);
    const Eigen::VectorXd sp = Ap.colPivHouseholderQr().solve(b);
    Eigen::VectorXd s = Eigen::VectorXd::Zero(m);
    for (std::size_t k = 0; k < idx.size(); ++k) s(idx[k]) = sp(static_cast<Eigen::Index>(k));
    return s;
  };
  for (int outer = 0; outer < 3 * m + 10; ++outer) {
    const Eigen::VectorXd w = A.transpose() * (b - A * x);
    Eigen::Index best = -1;
    for (Eigen::Index j = 0; j < m; ++j) {
      if (!passive[static_cast<std::size_t>(j)] && w(j) > tol && (best < 0 || w(j) > w(best))) best = j;
    }
    if (best < 0) break;
    passive[static_cast<std::size_t>(best)] = true;
    for (int inner = 0; inner < 3 * m + 10; ++inner) {
      const Eigen::VectorXd s = solve_passive();
      bool feasible = true;
      double alpha = 1.0;
      for (Eigen::Index j = 0; j < m; ++j) {
        if (passive[static_cast<std::size_t>(j)] && s(j) <= 0) {
          feasible = false;
          const double d = x(j) - s(j);
          if (d > 0) alpha = std::min(alpha, x(j) / d);
        }
      }
      if (feasible) {
        x = s;
        break;
      }
      x += alpha * (s - x);
      for (Eigen::Index j = 0; j < m; ++j) {
        if (passive[static_cast<std::size_t>(j)] && x(j) <= tol) {
          passive[static_cast<std::size_t>(j)] = false;
          x(j) = 0;
        }
      }
    }
  }
  return x;
}

struct PooledFit {
  Eigen::VectorXd coef, se;  ///< column 0 the intercept, then one power per class column
  double common_w = 0;       ///< one power for all classes' busy time
};

// NNLS of b on A (column 0 the intercept) with partial pooling: each class's power has a prior,
// the classes' common power ± spread_w, so where the data separate the classes (their busy
// fractions vary apart) they decide, and where they cannot (classes that always run together)
// the powers stay near the common one instead of at an arbitrary vertex of the solutions
// (solved as NNLS with one extra row per class, λ = noise variance / spread_w²). The errors are
// the posterior's, noise variance × (A'A + λ on the classes)⁻¹, for every column: a class held
// at 0 by the constraint still gets its uncertainty.
PooledFit fit_pooled(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, double spread_w) {
  const Eigen::Index F = A.cols() - 1;
  PooledFit out;
  std::vector<bool> passive;
  const Eigen::VectorXd free_resid = b - A * nnls(A, b, passive);
  // Neighbouring samples' windows overlap (a 40 ms window every 20 ms on the H100), so residuals
  // can be correlated and carry fewer independent values than samples: the variance is inflated
  // by (1 + ρ) / (1 - ρ), ρ their lag-1 autocorrelation (AR(1)).
  double rho = 0;
  if (free_resid.size() > 2 && free_resid.squaredNorm() > 0) {
    rho = free_resid.head(free_resid.size() - 1).dot(free_resid.tail(free_resid.size() - 1)) / free_resid.squaredNorm();
    rho = std::clamp(rho, 0.0, 0.95);
  }
  const auto dof = static_cast<double>(A.rows() - A.cols());
  const double noise_var = dof > 0 ? free_resid.squaredNorm() / dof * (1 + rho) / (1 - rho) : 0;
  if (F > 0) {
    Eigen::MatrixXd pooled(A.rows(), 2);
    pooled.col(0) = A.col(0);
    pooled.col(1) = A.rightCols(F).rowwise().sum();
    out.common_w = nnls(pooled, b, passive)(1);
  }
  const double lambda = noise_var / (spread_w * spread_w);
  Eigen::MatrixXd Ar = Eigen::MatrixXd::Zero(A.rows() + F, F + 1);
  Eigen::VectorXd br(A.rows() + F);
  Ar.topRows(A.rows()) = A;
  br.head(A.rows()) = b;
  for (Eigen::Index c = 0; c < F; ++c) {
    Ar(A.rows() + c, c + 1) = std::sqrt(lambda);
    br(A.rows() + c) = std::sqrt(lambda) * out.common_w;
  }
  out.coef = nnls(Ar, br, passive);
  out.se = Eigen::VectorXd::Zero(F + 1);
  if (dof > 0) {
    Eigen::MatrixXd normal = A.transpose() * A;
    for (Eigen::Index c = 1; c <= F; ++c) normal(c, c) += lambda;
    const Eigen::MatrixXd cov = normal.completeOrthogonalDecomposition().pseudoInverse() * noise_var;
    for (Eigen::Index j = 0; j <= F; ++j) out.se(j) = std::sqrt(std::max(0.0, cov(j, j)));
  }
  return out;
}

class RegressionMethod final : public AttributionMethod {
  /// Prior spread of a class's active power around the classes' common power: kernel classes on
  /// one GPU differ by some hundreds of W (H100: bf16 GEMM ~450 W, a memory-bound copy ~290 W
  /// above idle, docs/validation/trace.md).
  static constexpr double kClassPowerSpreadW = 150;

 public:
  std::string name() const override { return "regression"; }

  Granularity granularity() const override { return Granularity::activity; }
  Attribution attribute_with(const AttributionInput& in, const PriorAttributions&) const override {
    Attribution a;
    a.method = name();
    a.measured_j = in.measured_j;
    a.item_j.assign(in.items, 0.0);
    a.item_uncertainty_j.assign(in.items, 0.0);
    a.groups.assign(in.groups, GroupFit{});
    const auto iv = detail::sample_intervals(in.power, in.t0_s, in.t1_s);
    const std::size_t n = iv.size();
    const std::size_t C = in.groups;
    // Busy time per class as a union (concurrent kernels of one class count once).
    const std::vector<detail::ClassBusy> uni = detail::class_busy(in);
    std::vector<double> item_busy(in.items, 0.0);
    for (const BusyInterval& b : in.busy) {
      if (b.item < in.items) item_busy[b.item] += std::max(0.0, std::min(b.t1_s, in.t1_s) - std::max(b.t0_s, in.t0_s));
    }
    // Classes with enough busy time to fit: column col[c] of X (0: not fitted).
    std::vector<double> class_busy(C, 0.0);
    for (std::size_t c = 0; c < C; ++c) class_busy[c] = uni[c].within(in.t0_s, in.t1_s);
    std::vector<Eigen::Index> col(C, 0);
    Eigen::Index F = 0;
    for (std::size_t c : detail::fittable_classes(in, uni)) col[c] = ++F;
    Eigen::MatrixXd X = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(n), F + 1);
    std::vector<double> window_busy_s(C, 0.0);  // busy time per class as the windows see it
    Eigen::VectorXd y(static_cast<Eigen::Index>(n)), w(static_cast<Eigen::Index>(n));
    for (std::size_t i = 0; i < n; ++i) {
      const double dt = iv[i].second - iv[i].first;
      const double e = detail::energy_between(in.power, iv[i].first, iv[i].second);
      a.timeline_j += e;
      const auto r = static_cast<Eigen::Index>(i);
      y(r) = dt > 0 ? e / dt : 0;
      w(r) = std::sqrt(std::max(dt, 0.0));
      X(r, 0) = 1.0;
      const double ws = iv[i].first - in.sensor.lag_s - in.sensor.window_s, we = iv[i].second - in.sensor.lag_s;
      for (std::size_t c = 0; c < C; ++c) {
        const double busy = uni[c].within(ws, we);
        window_busy_s[c] += busy / (we - ws) * dt;
        if (col[c] > 0) X(r, col[c]) = busy / (we - ws);
      }
    }
    const double T = in.t1_s - in.t0_s;
    if (n < static_cast<std::size_t>(F) + 2) {
      a.notes.push_back("too few power samples (" + std::to_string(n) + ") to fit " + std::to_string(F) + " classes");
      a.idle_j = in.idle_w * T;
      detail::close_books(a);
      return a;
    }
    const Eigen::MatrixXd A = w.asDiagonal() * X;
    const Eigen::VectorXd bw = w.asDiagonal() * y;
    PooledFit fit = fit_pooled(A, bw, kClassPowerSpreadW);
    const double common_w = fit.common_w;
    // Classes the data cannot tell apart (a posterior error above half the prior spread: the
    // prior, not the samples, places them) share one regressor, their summed busy fraction, and
    // so one power; each keeps ± the spread by which two classes' powers may differ.
    std::vector<Eigen::Index> together;
    for (Eigen::Index j = 1; j <= F; ++j) {
      if (fit.se(j) > 0.5 * kClassPowerSpreadW) together.push_back(j);
    }
    std::vector<bool> shared_col(static_cast<std::size_t>(F) + 1, false);
    if (together.size() >= 2) {
      for (Eigen::Index j : together) shared_col[static_cast<std::size_t>(j)] = true;
      const auto merged = static_cast<Eigen::Index>(together.size());
      Eigen::MatrixXd S = Eigen::MatrixXd::Zero(F + 1, F + 2 - merged);
      Eigen::Index next = 0;
      for (Eigen::Index j = 0; j <= F; ++j) {
        if (!shared_col[static_cast<std::size_t>(j)]) S(j, next++) = 1;
      }
      for (Eigen::Index j : together) S(j, next) = 1;
      const PooledFit m = fit_pooled(A * S, bw, kClassPowerSpreadW);
      fit.coef = S * m.coef;
      for (Eigen::Index j = 0, k = 0; j <= F; ++j) {
        fit.se(j) = shared_col[static_cast<std::size_t>(j)] ? std::hypot(m.se(next), kClassPowerSpreadW) : m.se(k++);
      }
    }
    const Eigen::VectorXd& coef = fit.coef;
    const Eigen::VectorXd& se = fit.se;
    const double rss = (bw - A * coef).squaredNorm();
    const double mean = (w.array() * y.array()).sum() / w.array().square().sum();
    const double tss = (w.array() * (y.array() - mean)).square().sum();
    a.r_squared = tss > 0 ? 1 - rss / tss : 0;
    a.intercept_w = coef(0);
    a.idle_j = coef(0) * T;
    std::vector<double> class_j(C, 0.0), class_unc(C, 0.0), class_item_busy(C, 0.0);
    double fitted_j = 0, fitted_busy = 0;
    for (std::size_t c = 0; c < C; ++c) {
      if (col[c] == 0) continue;
      a.groups[c] = {coef(col[c]), se(col[c]), window_busy_s[c], shared_col[static_cast<std::size_t>(col[c])]};
      fitted_j += a.groups[c].active_power_w * window_busy_s[c];
      fitted_busy += window_busy_s[c];
    }
    const double mean_w = fitted_busy > 0 ? fitted_j / fitted_busy : 0;
    std::size_t unfitted = 0;
    for (std::size_t c = 0; c < C; ++c) {
      if (col[c] == 0) {
        a.groups[c] = {mean_w, mean_w, window_busy_s[c], false, false};  // not identifiable: ± its whole value
        unfitted += class_busy[c] > 0 ? 1 : 0;
      }
      class_j[c] = a.groups[c].active_power_w * a.groups[c].busy_s;
      class_unc[c] = a.groups[c].stderr_w * a.groups[c].busy_s;
    }
    if (together.size() >= 2) {
      std::string names;
      for (std::size_t c = 0; c < C; ++c) {
        if (a.groups[c].shared) {
          names += (names.empty() ? "" : ", ") + (c < in.group_names.size() ? in.group_names[c] : "class " + std::to_string(c));
        }
      }
      a.notes.push_back(names + ": the sensor cannot tell these classes apart in this run (their busy time moves together); they share one fitted power, " +
                        std::to_string(static_cast<int>(std::lround(coef(together.front())))) + " W (all classes' common power " +
                        std::to_string(static_cast<int>(std::lround(common_w))) + " W), each ± " +
                        std::to_string(static_cast<int>(kClassPowerSpreadW)) + " W");
    }
    if (unfitted > 0) {
      a.notes.push_back(std::to_string(unfitted) + " class(es) with under 1% of the busy time not fitted: given the fitted classes' mean power");
    }
    std::vector<std::size_t> item_group(in.items, C);
    for (const BusyInterval& b : in.busy) {
      if (b.item < in.items) item_group[b.item] = b.group;
    }
    for (std::size_t i = 0; i < in.items; ++i) {
      if (item_group[i] < C) class_item_busy[item_group[i]] += item_busy[i];
    }
    for (std::size_t i = 0; i < in.items; ++i) {
      const std::size_t c = item_group[i];
      if (c >= C || class_item_busy[c] <= 0) continue;
      const double share = item_busy[i] / class_item_busy[c];
      a.item_j[i] = class_j[c] * share;
      a.item_uncertainty_j[i] = class_unc[c] * share;
    }
    if (std::fabs(coef(0) - in.idle_w) > std::max(10.0, 0.2 * in.idle_w)) {
      a.notes.push_back("fitted static power " + std::to_string(static_cast<int>(std::lround(coef(0)))) + " W differs from the idle baseline " +
                        std::to_string(static_cast<int>(std::lround(in.idle_w))) + " W (a busy GPU's static power is higher than idle)");
    }
    detail::close_books(a);
    return a;
  }
};

}  // namespace

std::unique_ptr<AttributionMethod> make_regression_method() { return std::make_unique<RegressionMethod>(); }

}  // namespace jouleprof
