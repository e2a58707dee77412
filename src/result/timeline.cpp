#include "jouleprof/result/timeline.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace jouleprof {

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::power_sample_w: return "power_sample_w";
    case Metric::power_instant_w: return "power_instant_w";
    case Metric::power_average_w: return "power_average_w";
    case Metric::energy_j: return "energy_j";
    case Metric::sm_clock_mhz: return "sm_clock_mhz";
    case Metric::mem_clock_mhz: return "mem_clock_mhz";
    case Metric::gpu_util_pct: return "gpu_util_pct";
    case Metric::mem_util_pct: return "mem_util_pct";
    case Metric::temperature_c: return "temperature_c";
    case Metric::memory_used_mib: return "memory_used_mib";
    case Metric::power_limit_w: return "power_limit_w";
    case Metric::throttle_reasons: return "throttle_reasons";
    case Metric::count_: break;
  }
  return "unknown";
}

std::optional<Metric> metric_from_name(const std::string& name) {
  for (int i = 0; i < kMetricCount; ++i) {
    if (name == metric_name(static_cast<Metric>(i))) return static_cast<Metric>(i);
  }
  return std::nullopt;
}

std::vector<std::string> throttle_reason_names(uint64_t mask) {
  // NVML clocks event reasons (nvmlClocksEventReason*), in bit order.
  static const char* const names[] = {
      "gpu_idle",           "applications_clocks_setting", "sw_power_cap",  "hw_slowdown",
      "sync_boost",         "sw_thermal_slowdown",         "hw_thermal_slowdown",
      "hw_power_brake_slowdown", "display_clock_setting"};
  std::vector<std::string> out;
  for (unsigned bit = 0; bit < 64; ++bit) {
    if ((mask >> bit) & 1ULL) {
      out.emplace_back(bit < sizeof(names) / sizeof(names[0]) ? names[bit]
                                                               : "bit" + std::to_string(bit));
    }
  }
  return out;
}

GpuTimeline::GpuTimeline(std::size_t max_in_memory) {
  for (auto& s : series) s = Series(max_in_memory);
}

}  // namespace jouleprof
