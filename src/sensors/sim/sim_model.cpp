#include "jouleprof/sensors/sim_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>

namespace jouleprof {

PowerSchedule::PowerSchedule(double initial_w) {
  Segment s;
  s.t_start = -1e18;
  s.high_w = initial_w;
  segs_.push_back(s);
}

void PowerSchedule::add(Segment s) {
  std::lock_guard<std::mutex> lock(mu_);
  // A new segment replaces whatever was scheduled from its start on.
  while (segs_.size() > 1 && segs_.back().t_start >= s.t_start) segs_.pop_back();
  segs_.push_back(s);
}

void PowerSchedule::set_constant(double t, double watts) {
  Segment s;
  s.t_start = t;
  s.high_w = watts;
  add(s);
}

void PowerSchedule::set_square(double t, double on_s, double off_s, double high_w, double low_w) {
  Segment s;
  s.t_start = t;
  s.square = true;
  s.on_s = on_s;
  s.off_s = off_s;
  s.high_w = high_w;
  s.low_w = low_w;
  add(s);
}

std::vector<PowerSchedule::Segment> PowerSchedule::segments() const {
  std::lock_guard<std::mutex> lock(mu_);
  return segs_;
}

double PowerSchedule::segment_integral(const Segment& s, double a, double b) {
  if (b <= a) return 0;
  if (!s.square) return s.high_w * (b - a);
  const double period = s.on_s + s.off_s;
  auto F = [&](double x) {  // integral from the segment's start to start + x
    const double n = std::floor(x / period);
    const double r = x - n * period;
    return n * (s.high_w * s.on_s + s.low_w * s.off_s) + s.high_w * std::min(r, s.on_s) +
           s.low_w * std::max(0.0, r - s.on_s);
  };
  return F(b - s.t_start) - F(a - s.t_start);
}

double PowerSchedule::at(double t) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Segment* cur = &segs_.front();
  for (const Segment& s : segs_) {
    if (s.t_start <= t) cur = &s;
  }
  if (!cur->square) return cur->high_w;
  const double period = cur->on_s + cur->off_s;
  const double r = std::fmod(t - cur->t_start, period);
  return r < cur->on_s ? cur->high_w : cur->low_w;
}

double PowerSchedule::integral(double a, double b) const {
  std::lock_guard<std::mutex> lock(mu_);
  double e = 0;
  for (std::size_t i = 0; i < segs_.size(); ++i) {
    const double s0 = std::max(a, segs_[i].t_start);
    const double s1 = std::min(b, i + 1 < segs_.size() ? segs_[i + 1].t_start : b);
    e += segment_integral(segs_[i], s0, s1);
  }
  return e;
}

SimGpuModel::SimGpuModel(const SimConfig& cfg) : cfg_(cfg), sched_(cfg.initial.high_w) {
  if (cfg.initial.square) {
    sched_.set_square(-1e17, cfg.initial.on_s, cfg.initial.off_s, cfg.initial.high_w,
                      cfg.initial.low_w);
  }
  for (const auto& s : cfg.schedule) {
    if (s.square) {
      sched_.set_square(s.t_start, s.on_s, s.off_s, s.high_w, s.low_w);
    } else {
      sched_.set_constant(s.t_start, s.high_w);
    }
  }
}

bool SimGpuModel::supports(const std::string& feature) const {
  return std::find(cfg_.unsupported.begin(), cfg_.unsupported.end(), feature) ==
         cfg_.unsupported.end();
}

double SimGpuModel::last_update(double now_s) const {
  return std::floor(now_s / cfg_.update_period_s) * cfg_.update_period_s;
}

double SimGpuModel::window_mean(double end, double len) const {
  return sched_.integral(end - len, end) / len;
}

namespace {
// Deterministic noise in [-1, 1] from a sample index (splitmix64).
double noise_unit(int64_t k) {
  uint64_t z = static_cast<uint64_t>(k) + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / static_cast<double>(1ULL << 53) * 2.0 - 1.0;
}
}  // namespace

