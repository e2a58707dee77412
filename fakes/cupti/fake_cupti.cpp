// A fake libcupti.so: the PM-sampling and profiler-host entry points the cupti-pm activity source
// calls (and the CUDA driver calls it makes), so the source's open → poll → stop path and its
// error paths run without a GPU. Every call on the device side answers CUPTI_ERROR_NOT_INITIALIZED
// unless the calling thread has a CUDA context current (the source must set it on each thread).
// Samples are made on the host clock every sampling interval from Start to Stop; each metric has a
// fixed value (kValues). Environment:
//   JOULEPROF_FAKE_CUPTI_FAIL       "symbol:code[,symbol:code]" — those calls return that
//   CUptiResult
//                                   (or CUresult for cu* symbols)
//   JOULEPROF_FAKE_CUPTI_MULTIPASS  comma-separated substrings: a metric set with a name containing
//                                   one needs 2 passes
//   JOULEPROF_FAKE_CUPTI_CLOCK_OFFSET_S   added to every sample timestamp (a GPU clock off the
//   host's) JOULEPROF_FAKE_CUPTI_IMAGE_SAMPLES    a counter data image holds at most this many
//   samples
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "cupti_pm_abi.hpp"

using namespace jouleprof::cupti;

struct jouleprof::cupti::CUpti_Profiler_Host_Object {
  std::vector<std::string> metrics;
};
struct jouleprof::cupti::CUpti_PmSampling_Object {
  size_t device = 0;
  std::vector<std::string> config;
  uint64_t interval_ns = 0;
  bool started = false;
  uint64_t start_ns = 0, stop_ns = 0;
  uint64_t emitted = 0;  ///< samples moved into a counter data image so far
};
struct jouleprof::cupti::CUctx_st {};

