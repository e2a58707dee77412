#include "jouleprof/store/synthetic.hpp"

#include <cmath>
#include <random>

#include "jouleprof/core/stats.hpp"
#include "jouleprof/store/compare.hpp"

namespace jouleprof {

Measurement make_synthetic_measurement(const SyntheticSpec& s) {
  Measurement m;
  m.tool_version = "synthetic";
  m.build_type = "test";
  m.command = {"synthetic-workload", "--runs", std::to_string(s.runs)};
  m.tags = {{"case", s.tag_value}, {"simulated", "true"}};
  m.invocation = {"jouleprof", "measure", "--synthetic"};
  m.host = "synthetic-host";
  m.kernel = "Linux";
  m.origin_realtime_ns = int64_t{1795300000} * 1000000000 + static_cast<int64_t>(s.seed) * 1000;
  m.backend = "sim";
  m.simulated = true;
  m.device_note = "synthetic measurement (tests and benchmarks)";
  m.duration_s = s.duration_s;
  m.cpu_unavailable_reason = "synthetic";
  const double idle_end = 0.1 * s.duration_s;
  const double run_len = (s.duration_s - idle_end) / std::max(1, s.runs);
  auto power_at = [&](double t) {
    if (t < idle_end) return s.idle_w;
    const double in_run = std::fmod(t - idle_end, run_len);
    return in_run < 0.2 * run_len ? s.prefill_w : s.decode_w;
  };
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<double> noise(0.0, 5.0);
  for (int g = 0; g < s.gpus; ++g) {
    GpuInfo i;
    i.index = g;
    i.name = "Synthetic H100 (simulated)";
    i.uuid = "GPU-00000000-0000-4000-8000-" + std::to_string(100000000000 + g);
    i.pci_bus_id = "00000000:" + std::to_string(10 + g) + ":00.0";
    i.driver_version = "0 (simulated)";
    i.backend = "sim";
    i.simulated = true;
    i.power_limit_w = 700;
    m.gpus.push_back(i);
    GpuRunState st;
    st.idle_power_w = s.idle_w;
    st.idle_source = "synthetic";
    st.temperature_min_c = 35;
    st.temperature_max_c = 60;
    m.gpu_state.push_back(st);
    auto tl = std::make_shared<GpuTimeline>(std::size_t{1} << 21);
    const auto n = static_cast<std::size_t>(s.duration_s * s.sample_hz);
    auto& ps = tl->series[static_cast<std::size_t>(Metric::power_sample_w)];
    for (std::size_t k = 0; k < n; ++k) {
      const double t = static_cast<double>(k) / s.sample_hz;
      ps.append(t, power_at(t) + noise(rng));
    }
    const auto ns = static_cast<std::size_t>(s.duration_s * s.slow_hz);
    for (std::size_t k = 0; k < ns; ++k) {
      const double t = static_cast<double>(k) / s.slow_hz;
      const double p = power_at(t);
      tl->series[static_cast<std::size_t>(Metric::power_average_w)].append(t, p);
      tl->series[static_cast<std::size_t>(Metric::sm_clock_mhz)].append(t, p > s.idle_w ? 1980 : 345);
      tl->series[static_cast<std::size_t>(Metric::temperature_c)].append(t, 35 + 25 * (p - s.idle_w) / 700);
      tl->series[static_cast<std::size_t>(Metric::gpu_util_pct)].append(t, p > s.idle_w ? 100 : 0);
      tl->series[static_cast<std::size_t>(Metric::memory_used_mib)].append(t, p > s.idle_w ? 40000 : 500);
    }
    m.timelines.push_back(tl);
  }
  auto add_window = [&](const std::string& name, const std::string& kind, int run, int parent, double t0, double t1,
                        double watts) {
    WindowResult w;
    w.name = name;
    w.kind = kind;
    w.run = run;
    w.parent = parent;
    w.t0_s = t0;
    w.t1_s = t1;
    for (int g = 0; g < s.gpus; ++g) {
      GpuEnergy e;
      e.energy_j = watts * (t1 - t0);
      e.method = "timeline";
      e.timeline_j = e.energy_j;
      e.timeline_samples = static_cast<std::size_t>((t1 - t0) * s.sample_hz);
      e.mean_power_w = watts;
      if (kind == "phase") {
        e.response_j = e.energy_j;
        e.response_uncertainty_j = 0.5;
        e.note = "synthetic";
      }
      e.idle_power_w = s.idle_w;
      e.above_idle_j = (watts - s.idle_w) * (t1 - t0);
      w.gpus.push_back(e);
      w.gpu_energy_j += e.energy_j;
      w.gpu_above_idle_j = w.gpu_above_idle_j.value_or(0) + *e.above_idle_j;
    }
    m.windows.push_back(w);
    return static_cast<int>(m.windows.size() - 1);
  };
  add_window("idle", "idle", -1, -1, 0, idle_end, s.idle_w);
  for (int r = 0; r < s.runs; ++r) {
    const double t0 = idle_end + r * run_len, tp = t0 + 0.2 * run_len, t1 = t0 + run_len;
    const double run_w = 0.2 * s.prefill_w + 0.8 * s.decode_w;
    const int rw = add_window("run", "run", r, -1, t0, t1, run_w);
    const int pw = add_window("prefill", "phase", r, rw, t0, tp, s.prefill_w);
    m.windows[static_cast<std::size_t>(pw)].counts["tokens"] = s.tokens_prefill;
    const int dw = add_window("decode", "phase", r, rw, tp, t1, s.decode_w);
    m.windows[static_cast<std::size_t>(dw)].counts["tokens"] = s.tokens_decode;
    RunInfo ri;
    ri.index = r;
    ri.window = rw;
    m.runs.push_back(ri);
  }
  for (const auto& [k, v] : repeat_values(m)) m.stats.push_back({k, summarize(v)});
  return m;
}

}  // namespace jouleprof
