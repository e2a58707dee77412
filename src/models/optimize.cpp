#include "jouleprof/models/optimize.hpp"

#include <algorithm>
#include <cmath>

#include "jouleprof/core/parse.hpp"

namespace jouleprof::models {

std::string Objective::name() const {
  switch (kind) {
    case ObjectiveKind::energy: return "energy";
    case ObjectiveKind::edp: return "edp";
    case ObjectiveKind::ed2p: return "ed2p";
    case ObjectiveKind::slowdown: {
      char buf[48];
      std::snprintf(buf, sizeof buf, "slowdown:%g", slowdown_pct);
      return buf;
    }
  }
  return "?";
}

Result<Objective> parse_objective(const std::string& s) {
  Objective o;
  if (s == "energy") return o;
  if (s == "edp") {
    o.kind = ObjectiveKind::edp;
    return o;
  }
  if (s == "ed2p") {
    o.kind = ObjectiveKind::ed2p;
    return o;
  }
  if (s.rfind("slowdown:", 0) == 0) {
    o.kind = ObjectiveKind::slowdown;
    if (!parse_finite_double(s.substr(9), o.slowdown_pct) || o.slowdown_pct < 0)
      return make_error(Errc::invalid_argument, "--objective slowdown:PCT needs a percentage ≥ 0, got '" + s.substr(9) + "'");
    return o;
  }
  return make_error(Errc::invalid_argument, "unknown objective '" + s + "' (energy, edp, ed2p or slowdown:PCT)");
}

namespace {

double score(const Objective& o, double e, double t) {
  switch (o.kind) {
    case ObjectiveKind::edp: return e * t;
    case ObjectiveKind::ed2p: return e * t * t;
    default: return e;
  }
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// One-sided 95% and two-sided 95% normal quantiles.
constexpr double kZ95Upper = 1.645, kZ95 = 1.96;

// The spread of ln(objective) at a point: energy's, plus time's once per power of T.
double sigma_of(const Objective& o, const CurvePoint& p) {
  switch (o.kind) {
    case ObjectiveKind::edp: return p.sigma_log_energy + p.sigma_log_time;
    case ObjectiveKind::ed2p: return p.sigma_log_energy + 2 * p.sigma_log_time;
    default: return p.sigma_log_energy;
  }
}

// The index minimising the objective over non-outlier points; `measured` picks measured values.
// On predictions with a known spread the EXPECTED objective is minimised (log-normal: x exp(s^2/2)),
// and a clock whose energy's upper 95% bound exceeds the reference's (the highest clock) predicted
// energy is not a candidate: a choice may cost more than promised, never more than not choosing.
std::optional<std::size_t> best(const Curve& c, const Objective& o, bool measured, std::size_t ref) {
  auto E = [&](const CurvePoint& p) { return measured ? *p.energy_j() : p.pred_energy_j(); };
  auto T = [&](const CurvePoint& p) {
    return measured ? *p.time_s : p.pred_time_s * std::exp(0.5 * p.sigma_log_time * p.sigma_log_time);
  };
  const double tmax = (measured ? *c.points[ref].time_s : c.points[ref].pred_time_s) * (1 + o.slowdown_pct / 100);
  const double eref = E(c.points[ref]);
  std::optional<std::size_t> b;
  double bs = 0;
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    const auto& p = c.points[i];
    if (p.outlier || (measured && !p.energy_j())) continue;
    if (o.kind == ObjectiveKind::slowdown && T(p) > tmax * (1 + 1e-12)) continue;
    double s = score(o, E(p), measured ? *p.time_s : p.pred_time_s);
    if (!measured) {
      const double sg = sigma_of(o, p);
      s *= std::exp(0.5 * sg * sg);
      if (i != ref && E(p) * std::exp(kZ95Upper * p.sigma_log_energy) > eref * (1 + 1e-12)) continue;
    }
    if (!b || s < bs) {
      b = i;
      bs = s;
    }
  }
  return b;
}

}  // namespace

Interval savings_interval(const std::vector<double>& a, const std::vector<double>& b) {
  Interval r;
  const double ma = mean(a), mb = mean(b);
  r.value = r.low = r.high = 100 * (1 - ma / mb);
  if (a.size() < 2 || b.size() < 2) return r;
  auto var = [](const std::vector<double>& v, double m) {
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return s / static_cast<double>(v.size() - 1);
  };
  const double ratio = ma / mb;
  const double rel2 = var(a, ma) / static_cast<double>(a.size()) / (ma * ma) + var(b, mb) / static_cast<double>(b.size()) / (mb * mb);
  const double half = 100 * 1.96 * ratio * std::sqrt(rel2);
  r.low = r.value - half;
  r.high = r.value + half;
  return r;
}

std::vector<Choice> optimize(const std::vector<Curve>& curves, const Objective& obj) {
  std::vector<Choice> out;
  for (const auto& c : curves) {
    std::optional<std::size_t> ref;
    for (std::size_t i = 0; i < c.points.size(); ++i)
      if (!c.points[i].outlier) ref = i;
    if (!ref) continue;
    Choice ch;
    ch.application = c.application;
    ch.objective = obj;
    const auto pick = best(c, obj, false, *ref);
    if (!pick) continue;
    const CurvePoint& p = c.points[*pick];
    const CurvePoint& r = c.points[*ref];
    ch.chosen_clock_mhz = p.clock_mhz;
    ch.chosen_power_limit_w = p.power_limit_w;
    ch.reference_power_limit_w = r.power_limit_w;
    ch.predicted_power_w = p.pred_power_w;
    ch.predicted_time_s = p.pred_time_s;
    ch.predicted_energy_j = p.pred_energy_j();
    ch.reference_clock_mhz = r.clock_mhz;
    ch.predicted_savings_pct = 100 * (1 - p.pred_energy_j() / r.pred_energy_j());
    ch.predicted_slowdown_pct = 100 * (p.pred_time_s / r.pred_time_s - 1);
    ch.outside_training = c.outside_training;
    if (p.sigma_log_energy > 0) {
      const double ratio = p.pred_energy_j() / r.pred_energy_j();
      ch.predicted_savings_interval = Interval{ch.predicted_savings_pct, 100 * (1 - ratio * std::exp(kZ95 * p.sigma_log_energy)),
                                               100 * (1 - ratio * std::exp(-kZ95 * p.sigma_log_energy))};
    }
    if (p.energy_j() && r.energy_j()) {
      ch.measured_energy_at_chosen_j = p.energy_j();
      ch.measured_time_at_chosen_s = p.time_s;
      ch.measured_slowdown_pct = 100 * (*p.time_s / *r.time_s - 1);
      ch.measured_savings_pct = savings_interval(p.repeat_energy_j, r.repeat_energy_j);
      const auto measured = std::count_if(c.points.begin(), c.points.end(), [](const CurvePoint& q) { return !q.outlier && q.energy_j(); });
      const auto opt = static_cast<std::size_t>(measured) >= kMinMeasuredCurve ? best(c, obj, true, *ref) : std::nullopt;
      if (opt) {
        const CurvePoint& o = c.points[*opt];
        ch.optimum_clock_mhz = o.clock_mhz;
        ch.optimum_power_limit_w = o.power_limit_w;
        ch.optimum_energy_j = o.energy_j();
        ch.energy_excess_pct = 100 * (*p.energy_j() / *o.energy_j() - 1);
        ch.objective_excess_pct = 100 * (score(obj, *p.energy_j(), *p.time_s) / score(obj, *o.energy_j(), *o.time_s) - 1);
      }
    }
    out.push_back(ch);
  }
  return out;
}

Result<std::vector<Curve>> power_limit_curves(const std::vector<Curve>& curves, const std::vector<double>& limits_w) {
  if (limits_w.empty()) return make_error(Errc::invalid_argument, "--power-limits needs at least one limit");
  for (double l : limits_w)
    if (!(l > 0)) return make_error(Errc::invalid_argument, "--power-limits must be > 0 W");
  std::vector<double> sorted = limits_w;
  std::sort(sorted.begin(), sorted.end());
  std::vector<Curve> out;
  for (const auto& c : curves) {
    Curve lc;
    lc.application = c.application;
    lc.probe_clocks_mhz = c.probe_clocks_mhz;
    lc.outside_training = c.outside_training;
    std::vector<const CurvePoint*> pts;
    for (const auto& p : c.points)
      if (!p.outlier && !p.power_limit_w) pts.push_back(&p);
    if (pts.empty()) continue;
    for (double l : sorted) {
      // Under a limit the GPU lowers its clock until the load fits: the highest clock whose
      // predicted power is within it. A limit below the lowest clock's power is not predicted.
      // With a known spread, the clock whose power's upper 95% bound fits: a limit the load
      // might exceed would throttle it below the predicted clock.
      const CurvePoint* settled = nullptr;
      for (const auto* p : pts)
        if (p->pred_power_w * std::exp(kZ95Upper * p->sigma_log_power) <= l) settled = p;
      if (settled == nullptr) continue;
      CurvePoint q;
      q.clock_mhz = settled->clock_mhz;
      q.power_limit_w = l;
      q.pred_power_w = settled->pred_power_w;
      q.pred_time_s = settled->pred_time_s;
      q.sigma_log_energy = settled->sigma_log_energy;
      q.sigma_log_time = settled->sigma_log_time;
      q.sigma_log_power = settled->sigma_log_power;
      lc.points.push_back(q);
    }
    // The reference: the highest clock at the GPU's default limit, with its measurement if any.
    lc.points.push_back(*pts.back());
    out.push_back(std::move(lc));
  }
  return out;
}

std::vector<ParetoPoint> pareto_front(const Curve& c, bool measured) {
  std::vector<ParetoPoint> pts;
  for (const auto& p : c.points) {
    if (p.outlier || (measured && !p.energy_j())) continue;
    pts.push_back(ParetoPoint{p.clock_mhz, measured ? *p.energy_j() : p.pred_energy_j(), measured ? *p.time_s : p.pred_time_s,
                              p.power_limit_w, p.quality});
  }
  std::vector<ParetoPoint> front;
  for (const auto& a : pts) {
    bool dominated = false;
    for (const auto& b : pts) {
      const double qa = a.quality.value_or(0), qb = b.quality.value_or(0);
      const bool no_worse = b.energy_j <= a.energy_j && b.time_s <= a.time_s && qb >= qa;
      const bool better = b.energy_j < a.energy_j || b.time_s < a.time_s || qb > qa;
      if (no_worse && better) {
        dominated = true;
        break;
      }
    }
    if (!dominated) front.push_back(a);
  }
  return front;
}

}  // namespace jouleprof::models
