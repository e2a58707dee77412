#include "jouleprof/sampler/sampler.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>

namespace jouleprof {
namespace {

constexpr std::size_t kMaxErrorsKept = 20;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr Metric kFast[] = {Metric::power_instant_w, Metric::power_average_w};
constexpr Metric kSlow[] = {Metric::sm_clock_mhz,    Metric::mem_clock_mhz,   Metric::gpu_util_pct,
                            Metric::mem_util_pct,    Metric::temperature_c,   Metric::memory_used_mib,
                            Metric::power_limit_w,   Metric::throttle_reasons};

}  // namespace

Sampler::Sampler(GpuSet& gpus, TimeBase& tb, SamplerConfig cfg)
    : gpus_(gpus), tb_(tb), cfg_(cfg) {
  for (std::size_t i = 0; i < gpus_.gpus.size(); ++i) {
    timelines_.push_back(std::make_shared<GpuTimeline>(cfg_.max_samples_in_memory));
  }
  if (cfg_.read_cpu) {
    auto r = Rapl::open();
    if (r) {
      rapl_ = std::move(*r);
      for (const auto& d : rapl_->domains()) {
        cpu_.domains.push_back(d.name);
        cpu_.energy_j.emplace_back(cfg_.max_samples_in_memory);
      }
    } else {
      cpu_.unavailable_reason = r.error().message;
    }
  } else {
    cpu_.unavailable_reason = "CPU energy not requested";
  }
}

Sampler::~Sampler() { stop(); }

void Sampler::start() {
  if (cfg_.manual) {
    if (!manual_running_) begin_schedule();
    manual_running_ = true;
    return;
  }
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { loop(); });
}

