#include <Eigen/Dense>
#include <cmath>

#include "form.hpp"

namespace jouleprof::models::detail {

Result<std::vector<double>> ridge_solve(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                                        const std::vector<double>& w, double ridge) {
  const Eigen::Index n = static_cast<Eigen::Index>(X.size());
  if (n == 0) return make_error(Errc::invalid_argument, "too few points to fit: no rows");
  const Eigen::Index p = static_cast<Eigen::Index>(X.front().size());
  if (n < p)
    return make_error(Errc::invalid_argument, "too few points to fit: " + std::to_string(n) + " rows for " +
                                                  std::to_string(p) + " parameters");
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(p, p);
  Eigen::VectorXd b = Eigen::VectorXd::Zero(p);
  Eigen::VectorXd row(p);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& x = X[static_cast<std::size_t>(i)];
    for (Eigen::Index j = 0; j < p; ++j) row(j) = x[static_cast<std::size_t>(j)];
    const double wi = w.empty() ? 1.0 : w[static_cast<std::size_t>(i)];
    A.selfadjointView<Eigen::Lower>().rankUpdate(row, wi);
    b += wi * y[static_cast<std::size_t>(i)] * row;
  }
  A = A.selfadjointView<Eigen::Lower>();
  if (ridge <= 0) {
    // Without a penalty a rank-deficient system is an error (collinear features).
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(A);
    qr.setThreshold(1e-10);
    if (qr.rank() < p)
      return make_error(Errc::invalid_argument, "collinear features: the least-squares system has rank " +
                                                    std::to_string(qr.rank()) + " of " + std::to_string(p));
    const Eigen::VectorXd s = qr.solve(b);
    return std::vector<double>(s.data(), s.data() + p);
  }
  const double scale = A.diagonal().mean();
  A.diagonal().array() += ridge * (scale > 0 ? scale : 1.0);
  const Eigen::VectorXd s = A.ldlt().solve(b);
  if (!s.allFinite()) return make_error(Errc::invalid_argument, "the least-squares system is singular");
  return std::vector<double>(s.data(), s.data() + p);
}

}  // namespace jouleprof::models::detail