std::vector<SimGpuModel::RawSample> SimGpuModel::samples(double after_s, double now_s) const {
  std::vector<RawSample> out;
  const double p = cfg_.sample_period_s;
  const auto k_last = static_cast<int64_t>(std::floor(now_s / p));
  const int64_t k_first =
      std::max(static_cast<int64_t>(std::floor(after_s / p)) + 1,
               k_last - static_cast<int64_t>(cfg_.buffer_samples) + 1);
  for (int64_t k = k_first; k <= k_last; ++k) {
    const double t = static_cast<double>(k) * p;
    if (t <= after_s) continue;
    double w = window_mean(t, cfg_.sample_window_s);
    if (cfg_.noise_w > 0) w += cfg_.noise_w * noise_unit(k);
    out.push_back({t, std::max(0.0, w)});
  }
  return out;
}

double SimGpuModel::power_instant_w(double now_s) const {
  return window_mean(last_update(now_s), cfg_.instant_window_s);
}

double SimGpuModel::power_average_w(double now_s) const {
  return window_mean(last_update(now_s), cfg_.average_window_s);
}

uint64_t SimGpuModel::energy_mj(double now_s) const {
  const double j = sched_.integral(0, std::max(0.0, last_update(now_s)));
  return cfg_.energy_start_mj + static_cast<uint64_t>(std::llround(j * 1000.0));
}

double SimGpuModel::temperature_c(double now_s) const {
  return 30.0 + 0.075 * window_mean(now_s, 20.0);  // a slow first-order thermal response
}

double SimGpuModel::sm_clock_mhz(double now_s) const {
  {
    // A load of start_load runs at its operating point from its first instant (a real GPU's
    // clock follows its load within milliseconds), not once the 1-s average power has risen.
    std::lock_guard<std::mutex> lock(control_mu_);
    if (load_clock_mhz_ > 0) return load_clock_mhz_;
    if (load_clock_mhz_ < 0) return 345;  // a load started by start_load has ended
  }
  const double p = power_average_w(now_s);
  if (p < cfg_.idle_w + 20) return 345;
  return p >= 0.98 * cfg_.tdp_w ? 1755 : 1980;
}

double SimGpuModel::mem_clock_mhz(double /*now_s*/) const {
  std::lock_guard<std::mutex> lock(control_mu_);
  if (control_.mem_clock_lock_mhz) return *control_.mem_clock_lock_mhz;
  return 2619;
}

void SimGpuModel::set_control(const SimControl& c) {
  std::lock_guard<std::mutex> lock(control_mu_);
  control_ = c;
}

SimControl SimGpuModel::control() const {
  std::lock_guard<std::mutex> lock(control_mu_);
  return control_;
}

namespace {
std::mutex g_labels_mu;
std::map<std::string, std::string>& workload_labels() {
  static std::map<std::string, std::string> m;
  return m;
}
}  // namespace

void set_sim_workload_labels(const std::map<std::string, std::string>& labels) {
  std::lock_guard<std::mutex> lock(g_labels_mu);
  workload_labels() = labels;
}

std::map<std::string, std::string> sim_workload_labels() {
  std::lock_guard<std::mutex> lock(g_labels_mu);
  return workload_labels();
}

const SimApplication* SimConfig::application_for(const std::map<std::string, std::string>& labels) const {
  for (const SimApplication& a : applications) {
    const bool all = std::all_of(a.match.begin(), a.match.end(), [&](const auto& kv) {
      const auto it = labels.find(kv.first);
      return it != labels.end() && it->second == kv.second;
    });
    if (all) return &a;
  }
  return nullptr;
}

SimOperatingPoint SimGpuModel::start_load(double t, double demand_w, double compute_share) {
  // The running application's own behaviour, where the scenario gives one (SimApplication).
  double time_factor = 1;
  if (!cfg_.applications.empty()) {
    if (const SimApplication* app = cfg_.application_for(sim_workload_labels())) {
      demand_w = cfg_.idle_w + std::max(0.0, demand_w - cfg_.idle_w) * app->power_scale;
      if (app->compute_share) compute_share = *app->compute_share;
      time_factor = app->time_scale;
    }
  }
  SimOperatingPoint op = sim_operating_point(cfg_, control(), demand_w, compute_share);
  op.time_scale *= time_factor;
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    load_clock_mhz_ = op.clock_mhz;
    load_mem_clock_mhz_ = op.mem_clock_mhz;
  }
  sched_.set_constant(t, op.power_w);
  return op;
}

