#include "jouleprof/sampler/monitor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "jouleprof/core/integrate.hpp"
#include "jouleprof/core/uuid.hpp"

namespace jouleprof {

Result<std::unique_ptr<Monitor>> Monitor::create(const MonitorOptions& opt) {
  std::unique_ptr<Monitor> m(new Monitor(opt));
  auto set = open_gpus(opt.gpus, m->tb_);
  if (!set) return set.error();
  m->gpus_ = std::move(*set);
  m->idle_w_.assign(m->gpus_.gpus.size(), std::nullopt);
  m->sampler_ = std::make_unique<Sampler>(m->gpus_, m->tb_, opt.sampler);
  m->sampler_->start();
  return m;
}

Monitor::~Monitor() {
  if (sampler_) sampler_->stop();
}

Monitor::WindowId Monitor::begin_at(std::string_view name, std::optional<double> t_s,
                                    std::string_view kind, int run) {
  if (!t_s && opt_.synchronize) opt_.synchronize();
  const double t = t_s ? *t_s : tb_.now_s();
  WindowId id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Window w;
    w.name = std::string(name);
    w.kind = std::string(kind);
    w.run = run;
    w.t0 = t;
    if (!open_.empty()) w.parent = static_cast<int>(open_.back());
    windows_.push_back(std::move(w));
    id = windows_.size() - 1;
    open_.push_back(id);
  }
  sampler_->request_counter_read();
  return id;
}

void Monitor::end_at(WindowId id, std::optional<double> t_s, bool complete) {
  if (!t_s && opt_.synchronize) opt_.synchronize();
  const double t = t_s ? *t_s : tb_.now_s();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (id >= windows_.size() || !windows_[id].open) return;
    windows_[id].t1 = std::max(t, windows_[id].t0);
    windows_[id].open = false;
    // An end before its begin (a marker's explicit time) measures nothing: never "complete".
    windows_[id].complete = complete && t >= windows_[id].t0;
    // Windows mostly close in reverse order of opening: the search from the back is short.
    open_.erase(std::find(open_.rbegin(), open_.rend(), id).base() - 1);
  }
  sampler_->request_counter_read();
}

void Monitor::count(WindowId id, const std::string& key, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (id < windows_.size()) windows_[id].counts[key] += value;
}

std::optional<Monitor::WindowId> Monitor::find(std::string_view name, bool include_closed) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!include_closed) {
    for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
      if (windows_[*it].name == name) return *it;
    }
    return std::nullopt;
  }
  for (std::size_t i = windows_.size(); i-- > 0;) {
    if (windows_[i].name == name) return i;
  }
  return std::nullopt;
}

std::vector<Monitor::WindowId> Monitor::open_windows() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;  // ascending: ids grow and closing keeps the order
}

void Monitor::set_idle_power(std::vector<std::optional<double>> watts, std::string source) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_w_ = std::move(watts);
  idle_w_.resize(gpus_.gpus.size());
  idle_source_ = std::move(source);
}

