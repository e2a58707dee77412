// CUPTI PM sampling: the GPU's performance monitors sampled every few ms in hardware (device-wide,
// so the workload's kernels are seen from this process), decoded each poll into one window.
// Opt-in: the counters are exclusive, so a profiler (Nsight, DCGM profiling) and this source
// cannot both hold them. The metric set is chosen at open so that it needs one pass (pm_plan.cpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cupti_pm_api.hpp"
#include "pm_plan.hpp"
#include "source.hpp"

namespace jouleprof::activity {
namespace {

using namespace jouleprof::cupti;

constexpr uint64_t kSamplingIntervalNs = 10'000'000;  // 10 ms: ≥10 samples in the shortest window
constexpr size_t kHardwareBufferBytes = 64u << 20;

template <class P>
P params(size_t size) {
  P p;
  std::memset(&p, 0, sizeof(p));
  p.structSize = size;
  return p;
}
#define JP_PARAMS(type, last) params<type>(JP_CUPTI_STRUCT_SIZE(type, last))

// Why PM sampling may refuse: said once, after CUPTI's own words.
std::string hint(CUptiResult rc) {
  if (rc == kErrorInsufficientPrivileges || rc == kErrorVirtualizedInsufficientPrivileges)
    return " — GPU performance counters need root, or the driver option "
           "NVreg_RestrictProfilingToAdminUsers=0";
  // Seen on the H100 when a second client asked while jouleprof's cupti-pm held the counters.
  if (rc == kErrorHardwareBusy)
    return " — the GPU's performance counters are held by another client "
           "(a profiler, DCGM profiling, another jouleprof --metrics-source cupti-pm)";
  return " — the counters may be held by another profiler (Nsight, DCGM profiling, another "
         "jouleprof)";
}

// Every CUPTI and driver call goes through here: with $JOULEPROF_CUPTI_PM_TRACE set, its name is
// written to stderr first, so a call that never returns (or crashes inside CUPTI) is named.
template <class Fn, class... A>
auto call(const char* name, Fn fn, A... a) {
  static const bool tracing = std::getenv("JOULEPROF_CUPTI_PM_TRACE") != nullptr;
  if (tracing) std::fprintf(stderr, "cupti-pm: %s\n", name), std::fflush(stderr);
  return fn(a...);
}

// The GPU's primary CUDA context, retained for the source's life and made current on each thread
// that calls CUPTI (the open, the recorder's polls, the stop), as in the device probe
// (workloads/pmprobe, `lab` branch), which works. Without one (and with buffers CUPTI points to freed early) the
// first H100 run crashed; which of the two mattered was not isolated (docs/validation/models.md).
class Context {
 public:
  Context(const PmApi& api, int device) : api_(api), device_(device) {}
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() {
    if (ctx_ != nullptr) call("cuDevicePrimaryCtxRelease", api_.cuPrimaryCtxRelease, device_);
  }
  Result<void> retain() {
    if (const CUresult rc =
            call("cuDevicePrimaryCtxRetain", api_.cuPrimaryCtxRetain, &ctx_, device_);
        rc != kCudaSuccess) {
      ctx_ = nullptr;
      return make_error(Errc::unavailable, api_.describe_cuda("cuDevicePrimaryCtxRetain", rc));
    }
    return make_current();
  }
  Result<void> make_current() const {
    if (const CUresult rc = call("cuCtxSetCurrent", api_.cuCtxSetCurrent, ctx_); rc != kCudaSuccess)
      return make_error(Errc::vendor, api_.describe_cuda("cuCtxSetCurrent", rc));
    return {};
  }

