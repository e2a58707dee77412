// Chrome trace-event JSON, written directly (a 2-hour 8-GPU run has millions of events).
#include "jouleprof/report/trace.hpp"
#include "jouleprof/measure/repeat_label.hpp"

#include "jouleprof/core/files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <map>

#include "jouleprof/analysis/trace_profile.hpp"
#include "jouleprof/analysis/trace_store.hpp"
#include "jouleprof/report/downsample.hpp"
#include "json_text.hpp"

namespace jouleprof {
namespace {

constexpr int kRunPid = 1, kCpuPid = 2, kMeterPid = 3, kGpuPid0 = 10;

void meta(fmt::memory_buffer& b, const char* what, int pid, int tid, const std::string& name) {
  fmt::format_to(std::back_inserter(b), "{{\"ph\":\"M\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}},\n", what,
                 pid, tid, detail::json_string(name));
}

void sort_index(fmt::memory_buffer& b, int pid, int index) {
  fmt::format_to(std::back_inserter(b),
                 "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"tid\":0,\"args\":{{\"sort_index\":{}}}}},\n", pid,
                 index);
}

void counters(fmt::memory_buffer& b, int pid, const std::string& name, const std::vector<Sample>& samples) {
  const std::string n = detail::json_string(name);
  for (const Sample& s : samples) {
    if (!std::isfinite(s.value)) continue;
    fmt::format_to(std::back_inserter(b), "{{\"ph\":\"C\",\"name\":{},\"pid\":{},\"tid\":0,\"ts\":{:.3f},\"args\":{{\"value\":{}}}}},\n",
                   n, pid, s.t_s * 1e6, s.value);
  }
}

std::vector<Sample> maybe_downsample(std::vector<Sample> v, std::size_t max_points) {
  return max_points > 1 ? downsample_minmax(v, max_points / 2) : v;
}

constexpr int kRangePid = 4;

// Kernel slices on per-stream tracks of their GPU's process; NVTX ranges on per-thread tracks.
void slice_tracks(fmt::memory_buffer& b, const std::vector<TraceSlice>& slices) {
  std::map<std::pair<int, std::string>, int> tids;
  bool ranges = false;
  for (const TraceSlice& s : slices) {
    const int pid = s.gpu < 0 ? kRangePid : kGpuPid0 + s.gpu;
    auto [it, inserted] = tids.emplace(std::make_pair(pid, s.track), 100 + static_cast<int>(tids.size()));
    if (inserted) meta(b, "thread_name", pid, it->second, s.track);
    if (s.gpu < 0 && !ranges) {
      ranges = true;
      meta(b, "process_name", kRangePid, 0, "NVTX ranges");
      sort_index(b, kRangePid, 5);
    }
    fmt::format_to(std::back_inserter(b), "{{\"ph\":\"X\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f}{}{}}},\n",
                   detail::json_string(s.name), pid, it->second, s.t0_s * 1e6, std::max(0.0, s.t1_s - s.t0_s) * 1e6,
                   s.args_json.empty() ? "" : ",\"args\":", s.args_json);
  }
}

}  // namespace

std::string chrome_trace_json(const Measurement& m, const TraceOptions& o) {
  fmt::memory_buffer b;
  auto out = std::back_inserter(b);
  const std::string label = o.label.empty() ? "jouleprof" : "jouleprof " + o.label;
  fmt::format_to(out, "{{\"displayTimeUnit\":\"ms\",\"otherData\":{{\"tool\":\"jouleprof\",\"tool_version\":{},"
                      "\"origin_realtime_ns\":{},\"time_base\":\"run time: steady clock, microseconds since origin_realtime_ns\","
                      "\"simulated\":{},\"host\":{}}},\n\"traceEvents\":[\n",
                 detail::json_string(m.tool_version), m.origin_realtime_ns, m.simulated ? "true" : "false",
                 detail::json_string(m.host));
  // Windows: one thread per kind, extra lanes where windows of a kind overlap without nesting.
  meta(b, "process_name", kRunPid, 0, label + (m.simulated ? " (simulated)" : ""));
  sort_index(b, kRunPid, 0);
  struct Lane {
    std::string kind;
    std::vector<std::pair<double, double>> open;  // nesting stack of (t0, t1)
  };
  std::vector<Lane> lanes;
  std::vector<std::size_t> order(m.windows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t c) {
    const auto& x = m.windows[a];
    const auto& y = m.windows[c];
    return x.t0_s != y.t0_s ? x.t0_s < y.t0_s : x.t1_s > y.t1_s;
  });
  for (std::size_t i : order) {
    const WindowResult& w = m.windows[i];
    const std::string kind = w.kind == "phase" ? "phases" : (w.kind == "window" ? "windows" : "repeats");
    std::size_t lane = lanes.size();
    for (std::size_t l = 0; l < lanes.size(); ++l) {
      if (lanes[l].kind != kind) continue;
      auto& st = lanes[l].open;
      while (!st.empty() && st.back().second <= w.t0_s) st.pop_back();
      if (st.empty() || w.t1_s <= st.back().second) {
        lane = l;
        break;
      }
    }
    if (lane == lanes.size()) {
      lanes.push_back({kind, {}});
      const std::size_t same = static_cast<std::size_t>(std::count_if(lanes.begin(), lanes.end(), [&](const Lane& x) { return x.kind == kind; }));
      meta(b, "thread_name", kRunPid, static_cast<int>(lane + 1), same > 1 ? kind + " " + std::to_string(same) : kind);
    }
    lanes[lane].open.push_back({w.t0_s, w.t1_s});
    std::string name = w.name;
    if (w.kind == "run" || w.kind == "warmup") name = repeat_label(m, w.run);
    fmt::format_to(out, "{{\"ph\":\"X\",\"name\":{},\"cat\":{},\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f},\"args\":{{"
                        "\"gpu_energy_j\":{},\"duration_s\":{},\"status\":\"{}\"",
                   detail::json_string(name), detail::json_string(w.kind), kRunPid, lane + 1, w.t0_s * 1e6,
                   std::max(0.0, w.t1_s - w.t0_s) * 1e6, w.gpu_energy_j, w.duration_s(), w.complete ? "complete" : "incomplete");
    if (w.gpu_above_idle_j) fmt::format_to(out, ",\"gpu_above_idle_j\":{}", *w.gpu_above_idle_j);
    for (const auto& [k, v] : w.counts) fmt::format_to(out, ",{}:{}", detail::json_string("count_" + k), v);
    fmt::format_to(out, "}}}},\n");
  }
  for (std::size_t g = 0; g < m.gpus.size(); ++g) {
    const int pid = kGpuPid0 + static_cast<int>(g);
    meta(b, "process_name", pid, 0, "GPU " + std::to_string(m.gpus[g].index) + ": " + m.gpus[g].name);
    sort_index(b, pid, 10 + static_cast<int>(g));
    if (g >= m.timelines.size() || !m.timelines[g]) continue;
    for (int k = 0; k < kMetricCount; ++k) {
      const Series& s = m.timelines[g]->series[static_cast<std::size_t>(k)];
      if (s.empty()) continue;
      counters(b, pid, metric_name(static_cast<Metric>(k)), maybe_downsample(s.all(), o.max_points));
    }
  }
  if (o.slices != nullptr) slice_tracks(b, *o.slices);
  if (!m.cpu_energy.empty()) {
    meta(b, "process_name", kCpuPid, 0, "CPU (RAPL)");
    sort_index(b, kCpuPid, 1000);
    for (std::size_t d = 0; d < m.cpu_energy.size() && d < m.cpu_domains.size(); ++d) {
      std::vector<Sample> p;
      const auto& e = m.cpu_energy[d];
      for (std::size_t i = 1; i < e.size(); ++i) {
        const double dt = e[i].t_s - e[i - 1].t_s;
        if (dt > 0) p.push_back({e[i].t_s, (e[i].value - e[i - 1].value) / dt});
      }
      counters(b, kCpuPid, m.cpu_domains[d] + "_power_w", maybe_downsample(std::move(p), o.max_points));
    }
  }
  if (!m.meter_power.empty()) {
    meta(b, "process_name", kMeterPid, 0, "external meter");
    sort_index(b, kMeterPid, 1001);
    counters(b, kMeterPid, "power_w", maybe_downsample(m.meter_power, o.max_points));
  }
  // Close the array without a trailing comma.
  std::string s = fmt::to_string(b);
  if (s.size() >= 2 && s[s.size() - 2] == ',') s.erase(s.size() - 2, 1);
  s += "]}\n";
  return s;
}

