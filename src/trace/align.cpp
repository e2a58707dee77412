// Time alignment of CUPTI timestamps with the run time base, and NVTX ranges onto kernels.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "jouleprof/trace/trace.hpp"

namespace jouleprof {

namespace {

// Sorted, overlapping spans merged; empty ones dropped.
std::vector<std::pair<double, double>> union_of(std::vector<std::pair<double, double>> w) {
  std::sort(w.begin(), w.end());
  std::vector<std::pair<double, double>> out;
  for (const auto& x : w) {
    if (!out.empty() && x.first <= out.back().second) {
      out.back().second = std::max(out.back().second, x.second);
    } else if (x.second > x.first) {
      out.push_back(x);
    }
  }
  return out;
}

}  // namespace

void align_trace(TraceData& t, int64_t origin_realtime_ns, const std::vector<TimeBase::Calibration>& cal) {
  // CLOCK_REALTIME → run time: the realtime-steady offset in effect at that time.
  const int64_t offset0 = cal.empty() ? 0 : cal.front().offset_ns;
  auto to_run = [&](double realtime_ns) {
    const double approx_s = (realtime_ns - static_cast<double>(origin_realtime_ns)) * 1e-9;
    int64_t off = offset0;
    for (const auto& c : cal) {
      if (c.at_s > approx_s) break;
      off = c.offset_ns;
    }
    return (realtime_ns - static_cast<double>(origin_realtime_ns) - static_cast<double>(off - offset0)) * 1e-9;
  };
  // CUPTI → CLOCK_REALTIME per process: offset at the first and last clock pair, interpolated.
  struct Map {
    double c0 = 0, c1 = 0, o0 = 0, o1 = 0;
    double at(double cupti) const {
      if (c1 <= c0) return cupti + o0;
      const double f = std::clamp((cupti - c0) / (c1 - c0), 0.0, 1.0);
      return cupti + o0 + f * (o1 - o0);
    }
  };
  std::vector<Map> maps(t.processes.size());
  for (std::size_t i = 0; i < t.processes.size(); ++i) {
    ProcessTrace& p = t.processes[i];
    Map& m = maps[i];
    if (!p.clocks.empty()) {
      const ClockPair& a = p.clocks.front();
      const ClockPair& b = p.clocks.back();
      m.c0 = static_cast<double>(a.cupti_ns);
      m.c1 = static_cast<double>(b.cupti_ns);
      m.o0 = static_cast<double>(a.realtime_ns) - m.c0;
      m.o1 = static_cast<double>(b.realtime_ns) - m.c1;
      p.clock_offset_start_ns = m.o0;
      p.clock_offset_end_ns = m.o1;
      p.clock_drift_ppm = m.c1 > m.c0 ? (m.o1 - m.o0) / (m.c1 - m.c0) * 1e6 : 0;
      if (std::fabs(m.o0) > 1e6) {
        t.warnings.push_back("process " + std::to_string(p.pid) + ": CUPTI's clock is " +
                             std::to_string(m.o0 * 1e-6) + " ms off CLOCK_REALTIME; corrected with the measured offset");
      }
      if (std::fabs(p.clock_drift_ppm) > 100) {
        t.warnings.push_back("process " + std::to_string(p.pid) + ": CUPTI clock drifts " + std::to_string(p.clock_drift_ppm) +
                             " ppm against CLOCK_REALTIME (a clock step?)");
      }
    }
  }
  for (Activity& a : t.activities) {
    const Map& m = maps[static_cast<std::size_t>(a.process)];
    a.t0_s = to_run(m.at(static_cast<double>(a.start_ns)));
    a.t1_s = to_run(m.at(static_cast<double>(a.end_ns)));
    if (a.t1_s < a.t0_s) a.t1_s = a.t0_s;
  }
  // Sampled windows: the processes switch at the same moments (format.hpp DutyCycle), so their
  // union is the run's traced time; a child started mid-window adds nothing outside it. Pauses are
  // each process's own: where one process paused and another did not, the other's records cover
  // the whole run (its span counts as recorded).
  bool any_windowed = false;
  for (const ProcessTrace& p : t.processes) any_windowed = any_windowed || p.windowed;
  std::vector<std::pair<double, double>> w, paused;
  for (std::size_t i = 0; i < t.processes.size(); ++i) {
    const ProcessTrace& p = t.processes[i];
    if (any_windowed && !p.windowed && !t.sampling.duty_cycle()) {
      w.emplace_back(-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity());
    }
    for (const auto& [on, off] : p.sample_windows_ns) {
      w.emplace_back(to_run(maps[i].at(static_cast<double>(on))), to_run(maps[i].at(static_cast<double>(off))));
    }
    for (const auto& [a, b] : p.pauses_ns) {
      paused.emplace_back(to_run(maps[i].at(static_cast<double>(a))), to_run(maps[i].at(static_cast<double>(b))));
    }
  }
  if (!t.sampling.duty_cycle() && paused.empty()) w.clear();  // logs without a pause or a cycle: traced in full
  t.sampling.windows_s = union_of(std::move(w));
  t.sampling.pauses_s = union_of(std::move(paused));
}

std::string_view phase_in_path(std::string_view path) {
  for (std::size_t b = 0; b <= path.size();) {
    const std::size_t e = std::min(path.find('/', b), path.size());
    const std::string_view part = path.substr(b, e - b);
    if (part == "prefill" || part == "decode") return part;
    b = e + 1;
  }
  return {};
}

void assign_ranges(TraceData& t) {
  // Per process and thread: push/pop ranges (properly nested), sorted by start.
  struct Key {
    int process;
    uint64_t thread;
    bool operator==(const Key& o) const { return process == o.process && thread == o.thread; }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const { return std::hash<uint64_t>()(k.thread * 1315423911u + static_cast<uint64_t>(k.process)); }
  };
  std::unordered_map<Key, std::vector<std::size_t>, KeyHash> ranges;
  std::vector<std::vector<std::size_t>> process_ranges(t.processes.size());
  for (std::size_t i = 0; i < t.activities.size(); ++i) {
    const Activity& a = t.activities[i];
    if (a.kind != Activity::Kind::range) continue;
    // A library's range in its own domain that never closed (NCCL leaves its communicator set-up
    // open on the launching thread) is not a place in the program: it stays out of paths.
    if (!a.complete && !a.domain.empty()) continue;
    if (a.thread != 0) {
      ranges[{a.process, a.thread}].push_back(i);
    } else {
      process_ranges[static_cast<std::size_t>(a.process)].push_back(i);
    }
  }
  auto by_start = [&](std::size_t x, std::size_t y) {
    const Activity& a = t.activities[x];
    const Activity& b = t.activities[y];
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  };
  // API records (launches and anchors) per (process, thread), sorted by time: the range path and
  // phase in effect at each, keyed by correlation id.
  struct Placed {
    uint32_t correlation;
    bool anchor;
    std::string path, phase;
  };
  std::vector<std::vector<Placed>> placed(t.processes.size());
  for (std::size_t p = 0; p < t.processes.size(); ++p) {
    auto launches = t.processes[p].launches;
    std::sort(launches.begin(), launches.end(), [](const auto& a, const auto& b) {
      return a.thread != b.thread ? a.thread < b.thread : a.start_ns < b.start_ns;
    });
    auto& pr = process_ranges[p];
    std::sort(pr.begin(), pr.end(), by_start);
    std::size_t i = 0;
    while (i < launches.size()) {
      const uint64_t thread = launches[i].thread;
      auto it = ranges.find({static_cast<int>(p), thread});
      std::vector<std::size_t> rs;
      if (it != ranges.end()) {
        rs = it->second;
        std::sort(rs.begin(), rs.end(), by_start);
      }
      // Sweep: ranges opened before the call go on the stack, ranges ended before it come off.
      std::vector<std::size_t> stack;
      std::size_t next = 0;
      for (; i < launches.size() && launches[i].thread == thread; ++i) {
        const int64_t ts = launches[i].start_ns;
        while (next < rs.size() && t.activities[rs[next]].start_ns <= ts) {
          while (!stack.empty() && t.activities[stack.back()].end_ns < t.activities[rs[next]].start_ns) stack.pop_back();
          stack.push_back(rs[next++]);
        }
        while (!stack.empty() && t.activities[stack.back()].end_ns < ts) stack.pop_back();
        std::string path;
        for (std::size_t r : stack) {
          if (t.activities[r].end_ns < ts) continue;  // an outer range already closed (unbalanced pops)
          path += (path.empty() ? "" : "/") + t.activities[r].name;
        }
        std::string phase;
        for (std::size_t r : pr) {
          const Activity& a = t.activities[r];
          if (a.start_ns > ts) break;
          if (a.end_ns >= ts) phase = a.name;  // innermost (latest-starting) enclosing range
        }
        placed[p].push_back({launches[i].correlation, launches[i].anchor, std::move(path), std::move(phase)});
      }
    }
    std::sort(placed[p].begin(), placed[p].end(), [](const Placed& a, const Placed& b) { return a.correlation < b.correlation; });
  }
  // Each GPU activity: its own launch record if there is one, else the latest record before its
  // correlation id (correlation ids grow with every API call of the process).
  std::vector<std::vector<const Placed*>> anchors(t.processes.size());
  for (std::size_t p = 0; p < t.processes.size(); ++p) {
    for (const Placed& x : placed[p]) {
      if (x.anchor) anchors[p].push_back(&x);
    }
  }
  auto before = [](const auto& sorted, uint32_t c, auto correlation_of) {
    auto it = std::lower_bound(sorted.begin(), sorted.end(), c,
                               [&](const auto& x, uint32_t v) { return correlation_of(x) < v; });
    return it == sorted.begin() ? sorted.end() : std::prev(it);
  };
  auto& ra = t.range_assignment;
  ra = {};
  bool exact = false, by_anchor = false;
  for (Activity& a : t.activities) {
    if (!a.on_gpu()) continue;
    const auto p = static_cast<std::size_t>(a.process);
    const auto& v = placed[p];
    auto it = std::lower_bound(v.begin(), v.end(), a.correlation, [](const Placed& x, uint32_t c) { return x.correlation < c; });
    const Placed* own = nullptr;
    for (; it != v.end() && it->correlation == a.correlation; ++it) {
      if (!it->anchor) own = &*it;
    }
    const auto& an = anchors[p];
    auto prev_anchor = before(an, a.correlation, [](const Placed* x) { return x->correlation; });
    const Placed* chosen = own;
    if (own != nullptr) {
      exact = true;
      if (prev_anchor != an.end()) {
        ++ra.checked;
        ra.agreed += ((*prev_anchor)->path == own->path && (*prev_anchor)->phase == own->phase) ? 1 : 0;
      }
    } else {
      auto prev = before(v, a.correlation, [](const Placed& x) { return x.correlation; });
      if (prev != v.end()) {
        chosen = &*prev;
        by_anchor |= prev->anchor;
      }
    }
    if (chosen == nullptr) continue;
    ++ra.assigned;
    a.path = chosen->path;
    a.phase = chosen->phase;
  }
  ra.method = exact ? "launch records" : by_anchor ? "anchors" : "none";
  // Depth of each push/pop range on its thread (for the Perfetto tracks and the tables).
  for (auto& [key, rs] : ranges) {
    std::sort(rs.begin(), rs.end(), by_start);
    std::vector<int64_t> ends;
    for (std::size_t r : rs) {
      while (!ends.empty() && ends.back() <= t.activities[r].start_ns) ends.pop_back();
      t.activities[r].depth = static_cast<int>(ends.size());
      ends.push_back(t.activities[r].end_ns);
    }
  }
}

}  // namespace jouleprof