bool Monitor::isolated(const std::vector<Window>& all, std::size_t i) const {
  // Pre- and post-order numbers of the window tree make "is an ancestor" O(1): walking parent
  // chains made 5000 nested phases cubic (172 s).
  const std::size_t n = all.size();
  std::vector<std::vector<std::size_t>> children(n);
  std::vector<std::size_t> roots;
  for (std::size_t k = 0; k < n; ++k) {
    const int p = all[k].parent;
    if (p >= 0 && static_cast<std::size_t>(p) < n && static_cast<std::size_t>(p) != k) {
      children[static_cast<std::size_t>(p)].push_back(k);
    } else {
      roots.push_back(k);
    }
  }
  std::vector<std::size_t> pre(n, 0), post(n, 0);
  std::size_t clock = 0;
  std::vector<std::pair<std::size_t, std::size_t>> stack;  // (window, next child)
  for (std::size_t r : roots) {
    stack.push_back({r, 0});
    pre[r] = ++clock;
    while (!stack.empty()) {
      auto& [w, next] = stack.back();
      if (next < children[w].size()) {
        const std::size_t c = children[w][next++];
        pre[c] = ++clock;
        stack.push_back({c, 0});
      } else {
        post[w] = ++clock;
        stack.pop_back();
      }
    }
  }
  auto is_ancestor = [&](std::size_t a, std::size_t of) { return pre[a] < pre[of] && post[of] < post[a]; };
  const double lo = all[i].t0 - opt_.energy.response_lead_s, hi = all[i].t1 + opt_.energy.response_tail_s;
  for (std::size_t j = 0; j < all.size(); ++j) {
    if (j == i || is_ancestor(j, i) || is_ancestor(i, j)) continue;
    const bool t0_near = all[j].t0 >= lo && all[j].t0 <= hi;
    const bool t1_near = !all[j].open && all[j].t1 >= lo && all[j].t1 <= hi;
    if (t0_near || t1_near) return false;
  }
  return true;
}

WindowResult Monitor::compute(const std::vector<Window>& all, std::size_t i) const {
  const Window& w = all[i];
  const bool alone = isolated(all, i);
  WindowResult r;
  r.name = w.name;
  r.kind = w.kind;
  r.run = w.run;
  r.parent = w.parent;
  r.t0_s = w.t0;
  r.t1_s = w.t1;
  r.complete = w.complete;
  r.counts = w.counts;
  const double margin = 1.0;
  bool all_idle = true;
  double above = 0;
  for (std::size_t g = 0; g < gpus_.gpus.size(); ++g) {
    GpuWindowData d;
    // The driver's sample buffer is the timeline; without it, the best polled field.
    for (auto [m, src] : {std::pair{Metric::power_sample_w, "timeline"},
                          std::pair{Metric::power_instant_w, "timeline(instant)"},
                          std::pair{Metric::power_average_w, "timeline(average)"}}) {
      d.power = sampler_->slice(g, m, w.t0 - margin, w.t1 + margin);
      d.power_source = src;
      if (d.power.size() >= 2) break;
    }
    d.counter = sampler_->slice(g, Metric::energy_j, w.t0 - margin, w.t1 + margin);
    d.idle_power_w = g < idle_w_.size() ? idle_w_[g] : std::nullopt;
    d.isolated = alone;
    GpuEnergy e = window_energy(d, w.t0, w.t1, opt_.energy);
    r.gpu_energy_j += e.energy_j;
    if (e.above_idle_j) {
      above += *e.above_idle_j;
    } else {
      all_idle = false;
    }
    r.gpus.push_back(std::move(e));
  }
  if (all_idle && !r.gpus.empty()) r.gpu_above_idle_j = above;
  const CpuTimeline& cpu = sampler_->cpu();
  for (std::size_t d = 0; d < cpu.domains.size(); ++d) {
    const auto s = sampler_->cpu_slice(d, w.t0 - margin, w.t1 + margin);
    const auto e0 = interpolate(s, w.t0), e1 = interpolate(s, w.t1);
    if (e0 && e1) r.cpu.push_back({cpu.domains[d], *e1 - *e0});
  }
  return r;
}

Result<WindowResult> Monitor::energy(WindowId id) const {
  std::vector<Window> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (id >= windows_.size()) return make_error(Errc::not_found, "no such window");
    if (windows_[id].open) return make_error(Errc::invalid_argument, "window '" + windows_[id].name + "' is still open");
    all = windows_;
  }
  return compute(all, id);
}

std::optional<double> Monitor::final_at_s(WindowId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (id >= windows_.size() || windows_[id].open) return std::nullopt;
  constexpr double kSamplePeriods = 2 * 0.02;  // the driver's ~20 ms samples, each reported late
  return windows_[id].t1 + opt_.energy.response_tail_s + kSamplePeriods;
}