namespace {

// The metrics the fake chip offers and each one's value in every sample. It offers no
// sm__cycles_active.avg.pct_of_peak_sustained_elapsed, so sm_active comes from the counter ratio.
const std::map<std::string, double> kValues{
    {"sm__cycles_active.avg", 720},
    {"sm__cycles_elapsed.avg", 900},
    {"gpc__cycles_elapsed.max", 900},
    {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", 60},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 30},
    {"sm__warps_active.avg.pct_of_peak_sustained_elapsed", 12},
    {"sm__warps_active.avg.pct_of_peak_sustained_active", 15},
    {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", 5},
    {"sm__pipe_fp16_cycles_active.avg.pct_of_peak_sustained_elapsed", 2},
    {"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed", 0.5},
};
constexpr uint32_t kMagic = 0x4a50504d;  // "JPPM"

struct ImageHeader {
  uint32_t magic, max_samples, num_metrics, count;
};
size_t record_bytes(size_t n) {
  return 2 * sizeof(uint64_t) + n * sizeof(double);
}

std::mutex mu;
thread_local bool context_current = false;
bool enabled[8] = {};  ///< a device's PM sampling is held: a second Enable is HARDWARE_BUSY

std::vector<std::string> env_list(const char* name) {
  std::vector<std::string> out;
  const char* e = std::getenv(name);
  if (e == nullptr) return out;
  std::stringstream ss(e);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}
// The code JOULEPROF_FAKE_CUPTI_FAIL gives this call, or 0.
int injected(const char* call) {
  for (const auto& item : env_list("JOULEPROF_FAKE_CUPTI_FAIL")) {
    const auto colon = item.find(':');
    if (colon != std::string::npos && item.substr(0, colon) == call)
      return std::atoi(item.c_str() + colon + 1);
  }
  return 0;
}
uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}
uint64_t clock_offset_ns() {
  const char* e = std::getenv("JOULEPROF_FAKE_CUPTI_CLOCK_OFFSET_S");
  return e != nullptr ? static_cast<uint64_t>(std::atof(e) * 1e9) : 0;
}
ImageHeader* header(uint8_t* image, size_t size) {
  if (image == nullptr || size < sizeof(ImageHeader)) return nullptr;
  auto* h = reinterpret_cast<ImageHeader*>(image);
  return h->magic == kMagic ? h : nullptr;
}
uint64_t* record(uint8_t* image, const ImageHeader& h, size_t i) {
  return reinterpret_cast<uint64_t*>(image + sizeof(ImageHeader) + i * record_bytes(h.num_metrics));
}

#define FAKE_ENTER(call)                                 \
  std::lock_guard<std::mutex> lock(mu);                  \
  if (const int rc = injected(call); rc != 0) return rc; \
  if (p == nullptr) return 1 /* INVALID_PARAMETER */;
// Device-side calls: a context must be current on this thread.
#define FAKE_ENTER_DEVICE(call) \
  FAKE_ENTER(call)              \
  if (!context_current) return 15 /* NOT_INITIALIZED */;

}  // namespace

#define JP_EXPORT extern "C" __attribute__((visibility("default")))

JP_EXPORT CUptiResult cuptiGetResultString(CUptiResult rc, const char** s) {
  static const std::map<int, const char*> names{{0, "CUPTI_SUCCESS"},
                                                {1, "CUPTI_ERROR_INVALID_PARAMETER"},
                                                {8, "CUPTI_ERROR_OUT_OF_MEMORY"},
                                                {15, "CUPTI_ERROR_NOT_INITIALIZED"},
                                                {26, "CUPTI_ERROR_HARDWARE_BUSY"},
                                                {27, "CUPTI_ERROR_NOT_SUPPORTED"},
                                                {35, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"},
                                                {999, "CUPTI_ERROR_UNKNOWN"}};
  const auto it = names.find(rc);
  *s = it != names.end() ? it->second : "CUPTI_ERROR_UNKNOWN";
  return 0;
}
JP_EXPORT CUptiResult cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params* p) {
  FAKE_ENTER_DEVICE("cuptiProfilerInitialize");
  return 0;
}
JP_EXPORT CUptiResult cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params* p) {
  FAKE_ENTER_DEVICE("cuptiDeviceGetChipName");
  if (p->deviceIndex >= 8) return 1;
  p->pChipName = "FAKE100";
  return 0;
}
JP_EXPORT CUptiResult
cuptiPmSamplingGetCounterAvailability(CUpti_PmSampling_GetCounterAvailability_Params* p) {
  FAKE_ENTER_DEVICE("cuptiPmSamplingGetCounterAvailability");
  if (p->pCounterAvailabilityImage == nullptr) {
    p->counterAvailabilityImageSize = 64;
    return 0;
  }
  std::memset(p->pCounterAvailabilityImage, 0xA5, p->counterAvailabilityImageSize);
  return 0;
}
JP_EXPORT CUptiResult cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params* p) {
  FAKE_ENTER("cuptiProfilerHostInitialize");
  if (p->profilerType != kProfilerTypePmSampling || p->pChipName == nullptr ||
      std::strcmp(p->pChipName, "FAKE100") != 0 || p->pCounterAvailabilityImage == nullptr ||
      p->pCounterAvailabilityImage[0] != 0xA5)
    return 1;
  p->pHostObject = new CUpti_Profiler_Host_Object;
  return 0;
}
JP_EXPORT CUptiResult cuptiProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params* p) {
  FAKE_ENTER("cuptiProfilerHostDeinitialize");
  delete p->pHostObject;
  return 0;
}
JP_EXPORT CUptiResult
cuptiProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params* p) {
  FAKE_ENTER("cuptiProfilerHostConfigAddMetrics");
  if (p->pHostObject == nullptr || !p->pHostObject->metrics.empty()) return 1;
  for (size_t i = 0; i < p->numMetrics; ++i) {
    if (kValues.count(p->ppMetricNames[i]) == 0) return 1;  // not offered on this chip
    p->pHostObject->metrics.emplace_back(p->ppMetricNames[i]);
  }
  return 0;
}
// The config image: the metric names, one per line.
std::string config_text(const CUpti_Profiler_Host_Object& h) {
  std::string t;
  for (const auto& m : h.metrics) t += m + "\n";
  return t;
}
std::vector<std::string> config_names(const uint8_t* img, size_t size) {
  std::vector<std::string> names;
  std::stringstream ss(std::string(reinterpret_cast<const char*>(img),
                                   strnlen(reinterpret_cast<const char*>(img), size)));
  for (std::string line; std::getline(ss, line);) names.push_back(line);
  return names;
}
JP_EXPORT CUptiResult
cuptiProfilerHostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params* p) {
  FAKE_ENTER("cuptiProfilerHostGetConfigImageSize");
  p->configImageSize = config_text(*p->pHostObject).size() + 1;
  return 0;
}
JP_EXPORT CUptiResult
cuptiProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params* p) {
  FAKE_ENTER("cuptiProfilerHostGetConfigImage");
  const std::string t = config_text(*p->pHostObject);
  if (p->configImageSize < t.size() + 1) return 1;
  std::memcpy(p->pConfigImage, t.c_str(), t.size() + 1);
  return 0;
}
JP_EXPORT CUptiResult
cuptiProfilerHostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params* p) {
  FAKE_ENTER("cuptiProfilerHostGetNumOfPasses");
  p->numOfPasses = 1;
  for (const auto& n : config_names(p->pConfigImage, p->configImageSize))
    for (const auto& sub : env_list("JOULEPROF_FAKE_CUPTI_MULTIPASS"))
      if (n.find(sub) != std::string::npos) p->numOfPasses = 2;
  return 0;
}
JP_EXPORT CUptiResult cuptiPmSamplingEnable(CUpti_PmSampling_Enable_Params* p) {
  FAKE_ENTER_DEVICE("cuptiPmSamplingEnable");
  if (p->deviceIndex >= 8) return 1;
  if (enabled[p->deviceIndex]) return 26;  // what the H100 answered a second client
  enabled[p->deviceIndex] = true;
  p->pPmSamplingObject = new CUpti_PmSampling_Object{p->deviceIndex, {}, 0, false, 0, 0, 0};
  return 0;
}
JP_EXPORT CUptiResult cuptiPmSamplingDisable(CUpti_PmSampling_Object_Params* p) {
  FAKE_ENTER_DEVICE("cuptiPmSamplingDisable");
  if (p->pPmSamplingObject == nullptr) return 1;
  enabled[p->pPmSamplingObject->device] = false;
  delete p->pPmSamplingObject;
  return 0;
}
JP_EXPORT CUptiResult cuptiPmSamplingSetConfig(CUpti_PmSampling_SetConfig_Params* p) {
  FAKE_ENTER_DEVICE("cuptiPmSamplingSetConfig");
  auto* o = p->pPmSamplingObject;
  if (o == nullptr || p->pConfig == nullptr || p->samplingInterval == 0 ||
      p->triggerMode != kTriggerModeGpuTimeInterval)
    return 1;
  o->config = config_names(p->pConfig, p->configSize);
  for (const auto& sub : env_list("JOULEPROF_FAKE_CUPTI_MULTIPASS"))
    for (const auto& n : o->config)
      if (n.find(sub) != std::string::npos) return 27;  // PM sampling is one pass
  o->interval_ns = p->samplingInterval;
  return 0;
}
JP_EXPORT CUptiResult
cuptiPmSamplingGetCounterDataSize(CUpti_PmSampling_GetCounterDataSize_Params* p) {
  FAKE_ENTER("cuptiPmSamplingGetCounterDataSize");
  if (p->pPmSamplingObject == nullptr || p->numMetrics != p->pPmSamplingObject->config.size() ||
      p->maxSamples == 0)
    return 1;
  size_t n = p->maxSamples;
  if (const char* cap = std::getenv("JOULEPROF_FAKE_CUPTI_IMAGE_SAMPLES"))
    n = std::min<size_t>(n, std::strtoul(cap, nullptr, 10));
  p->counterDataSize = sizeof(ImageHeader) + n * record_bytes(p->numMetrics);
  return 0;
}
JP_EXPORT CUptiResult
cuptiPmSamplingCounterDataImageInitialize(CUpti_PmSampling_CounterDataImage_Initialize_Params* p) {
  FAKE_ENTER("cuptiPmSamplingCounterDataImageInitialize");
  const size_t n = p->pPmSamplingObject->config.size();
  if (p->pCounterData == nullptr || p->counterDataSize < sizeof(ImageHeader)) return 1;
  ImageHeader h{kMagic,
                static_cast<uint32_t>((p->counterDataSize - sizeof(ImageHeader)) / record_bytes(n)),
                static_cast<uint32_t>(n), 0};
  std::memcpy(p->pCounterData, &h, sizeof(h));
  return 0;
}
JP_EXPORT CUptiResult cuptiPmSamplingStart(CUpti_PmSampling_Object_Params* p) {
  FAKE_ENTER_DEVICE("cuptiPmSamplingStart");
  auto* o = p->pPmSamplingObject;
  if (o == nullptr || o->interval_ns == 0 || o->started) return 1;
  o->started = true;
  o->start_ns = now_ns();
  return 0;
}
JP_EXPORT CUptiResult cuptiPmSamplingStop(CUpti_PmSampling_Object_Params* p) {
  FAKE_ENTER_DEVICE("cuptiPmSamplingStop");
  auto* o = p->pPmSamplingObject;
  if (o == nullptr || !o->started) return 1;
  o->started = false;
  o->stop_ns = now_ns();
  return 0;
}
JP_EXPORT CUptiResult cuptiPmSamplingDecodeData(CUpti_PmSampling_DecodeData_Params* p) {
  FAKE_ENTER_DEVICE("cuptiPmSamplingDecodeData");
  auto* o = p->pPmSamplingObject;
  ImageHeader* h = header(p->pCounterDataImage, p->counterDataImageSize);
  if (o == nullptr || h == nullptr || o->start_ns == 0) return 1;
  const uint64_t until = o->started ? now_ns() : o->stop_ns;
  const uint64_t due = (until - o->start_ns) / o->interval_ns;  // samples completed by now
  while (o->emitted < due && h->count < h->max_samples) {
    uint64_t* r = record(p->pCounterDataImage, *h, h->count);
    r[0] = o->start_ns + o->emitted * o->interval_ns + clock_offset_ns();
    r[1] = r[0] + o->interval_ns;
    auto* v = reinterpret_cast<double*>(r + 2);
    for (size_t k = 0; k < o->config.size(); ++k) v[k] = kValues.at(o->config[k]);
    ++h->count;
    ++o->emitted;
  }
  p->decodeStopReason =
      o->emitted < due ? kDecodeStopReasonCounterDataFull : 2 /* END_OF_RECORDS */;
  p->overflow = 0;
  return 0;
}
JP_EXPORT CUptiResult
cuptiPmSamplingGetCounterDataInfo(CUpti_PmSampling_GetCounterDataInfo_Params* p) {
  FAKE_ENTER("cuptiPmSamplingGetCounterDataInfo");
  const ImageHeader* h =
      header(const_cast<uint8_t*>(p->pCounterDataImage), p->counterDataImageSize);
  if (h == nullptr) return 1;
  p->numTotalSamples = h->max_samples;
  p->numPopulatedSamples = p->numCompletedSamples = h->count;
  return 0;
}
JP_EXPORT CUptiResult
cuptiPmSamplingCounterDataGetSampleInfo(CUpti_PmSampling_CounterData_GetSampleInfo_Params* p) {
  FAKE_ENTER("cuptiPmSamplingCounterDataGetSampleInfo");
  auto* img = const_cast<uint8_t*>(p->pCounterDataImage);
  const ImageHeader* h = header(img, p->counterDataImageSize);
  if (h == nullptr || p->sampleIndex >= h->count) return 1;
  const uint64_t* r = record(img, *h, p->sampleIndex);
  p->startTimestamp = r[0];
  p->endTimestamp = r[1];
  return 0;
}
JP_EXPORT CUptiResult
cuptiProfilerHostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params* p) {
  FAKE_ENTER("cuptiProfilerHostEvaluateToGpuValues");
  auto* img = const_cast<uint8_t*>(p->pCounterDataImage);
  const ImageHeader* h = header(img, p->counterDataImageSize);
  if (h == nullptr || p->pHostObject == nullptr || p->rangeIndex >= h->count) return 1;
  const auto* v = reinterpret_cast<const double*>(record(img, *h, p->rangeIndex) + 2);
  const auto& names = p->pHostObject->metrics;  // the image holds values in the configured order
  for (size_t i = 0; i < p->numMetrics; ++i) {
    size_t k = 0;
    while (k < names.size() && names[k] != p->ppMetricNames[i]) ++k;
    if (k == names.size() || k >= h->num_metrics) return 1;
    p->pMetricValues[i] = v[k];
  }
  return 0;
}

