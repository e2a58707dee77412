// What the three attribution methods share: the books that always balance, sample intervals.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>

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

const std::vector<AttributionMethodEntry>& attribution_methods() {
  // The registry: one line per method, in the order their books are reported.
  static const std::vector<AttributionMethodEntry> r = {
      {"interval", "long busy stretches of each class integrated directly", true, make_interval_method},
      {"split", "each power sample split across the kernels busy in its window", true, make_split_method},
      {"regression", "per-class power by least squares", true, make_regression_method},
      {"replay", "each kernel's replayed energy per call, scaled to the run's energy (with --replay)", false, make_replay_method},
  };
  return r;
}

std::unique_ptr<AttributionMethod> make_attribution_method(const std::string& name) {
  for (const AttributionMethodEntry& e : attribution_methods()) {
    if (e.name == name) return e.make();
  }
  return nullptr;
}

std::vector<std::string> attribution_method_names(bool in_situ_only) {
  std::vector<std::string> out;
  for (const AttributionMethodEntry& e : attribution_methods()) {
    if (e.in_situ || !in_situ_only) out.push_back(e.name);
  }
  return out;
}

std::string attribution_method_choices() {
  const auto names = attribution_method_names();
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

namespace {

// Each method once, the ones it uses first (on the input of their own granularity).
const Attribution& run_once(const AttributionMethod& m, const AttributionInput& per_activity, const AttributionInput& per_class,
                            PriorAttributions& done) {
  if (auto it = done.find(m.name()); it != done.end()) return it->second;
  for (const std::string& u : m.uses()) {
    if (done.count(u) != 0) continue;
    auto dep = make_attribution_method(u);
    if (dep) run_once(*dep, per_activity, per_class, done);
  }
  const AttributionInput& in = m.granularity() == Granularity::activity ? per_activity : per_class;
  Attribution a = m.attribute_with(in, done);
  a.granularity = m.granularity();
  bound_by_power_limit(a, in);
  return done.emplace(m.name(), std::move(a)).first->second;
}

}  // namespace

Attribution AttributionMethod::attribute(const AttributionInput& in) const {
  PriorAttributions done;
  for (const std::string& u : uses()) {
    auto dep = make_attribution_method(u);
    if (dep) run_once(*dep, in, in, done);
  }
  Attribution a = attribute_with(in, done);
  a.granularity = granularity();
  return a;
}

std::vector<Attribution> run_attribution_methods(const AttributionInput& per_activity, const AttributionInput& per_class) {
  PriorAttributions done;
  std::vector<Attribution> out;
  for (const AttributionMethodEntry& e : attribution_methods()) {
    const auto m = e.make();
    if (!m->applies(m->granularity() == Granularity::activity ? per_activity : per_class)) continue;
    out.push_back(run_once(*m, per_activity, per_class, done));
  }
  return out;
}

void bound_by_power_limit(Attribution& a, const AttributionInput& in) {
  if (!in.power_limit_w || a.item_j.size() != in.items) return;
  const double cap_w = std::max(0.0, *in.power_limit_w - in.idle_w);
  std::vector<double> busy(in.items, 0.0);
  std::vector<std::size_t> group(in.items, SIZE_MAX);
  for (const BusyInterval& b : in.busy) {
    if (b.item >= in.items) continue;
    busy[b.item] += std::max(0.0, std::min(b.t1_s, in.t1_s) - std::max(b.t0_s, in.t0_s));
    group[b.item] = b.group;
  }
  // Excess per class, and the room its other items have.
  std::map<std::size_t, double> excess, room;
  for (std::size_t i = 0; i < in.items; ++i) {
    const double cap = cap_w * busy[i];
    if (a.item_j[i] > cap) {
      excess[group[i]] += a.item_j[i] - cap;
      a.item_j[i] = cap;
    } else {
      room[group[i]] += cap - a.item_j[i];
    }
  }
  if (excess.empty()) return;
  double moved = 0, left = 0;
  for (std::size_t i = 0; i < in.items; ++i) {
    const auto e = excess.find(group[i]);
    if (e == excess.end()) continue;
    const double cap = cap_w * busy[i], r = room[group[i]];
    if (a.item_j[i] < cap && r > 0) a.item_j[i] += (cap - a.item_j[i]) * std::min(1.0, e->second / r);
  }
  for (const auto& [g, e] : excess) {
    moved += e;
    left += std::max(0.0, e - room[g]);
  }
  a.capped_j = moved;
  detail::close_books(a);
  a.notes.push_back(fmt::format("{:.4g} J above the board's power limit ({:.0f} W, {:.0f} W above idle) moved off the items that had it: "
                                "{:.4g} J to their classes' other items, {:.4g} J unattributed",
                                moved, *in.power_limit_w, cap_w, moved - left, left));
}

}  // namespace jouleprof
