// What the three attribution methods share: the books that always balance, sample intervals.
#include <algorithm>
#include <cmath>

#include "jouleprof/analysis/attribution.hpp"
#include "jouleprof/core/integrate.hpp"

namespace jouleprof {

namespace detail {

void close_books(Attribution& a) {
  double sum = 0;
  for (double e : a.item_j) sum += e;
  a.attributed_j = sum;
  a.unattributed_j = a.measured_j - a.attributed_j - a.idle_j;
  // A difference of rounding size (the books balanced exactly) is 0 J, not -3e-14 J.
  if (std::abs(a.unattributed_j) <= 1e-12 * std::max({std::abs(a.measured_j), std::abs(a.attributed_j), std::abs(a.idle_j)})) {
    a.unattributed_j = 0;
  }
}

double energy_between(const std::vector<Sample>& p, double a, double b) {
  if (b <= a || p.empty()) return 0;
  return integrate_trapezoid(p, a, b).energy_j;
}

std::vector<std::pair<double, double>> sample_intervals(const std::vector<Sample>& p, double t0, double t1) {
  std::vector<std::pair<double, double>> out;
  if (t1 <= t0) return out;
  double a = t0;
  auto it = std::upper_bound(p.begin(), p.end(), t0, [](double t, const Sample& s) { return t < s.t_s; });
  for (; it != p.end() && it->t_s < t1; ++it) {
    if (it->t_s > a) out.emplace_back(a, it->t_s);
    a = it->t_s;
  }
  out.emplace_back(a, t1);
  return out;
}

}  // namespace detail

std::unique_ptr<AttributionMethod> make_attribution_method(const std::string& name) {
  if (name == "interval") return make_interval_method();
  if (name == "split") return make_split_method();
  if (name == "regression") return make_regression_method();
  return nullptr;
}

std::vector<std::string> attribution_method_names() { return {"interval", "split", "regression"}; }

}  // namespace jouleprof
