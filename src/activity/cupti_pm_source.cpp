// CUPTI PM sampling: the GPU's performance monitors sampled every few ms in hardware (device-wide,
// so the workload's kernels are seen from this process), decoded each poll into one window.
// Opt-in: the counters are exclusive, so a profiler (Nsight, DCGM profiling) and this source
// cannot both hold them. The metric set is chosen at open so that it needs one pass (pm_plan.cpp).
#include <cmath>
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
    return " — GPU performance counters need root, or the driver option NVreg_RestrictProfilingToAdminUsers=0";
  return " — the counters may be held by another profiler (Nsight, DCGM profiling, another jouleprof)";
}

// A host object (metric names → config images, counter data → values) for one chip.
class Host {
 public:
  Host(const PmApi& api, const char* chip, const std::vector<uint8_t>& avail) : api_(api) {
    auto p = JP_PARAMS(CUpti_Profiler_Host_Initialize_Params, pHostObject);
    p.profilerType = kProfilerTypePmSampling;
    p.pChipName = chip;
    p.pCounterAvailabilityImage = avail.data();
    rc_ = api.HostInitialize(&p);
    if (rc_ == kSuccess) obj_ = p.pHostObject;
  }
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;
  ~Host() {
    if (obj_ == nullptr) return;
    auto p = JP_PARAMS(CUpti_Profiler_Host_Deinitialize_Params, pHostObject);
    p.pHostObject = obj_;
    api_.HostDeinitialize(&p);
  }
  CUptiResult status() const { return rc_; }
  CUpti_Profiler_Host_Object* get() const { return obj_; }
  /// The config image for these metrics; empty when CUPTI refuses them.
  std::vector<uint8_t> config(const std::vector<std::string>& names) {
    std::vector<const char*> c;
    for (const auto& n : names) c.push_back(n.c_str());
    auto am = JP_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics);
    am.pHostObject = obj_;
    am.ppMetricNames = c.data();
    am.numMetrics = c.size();
    if (api_.HostConfigAddMetrics(&am) != kSuccess) return {};
    auto cs = JP_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize);
    cs.pHostObject = obj_;
    if (api_.HostGetConfigImageSize(&cs) != kSuccess || cs.configImageSize == 0) return {};
    std::vector<uint8_t> img(cs.configImageSize);
    auto ci = JP_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage);
    ci.pHostObject = obj_;
    ci.configImageSize = img.size();
    ci.pConfigImage = img.data();
    if (api_.HostGetConfigImage(&ci) != kSuccess) return {};
    return img;
  }

 private:
  const PmApi& api_;
  CUpti_Profiler_Host_Object* obj_ = nullptr;
  CUptiResult rc_ = kSuccess;
};

std::size_t passes_of(const PmApi& api, std::vector<uint8_t> image) {
  if (image.empty()) return 0;
  auto np = JP_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses);
  np.configImageSize = image.size();
  np.pConfigImage = image.data();
  return api.HostGetNumOfPasses(&np) == kSuccess ? np.numOfPasses : 0;
}

class CuptiPm final : public Source {
 public:
  CuptiPm(const PmApi& api, const TimeBase& tb, PmPlan plan, std::unique_ptr<Host> host, uint32_t max_samples)
      : api_(api), tb_(tb), plan_(std::move(plan)), host_(std::move(host)), max_samples_(max_samples) {
    for (const auto& m : plan_.metrics) names_.push_back(m.name);
    for (const auto& n : plan_.cupti) cnames_.push_back(n.c_str());
  }
  ~CuptiPm() override {
    if (object_ == nullptr) return;
    auto p = JP_PARAMS(CUpti_PmSampling_Object_Params, pPmSamplingObject);
    p.pPmSamplingObject = object_;
    if (started_) api_.Stop(&p);
    api_.Disable(&p);
    if (ctx_device_ >= 0) api_.cuPrimaryCtxRelease(ctx_device_);
  }
  std::string name() const override { return "cupti-pm"; }
  const std::vector<std::string>& metrics() const override { return names_; }
  std::vector<std::string> definitions() const override {
    std::vector<std::string> d;
    for (const auto& m : plan_.metrics) d.push_back(m.definition);
    return d;
  }