bool Monitor::is_final(WindowId id) const {
  const std::optional<double> at = final_at_s(id);
  if (!at) return false;
  if (finished_) return true;
  // Final when every GPU's power timeline reaches past that time: the sampler has drained the
  // samples the window's energy uses, and it serves counter requests (the end edge's) before
  // every such drain.
  for (std::size_t g = 0; g < gpus_.gpus.size(); ++g) {
    const GpuSensor& gpu = *gpus_.gpus[g];
    for (Metric m : {Metric::power_sample_w, Metric::power_instant_w, Metric::power_average_w}) {
      if (!gpu.supports(m)) continue;
      const std::vector<Sample> s = sampler_->slice(g, m, *at, std::numeric_limits<double>::max());
      if (s.empty() || s.back().t_s < *at) return false;
      break;
    }
  }
  return true;
}

Measurement Monitor::finish() {
  Measurement m;
  const double end = tb_.now_s();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Window& w : windows_) {
      if (w.open) {
        w.t1 = end;
        w.open = false;
        w.complete = false;
      }
    }
    open_.clear();
  }
  sampler_->stop();
  finished_ = true;
  m.backend = gpus_.backend;
  m.simulated = gpus_.simulated();
  m.device_note = gpus_.note;
  m.origin_realtime_ns = tb_.origin_realtime_ns();
  m.run_uuid = random_uuid();  // not the start time: parallel workers can start in the same ns
  m.time_calibrations = tb_.calibrations();
  m.duration_s = end;
  m.sampler_cpu_s = sampler_->thread_cpu_s();
  for (std::size_t g = 0; g < gpus_.gpus.size(); ++g) {
    const GpuSensor& gpu = *gpus_.gpus[g];
    m.gpus.push_back(gpu.info());
    const GpuTimeline& tl = sampler_->timeline(g);
    GpuRunState st;
    auto range = [&](Metric k, std::optional<double>& lo, std::optional<double>& hi) {
      tl.series[static_cast<int>(k)].for_each([&](const Sample& s) {
        lo = lo ? std::min(*lo, s.value) : s.value;
        hi = hi ? std::max(*hi, s.value) : s.value;
      });
    };
    range(Metric::temperature_c, st.temperature_min_c, st.temperature_max_c);
    range(Metric::sm_clock_mhz, st.sm_clock_min_mhz, st.sm_clock_max_mhz);
    std::optional<double> lo, hi;
    range(Metric::mem_clock_mhz, lo, st.mem_clock_mhz);
    range(Metric::power_limit_w, lo, st.power_limit_w);
    uint64_t masks = 0;
    for (uint64_t mask : tl.throttle_masks_seen) masks |= mask;
    st.throttle_reasons_seen = throttle_reason_names(masks);
    st.errors = tl.errors;
    st.error_count = tl.error_count;
    st.lost_at_s = tl.lost_at_s;
    for (int k = 0; k < kMetricCount; ++k) {
      if (!gpu.supports(static_cast<Metric>(k))) st.unsupported.emplace_back(metric_name(static_cast<Metric>(k)));
    }
    st.idle_power_w = g < idle_w_.size() ? idle_w_[g] : std::nullopt;
    st.idle_source = idle_source_;
    if (tl.lost_at_s) {
      m.warnings.push_back("GPU " + std::to_string(gpu.info().index) + " stopped answering at t=" +
                           std::to_string(*tl.lost_at_s) + " s; energies after that are missing");
    }
    m.gpu_state.push_back(std::move(st));
    m.timelines.push_back(sampler_->shared_timeline(g));
  }
  const CpuTimeline& cpu = sampler_->cpu();
  m.cpu_domains = cpu.domains;
  m.cpu_unavailable_reason = cpu.unavailable_reason;
  for (const Series& s : cpu.energy_j) m.cpu_energy.push_back(s.all());
  std::vector<Window> ws;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ws = windows_;
  }
  for (std::size_t i = 0; i < ws.size(); ++i) m.windows.push_back(compute(ws, i));
  return m;
}

}  // namespace jouleprof
