#include "jouleprof/analysis/energy.hpp"

#include <cmath>
#include <fmt/format.h>
#include <iterator>
#include <map>
#include <optional>
#include <string_view>

#include "jouleprof/core/units.hpp"
#include "jouleprof/core/integrate.hpp"

namespace jouleprof {
namespace {

// Signed timeline energy from a to b (negative when b < a).
double signed_integral(const std::vector<Sample>& p, double a, double b) {
  if (a == b) return 0;
  return a < b ? integrate_trapezoid(p, a, b).energy_j : -integrate_trapezoid(p, b, a).energy_j;
}

const Sample* nearest(const std::vector<Sample>& s, double t) {
  const Sample* best = nullptr;
  for (const Sample& x : s) {
    if (best == nullptr || std::fabs(x.t_s - t) < std::fabs(best->t_s - t)) best = &x;
  }
  return best;
}

// The counter's bound from the timeline cross-check: |timeline − counter| + the timeline's edge
// term, when the driver's sample buffer covers the window without gaps (a gap longer than
// kMaxGap would hide power the trapezoid cannot see).
std::optional<double> cross_check_bound(const GpuWindowData& d, const GpuEnergy& e, double t0, double t1) {
  constexpr double kMaxGap = 0.1;
  if (!e.counter_j || !e.timeline_j || d.power_source != "timeline" || d.power.size() < 2) return std::nullopt;
  const Integral in = integrate_trapezoid(d.power, t0, t1);
  if (!in.covered || in.max_gap_s > kMaxGap || in.samples_inside < 2) return std::nullopt;
  // Plus the counter's resolution: two reads of whole millijoules.
  return std::fabs(*e.timeline_j - *e.counter_j) + e.timeline_uncertainty_j + 0.002;
}

// One-sided 95% lower quantile of chi-square with k degrees of freedom (k >= 2): a table to
// 10, Wilson–Hilferty beyond (within 1% there).
double chi2_lower95(std::size_t k) {
  static const double table[] = {0, 0.00393, 0.1026, 0.3518, 0.7107, 1.1455, 1.6354, 2.1673, 2.7326, 3.3251, 3.9403};
  if (k < std::size(table)) return table[k];
  const double kk = static_cast<double>(k), a = 2.0 / (9.0 * kk);
  return kk * std::pow(1 - a - 1.6449 * std::sqrt(a), 3);
}

}  // namespace

void apply_counter_update_period(Measurement& m, double period_s) {
  for (WindowResult& w : m.windows) {
    const double dur = w.duration_s();
    for (GpuEnergy& g : w.gpus) {
      if (g.method != "counter" || !g.counter_j || !(dur > 0)) continue;
      const double stale = std::max(*g.counter_j / dur, 0.0) * period_s;
      const std::string basis = g.uncertainty_basis;
      if (basis == "staleness" || stale < g.uncertainty_j) {
        g.uncertainty_j = stale;
        g.uncertainty_basis = "staleness";
      }
    }
  }
}

double repeats_staleness_bound(double stdev, std::size_t n) {
  if (n < 3 || !(stdev >= 0)) return INFINITY;
  const double s_upper = stdev * std::sqrt(static_cast<double>(n - 1) / chi2_lower95(n - 1));
  return std::sqrt(6.0) * s_upper;
}

GpuEnergy window_energy(const GpuWindowData& d, double t0, double t1, const EnergyOptions& opt) {
  GpuEnergy e;
  const double dur = t1 - t0;
  if (!d.power.empty()) {
    const Integral in = integrate_trapezoid(d.power, t0, t1);
    e.timeline_j = in.energy_j;
    e.timeline_uncertainty_j = in.edge_uncertainty_j;
    e.timeline_samples = in.samples_inside;
  }
  // Counter: the reads nearest the edges, corrected to the exact edges with the timeline.
  const Sample* r0 = nearest(d.counter, t0);
  const Sample* r1 = nearest(d.counter, t1);
  if (r0 == nullptr || r1 == nullptr || r0 == r1) {
    e.counter_note = "no energy-counter reads at both window edges";
  } else if (std::fabs(r0->t_s - t0) > opt.counter_edge_tolerance_s ||
             std::fabs(r1->t_s - t1) > opt.counter_edge_tolerance_s) {
    e.counter_note = "energy-counter reads too far from the window edges";
  } else if (r1->value < r0->value) {
    e.counter_note = "energy counter went backwards (reset)";
  } else if (dur < opt.counter_update_s) {
    // The counter holds the energy up to its last update, not up to the read: across a window
    // shorter than one update it either did not change (the edge corrections alone are left,
    // a few hundredths of a joule of either sign) or changed by a whole period's energy.
    // Neither is this window's energy, so there is no counter figure.
    e.counter_note = fmt::format("window ({:.0f} ms) shorter than the energy counter's {:.0f} ms update period", dur * 1e3,
                                 opt.counter_update_s * 1e3);
  } else {
    double c = r1->value - r0->value;
    if (!d.power.empty()) c += signed_integral(d.power, t0, r0->t_s) + signed_integral(d.power, r1->t_s, t1);
    e.counter_j = c;
  }
  // Short window: the sensor's response to it extends past its end. When nothing else happens
  // around it, the level before it plus the whole excess response is its energy.
  if (!d.power.empty() && dur < opt.response_max_window_s && d.power_source == "timeline") {
    std::vector<double> before;
    for (const Sample& s : d.power) {
      if (s.t_s >= t0 - opt.response_lead_s && s.t_s < t0) before.push_back(s.value);
    }
    const bool have_tail = d.power.back().t_s >= t1 + opt.response_tail_s;
    if (!d.isolated) {
      e.note = "short window next to other windows: sensor lag not corrected";
    } else if (before.size() < 2 || !have_tail) {
      e.note = "short window without samples around it: sensor lag not corrected";
    } else {
      double base = 0, var = 0;
      for (double v : before) base += v;
      base /= static_cast<double>(before.size());
      for (double v : before) var += (v - base) * (v - base);
      const double sd = std::sqrt(var / static_cast<double>(before.size() - 1));
      // Start two sample intervals early: a sample straddling t0 spreads its excess over both
      // sides of it in the trapezoid, and before an isolated window the excess is only noise.
      const double from = t0 - std::min(opt.response_lead_s, 0.04);
      const double span = t1 + opt.response_tail_s - from;
      const double excess = integrate_trapezoid(d.power, from, t1 + opt.response_tail_s).energy_j - base * span;
      e.response_j = base * dur + excess;
      // Baseline noise over the integrated span, plus 5% of the excess for the response shape.
      e.response_uncertainty_j = 2 * sd * span + 0.05 * std::fabs(excess);
    }
  }
  if (e.counter_j && e.timeline_j && *e.counter_j > 0 && dur >= opt.counter_min_window_s) {
    e.disagreement = (*e.timeline_j - *e.counter_j) / *e.counter_j;
  }
  if (e.counter_j && dur >= opt.counter_min_window_s) {
    e.energy_j = *e.counter_j;
    e.method = "counter";
    // The counter reflects energy up to its last update: up to one update period stale at
    // each edge; the staleness differs between edges by at most one period. Where the sample
    // timeline covers the window densely, it is an independent figure: the counter is within
    // their disagreement plus the timeline's own edge term of the truth, usually far less.
    e.uncertainty_j = std::max(*e.counter_j / dur, 0.0) * opt.counter_update_s;
    e.uncertainty_basis = "staleness";
    if (const auto cross = cross_check_bound(d, e, t0, t1); cross && *cross < e.uncertainty_j) {
      e.uncertainty_j = *cross;
      e.uncertainty_basis = "timeline cross-check";
    }
  } else if (e.response_j) {
    e.energy_j = *e.response_j;
    e.method = "timeline(response)";
    e.uncertainty_j = e.response_uncertainty_j;
    e.note = "short isolated window: level before it × duration + excess sensor response over " +
             fmt::format("{:.0f} ms after it", opt.response_tail_s * 1e3);
  } else if (e.timeline_j) {
    e.energy_j = *e.timeline_j;
    e.method = d.power_source;
    e.uncertainty_j = e.timeline_uncertainty_j;
    // The sensor lags by about one sample interval (measured on H100: ~17 ms), so a short
    // window's edges are uncertain by a whole interval, not half of one.
    if (dur < opt.response_max_window_s) e.uncertainty_j *= 2;
    if (e.counter_j && e.counter_note.empty()) {
      e.counter_note = fmt::format("window ({:.3f} s) shorter than {:.1f} s: counter too coarse", dur,
                                   opt.counter_min_window_s);
    }
  } else if (e.counter_j) {
    e.energy_j = *e.counter_j;
    e.method = "counter";
    e.uncertainty_j = dur > 0 ? std::max(*e.counter_j / dur, 0.0) * opt.counter_update_s : 0;
    e.uncertainty_basis = "staleness";
  } else {
    e.method = "none";
  }
  // Energy is never negative: a negative estimate (a window far shorter than the sensor
  // resolves, e.g. a response-model excess below noise) is 0 within its uncertainty.
  if (e.energy_j < 0) {
    e.uncertainty_j = std::max(e.uncertainty_j, -e.energy_j);
    e.note += std::string(e.note.empty() ? "" : "; ") + fmt::format("estimate {:.3g} J clamped to 0 (below resolution)", e.energy_j);
    e.energy_j = 0;
  }
  e.mean_power_w = dur > 0 ? e.energy_j / dur : 0;
  if (d.idle_power_w) {
    e.idle_power_w = d.idle_power_w;
    e.above_idle_j = e.energy_j - *d.idle_power_w * dur;
  }
  return e;
}

void summarize_repeats(Measurement& m, double ci_warn_relative) {
  std::map<std::string, std::vector<double>> values;
  std::vector<std::string> order;
  auto add = [&](const std::string& k, double v) {
    if (!values.count(k)) order.push_back(k);
    values[k].push_back(v);
  };
  for (const RunInfo& r : m.runs) {
    if (r.warmup || !r.complete || r.window < 0) continue;
    const WindowResult& w = m.windows[static_cast<std::size_t>(r.window)];
    add("gpu_energy_j", w.gpu_energy_j);
    if (w.gpu_above_idle_j) add("gpu_above_idle_j", *w.gpu_above_idle_j);
    add("duration_s", w.duration_s());
    for (const CpuEnergy& c : w.cpu) add("cpu:" + c.domain + ":energy_j", c.energy_j);
    if (w.meter_j) add("meter_energy_j", *w.meter_j);
    for (const WindowResult& p : m.windows) {
      if (p.run != r.index || p.kind != "phase" || !p.complete) continue;
      add("phase:" + p.name + ":gpu_energy_j", p.gpu_energy_j);
      add("phase:" + p.name + ":duration_s", p.duration_s());
      for (const auto& [k, v] : p.counts) {
        if (v > 0) add("phase:" + p.name + ":gpu_energy_per_" + per_unit_name(k) + "_j", p.gpu_energy_j / v);
      }
    }
    for (const auto& [k, v] : w.counts) {
      if (v > 0) add("gpu_energy_per_" + per_unit_name(k) + "_j", w.gpu_energy_j / v);
    }
  }
  m.stats.clear();
  // The repeats bound the counter's staleness: it is random from repeat to repeat (where the
  // window edges fall between counter updates), so its spread is inside the repeats' spread.
  // A repeat's counter bound is the smaller of its own and sqrt(6) × the 95% upper bound of the
  // repeats' stdev (docs/energy-methods.md). Only the whole-run and per-phase windows repeat.
  for (const RunInfo& r : m.runs) {
    if (r.warmup || !r.complete || r.window < 0) continue;
    auto tighten = [&](WindowResult& w, const std::string& key) {
      auto it = values.find(key);
      if (it == values.end() || w.gpus.size() != 1) return;  // per-GPU spread unknown with several GPUs
      const Summary s = summarize(it->second);
      const double b = repeats_staleness_bound(s.stdev, s.n);
      GpuEnergy& g = w.gpus.front();
      if (g.method == "counter" && g.uncertainty_basis == "staleness" && b < g.uncertainty_j) {
        g.uncertainty_j = b;
        g.uncertainty_basis = "repeats";
      }
    };
    tighten(m.windows[static_cast<std::size_t>(r.window)], "gpu_energy_j");
    for (WindowResult& p : m.windows) {
      if (p.run == r.index && p.kind == "phase" && p.complete) tighten(p, "phase:" + p.name + ":gpu_energy_j");
    }
  }
  for (const auto& k : order) {
    RepeatStat s{k, summarize(values[k])};
    if (s.summary.n >= 2 && s.summary.ci95_relative() > ci_warn_relative &&
        (k == "gpu_energy_j" || k == "duration_s")) {
      m.warnings.push_back(fmt::format(
          "{}: 95% CI is ±{:.1f}% of the mean over {} repeats (threshold {:.1f}%); add --runs", k,
          100 * s.summary.ci95_relative(), s.summary.n, 100 * ci_warn_relative));
    }
    m.stats.push_back(std::move(s));
  }
}

}  // namespace jouleprof