// --- the CUDA driver (up to 8 devices, on the fake NVML's PCI buses) ---
JP_EXPORT CUresult cuInit(unsigned int flags) {
  std::lock_guard<std::mutex> lock(mu);
  if (const int rc = injected("cuInit"); rc != 0) return rc;
  return flags == 0 ? 0 : 1;
}
JP_EXPORT CUresult cuDeviceGetByPCIBusId(int* dev, const char* bus) {
  std::lock_guard<std::mutex> lock(mu);
  if (const int rc = injected("cuDeviceGetByPCIBusId"); rc != 0) return rc;
  // The fake NVML's GPU i sits on PCI bus 0x18 + i.
  unsigned b = 0;
  if (dev == nullptr || bus == nullptr || std::sscanf(bus, "0000:%x:00.0", &b) != 1 || b < 0x18 ||
      b >= 0x18 + 8)
    return 101;  // CUDA_ERROR_INVALID_DEVICE
  *dev = static_cast<int>(b - 0x18);
  return 0;
}
JP_EXPORT CUresult cuGetErrorString(CUresult rc, const char** s) {
  *s = rc == 100   ? "no CUDA-capable device is detected"
       : rc == 101 ? "invalid device ordinal"
       : rc == 2   ? "out of memory"
                   : "unknown error";
  return 0;
}
JP_EXPORT CUresult cuDevicePrimaryCtxRetain(CUctx_st** ctx, int dev) {
  static CUctx_st the_context;
  if (const int rc = injected("cuDevicePrimaryCtxRetain"); rc != 0) return rc;
  if (ctx == nullptr || dev < 0 || dev >= 8) return 1;
  *ctx = &the_context;
  return 0;
}
JP_EXPORT CUresult cuCtxSetCurrent(CUctx_st* ctx) {
  std::lock_guard<std::mutex> lock(mu);
  context_current = ctx != nullptr;
  return 0;
}
JP_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  return dev >= 0 && dev < 8 ? 0 : 1;
}

// Each export's signature matches the source's table (cupti_pm_entry_points.def).
#define JP_CUPTI_PM(member, params, sym)                               \
  static_assert(std::is_same_v<decltype(&sym), CUptiResult(*) params>, \
                #sym " differs from the table");
#define JP_CUDA_DRV(member, params, sym)                                 \
  static_assert(std::is_same_v<decltype(&sym), CUresult(*) params>, #sym \
                " differs from the "                                     \
                "table");
#include "cupti_pm_entry_points.def"
#undef JP_CUPTI_PM
#undef JP_CUDA_DRV
