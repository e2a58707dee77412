// The NVML backend: one NvmlGpu per device over a shared, run-time-loaded function table.
#include "nvml_gpu.hpp"

#include <cstring>

namespace jouleprof::nvml {
namespace {

Errc errc_of(nvmlReturn_t rc) {
  switch (rc) {
    case kErrorNotSupported:
    case kErrorFunctionNotFound: return Errc::unsupported;
    case kErrorGpuIsLost: return Errc::lost;
    case kErrorNotFound: return Errc::not_found;
    case kErrorDriverNotLoaded:
    case kErrorLibraryNotFound: return Errc::unavailable;
    default: return Errc::vendor;
  }
}

double value_as_double(nvmlValueType_t type, const nvmlValue_t& v) {
  switch (type) {
    case kValueDouble: return v.dVal;
    case kValueUnsignedInt: return v.uiVal;
    case kValueUnsignedLong: return static_cast<double>(v.ulVal);
    case kValueUnsignedLongLong: return static_cast<double>(v.ullVal);
    case kValueSignedLongLong: return static_cast<double>(v.sllVal);
    case kValueSignedInt: return v.siVal;
    default: return v.uiVal;
  }
}

}  // namespace

// Every vendor call goes through here: the call name, the vendor code and message are kept;
// a symbol the library lacks reads as "unsupported", not as a failure.
template <class Fn, class... Args>
Result<void> call(const Api& api, Fn fn, const char* name, Args... args) {
  if (fn == nullptr) {
    return make_error(Errc::unsupported, std::string(name) + ": symbol missing in " + api.library);
  }
  const nvmlReturn_t rc = fn(args...);
  if (rc == kSuccess) return {};
  return make_error(errc_of(rc), describe(api, name, rc));
}
#define JP_NVML_CALL(api, member, ...) call((api), (api).member, "nvml" #member, __VA_ARGS__)

Context::~Context() {
  if (initialised && api.Shutdown != nullptr) api.Shutdown();
}

Result<std::shared_ptr<Context>> Context::open(const std::string& library) {
  auto lib = open_library(library);
  if (!lib) return lib.error();
  return open(*lib, library);
}

Result<std::shared_ptr<Context>> Context::open(const SymbolResolver& lib, const std::string& library) {
  auto ctx = std::make_shared<Context>();
  ctx->lib = lib;
  ctx->api = load_api(lib, library);
  if (ctx->api.Init == nullptr) {
    return make_error(Errc::unavailable, library + " has no nvmlInit: not an NVML library");
  }
  const nvmlReturn_t rc = ctx->api.Init();
  if (rc != kSuccess) {
    return make_error(errc_of(rc) == Errc::vendor ? Errc::unavailable : errc_of(rc),
                      describe(ctx->api, "nvmlInit", rc) + " — no usable NVIDIA driver");
  }
  ctx->initialised = true;
  char buf[96] = {0};
  if (ctx->api.SystemGetDriverVersion != nullptr &&
      ctx->api.SystemGetDriverVersion(buf, sizeof(buf)) == kSuccess) {
    ctx->driver_version = buf;
  }
  return ctx;
}

Result<unsigned> Context::device_count() const {
  unsigned n = 0;
  const Result<void> e = JP_NVML_CALL(api, DeviceGetCount, &n);
  if (!e.ok()) return e.error();
  return n;
}

NvmlGpu::NvmlGpu(std::shared_ptr<Context> ctx, nvmlDevice_t dev, int index, const TimeBase& tb)
    : ctx_(std::move(ctx)), dev_(dev), tb_(tb) {
  const Api& api = ctx_->api;
  info_.index = index;
  info_.backend = "nvml";
  info_.driver_version = ctx_->driver_version;
  char buf[128] = {0};
  if (JP_NVML_CALL(api, DeviceGetName, dev_, buf, sizeof(buf)).ok()) info_.name = buf;
  std::memset(buf, 0, sizeof(buf));
  if (JP_NVML_CALL(api, DeviceGetUUID, dev_, buf, sizeof(buf)).ok()) info_.uuid = buf;
  nvmlPciInfo_t pci{};
  if (JP_NVML_CALL(api, DeviceGetPciInfo, dev_, &pci).ok()) info_.pci_bus_id = pci.busId;
  unsigned mw = 0, lo = 0, hi = 0;
  if (JP_NVML_CALL(api, DeviceGetEnforcedPowerLimit, dev_, &mw).ok()) info_.power_limit_w = mw / 1000.0;
  if (JP_NVML_CALL(api, DeviceGetPowerManagementLimitConstraints, dev_, &lo, &hi).ok()) {
    info_.power_limit_min_w = lo / 1000.0;
    info_.power_limit_max_w = hi / 1000.0;
  }
  nvmlEnableState_t pm = 0;
  if (JP_NVML_CALL(api, DeviceGetPersistenceMode, dev_, &pm).ok()) info_.persistence_mode = pm != 0;
  unsigned mig = 0, pending = 0;
  if (JP_NVML_CALL(api, DeviceGetMigMode, dev_, &mig, &pending).ok()) info_.mig_enabled = mig != 0;

  // Probe once which metrics this device answers; an unsupported one is never read again.
  for (int i = 0; i < kMetricCount; ++i) {
    const auto m = static_cast<Metric>(i);
    bool s = false;
    if (m == Metric::power_sample_w) {
      std::vector<Sample> tmp;
      s = static_cast<bool>(drain_power_samples(tmp));
    } else if (m == Metric::energy_j) {
      s = static_cast<bool>(read_energy_mj());
    } else {
      s = static_cast<bool>(read(m));
    }
    supported_[i] = s;
  }
}

Result<void> NvmlGpu::drain_power_samples(std::vector<Sample>& out) {
  const Api& api = ctx_->api;
  nvmlValueType_t type = 0;
  unsigned count = 0;
  Result<void> e = JP_NVML_CALL(api, DeviceGetSamples, dev_, kTotalPowerSamples, last_seen_us_, &type, &count,
                         nullptr);
  if (!e.ok()) {
    if (e.error().code == Errc::not_found) return {};  // NVML_ERROR_NOT_FOUND: no new samples
    return e;
  }
  if (count == 0) return {};
  buf_.resize(count);
  e = JP_NVML_CALL(api, DeviceGetSamples, dev_, kTotalPowerSamples, last_seen_us_, &type, &count,
                   buf_.data());
  if (!e.ok()) return e.error().code == Errc::not_found ? Result<void>() : e;
  for (unsigned i = 0; i < count; ++i) {
    const nvmlSample_t& s = buf_[i];
    if (s.timeStamp <= last_seen_us_) continue;  // the driver may return the last one again
    last_seen_us_ = s.timeStamp;
    out.push_back({tb_.from_realtime_us(s.timeStamp), value_as_double(type, s.sampleValue) / 1000.0});
  }
  return {};
}

Result<double> NvmlGpu::read(Metric m) {
  const Api& api = ctx_->api;
  unsigned v = 0;
  Result<void> e;
  switch (m) {
    case Metric::power_instant_w: {
      nvmlFieldValue_t f{};
      f.fieldId = kFieldPowerInstant;
      e = JP_NVML_CALL(api, DeviceGetFieldValues, dev_, 1, &f);
      if (!e.ok()) return e.error();
      if (f.nvmlReturn != kSuccess) {
        return make_error(errc_of(f.nvmlReturn), describe(api, "nvmlDeviceGetFieldValues(POWER_INSTANT)", f.nvmlReturn));
      }
      return value_as_double(f.valueType, f.value) / 1000.0;
    }
    case Metric::power_average_w:
      e = JP_NVML_CALL(api, DeviceGetPowerUsage, dev_, &v);
      if (!e.ok()) return e.error();
      return v / 1000.0;
    case Metric::sm_clock_mhz:
      e = JP_NVML_CALL(api, DeviceGetClockInfo, dev_, kClockSm, &v);
      if (!e.ok()) return e.error();
      return static_cast<double>(v);
    case Metric::mem_clock_mhz:
      e = JP_NVML_CALL(api, DeviceGetClockInfo, dev_, kClockMem, &v);
      if (!e.ok()) return e.error();
      return static_cast<double>(v);
    case Metric::gpu_util_pct:
    case Metric::mem_util_pct: {
      nvmlUtilization_t u{};
      e = JP_NVML_CALL(api, DeviceGetUtilizationRates, dev_, &u);
      if (!e.ok()) return e.error();
      return static_cast<double>(m == Metric::gpu_util_pct ? u.gpu : u.memory);
    }
    case Metric::temperature_c:
      e = JP_NVML_CALL(api, DeviceGetTemperature, dev_, kTemperatureGpu, &v);
      if (!e.ok()) return e.error();
      return static_cast<double>(v);
    case Metric::memory_used_mib: {
      nvmlMemory_t mem{};
      e = JP_NVML_CALL(api, DeviceGetMemoryInfo, dev_, &mem);
      if (!e.ok()) return e.error();
      return static_cast<double>(mem.used) / (1024.0 * 1024.0);
    }
    case Metric::power_limit_w:
      e = JP_NVML_CALL(api, DeviceGetEnforcedPowerLimit, dev_, &v);
      if (!e.ok()) return e.error();
      return v / 1000.0;
    case Metric::throttle_reasons: {
      unsigned long long r = 0;
      e = JP_NVML_CALL(api, DeviceGetCurrentClocksEventReasons, dev_, &r);
      if (!e.ok()) return e.error();
      return static_cast<double>(r);
    }
    default: break;
  }
  return make_error(Errc::invalid_argument, std::string("not an instantaneous metric: ") + metric_name(m));
}

Result<uint64_t> NvmlGpu::read_energy_mj() {
  unsigned long long mj = 0;
  const Result<void> e = JP_NVML_CALL(ctx_->api, DeviceGetTotalEnergyConsumption, dev_, &mj);
  if (!e.ok()) return e.error();
  return static_cast<uint64_t>(mj);
}

Result<std::unique_ptr<NvmlGpu>> open_device(const std::shared_ptr<Context>& ctx, unsigned index,
                                             const TimeBase& tb) {
  nvmlDevice_t dev = nullptr;
  const Result<void> e = JP_NVML_CALL(ctx->api, DeviceGetHandleByIndex, index, &dev);
  if (!e.ok()) return e.error();
  return std::make_unique<NvmlGpu>(ctx, dev, static_cast<int>(index), tb);
}

}  // namespace jouleprof::nvml
