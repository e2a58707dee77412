// What a GPU's readings are and where they are kept: the metrics, a GPU's identity and its
// sampled timelines. Part of the result model (result.hpp); sensors fill them, the sampler owns
// them while measuring, the result and the store carry them afterwards.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jouleprof/core/series.hpp"

namespace jouleprof {

/// Every reading a GPU backend may provide. Units are in the names.
enum class Metric : int {
  power_sample_w,    ///< driver power-sample buffer (~20 ms spacing on H100)
  power_instant_w,   ///< NVML field 186, short-window power
  power_average_w,   ///< nvmlDeviceGetPowerUsage / field 185: a 1-s running average on Hopper
  energy_j,          ///< cumulative energy counter (read at window edges only: ~5 ms a call)
  sm_clock_mhz,
  mem_clock_mhz,
  gpu_util_pct,
  mem_util_pct,
  temperature_c,
  memory_used_mib,
  power_limit_w,     ///< enforced power limit
  throttle_reasons,  ///< clock event reason bit mask
  count_
};
constexpr int kMetricCount = static_cast<int>(Metric::count_);
const char* metric_name(Metric m);
std::optional<Metric> metric_from_name(const std::string& name);

/// Names of the set bits of an NVML clock-event (throttle) reason mask.
std::vector<std::string> throttle_reason_names(uint64_t mask);

struct GpuInfo {
  int index = 0;  ///< backend (NVML) index
  std::string name, uuid, pci_bus_id, driver_version, backend;
  bool simulated = false;
  std::optional<double> power_limit_w, power_limit_min_w, power_limit_max_w;
  std::optional<bool> persistence_mode, mig_enabled;
};

struct SensorError {
  double t_s;
  std::string message;
};

/// Everything sampled from one GPU. energy_j holds the counter reads as (t, joules).
struct GpuTimeline {
  explicit GpuTimeline(std::size_t max_in_memory);
  std::array<Series, kMetricCount> series;
  std::vector<SensorError> errors;  ///< first errors per metric (bounded)
  std::set<uint64_t> throttle_masks_seen;
  std::optional<double> lost_at_s;  ///< the GPU stopped answering
  std::size_t error_count = 0;
};

}  // namespace jouleprof