  /// Enable, configure, start. A CUDA context is made current only when CUPTI asks for one.
  Result<void> begin(int device, const std::vector<uint8_t>& config) {
    auto en = JP_PARAMS(CUpti_PmSampling_Enable_Params, pPmSamplingObject);
    en.deviceIndex = static_cast<size_t>(device);
    CUptiResult rc = api_.Enable(&en);
    if (rc != kSuccess && rc != kErrorInsufficientPrivileges && rc != kErrorVirtualizedInsufficientPrivileges) {
      CUctx_st* ctx = nullptr;
      if (api_.cuPrimaryCtxRetain(&ctx, device) == kCudaSuccess) {
        ctx_device_ = device;
        api_.cuCtxSetCurrent(ctx);
        rc = api_.Enable(&en);
      }
    }
    if (rc != kSuccess) return make_error(Errc::unavailable, api_.describe("cuptiPmSamplingEnable", rc) + hint(rc));
    object_ = en.pPmSamplingObject;
    auto sc = JP_PARAMS(CUpti_PmSampling_SetConfig_Params, hwBufferAppendMode);
    sc.pPmSamplingObject = object_;
    sc.configSize = config.size();
    sc.pConfig = config.data();
    sc.hardwareBufferSize = kHardwareBufferBytes;
    sc.samplingInterval = kSamplingIntervalNs;
    sc.triggerMode = kTriggerModeGpuTimeInterval;
    sc.hwBufferAppendMode = kAppendModeKeepOldest;
    if ((rc = api_.SetConfig(&sc)) != kSuccess)
      return make_error(Errc::unavailable, api_.describe("cuptiPmSamplingSetConfig", rc) + hint(rc));
    auto ds = JP_PARAMS(CUpti_PmSampling_GetCounterDataSize_Params, counterDataSize);
    ds.pPmSamplingObject = object_;
    ds.pMetricNames = cnames_.data();
    ds.numMetrics = cnames_.size();
    ds.maxSamples = max_samples_;
    if ((rc = api_.GetCounterDataSize(&ds)) != kSuccess)
      return make_error(Errc::vendor, api_.describe("cuptiPmSamplingGetCounterDataSize", rc));
    data_.assign(ds.counterDataSize, 0);
    if (auto r = reset_data(); !r) return r;
    auto st = JP_PARAMS(CUpti_PmSampling_Object_Params, pPmSamplingObject);
    st.pPmSamplingObject = object_;
    if ((rc = api_.Start(&st)) != kSuccess)
      return make_error(Errc::unavailable, api_.describe("cuptiPmSamplingStart", rc) + hint(rc));
    started_ = true;
    started_s_ = tb_.now_s();
    return {};
  }