 private:
  const PmApi& api_;
  int device_;
  CUctx_st* ctx_ = nullptr;
};

// A host object (metric names → config images, counter data → values) for one chip.
class Host {
 public:
  Host(const PmApi& api, const std::string& chip, const std::vector<uint8_t>& avail)
      : api_(api), chip_(chip), avail_(avail) {
    auto p = JP_PARAMS(CUpti_Profiler_Host_Initialize_Params, pHostObject);
    p.profilerType = kProfilerTypePmSampling;
    p.pChipName = chip_.c_str();
    p.pCounterAvailabilityImage = avail_.data();
    rc_ = call("cuptiProfilerHostInitialize", api.HostInitialize, &p);
    if (rc_ == kSuccess) obj_ = p.pHostObject;
  }
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;
  ~Host() {
    if (obj_ == nullptr) return;
    auto p = JP_PARAMS(CUpti_Profiler_Host_Deinitialize_Params, pHostObject);
    p.pHostObject = obj_;
    call("cuptiProfilerHostDeinitialize", api_.HostDeinitialize, &p);
  }
  CUptiResult status() const { return rc_; }
  CUpti_Profiler_Host_Object* get() const { return obj_; }
  /// The config image for these metrics; empty when CUPTI refuses them.
  std::vector<uint8_t> config(const std::vector<std::string>& names) {
    names_ = names;
    for (const auto& n : names_) cnames_.push_back(n.c_str());
    auto am = JP_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics);
    am.pHostObject = obj_;
    am.ppMetricNames = cnames_.data();
    am.numMetrics = cnames_.size();
    if (call("cuptiProfilerHostConfigAddMetrics", api_.HostConfigAddMetrics, &am) != kSuccess)
      return {};
    auto cs = JP_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize);
    cs.pHostObject = obj_;
    if (call("cuptiProfilerHostGetConfigImageSize", api_.HostGetConfigImageSize, &cs) != kSuccess ||
        cs.configImageSize == 0)
      return {};
    std::vector<uint8_t> img(cs.configImageSize);
    auto ci = JP_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage);
    ci.pHostObject = obj_;
    ci.configImageSize = img.size();
    ci.pConfigImage = img.data();
    if (call("cuptiProfilerHostGetConfigImage", api_.HostGetConfigImage, &ci) != kSuccess)
      return {};
    return img;
  }

 private:
  // What CUPTI was given pointers to lives as long as the host object (CUPTI may keep them).
  const PmApi& api_;
  const std::string chip_;
  const std::vector<uint8_t> avail_;
  std::vector<std::string> names_;
  std::vector<const char*> cnames_;
  CUpti_Profiler_Host_Object* obj_ = nullptr;
  CUptiResult rc_ = kSuccess;
};

std::size_t passes_of(const PmApi& api, std::vector<uint8_t> image) {
  if (image.empty()) return 0;
  auto np = JP_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses);
  np.configImageSize = image.size();
  np.pConfigImage = image.data();
  return call("cuptiProfilerHostGetNumOfPasses", api.HostGetNumOfPasses, &np) == kSuccess
             ? np.numOfPasses
             : 0;
}

class CuptiPm final : public Source {
 public:
  CuptiPm(const PmApi& api, const TimeBase& tb, std::unique_ptr<Context> ctx, PmPlan plan,
          std::unique_ptr<Host> host, uint32_t max_samples)
      : api_(api),
        tb_(tb),
        ctx_(std::move(ctx)),
        plan_(std::move(plan)),
        host_(std::move(host)),
        max_samples_(max_samples) {
    for (const auto& m : plan_.metrics) names_.push_back(m.name);
    for (const auto& n : plan_.cupti) cnames_.push_back(n.c_str());
  }
  ~CuptiPm() override {
    if (object_ != nullptr) {
      (void)ctx_->make_current();  // the recorder may stop us from another thread than it polled on
      auto p = JP_PARAMS(CUpti_PmSampling_Object_Params, pPmSamplingObject);
      p.pPmSamplingObject = object_;
      if (started_) call("cuptiPmSamplingStop", api_.Stop, &p);
      call("cuptiPmSamplingDisable", api_.Disable, &p);
    }
  }
  std::string name() const override { return "cupti-pm"; }
  const std::vector<std::string>& metrics() const override { return names_; }
  std::vector<std::string> definitions() const override {
    std::vector<std::string> d;
    for (const auto& m : plan_.metrics) d.push_back(m.definition);
    return d;
  }

