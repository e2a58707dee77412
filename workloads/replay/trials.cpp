// The trial rounds of jouleprof-replay (trials.hpp).
#include "trials.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace jouleprof::replay {

CounterTrials counter_trials(const std::vector<EdgeRead>& edges, const CounterRules& rules) {
  CounterTrials r;
  if (edges.size() < 2) return r;
  std::vector<bool> late(edges.size(), false);
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const EdgeRead& e = edges[i];
    const double l = e.read ? std::max(0.0, e.read_s - e.edge_s) : std::numeric_limits<double>::infinity();
    late[i] = !(l <= rules.max_late_s);
    if (late[i]) ++r.late_reads;
    if (e.read) r.max_late_s = std::max(r.max_late_s, l);
  }
  std::size_t short_trials = 0;
  for (std::size_t k = 0; k + 1 < edges.size(); ++k) {
    const EdgeRead &a = edges[k], &b = edges[k + 1];
    const double dt = b.read_s - a.read_s;
    double w = std::nan("");
    if (late[k] || late[k + 1] || !(dt > 0)) {
      // a late read: the difference is over another interval than the trial's
    } else if (rules.update_s > 0 && dt < rules.min_updates * rules.update_s) {
      ++short_trials;
    } else {
      w = (b.counter_j - a.counter_j) / dt;
    }
    r.power_w.push_back(w);
  }
  if (r.late_reads > 0) {
    r.dropped_because = fmt::format("{} of {} counter reads came more than {:.0f} ms after their trial edge (latest {:.1f} ms)",
                                    r.late_reads, edges.size(), rules.max_late_s * 1e3, r.max_late_s * 1e3);
  }
  if (short_trials > 0) {
    if (!r.dropped_because.empty()) r.dropped_because += "; ";
    r.dropped_because += fmt::format("{} trials span fewer than {:.0f} counter updates (one every {:.1f} ms)", short_trials,
                                     rules.min_updates, rules.update_s * 1e3);
  }
  return r;
}

double counter_update_period(Probe& p, double seconds, double poll_s) {
  auto last = p.counter_j();
  if (!last) return 0;
  std::vector<double> changes;
  const double t0 = p.now();
  double last_drain = t0;
  for (double t = t0; t - t0 < seconds; t = p.now()) {
    p.pause(poll_s);
    const auto c = p.counter_j();
    if (c && *c != *last) {
      changes.push_back(p.now());
      last = c;
    }
    if (p.now() - last_drain > 0.05) {  // the driver keeps a limited ring of power samples
      p.drain();
      last_drain = p.now();
    }
  }
  if (changes.size() < 3) return 0;
  return (changes.back() - changes.front()) / static_cast<double>(changes.size() - 1);
}

void EdgePoller::marked(int slot) {
  slots_.push_back(slot);
  reads_.emplace_back();
}

void EdgePoller::poll() {
  while (next_ < slots_.size() && d_.reached(slots_[next_])) {
    EdgeRead& r = reads_[next_];
    const double before = p_.now();
    const auto c = p_.counter_j();
    r.read_s = (before + p_.now()) / 2;
    r.read = c.has_value();
    r.counter_j = c.value_or(std::nan(""));
    ++next_;
  }
  const double t = p_.now();
  if (last_drain_ < 0 || t - last_drain_ > 0.05) {
    p_.drain();
    last_drain_ = p_.now();
  }
}

std::vector<EdgeRead> EdgePoller::reads(int origin_slot, double origin_s) const {
  std::vector<EdgeRead> out = reads_;
  for (std::size_t i = 0; i < out.size(); ++i) out[i].edge_s = origin_s + d_.elapsed_ms(origin_slot, slots_[i]) / 1e3;
  return out;
}

void Round::append(const Round& more) {
  time_ns.insert(time_ns.end(), more.time_ns.begin(), more.time_ns.end());
  power_w.insert(power_w.end(), more.power_w.begin(), more.power_w.end());
  energy_j.insert(energy_j.end(), more.energy_j.begin(), more.energy_j.end());
  counter_power_w.insert(counter_power_w.end(), more.counter_power_w.begin(), more.counter_power_w.end());
  edges.insert(edges.end(), more.edges.begin(), more.edges.end());
  samples += more.samples;
  late_reads += more.late_reads;
  max_late_s = std::max(max_late_s, more.max_late_s);
  if (!more.counter_dropped_because.empty()) counter_dropped_because = more.counter_dropped_because;
}

Round run_round(Device& d, Probe& p, const RoundPlan& plan, const CounterRules& rules) {
  Round rd;
  EdgePoller ep(d, p);
  // Launches in chunks of ~10 ms with a pacing event after each; before a chunk, waits (polling
  // the edges) until the chunk `ahead` places back is done, so at most ~ahead_s is queued.
  const int chunk = std::max(1, static_cast<int>(std::lround(0.01 / plan.graph_s)));
  const int ahead = std::clamp(static_cast<int>(std::ceil(plan.ahead_s / (chunk * plan.graph_s))), 2, kPaceSlots / 2);
  long chunks = 0;
  auto launch_paced = [&](int graphs) {
    while (graphs > 0) {
      if (chunks >= ahead) {
        const int wait_slot = kPaceSlot0 + static_cast<int>((chunks - ahead) % kPaceSlots);
        while (!d.reached(wait_slot)) {
          ep.poll();
          p.pause(0.0002);
        }
      }
      const int g = std::min(chunk, graphs);
      d.launch(g);
      d.mark(kPaceSlot0 + static_cast<int>(chunks % kPaceSlots));
      ++chunks;
      graphs -= g;
      ep.poll();
    }
  };
  p.drain();
  const double t_host0 = p.now();  // the GPU is idle: event 0 passes at once
  d.mark(0);
  launch_paced(plan.settle_graphs);
  d.mark(1);
  ep.marked(1);
  for (int k = 0; k < plan.trials; ++k) {
    launch_paced(plan.trial_graphs);
    d.mark(k + 2);
    ep.marked(k + 2);
  }
  launch_paced(std::max(1, static_cast<int>(std::ceil(plan.tail_s / plan.graph_s))));
  while (!ep.all_read()) {
    ep.poll();
    p.pause(0.0002);
  }
  d.synchronize();
  p.pause(0.06);  // the driver's samples of the last trial
  p.drain();
  rd.edges = ep.reads(0, t_host0);
  const CounterTrials ct = counter_trials(rd.edges, rules);
  rd.late_reads = ct.late_reads;
  rd.max_late_s = ct.max_late_s;
  rd.counter_dropped_because = ct.dropped_because;
  const double calls = static_cast<double>(plan.trial_graphs) * plan.calls_per_graph;
  for (int k = 0; k < plan.trials; ++k) {
    const auto ku = static_cast<std::size_t>(k);
    const double a = rd.edges[ku].edge_s, b = rd.edges[ku + 1].edge_s;
    const double t = d.elapsed_ms(k + 1, k + 2) * 1e6 / calls;
    const auto [pw, ns] = p.mean_power(a + plan.skip_s, b - plan.skip_s);
    rd.samples += ns;
    if (ns == 0) continue;
    rd.time_ns.push_back(t);
    rd.power_w.push_back(pw);
    rd.energy_j.push_back(pw * t * 1e-9);
    rd.counter_power_w.push_back(ct.power_w[ku]);
  }
  return rd;
}

}  // namespace jouleprof::replay
