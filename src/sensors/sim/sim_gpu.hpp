#pragma once

#include <memory>

#include "jouleprof/sensors/gpu_sensor.hpp"
#include "jouleprof/sensors/sim_model.hpp"

namespace jouleprof {

/// The simulated GPU's UUID: a fixed prefix and the index, zero-padded to 12 digits.
std::string sim_gpu_uuid(int index);

/// Scenario feature name ("samples", "energy", ...) that gates a metric.
const char* sim_feature_of(Metric m);

class SimGpu final : public GpuSensor {
 public:
  SimGpu(int index, std::shared_ptr<SimGpuModel> model, const TimeBase& tb);
  const GpuInfo& info() const override { return info_; }
  bool supports(Metric m) const override;
  Result<void> drain_power_samples(std::vector<Sample>& out) override;
  Result<double> read(Metric m) override;
  Result<uint64_t> read_energy_mj() override;

 private:
  std::shared_ptr<SimGpuModel> model_;
  const TimeBase& tb_;
  GpuInfo info_;
  double last_sample_s_ = -1e18;
};

}  // namespace jouleprof