  /// Enable, configure, start.
  Result<void> begin(int device, std::vector<uint8_t> config) {
    config_ = std::move(config);  // kept: CUPTI may read it while sampling
    auto en = JP_PARAMS(CUpti_PmSampling_Enable_Params, pPmSamplingObject);
    en.deviceIndex = static_cast<size_t>(device);
    CUptiResult rc = call("cuptiPmSamplingEnable", api_.Enable, &en);
    if (rc != kSuccess)
      return make_error(Errc::unavailable, api_.describe("cuptiPmSamplingEnable", rc) + hint(rc));
    object_ = en.pPmSamplingObject;
    auto sc = JP_PARAMS(CUpti_PmSampling_SetConfig_Params, hwBufferAppendMode);
    sc.pPmSamplingObject = object_;
    sc.configSize = config_.size();
    sc.pConfig = config_.data();
    sc.hardwareBufferSize = kHardwareBufferBytes;
    sc.samplingInterval = kSamplingIntervalNs;
    sc.triggerMode = kTriggerModeGpuTimeInterval;
    sc.hwBufferAppendMode = kAppendModeKeepOldest;
    if ((rc = call("cuptiPmSamplingSetConfig", api_.SetConfig, &sc)) != kSuccess)
      return make_error(Errc::unavailable,
                        api_.describe("cuptiPmSamplingSetConfig", rc) + hint(rc));
    auto ds = JP_PARAMS(CUpti_PmSampling_GetCounterDataSize_Params, counterDataSize);
    ds.pPmSamplingObject = object_;
    ds.pMetricNames = cnames_.data();
    ds.numMetrics = cnames_.size();
    ds.maxSamples = max_samples_;
    if ((rc = call("cuptiPmSamplingGetCounterDataSize", api_.GetCounterDataSize, &ds)) != kSuccess)
      return make_error(Errc::vendor, api_.describe("cuptiPmSamplingGetCounterDataSize", rc));
    data_.assign(ds.counterDataSize, 0);
    if (auto r = reset_data(); !r) return r;
    auto st = JP_PARAMS(CUpti_PmSampling_Object_Params, pPmSamplingObject);
    st.pPmSamplingObject = object_;
    if ((rc = call("cuptiPmSamplingStart", api_.Start, &st)) != kSuccess)
      return make_error(Errc::unavailable, api_.describe("cuptiPmSamplingStart", rc) + hint(rc));
    started_ = true;
    started_s_ = tb_.now_s();
    return {};
  }

