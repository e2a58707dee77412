// The simulated GPU backend: a SimGpuModel read on the run time base.
#include "sim_gpu.hpp"

#include <cstdio>

namespace jouleprof {
namespace {

const char* feature_of(Metric m) {
  switch (m) {
    case Metric::power_sample_w: return "samples";
    case Metric::power_instant_w: return "instant";
    case Metric::power_average_w: return "average";
    case Metric::energy_j: return "energy";
    case Metric::sm_clock_mhz:
    case Metric::mem_clock_mhz: return "clocks";
    case Metric::gpu_util_pct:
    case Metric::mem_util_pct: return "utilization";
    case Metric::temperature_c: return "temperature";
    case Metric::memory_used_mib: return "memory";
    case Metric::power_limit_w: return "power_limit";
    case Metric::throttle_reasons: return "throttle";
    case Metric::count_: break;
  }
  return "";
}

}  // namespace

const char* sim_feature_of(Metric m) { return feature_of(m); }

std::string sim_gpu_uuid(int index) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "GPU-5151a000-0000-4000-8000-%012d", index);
  return buf;
}

SimGpu::SimGpu(int index, std::shared_ptr<SimGpuModel> model, const TimeBase& tb)
    : model_(std::move(model)), tb_(tb) {
  const SimConfig& c = model_->config();
  info_.index = index;
  info_.name = c.name;
  info_.uuid = sim_gpu_uuid(index);
  info_.pci_bus_id = "00000000:" + std::to_string(0x18 + index) + ":00.0";
  info_.driver_version = c.driver_version;
  info_.backend = "sim";
  info_.simulated = true;
  info_.power_limit_w = model_->control().power_limit_w.value_or(c.tdp_w);
  info_.power_limit_min_w = 200;
  info_.power_limit_max_w = c.tdp_w;
  info_.persistence_mode = true;
  info_.mig_enabled = c.mig_enabled;
}

bool SimGpu::supports(Metric m) const { return model_->supports(feature_of(m)); }

Result<void> SimGpu::drain_power_samples(std::vector<Sample>& out) {
  const double now = tb_.now_s();
  if (model_->failed(now)) return make_error(Errc::lost, "simulated GPU fell off the bus");
  if (!supports(Metric::power_sample_w)) return make_error(Errc::unsupported, "no sample buffer");
  for (const auto& s : model_->samples(last_sample_s_, now)) {
    out.push_back({s.t_s, s.power_w});
    last_sample_s_ = s.t_s;
  }
  return {};
}

Result<double> SimGpu::read(Metric m) {
  const double now = tb_.now_s();
  if (model_->failed(now)) return make_error(Errc::lost, "simulated GPU fell off the bus");
  if (!supports(m)) return make_error(Errc::unsupported, std::string(metric_name(m)) + " unsupported");
  switch (m) {
    case Metric::power_instant_w: return model_->power_instant_w(now);
    case Metric::power_average_w: return model_->power_average_w(now);
    case Metric::sm_clock_mhz: return model_->sm_clock_mhz(now);
    case Metric::mem_clock_mhz: return model_->mem_clock_mhz(now);
    case Metric::gpu_util_pct: return model_->gpu_util_pct(now);
    case Metric::mem_util_pct: return model_->gpu_util_pct(now) * 0.4;
    case Metric::temperature_c: return model_->temperature_c(now);
    case Metric::memory_used_mib: return 1024.0;
    case Metric::power_limit_w: return model_->control().power_limit_w.value_or(model_->config().tdp_w);
    case Metric::throttle_reasons: return static_cast<double>(model_->throttle_reasons(now));
    default: break;
  }
  return make_error(Errc::invalid_argument, std::string("not an instantaneous metric: ") + metric_name(m));
}

Result<uint64_t> SimGpu::read_energy_mj() {
  const double now = tb_.now_s();
  if (model_->failed(now)) return make_error(Errc::lost, "simulated GPU fell off the bus");
  if (!supports(Metric::energy_j)) return make_error(Errc::unsupported, "no energy counter");
  return model_->energy_mj(now);
}

}  // namespace jouleprof