void Sampler::stop() {
  if (cfg_.manual) {
    if (manual_running_) final_reads();
    manual_running_ = false;
    return;
  }
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Sampler::request_counter_read() {
  counter_requests_.fetch_add(1, std::memory_order_relaxed);
  if (cfg_.manual) {  // no thread: served now, as the thread would at once
    if (manual_running_) pass();
    return;
  }
  wake_.notify_one();
}

void Sampler::poll_due() {
  if (cfg_.manual && manual_running_) pass();
}

void Sampler::flush_counter_reads() {
  if (cfg_.manual) return;  // served when asked
  const uint64_t target = counter_requests_.fetch_add(1) + 1;
  std::unique_lock<std::mutex> lock(wake_mu_);
  wake_.notify_one();
  done_cv_.wait_for(lock, std::chrono::seconds(10), [&] {
    return counter_served_.load() >= target || !thread_.joinable() || stop_.load();
  });
}

void Sampler::record_error(std::size_t gpu, Metric m, const Error& e, double now) {
  GpuTimeline& tl = *timelines_[gpu];
  std::lock_guard<std::mutex> lock(data_mu_);
  tl.error_count++;
  if (e.code == Errc::lost && !tl.lost_at_s) tl.lost_at_s = now;
  if (tl.errors.size() < kMaxErrorsKept) {
    tl.errors.push_back({now, std::string(metric_name(m)) + ": " + e.message});
  }
}

void Sampler::poll_fast(double now) {
  for (std::size_t g = 0; g < gpus_.gpus.size(); ++g) {
    GpuSensor& gpu = *gpus_.gpus[g];
    if (timelines_[g]->lost_at_s) continue;
    scratch_.clear();
    if (gpu.supports(Metric::power_sample_w)) {
      auto r = gpu.drain_power_samples(scratch_);
      if (!r) record_error(g, Metric::power_sample_w, r.error(), now);
    }
    double values[std::size(kFast)];
    bool have[std::size(kFast)] = {};
    for (std::size_t k = 0; k < std::size(kFast); ++k) {
      if (!gpu.supports(kFast[k])) continue;
      auto v = gpu.read(kFast[k]);
      if (v) {
        values[k] = *v;
        have[k] = true;
      } else {
        record_error(g, kFast[k], v.error(), now);
      }
    }
    const double t = tb_.now_s();
    std::lock_guard<std::mutex> lock(data_mu_);
    GpuTimeline& tl = *timelines_[g];
    for (const Sample& s : scratch_) tl.series[static_cast<int>(Metric::power_sample_w)].append(s.t_s, s.value);
    for (std::size_t k = 0; k < std::size(kFast); ++k) {
      if (have[k]) tl.series[static_cast<int>(kFast[k])].append(t, values[k]);
    }
  }
}

void Sampler::poll_slow(double now) {
  for (std::size_t g = 0; g < gpus_.gpus.size(); ++g) {
    GpuSensor& gpu = *gpus_.gpus[g];
    if (timelines_[g]->lost_at_s) continue;
    for (Metric m : kSlow) {
      if (!gpu.supports(m)) continue;
      auto v = gpu.read(m);
      if (!v) {
        record_error(g, m, v.error(), now);
        if (timelines_[g]->lost_at_s) break;
        continue;
      }
      std::lock_guard<std::mutex> lock(data_mu_);
      GpuTimeline& tl = *timelines_[g];
      tl.series[static_cast<int>(m)].append(tb_.now_s(), *v);
      if (m == Metric::throttle_reasons && *v != 0) {
        tl.throttle_masks_seen.insert(static_cast<uint64_t>(*v));
      }
    }
  }
}

void Sampler::read_counters() {
  for (std::size_t g = 0; g < gpus_.gpus.size(); ++g) {
    GpuSensor& gpu = *gpus_.gpus[g];
    if (timelines_[g]->lost_at_s || !gpu.supports(Metric::energy_j)) continue;
    const double t0 = tb_.now_s();
    auto mj = gpu.read_energy_mj();
    const double t1 = tb_.now_s();
    if (!mj) {
      record_error(g, Metric::energy_j, mj.error(), t1);
      continue;
    }
    std::lock_guard<std::mutex> lock(data_mu_);
    // The read's midpoint stands for its time; the call itself takes ~5 ms on H100.
    timelines_[g]->series[static_cast<int>(Metric::energy_j)].append(0.5 * (t0 + t1),
                                                                      static_cast<double>(*mj) / 1000.0);
  }
}

void Sampler::read_cpu(double now) {
  if (!rapl_) return;
  auto r = rapl_->read();
  if (!r) {
    std::lock_guard<std::mutex> lock(data_mu_);
    cpu_.unavailable_reason = r.error().message;
    rapl_.reset();
    return;
  }
  std::lock_guard<std::mutex> lock(data_mu_);
  for (std::size_t d = 0; d < r->size(); ++d) cpu_.energy_j[d].append(now, (*r)[d]);
}

void Sampler::begin_schedule() {
  const double start = tb_.now_s();
  next_fast_ = start;
  next_slow_ = start;
  next_recal_ = start + cfg_.recalibrate_period_s;
  next_counter_ = cfg_.counter_period_s > 0 ? start + cfg_.counter_period_s : 1e300;
  read_counters();
}

double Sampler::pass() {
  const uint64_t requested = counter_requests_.load();
  if (requested > counter_served_.load()) {
    read_counters();
    counter_served_.store(requested);
    std::lock_guard<std::mutex> lock(wake_mu_);
    done_cv_.notify_all();
  }
  double now = tb_.now_s();
  if (now >= next_fast_) {
    poll_fast(now);
    read_cpu(now);
    next_fast_ = std::max(next_fast_ + cfg_.fast_period_s, now + 0.25 * cfg_.fast_period_s);
  }
  if (now >= next_slow_) {
    poll_slow(now);
    next_slow_ = std::max(next_slow_ + cfg_.slow_period_s, now + 0.25 * cfg_.slow_period_s);
  }
  if (now >= next_counter_) {
    read_counters();
    next_counter_ = now + cfg_.counter_period_s;
  }
  if (now >= next_recal_) {
    tb_.recalibrate();
    next_recal_ = now + cfg_.recalibrate_period_s;
  }
  thread_cpu_s_.store(thread_cpu_seconds());
  loops_.fetch_add(1, std::memory_order_relaxed);
  return std::min({next_fast_, next_slow_, next_counter_, next_recal_});
}

// Final reads so the last window has samples and a counter value after its end.
void Sampler::final_reads() {
  poll_fast(tb_.now_s());
  read_cpu(tb_.now_s());
  read_counters();
  counter_served_.store(counter_requests_.load());
  thread_cpu_s_.store(thread_cpu_seconds());
  std::lock_guard<std::mutex> lock(wake_mu_);
  done_cv_.notify_all();
}

void Sampler::loop() {
  begin_schedule();
  while (true) {
    const double wake_at = pass();
    std::unique_lock<std::mutex> lock(wake_mu_);
    if (stop_) break;
    const double wait_s = std::max(0.0, wake_at - tb_.now_s());
    wake_.wait_for(lock, std::chrono::duration<double>(wait_s), [&] {
      return stop_.load() || counter_requests_.load() > counter_served_.load();
    });
    if (stop_) break;
  }
  final_reads();
}

std::vector<Sample> Sampler::slice(std::size_t gpu, Metric m, double t0, double t1) const {
  std::lock_guard<std::mutex> lock(data_mu_);
  return timelines_[gpu]->series[static_cast<int>(m)].slice(t0, t1);
}

std::vector<Sample> Sampler::cpu_slice(std::size_t domain, double t0, double t1) const {
  std::lock_guard<std::mutex> lock(data_mu_);
  return cpu_.energy_j[domain].slice(t0, t1);
}

}  // namespace jouleprof
