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

double ClassBusy::within(double a, double b) const {
  if (b <= a || spans.empty()) return 0;
  // Busy time before t: the spans that start before it, the last one cut at t.
  auto upto = [&](double t) {
    const auto k = static_cast<std::size_t>(
        std::upper_bound(spans.begin(), spans.end(), t, [](double x, const auto& s) { return x < s.first; }) - spans.begin());
    if (k == 0) return 0.0;
    return before[k - 1] + std::min(t, spans[k - 1].second) - spans[k - 1].first;
  };
  return upto(b) - upto(a);
}

namespace {

ClassBusy union_of(std::vector<std::pair<double, double>> u) {
  ClassBusy out;
  std::sort(u.begin(), u.end());
  auto& m = out.spans;
  for (const auto& x : u) {
    if (!m.empty() && x.first <= m.back().second) {
      m.back().second = std::max(m.back().second, x.second);
    } else {
      m.push_back(x);
    }
  }
  double sum = 0;
  out.before.reserve(m.size());
  for (const auto& x : m) {
    out.before.push_back(sum);
    sum += x.second - x.first;
  }
  return out;
}

}  // namespace

std::vector<ClassBusy> class_busy(const AttributionInput& in) {
  std::vector<std::vector<std::pair<double, double>>> raw(in.groups);
  for (const BusyInterval& b : in.busy) {
    if (b.group < in.groups && b.t1_s > b.t0_s) raw[b.group].emplace_back(b.t0_s, b.t1_s);
  }
  std::vector<ClassBusy> out;
  out.reserve(in.groups);
  for (auto& u : raw) out.push_back(union_of(std::move(u)));
  return out;
}

ClassBusy all_busy(const AttributionInput& in) {
  std::vector<std::pair<double, double>> raw;
  raw.reserve(in.busy.size());
  for (const BusyInterval& b : in.busy) {
    if (b.item < in.items && b.t1_s > b.t0_s) raw.emplace_back(b.t0_s, b.t1_s);
  }
  return union_of(std::move(raw));
}

std::vector<std::size_t> fittable_classes(const AttributionInput& in, const std::vector<ClassBusy>& busy) {
  constexpr double kMinBusyShare = 0.01;
  double all = 0;
  for (const ClassBusy& b : busy) all += b.within(in.t0_s, in.t1_s);
  std::vector<std::size_t> out;
  for (std::size_t c = 0; c < busy.size(); ++c) {
    const double x = busy[c].within(in.t0_s, in.t1_s);
    if (x > 0 && x >= kMinBusyShare * all) out.push_back(c);
  }
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
