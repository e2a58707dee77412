// The fallback: NVML's utilization rates (percent of the last sample period in which a kernel
// ran / device memory was read or written), read through the GPU's sensor every period.
#include "source.hpp"

namespace jouleprof::activity {
namespace {

class Utilization final : public Source {
 public:
  Utilization(GpuSensor& gpu, double period_s) : gpu_(gpu), period_s_(period_s) {}
  std::string name() const override { return gpu_.info().simulated ? "sim-utilization" : "nvml-utilization"; }
  const std::vector<std::string>& metrics() const override { return names_; }
  Result<std::optional<Window>> poll(double now_s) override {
    auto g = gpu_.read(jouleprof::Metric::gpu_util_pct);
    if (!g) return g.error();
    auto m = gpu_.read(jouleprof::Metric::mem_util_pct);
    if (!m) return m.error();
    const double t0 = last_t_ < 0 ? now_s - period_s_ : last_t_;
    last_t_ = now_s;
    return std::optional<Window>(Window{t0, now_s, {*g / 100.0, *m / 100.0}});
  }

 private:
  GpuSensor& gpu_;
  double period_s_;
  double last_t_ = -1;
  std::vector<std::string> names_{"gpu_util", "mem_util"};
};

}  // namespace

std::unique_ptr<Source> open_utilization(GpuSensor& gpu, double period_s) {
  return std::make_unique<Utilization>(gpu, period_s);
}

}  // namespace jouleprof::activity