  // Moves what the hardware buffer holds into the counter data image and evaluates the samples
  // not seen yet; a full image is re-initialized and decoding continues.
  Result<std::optional<Window>> poll(double now_s) override {
    std::vector<PmSample> samples;
    for (int round = 0; round < 64; ++round) {  // bounded: what is left waits for the next poll
      auto dd = JP_PARAMS(CUpti_PmSampling_DecodeData_Params, overflow);
      dd.pPmSamplingObject = object_;
      dd.pCounterDataImage = data_.data();
      dd.counterDataImageSize = data_.size();
      const CUptiResult rc = api_.DecodeData(&dd);
      if (rc != kSuccess) {
        if (rc == kErrorOutOfMemory) return make_error(Errc::vendor, "PM sampling hardware buffer overflowed: samples lost");
        return make_error(Errc::vendor, api_.describe("cuptiPmSamplingDecodeData", rc));
      }
      if (dd.overflow) overflowed_ = true;
      auto info = JP_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params, numCompletedSamples);
      info.pCounterDataImage = data_.data();
      info.counterDataImageSize = data_.size();
      if (const CUptiResult r = api_.GetCounterDataInfo(&info); r != kSuccess)
        return make_error(Errc::vendor, api_.describe("cuptiPmSamplingGetCounterDataInfo", r));
      for (std::size_t i = consumed_; i < info.numCompletedSamples; ++i) {
        auto s = sample(i);
        if (!s) return s.error();
        samples.push_back(std::move(*s));
      }
      consumed_ = info.numCompletedSamples;
      const bool full = dd.decodeStopReason == kDecodeStopReasonCounterDataFull || info.numCompletedSamples >= info.numTotalSamples;
      if (!full) break;
      if (auto r = reset_data(); !r) return r.error();
    }
    if (overflowed_) {
      overflowed_ = false;
      return make_error(Errc::vendor, "PM sampling hardware buffer overflowed: samples lost");
    }
    auto w = pm_window(plan_, samples, [this](uint64_t ns) { return tb_.from_realtime_ns(static_cast<int64_t>(ns)); });
    if (!w) return std::optional<Window>{};
    // The samples' GPU timestamps must fall on the host's clock; if not, the windows would be misplaced.
    if (w->t1_s > now_s + 1.0 || w->t0_s < started_s_ - 1.0)
      return make_error(Errc::vendor, "PM sample timestamps are off the host clock (a window at " + std::to_string(w->t0_s) +
                                          " s, polled at " + std::to_string(now_s) + " s): samples dropped");
    return w;
  }

 private:
  Result<void> reset_data() {
    auto di = JP_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params, pCounterData);
    di.pPmSamplingObject = object_;
    di.counterDataSize = data_.size();
    di.pCounterData = data_.data();
    if (const CUptiResult rc = api_.CounterDataImageInitialize(&di); rc != kSuccess)
      return make_error(Errc::vendor, api_.describe("cuptiPmSamplingCounterDataImageInitialize", rc));
    consumed_ = 0;
    return {};
  }
  Result<PmSample> sample(std::size_t i) {
    auto si = JP_PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params, endTimestamp);
    si.pPmSamplingObject = object_;
    si.pCounterDataImage = data_.data();
    si.counterDataImageSize = data_.size();
    si.sampleIndex = i;
    if (const CUptiResult rc = api_.GetSampleInfo(&si); rc != kSuccess)
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
    if (const CUptiResult rc = api_.HostEvaluateToGpuValues(&ev); rc != kSuccess)
      return make_error(Errc::vendor, api_.describe("cuptiProfilerHostEvaluateToGpuValues", rc));
    return s;
  }

  const PmApi& api_;
  const TimeBase& tb_;
  PmPlan plan_;
  std::unique_ptr<Host> host_;
  uint32_t max_samples_;
  std::vector<std::string> names_;
  std::vector<const char*> cnames_;
  CUpti_PmSampling_Object* object_ = nullptr;
  std::vector<uint8_t> data_;
  std::size_t consumed_ = 0;
  bool started_ = false, overflowed_ = false;
  double started_s_ = 0;
  int ctx_device_ = -1;
};

// NVML writes an 8-digit PCI domain ("00000000:18:00.0"); the CUDA driver's lookup takes 4.
std::string cuda_bus_id(const std::string& nvml) {
  const auto colon = nvml.find(':');
  if (colon == 8) return nvml.substr(4);
  return nvml;
}

}  // namespace