void SimGpuModel::stop_load(double t) {
  sched_.set_constant(t, cfg_.idle_w);
  std::lock_guard<std::mutex> lock(control_mu_);
  load_clock_mhz_ = -1;
}

namespace {
std::mutex g_device_control_mu;
std::map<int, SimControl>& device_controls() {
  static std::map<int, SimControl> m;
  return m;
}
}  // namespace

SimControl sim_device_control(int index) {
  std::lock_guard<std::mutex> lock(g_device_control_mu);
  auto it = device_controls().find(index);
  return it == device_controls().end() ? SimControl{} : it->second;
}

void set_sim_device_control(int index, const SimControl& c) {
  std::lock_guard<std::mutex> lock(g_device_control_mu);
  device_controls()[index] = c;
}

std::vector<unsigned> sim_supported_mem_clocks() { return {2619, 1593}; }

std::vector<unsigned> sim_supported_gpu_clocks(unsigned mem_clock_mhz) {
  std::vector<unsigned> out;
  const auto mems = sim_supported_mem_clocks();
  if (std::find(mems.begin(), mems.end(), mem_clock_mhz) == mems.end()) return out;
  for (unsigned f = 1980; f >= 345; f -= 15) out.push_back(f);
  return out;
}

namespace {
constexpr double kMaxClock = 1980, kMaxMemClock = 2619;

double voltage(double f) { return f <= 900 ? 0.65 : 0.65 + 0.35 * (f - 900) / (kMaxClock - 900); }
double dynamic_share(double f) { return (f / kMaxClock) * voltage(f) * voltage(f); }

double law_power(const SimConfig& cfg, double demand_w, double share, double f, double m) {
  const double g = dynamic_share(f);
  const double active = std::max(0.0, demand_w - cfg.idle_w);
  return cfg.idle_w + active * (share * g + (1 - share) * (0.5 + 0.5 * g)) * (0.6 + 0.4 * m / kMaxMemClock);
}
}  // namespace

SimOperatingPoint sim_operating_point(const SimConfig& cfg, const SimControl& ctl, double demand_w,
                                      double compute_share) {
  const double share = std::clamp(compute_share, 0.0, 1.0);
  SimOperatingPoint op;
  op.mem_clock_mhz = ctl.mem_clock_lock_mhz.value_or(kMaxMemClock);
  double f = std::min(kMaxClock, ctl.sm_clock_lock_mhz.value_or(kMaxClock));
  const double limit = ctl.power_limit_w.value_or(cfg.tdp_w);
  // The power limit lowers the clock in the driver's 15 MHz steps until the load fits.
  while (f > 345 && law_power(cfg, demand_w, share, f, op.mem_clock_mhz) > limit) f -= 15;
  op.clock_mhz = f;
  op.power_w = std::min(limit, law_power(cfg, demand_w, share, f, op.mem_clock_mhz));
  op.time_scale = share * kMaxClock / f + (1 - share) * kMaxMemClock / op.mem_clock_mhz;
  return op;
}

double SimGpuModel::gpu_util_pct(double now_s) const {
  {
    // Busy exactly while a load of start_load runs, as its clock is (sm_clock_mhz).
    std::lock_guard<std::mutex> lock(control_mu_);
    if (load_clock_mhz_ != 0) return load_clock_mhz_ > 0 ? 100 : 0;
  }
  return power_instant_w(now_s) > cfg_.idle_w + 30 ? 100 : 0;
}

uint64_t SimGpuModel::throttle_reasons(double now_s) const {
  if (power_average_w(now_s) >= 0.98 * cfg_.tdp_w) return 0x4;  // SW power cap
  return power_average_w(now_s) < cfg_.idle_w + 20 ? 0x1 : 0;    // GPU idle
}

}  // namespace jouleprof