Result<void> write_chrome_trace(const Measurement& m, const std::string& path, const TraceOptions& o) {
  return write_file_atomic(path, chrome_trace_json(m, o));
}

std::vector<TraceSlice> trace_slices(const Measurement& m, const TraceData& t) {
  std::vector<TraceSlice> slices;
  slices.reserve(t.activities.size());
  for (const Activity& a : t.activities) {
    if (a.kind == Activity::Kind::sync || a.kind == Activity::Kind::mark) continue;
    TraceSlice s;
    if (a.on_gpu()) {
      const int g = measured_gpu(m, t, a);
      s.gpu = g >= 0 ? g : static_cast<int>(a.device);
    } else {
      s.gpu = -1;
    }
    const auto& pr = t.processes[static_cast<std::size_t>(a.process)];
    s.track = a.on_gpu() ? fmt::format("pid {} stream {}", pr.pid, a.stream)
                         : fmt::format("pid {} {}", pr.pid, a.thread != 0 ? "thread " + std::to_string(a.thread) : std::string("process ranges"));
    s.name = a.name;
    s.t0_s = a.t0_s;
    s.t1_s = a.t1_s;
    s.args_json = activity_attrs_json(a);
    slices.push_back(std::move(s));
  }
  return slices;
}

}  // namespace jouleprof