Result<std::unique_ptr<Source>> open_cupti_pm(const PmOptions& o, const GpuInfo& gpu, const TimeBase& tb, double period_s,
                                              std::string& note) {
  auto loaded = load_pm_api(o.cupti_library, o.cuda_library);
  if (!loaded) return loaded.error();
  const PmApi& api = **loaded;
  if (const CUresult rc = api.cuInit(0); rc != kCudaSuccess) return make_error(Errc::unavailable, api.describe_cuda("cuInit", rc));
  int device = -1;
  if (const CUresult rc = api.cuDeviceGetByPCIBusId(&device, cuda_bus_id(gpu.pci_bus_id).c_str()); rc != kCudaSuccess)
    return make_error(Errc::unavailable, api.describe_cuda(("cuDeviceGetByPCIBusId(" + gpu.pci_bus_id + ")").c_str(), rc) +
                                             " — is the GPU hidden by CUDA_VISIBLE_DEVICES?");
  auto init = JP_PARAMS(CUpti_Profiler_Initialize_Params, pPriv);
  if (const CUptiResult rc = api.ProfilerInitialize(&init); rc != kSuccess)
    return make_error(Errc::unavailable, api.describe("cuptiProfilerInitialize", rc) + hint(rc));
  auto chip = JP_PARAMS(CUpti_Device_GetChipName_Params, pChipName);
  chip.deviceIndex = static_cast<size_t>(device);
  if (const CUptiResult rc = api.DeviceGetChipName(&chip); rc != kSuccess)
    return make_error(Errc::unavailable, api.describe("cuptiDeviceGetChipName", rc));
  auto av = JP_PARAMS(CUpti_PmSampling_GetCounterAvailability_Params, pCounterAvailabilityImage);
  av.deviceIndex = static_cast<size_t>(device);
  if (const CUptiResult rc = api.GetCounterAvailability(&av); rc != kSuccess)
    return make_error(Errc::unavailable, api.describe("cuptiPmSamplingGetCounterAvailability", rc) + hint(rc));
  std::vector<uint8_t> avail(av.counterAvailabilityImageSize);
  av.pCounterAvailabilityImage = avail.data();
  if (const CUptiResult rc = api.GetCounterAvailability(&av); rc != kSuccess)
    return make_error(Errc::unavailable, api.describe("cuptiPmSamplingGetCounterAvailability", rc) + hint(rc));

  // A fresh host object per candidate set: one that was given metrics cannot be given others.
  CUptiResult host_rc = kSuccess;
  const PmPlan plan = plan_pm_metrics(pm_metric_choices(), [&](const std::vector<std::string>& names) -> std::size_t {
    Host h(api, chip.pChipName, avail);
    if (h.status() != kSuccess) {
      host_rc = h.status();
      return 0;
    }
    return passes_of(api, h.config(names));
  });
  if (host_rc != kSuccess) return make_error(Errc::unavailable, api.describe("cuptiProfilerHostInitialize", host_rc));
  if (plan.metrics.empty())
    return make_error(Errc::unsupported, std::string("no activity metric can be PM-sampled on ") + chip.pChipName);
  auto host = std::make_unique<Host>(api, chip.pChipName, avail);
  const std::vector<uint8_t> config = host->config(plan.cupti);
  if (host->status() != kSuccess || config.empty())
    return make_error(Errc::vendor, std::string("CUPTI refused the metric set it had accepted (") + chip.pChipName + ")");
  // Room for four windows of samples between polls (a late poll must not lose any).
  const auto max_samples = static_cast<uint32_t>(std::max(256.0, 4 * period_s * 1e9 / static_cast<double>(kSamplingIntervalNs)));
  auto src = std::make_unique<CuptiPm>(api, tb, plan, std::move(host), max_samples);
  if (auto r = src->begin(device, config); !r) return r.error();
  note.clear();
  if (!plan.left_out.empty()) {
    note = "not PM-sampled in one pass on " + std::string(chip.pChipName) + ":";
    for (const auto& l : plan.left_out) note += " " + l;
  }
  return std::unique_ptr<Source>(std::move(src));
}

}  // namespace jouleprof::activity
