// Sampled mode's attribution (`trace --sample P%`), and a run the program paused
// (jouleprof_trace_pause): kernels were recorded only in the duty cycle's windows / between pauses, so the methods see only those windows — their power samples and activities put
// end to end on a stitched time line — and the shares they find are applied to the whole run's
// measured energy (docs/trace.md, "Sampled mode").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "attribution_stages.hpp"
#include "jouleprof/analysis/attribution.hpp"
#include "jouleprof/analysis/trace_profile.hpp"

namespace jouleprof {
namespace {

// The traced windows inside the run, end to end: segment k [a, b] of the run time base starts at
// offset[k] on the stitched line.
struct Stitch {
  std::vector<std::pair<double, double>> seg;
  std::vector<double> offset;
  double length = 0;
  /// The segment holding run time x, or -1.
  int segment_of(double x) const {
    auto it = std::upper_bound(seg.begin(), seg.end(), x, [](double v, const auto& s) { return v < s.first; });
    if (it == seg.begin()) return -1;
    --it;
    return x <= it->second ? static_cast<int>(it - seg.begin()) : -1;
  }
  /// Run time → stitched time; a time between windows goes to the start of the next one.
  double at(double x) const {
    for (std::size_t k = 0; k < seg.size(); ++k) {
      if (x <= seg[k].second) return offset[k] + std::max(0.0, x - seg[k].first);
    }
    return length;
  }
};

Stitch stitch(const std::vector<std::pair<double, double>>& windows, double t0, double t1) {
  Stitch s;
  for (const auto& [a, b] : windows) {
    const double lo = std::max(a, t0), hi = std::min(b, t1);
    if (hi <= lo) continue;
    s.seg.emplace_back(lo, hi);
    s.offset.push_back(s.length);
    s.length += hi - lo;
  }
  return s;
}

// The measurement as if the run were only its traced windows: power samples inside them, the run
// window the stitched line (its energy the samples'), phase windows mapped onto it (they keep
// their measured energies: the phase table is the whole run's).
Measurement stitched_measurement(const Measurement& m, const Stitch& s) {
  Measurement sm = m;
  for (std::size_t g = 0; g < m.timelines.size(); ++g) {
    if (!m.timelines[g]) continue;
    auto tl = std::make_shared<GpuTimeline>(std::size_t{1} << 21);
    for (Metric k : {Metric::power_sample_w, Metric::power_instant_w}) {
      for (const Sample& x : m.timelines[g]->series[static_cast<std::size_t>(k)].all()) {
        if (s.segment_of(x.t_s) >= 0) tl->series[static_cast<std::size_t>(k)].append(s.at(x.t_s), x.value);
      }
    }
    sm.timelines[g] = tl;
  }
  for (WindowResult& w : sm.windows) {
    w.t0_s = s.at(w.t0_s);
    w.t1_s = s.at(w.t1_s);
    if (w.kind != "run") continue;
    w.t0_s = 0;
    w.t1_s = s.length;
    w.gpu_energy_j = 0;
    for (std::size_t g = 0; g < w.gpus.size(); ++g) {
      std::vector<Sample> p;
      if (g < sm.timelines.size() && sm.timelines[g]) p = sm.timelines[g]->series[static_cast<std::size_t>(Metric::power_sample_w)].all();
      if (p.empty() && g < sm.timelines.size() && sm.timelines[g]) p = sm.timelines[g]->series[static_cast<std::size_t>(Metric::power_instant_w)].all();
      w.gpus[g].method = "timeline";
      w.gpus[g].energy_j = detail::energy_between(p, 0, s.length);
      w.gpu_energy_j += w.gpus[g].energy_j;
    }
  }
  return sm;
}

// The trace on the stitched line: GPU activities cut to the windows (a kernel launched in one and
// still running after it keeps its traced part), with the window each came from.
TraceData stitched_trace(const TraceData& t, const Stitch& s, std::vector<int>& segment) {
  TraceData st;
  st.processes = t.processes;
  st.warnings = t.warnings;
  st.range_assignment = t.range_assignment;
  for (const Activity& a : t.activities) {
    if (!a.on_gpu()) continue;
    for (std::size_t k = 0; k < s.seg.size(); ++k) {
      const double lo = std::max(a.t0_s, s.seg[k].first), hi = std::min(a.t1_s, s.seg[k].second);
      if (hi < lo || (hi == lo && a.t1_s > a.t0_s)) continue;
      Activity c = a;
      c.t0_s = s.offset[k] + lo - s.seg[k].first;
      c.t1_s = s.offset[k] + hi - s.seg[k].first;
      st.activities.push_back(std::move(c));
      segment.push_back(static_cast<int>(k));
    }
  }
  return st;
}

// Each method's books from the traced windows to the whole run: idle/static by time, what is
// above it by the run's measured energy above idle/static; unattributed keeps the books balanced.
std::map<std::string, double> rescale_books(GpuProfile& gp, double measured_j, double time_ratio) {
  std::map<std::string, double> factor;
  for (MethodBooks& b : gp.methods) {
    const double idle = b.idle_j * time_ratio;
    const double above = b.measured_j - b.idle_j;
    const double f = above > 0 ? std::max(0.0, (measured_j - idle) / above) : 0;
    factor[b.method] = f;
    b.timeline_j = b.measured_j > 0 ? b.timeline_j * measured_j / b.measured_j : b.timeline_j;
    b.measured_j = measured_j;
    b.idle_j = idle;
    b.attributed_j *= f;
    b.unattributed_j = measured_j - idle - b.attributed_j;
    for (GroupRow& r : b.by_class) {
      r.energy_j *= f, r.uncertainty_j *= f, r.low_j *= f, r.high_j *= f;
      for (auto& [name, e] : r.by_method) e *= f;
    }
  }
  return factor;
}

// The spread of each key's busy share between the windows: its relative standard error (ratio
// estimator over the windows, finite-population corrected by the traced fraction).
std::map<std::string, double> share_errors(const std::map<std::string, std::vector<double>>& busy, const std::vector<double>& total,
                                           double fraction) {
  std::map<std::string, double> rel;
  double n = 0, mean_total = 0;
  for (double b : total) {
    n += b > 0 ? 1 : 0;
    mean_total += b;
  }
  if (n < 2 || mean_total <= 0) return rel;
  mean_total /= n;
  for (const auto& [key, v] : busy) {
    double sb = 0, st = 0;
    for (std::size_t k = 0; k < v.size(); ++k) sb += v[k], st += total[k];
    const double r = sb / st;
    double ss = 0;
    for (std::size_t k = 0; k < v.size(); ++k) {
      if (total[k] > 0) ss += (v[k] - r * total[k]) * (v[k] - r * total[k]);
    }
    const double var = ss / (n * (n - 1) * mean_total * mean_total) * std::max(0.0, 1 - fraction);
    rel[key] = r > 0 ? std::sqrt(var) / r : 0;
  }
  return rel;
}

// Rows to the whole run (× the table method's factor, each method's figure × its own) and their
// intervals widened by ± 1.96 × the relative error of their busy share; a row without its own
// (summed rows, phases from windows) takes the table's largest.
void rescale_rows(std::vector<GroupRow>& rows, const std::map<std::string, double>& factor, double f, const std::map<std::string, double>& rel) {
  double worst = 0;
  for (const auto& [k, v] : rel) worst = std::max(worst, v);
  for (GroupRow& r : rows) {
    r.energy_j *= f, r.uncertainty_j *= f, r.low_j *= f, r.high_j *= f;
    for (auto& [name, e] : r.by_method) e *= factor.count(name) != 0 ? factor.at(name) : f;
    for (auto& [key, e] : r.members) e *= f;
    auto it = rel.find(r.key);
    const double hw = 1.96 * (it != rel.end() ? it->second : worst) * std::fabs(r.energy_j);
    r.low_j = std::min(r.low_j, r.energy_j) - hw;
    if (r.energy_j >= 0) r.low_j = std::max(0.0, r.low_j);
    r.high_j = std::max(r.high_j, r.energy_j) + hw;
    r.uncertainty_j = std::hypot(r.uncertainty_j, hw / 1.96);
  }
}

struct SampledRun {
  const Measurement* m = nullptr;
  const Measurement* sm = nullptr;
  const TraceData* st = nullptr;
  const std::vector<int>* segment = nullptr;
  const Stitch* s = nullptr;
  const WindowResult* run = nullptr;
};

void rescale_gpu(GpuProfile& gp, const SampledRun& x) {
  const std::size_t g = static_cast<std::size_t>(gp.gpu);
  gp.window_t0_s = x.run->t0_s;
  gp.window_t1_s = x.run->t1_s;
  if (gp.methods.empty() || g >= x.run->gpus.size()) return;
  const double run_s = x.run->t1_s - x.run->t0_s;
  const auto factor = rescale_books(gp, x.run->gpus[g].energy_j, run_s / x.s->length);
  const double f = factor.count(gp.table_method) != 0 ? factor.at(gp.table_method) : 1;
  gp.sampling_scale = f;
  // Busy time per key and window, for each table's keys.
  enum { kernel, cls, path, layer, component, tables };
  std::map<std::string, std::vector<double>> busy[tables];
  std::vector<double> total(x.s->seg.size(), 0.0);
  for (std::size_t i = 0; i < x.st->activities.size(); ++i) {
    const Activity& a = x.st->activities[i];
    if (measured_gpu(*x.sm, *x.st, a) != gp.gpu) continue;
    const auto k = static_cast<std::size_t>((*x.segment)[i]);
    const std::string keys[tables] = {a.name, a.kclass, a.path.empty() ? std::string("(no range)") : std::string(a.path),
                                      layer_of_path(a.path), component_of_path(a.path)};
    for (int t = 0; t < tables; ++t) {
      if (keys[t].empty()) continue;
      auto& v = busy[t][keys[t]];
      v.resize(total.size(), 0.0);
      v[k] += a.duration_s();
    }
    total[k] += a.duration_s();
  }
  const double fraction = x.s->length / run_s;
  std::map<std::string, double> rel[tables];
  for (int t = 0; t < tables; ++t) rel[t] = share_errors(busy[t], total, fraction);
  rescale_rows(gp.by_kernel, factor, f, rel[kernel]);
  rescale_rows(gp.by_class, factor, f, rel[cls]);
  rescale_rows(gp.by_path, factor, f, rel[path]);
  rescale_rows(gp.by_layer, factor, f, rel[layer]);
  rescale_rows(gp.by_component, factor, f, rel[component]);
  rescale_rows(gp.by_phase, factor, f, {});
  // The summary's interval share, on the widened class rows.
  double width = 0, est = 0;
  for (const GroupRow& r : gp.by_class) {
    width += 0.5 * (r.high_j - r.low_j);
    est += std::fabs(r.energy_j);
  }
  gp.class_interval_share = est > 0 ? width / est : 0;
}

const WindowResult* run_window(const Measurement& m) {
  for (const WindowResult& w : m.windows) {
    if (w.kind == "run") return &w;
  }
  return nullptr;
}

}  // namespace

Result<TraceProfile> analyze_placed_trace(Measurement& m, TraceData& t, const KernelClassifier& classes, const TraceProfileOptions& o) {
  const WindowResult* run = run_window(m);
  if (!t.sampling.active() || run == nullptr) return analyze_trace(m, t, classes, o);
  TraceSamplingInfo info;
  info.on_s = t.sampling.on_s;
  info.period_s = t.sampling.period_s;
  info.windows_s = t.sampling.windows_s;
  info.pauses_s = t.sampling.pauses_s;
  info.run_s = run->t1_s - run->t0_s;
  const Stitch s = stitch(t.sampling.windows_s, run->t0_s, run->t1_s);
  info.traced_s = s.length;
  info.paused_s = stitch(t.sampling.pauses_s, run->t0_s, run->t1_s).length;
  if (!t.sampling.duty_cycle()) info.windows_s = s.seg;  // paused only: the recorded time is unbounded outside the pauses
  std::vector<std::string> said;
  if (t.sampling.duty_cycle() && info.run_s < info.period_s) {
    said.push_back(fmt::format("sampled mode: the run lasted {:.3g} s, less than one sampling period ({:.3g} s): its {:.0f}% traced may not "
                               "represent it; trace it in full (without --sample)",
                               info.run_s, info.period_s, 100 * info.fraction()));
  }
  if (s.length <= 0) {
    said.push_back(t.sampling.duty_cycle() ? "sampled mode: no traced window fell inside the run: nothing attributed"
                                           : "the program was paused for the whole run (jouleprof_trace_pause): nothing attributed");
    TraceData none = t;
    std::erase_if(none.activities, [](const Activity& a) { return a.on_gpu(); });
    auto p = build_trace_profile(m, none, classes, o);
    if (!p) return p;
    p->sampling = info;
    p->warnings.insert(p->warnings.end(), said.begin(), said.end());
    detail::write_profile(m, none, *p);
    return p;
  }
  const Measurement sm = stitched_measurement(m, s);
  std::vector<int> segment;
  TraceData st = stitched_trace(t, s, segment);
  auto profile = build_trace_profile(sm, st, classes, o);
  if (!profile) return profile;
  profile->activities = t.activities.size();
  // The phase table is the whole run's, as measured (the stitched windows cut its durations).
  for (PhaseEnergy& e : profile->phases) {
    e.duration_s = 0;
    for (const WindowResult& w : m.windows) e.duration_s += w.kind == "phase" && w.name == e.name ? w.duration_s() : 0;
  }
  const SampledRun x{&m, &sm, &st, &segment, &s, run};
  for (GpuProfile& gp : profile->gpus) rescale_gpu(gp, x);
  profile->sampling = info;
  for (auto w = said.rbegin(); w != said.rend(); ++w) {  // once: a stored run's trace carries them already
    if (std::find(profile->warnings.begin(), profile->warnings.end(), *w) == profile->warnings.end()) profile->warnings.insert(profile->warnings.begin(), *w);
  }
  detail::write_profile(m, t, *profile);
  return profile;
}

}  // namespace jouleprof
