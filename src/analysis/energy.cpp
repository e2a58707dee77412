#include "jouleprof/analysis/energy.hpp"

#include <cmath>
#include <fmt/format.h>
#include <map>

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

}  // namespace

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
    // each edge; the staleness differs between edges by at most one period.
    e.uncertainty_j = (*e.counter_j / dur) * opt.counter_update_s;
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
  for (const auto& k : order) {
    RepeatStat s{k, summarize(values[k])};
    if (s.summary.n >= 2 && s.summary.ci95_relative() > ci_warn_relative &&
        (k == "gpu_energy_j" || k == "duration_s")) {
      m.warnings.push_back(fmt::format(
          "{}: 95% CI is ±{:.1f}% of the mean over {} runs (threshold {:.1f}%); add --runs", k,
          100 * s.summary.ci95_relative(), s.summary.n, 100 * ci_warn_relative));
    }
    m.stats.push_back(std::move(s));
  }
}

}  // namespace jouleprof
