// NVML GPM: two sample buffers alternate; each poll takes a sample and asks the driver for the
// metrics between it and the previous one (values in percent).
#include <array>
#include <utility>

#include "nvml/nvml_gpu.hpp"
#include "source.hpp"

namespace jouleprof::activity {
namespace {

struct Metric {
  const char* name;  ///< as in the models' data (DCGM profiling field names)
  unsigned id;
};
constexpr std::array<Metric, 7> kMetrics{{{"sm_active", nvml::kGpmSmUtil},
                                          {"sm_occupancy", nvml::kGpmSmOccupancy},
                                          {"tensor_active", nvml::kGpmAnyTensorUtil},
                                          {"dram_active", nvml::kGpmDramBwUtil},
                                          {"fp64_active", nvml::kGpmFp64Util},
                                          {"fp32_active", nvml::kGpmFp32Util},
                                          {"fp16_active", nvml::kGpmFp16Util}}};

class Gpm final : public Source {
 public:
  Gpm(std::shared_ptr<nvml::Context> ctx, nvmlDevice_t dev, std::array<nvmlGpmSample_t, 2> s)
      : ctx_(std::move(ctx)), dev_(dev), samples_(s) {
    for (const auto& m : kMetrics) names_.emplace_back(m.name);
  }
  ~Gpm() override {
    for (auto s : samples_)
      if (s) ctx_->api.GpmSampleFree(s);
  }
  std::string name() const override { return "nvml-gpm"; }
  const std::vector<std::string>& metrics() const override { return names_; }

  Result<std::optional<Window>> poll(double now_s) override {
    const auto& api = ctx_->api;
    nvmlGpmSample_t cur = samples_[next_];
    if (const nvmlReturn_t rc = api.GpmSampleGet(dev_, cur); rc != nvml::kSuccess)
      return make_error(Errc::vendor, nvml::describe(api, "nvmlGpmSampleGet", rc));
    const double prev_t = last_t_;
    last_t_ = now_s;
    next_ ^= 1;
    if (prev_t < 0) return std::optional<Window>{};
    auto req = std::make_unique<nvmlGpmMetricsGet_t>();  // ~16 kB: not on the stack
    req->version = nvml::kGpmMetricsGetVersion;
    req->numMetrics = kMetrics.size();
    req->sample1 = samples_[next_];  // the previous sample (next_ was flipped)
    req->sample2 = cur;
    for (std::size_t i = 0; i < kMetrics.size(); ++i) req->metrics[i].metricId = kMetrics[i].id;
    if (const nvmlReturn_t rc = api.GpmMetricsGet(req.get()); rc != nvml::kSuccess)
      return make_error(Errc::vendor, nvml::describe(api, "nvmlGpmMetricsGet", rc));
    Window w{prev_t, now_s, {}};
    for (std::size_t i = 0; i < kMetrics.size(); ++i)
      w.values.push_back(req->metrics[i].nvmlReturn == nvml::kSuccess ? req->metrics[i].value / 100.0 : -1.0);
    return std::optional<Window>(std::move(w));
  }

 private:
  std::shared_ptr<nvml::Context> ctx_;
  nvmlDevice_t dev_;
  std::array<nvmlGpmSample_t, 2> samples_;
  std::vector<std::string> names_;
  int next_ = 0;
  double last_t_ = -1;
};

}  // namespace

Result<std::unique_ptr<Source>> open_gpm(const std::string& nvml_library, unsigned nvml_index) {
  auto ctx = nvml::Context::open(nvml_library);
  if (!ctx) return ctx.error();
  const auto& api = (*ctx)->api;
  if (!api.GpmQueryDeviceSupport || !api.GpmSampleAlloc || !api.GpmSampleFree || !api.GpmSampleGet || !api.GpmMetricsGet)
    return make_error(Errc::unsupported, "the NVML library has no GPM entry points (driver older than 520)");
  nvmlDevice_t dev = nullptr;
  if (const nvmlReturn_t rc = api.DeviceGetHandleByIndex(nvml_index, &dev); rc != nvml::kSuccess)
    return make_error(Errc::vendor, nvml::describe(api, "nvmlDeviceGetHandleByIndex", rc));
  nvmlGpmSupport_t sup{nvml::kGpmSupportVersion, 0};
  if (const nvmlReturn_t rc = api.GpmQueryDeviceSupport(dev, &sup); rc != nvml::kSuccess)
    return make_error(Errc::unsupported, nvml::describe(api, "nvmlGpmQueryDeviceSupport", rc));
  if (!sup.isSupportedDevice) return make_error(Errc::unsupported, "GPM is not supported on this GPU (Hopper or later is needed)");
  std::array<nvmlGpmSample_t, 2> s{nullptr, nullptr};
  for (auto& x : s) {
    if (const nvmlReturn_t rc = api.GpmSampleAlloc(&x); rc != nvml::kSuccess) {
      for (auto y : s)
        if (y) api.GpmSampleFree(y);
      return make_error(Errc::vendor, nvml::describe(api, "nvmlGpmSampleAlloc", rc));
    }
  }
  return std::unique_ptr<Source>(new Gpm(*ctx, dev, s));
}

}  // namespace jouleprof::activity