  // Moves what the hardware buffer holds into the counter data image and evaluates the samples
  // not seen yet; a full image is re-initialized and decoding continues.
  Result<std::optional<Window>> poll(double now_s) override {
    if (auto r = ctx_->make_current(); !r) return r.error();
    std::vector<PmSample> samples;
    for (int round = 0; round < 64; ++round) {  // bounded: what is left waits for the next poll
      auto dd = JP_PARAMS(CUpti_PmSampling_DecodeData_Params, overflow);
      dd.pPmSamplingObject = object_;
      dd.pCounterDataImage = data_.data();
      dd.counterDataImageSize = data_.size();
      const CUptiResult rc = call("cuptiPmSamplingDecodeData", api_.DecodeData, &dd);
      if (rc != kSuccess) {
        if (rc == kErrorOutOfMemory)
          return make_error(Errc::vendor, "PM sampling hardware buffer overflowed: samples lost");
        return make_error(Errc::vendor, api_.describe("cuptiPmSamplingDecodeData", rc));
      }
      if (dd.overflow) overflowed_ = true;
      auto info = JP_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params, numCompletedSamples);
      info.pCounterDataImage = data_.data();
      info.counterDataImageSize = data_.size();
      if (const CUptiResult r =
              call("cuptiPmSamplingGetCounterDataInfo", api_.GetCounterDataInfo, &info);
          r != kSuccess)
        return make_error(Errc::vendor, api_.describe("cuptiPmSamplingGetCounterDataInfo", r));
      for (std::size_t i = consumed_; i < info.numCompletedSamples; ++i) {
        auto s = sample(i);
        if (!s) return s.error();
        samples.push_back(std::move(*s));
      }
      consumed_ = info.numCompletedSamples;
      const bool full = dd.decodeStopReason == kDecodeStopReasonCounterDataFull ||
                        info.numCompletedSamples >= info.numTotalSamples;
      if (!full) break;
      if (auto r = reset_data(); !r) return r.error();
    }
    if (overflowed_) {
      overflowed_ = false;
      return make_error(Errc::vendor, "PM sampling hardware buffer overflowed: samples lost");
    }
    auto w = pm_window(plan_, samples, [this](uint64_t ns) {
      return tb_.from_realtime_ns(static_cast<int64_t>(ns));
    });
    if (!w) return std::optional<Window>{};
    // The samples' GPU timestamps must fall on the host's clock; if not, the windows would be
    // misplaced.
    if (w->t1_s > now_s + 1.0 || w->t0_s < started_s_ - 1.0)
      return make_error(Errc::vendor, "PM sample timestamps are off the host clock (a window at " +
                                          std::to_string(w->t0_s) + " s, polled at " +
                                          std::to_string(now_s) + " s): samples dropped");
    return w;
  }

 private:
  Result<void> reset_data() {
    auto di = JP_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params, pCounterData);
    di.pPmSamplingObject = object_;
    di.counterDataSize = data_.size();
    di.pCounterData = data_.data();
    if (const CUptiResult rc =
            call("cuptiPmSamplingCounterDataImageInitialize", api_.CounterDataImageInitialize, &di);
        rc != kSuccess)
      return make_error(Errc::vendor,
                        api_.describe("cuptiPmSamplingCounterDataImageInitialize", rc));
    consumed_ = 0;
    return {};
  }
  Result<PmSample> sample(std::size_t i) {
    auto si = JP_PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params, endTimestamp);
    si.pPmSamplingObject = object_;
    si.pCounterDataImage = data_.data();
    si.counterDataImageSize = data_.size();
    si.sampleIndex = i;
    if (const CUptiResult rc =
            call("cuptiPmSamplingCounterDataGetSampleInfo", api_.GetSampleInfo, &si);
        rc != kSuccess)
      return make_error(Errc::vendor, api_.describe("cuptiPmSamplingCounterDataGetSampleInfo", rc));
    PmSample s{si.startTimestamp, si.endTimestamp, std::vector<double>(cnames_.size(), 0.0)};
    auto ev = JP_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues);
    ev.pHostObject = host_->get();
    ev.pCounterDataImage = data_.data();
    ev.counterDataImageSize = data_.size();
    ev.rangeIndex = i;
    ev.ppMetricNames = cnames_.data();
    ev.numMetrics = cnames_.size();
    ev.pMetricValues = s.raw.data();
    if (const CUptiResult rc =
            call("cuptiProfilerHostEvaluateToGpuValues", api_.HostEvaluateToGpuValues, &ev);
        rc != kSuccess)
      return make_error(Errc::vendor, api_.describe("cuptiProfilerHostEvaluateToGpuValues", rc));
    return s;
  }

  const PmApi& api_;
  const TimeBase& tb_;
  std::unique_ptr<Context> ctx_;
  PmPlan plan_;
  std::unique_ptr<Host> host_;
  uint32_t max_samples_;
  std::vector<std::string> names_;
  std::vector<const char*> cnames_;
  CUpti_PmSampling_Object* object_ = nullptr;
  std::vector<uint8_t> config_, data_;
  std::size_t consumed_ = 0;
  bool started_ = false, overflowed_ = false;
  double started_s_ = 0;
};

// NVML writes an 8-digit PCI domain ("00000000:18:00.0"); the CUDA driver's lookup takes 4.
std::string cuda_bus_id(const std::string& nvml) {
  const auto colon = nvml.find(':');
  if (colon == 8) return nvml.substr(4);
  return nvml;
}

}  // namespace

