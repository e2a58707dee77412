#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "jouleprof/sensors/gpu_sensor.hpp"
#include "nvml_api.hpp"

namespace jouleprof::nvml {

/// A loaded and initialised NVML, shared by the devices opened from it.
struct Context {
  SymbolResolver lib;
  Api api;
  bool initialised = false;
  std::string driver_version;
  ~Context();
  static Result<std::shared_ptr<Context>> open(const std::string& library);
  static Result<std::shared_ptr<Context>> open(const SymbolResolver& lib, const std::string& library);
  Result<unsigned> device_count() const;
};

class NvmlGpu final : public GpuSensor {
 public:
  NvmlGpu(std::shared_ptr<Context> ctx, nvmlDevice_t dev, int index, const TimeBase& tb);
  const GpuInfo& info() const override { return info_; }
  bool supports(Metric m) const override { return supported_[static_cast<int>(m)]; }
  Result<void> drain_power_samples(std::vector<Sample>& out) override;
  Result<double> read(Metric m) override;
  Result<uint64_t> read_energy_mj() override;

 private:
  std::shared_ptr<Context> ctx_;
  nvmlDevice_t dev_;
  const TimeBase& tb_;
  GpuInfo info_;
  std::array<bool, kMetricCount> supported_{};
  unsigned long long last_seen_us_ = 0;
  std::vector<nvmlSample_t> buf_;
};

Result<std::unique_ptr<NvmlGpu>> open_device(const std::shared_ptr<Context>& ctx, unsigned index,
                                             const TimeBase& tb);

}  // namespace jouleprof::nvml
