// One activity source per GPU (strategies: gpm_source.cpp, utilization_source.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/activity/activity.hpp"

namespace jouleprof::activity {

struct Window {
  double t0_s = 0, t1_s = 0;
  std::vector<double> values;  ///< one per metric, 0..1
};

class Source {
 public:
  virtual ~Source() = default;
  virtual std::string name() const = 0;
  virtual const std::vector<std::string>& metrics() const = 0;
  /// Called every period on the recorder's thread: the window that closed at now_s, if any.
  virtual Result<std::optional<Window>> poll(double now_s) = 0;
};

/// NVML GPM on the GPU with this NVML index; Errc::unsupported (with the reason) when the
/// library, the driver or the GPU has no GPM.
Result<std::unique_ptr<Source>> open_gpm(const std::string& nvml_library, unsigned nvml_index);
/// Utilization through the GPU's sensor (NVML or simulated).
std::unique_ptr<Source> open_utilization(GpuSensor& gpu, double period_s);

}  // namespace jouleprof::activity