Result<std::unique_ptr<Source>> open_cupti_pm(const PmOptions& o, const GpuInfo& gpu,
                                              const TimeBase& tb, double period_s,
                                              std::string& note) {
  auto loaded = load_pm_api(o.cupti_library, o.cuda_library);
  if (!loaded) return loaded.error();
  const PmApi& api = **loaded;
  if (const CUresult rc = call("cuInit", api.cuInit, 0u); rc != kCudaSuccess)
    return make_error(Errc::unavailable, api.describe_cuda("cuInit", rc));
  int device = -1;
  if (const CUresult rc = call("cuDeviceGetByPCIBusId", api.cuDeviceGetByPCIBusId, &device,
                               cuda_bus_id(gpu.pci_bus_id).c_str());
      rc != kCudaSuccess)
    return make_error(
        Errc::unavailable,
        api.describe_cuda(("cuDeviceGetByPCIBusId(" + gpu.pci_bus_id + ")").c_str(), rc) +
            " — is the GPU hidden by CUDA_VISIBLE_DEVICES?");
  auto ctx = std::make_unique<Context>(api, device);
  if (auto r = ctx->retain(); !r) return r.error();
  // Once per process (the sources of several GPUs are opened one after the other, on one thread).
  static bool profiler_initialized = false;
  if (!profiler_initialized) {
    auto init = JP_PARAMS(CUpti_Profiler_Initialize_Params, pPriv);
    if (const CUptiResult rc = call("cuptiProfilerInitialize", api.ProfilerInitialize, &init);
        rc != kSuccess)
      return make_error(Errc::unavailable, api.describe("cuptiProfilerInitialize", rc) + hint(rc));
    profiler_initialized = true;
  }
  auto chip = JP_PARAMS(CUpti_Device_GetChipName_Params, pChipName);
  chip.deviceIndex = static_cast<size_t>(device);
  if (const CUptiResult rc = call("cuptiDeviceGetChipName", api.DeviceGetChipName, &chip);
      rc != kSuccess)
    return make_error(Errc::unavailable, api.describe("cuptiDeviceGetChipName", rc));
  auto av = JP_PARAMS(CUpti_PmSampling_GetCounterAvailability_Params, pCounterAvailabilityImage);
  av.deviceIndex = static_cast<size_t>(device);
  if (const CUptiResult rc =
          call("cuptiPmSamplingGetCounterAvailability", api.GetCounterAvailability, &av);
      rc != kSuccess)
    return make_error(Errc::unavailable,
                      api.describe("cuptiPmSamplingGetCounterAvailability", rc) + hint(rc));
  std::vector<uint8_t> avail(av.counterAvailabilityImageSize);
  av.pCounterAvailabilityImage = avail.data();
  if (const CUptiResult rc =
          call("cuptiPmSamplingGetCounterAvailability", api.GetCounterAvailability, &av);
      rc != kSuccess)
    return make_error(Errc::unavailable,
                      api.describe("cuptiPmSamplingGetCounterAvailability", rc) + hint(rc));

  // A fresh host object per candidate set: one that was given metrics cannot be given others.
  CUptiResult host_rc = kSuccess;
  const std::string chip_name = chip.pChipName;
  const PmPlan plan = plan_pm_metrics(pm_metric_choices(),
                                      [&](const std::vector<std::string>& names) -> std::size_t {
                                        Host h(api, chip_name, avail);
                                        if (h.status() != kSuccess) {
                                          host_rc = h.status();
                                          return 0;
                                        }
                                        return passes_of(api, h.config(names));
                                      });
  if (host_rc != kSuccess)
    return make_error(Errc::unavailable, api.describe("cuptiProfilerHostInitialize", host_rc));
  if (plan.metrics.empty())
    return make_error(Errc::unsupported, "no activity metric can be PM-sampled on " + chip_name);
  auto host = std::make_unique<Host>(api, chip_name, avail);
  std::vector<uint8_t> config = host->config(plan.cupti);
  if (host->status() != kSuccess || config.empty())
    return make_error(Errc::vendor,
                      "CUPTI refused the metric set it had accepted (" + chip_name + ")");
  // Room for two windows of samples, at most 2000 (20 s): a poll that finds more drains the
  // counter data image and decodes again (poll()), so a long window needs no huge image.
  const auto max_samples = static_cast<uint32_t>(std::clamp(
      2 * period_s * 1e9 / static_cast<double>(kSamplingIntervalNs), 256.0, 2000.0));
  auto src = std::make_unique<CuptiPm>(api, tb, std::move(ctx), plan, std::move(host), max_samples);
  if (auto r = src->begin(device, std::move(config)); !r) return r.error();
  note.clear();
  if (!plan.left_out.empty()) {
    note = "not PM-sampled in one pass on " + chip_name + ":";
    for (const auto& l : plan.left_out) note += " " + l;
  }
  return std::unique_ptr<Source>(std::move(src));
}

}  // namespace jouleprof::activity
