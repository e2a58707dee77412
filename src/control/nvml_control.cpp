// The NVML control backend: supported clocks, locked clocks, application clocks (where the
// driver still offers them) and the power limit, through the run-time-loaded function table.
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "control_backends.hpp"
#include "nvml/nvml_gpu.hpp"

namespace jouleprof::control {
namespace {

using nvml::Api;

Errc errc_of(nvmlReturn_t rc) {
  switch (rc) {
    case nvml::kErrorNotSupported:
    case nvml::kErrorFunctionNotFound: return Errc::unsupported;
    case nvml::kErrorNoPermission: return Errc::unavailable;
    case nvml::kErrorInvalidArgument: return Errc::invalid_argument;
    case nvml::kErrorGpuIsLost: return Errc::lost;
    case nvml::kErrorNotFound: return Errc::not_found;
    default: return Errc::vendor;
  }
}

// Every control call through one wrapper that keeps the call, the vendor code and message.
template <class Fn, class... Args>
Result<void> call(const Api& api, Fn fn, const char* name, Args... args) {
  if (fn == nullptr) return make_error(Errc::unsupported, std::string(name) + ": symbol missing in " + api.library);
  const nvmlReturn_t rc = fn(args...);
  if (rc == nvml::kSuccess) return {};
  std::string msg = nvml::describe(api, name, rc);
  if (rc == nvml::kErrorNoPermission) {
    msg += ": " + permission_problem(geteuid(), 0, false);
  }
  return make_error(errc_of(rc), msg);
}
#define CTL_CALL(member, ...) call(ctx_->api, ctx_->api.member, "nvml" #member, __VA_ARGS__)

unsigned long long cap_effective() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      std::istringstream ss(line.substr(7));
      unsigned long long v = 0;
      ss >> std::hex >> v;
      return v;
    }
  }
  return 0;
}

class NvmlControl final : public ControlBackend {
 public:
  NvmlControl(std::shared_ptr<nvml::Context> ctx, std::string lib) : ctx_(std::move(ctx)), lib_(std::move(lib)) {}
  std::string name() const override { return "nvml"; }
  std::string library() const override { return lib_; }
  bool durable() const override { return true; }

  Result<std::vector<GpuCapabilities>> discover(const std::vector<std::string>& ids) override {
    auto count = ctx_->device_count();
    if (!count) return count.error();
    std::vector<GpuCapabilities> all;
    for (unsigned i = 0; i < *count; ++i) {
      nvmlDevice_t dev = nullptr;
      if (auto r = CTL_CALL(DeviceGetHandleByIndex, i, &dev); !r) return r.error();
      all.push_back(capabilities(dev, static_cast<int>(i)));
    }
    return select_gpus(all, ids);
  }

  Result<GpuControlState> read_state(const std::string& uuid) override {
    auto dev = handle(uuid);
    if (!dev) return dev.error();
    GpuControlState st;
    const Api& api = ctx_->api;
    unsigned v = 0, m = 0;
    if (api.DeviceGetApplicationsClock != nullptr &&
        api.DeviceGetApplicationsClock(*dev, nvml::kClockGraphics, &v) == nvml::kSuccess &&
        api.DeviceGetApplicationsClock(*dev, nvml::kClockMem, &m) == nvml::kSuccess) {
      st.app_gpu_mhz = v;
      st.app_mem_mhz = m;
    }
    if (auto r = CTL_CALL(DeviceGetPowerManagementLimit, *dev, &v); r) {
      st.power_limit_mw = v;
    } else if (r.error().code != Errc::unsupported) {
      return r.error();
    }
    nvmlEnableState_t p = 0;
    if (api.DeviceGetPersistenceMode != nullptr && api.DeviceGetPersistenceMode(*dev, &p) == nvml::kSuccess) {
      st.persistence = p != 0;
    }
    return st;
  }

  std::string permission(const std::string& uuid) override {
    bool restricted = false;
    if (auto dev = handle(uuid); dev && ctx_->api.DeviceGetAPIRestriction != nullptr) {
      nvmlEnableState_t r = 0;
      if (ctx_->api.DeviceGetAPIRestriction(*dev, nvml::kRestrictedSetApplicationClocks, &r) == nvml::kSuccess) {
        restricted = r != 0;
      }
    }
    return permission_problem(geteuid(), cap_effective(), restricted);
  }

  Result<void> apply(const std::string& uuid, const Setting& s) override {
    auto dev = handle(uuid);
    if (!dev) return dev.error();
    const Api& api = ctx_->api;
    if (s.gpu_clock_mhz) {
      if (api.DeviceSetGpuLockedClocks != nullptr) {
        if (auto r = CTL_CALL(DeviceSetGpuLockedClocks, *dev, *s.gpu_clock_mhz, *s.gpu_clock_mhz); !r) return r;
      } else {
        // Before Volta only application clocks exist; they need the memory clock too.
        unsigned mem = s.mem_clock_mhz.value_or(0);
        if (mem == 0 && api.DeviceGetApplicationsClock != nullptr) {
          api.DeviceGetApplicationsClock(*dev, nvml::kClockMem, &mem);
        }
        if (auto r = CTL_CALL(DeviceSetApplicationsClocks, *dev, mem, *s.gpu_clock_mhz); !r) return r;
      }
    }
    if (s.mem_clock_mhz) {
      if (auto r = CTL_CALL(DeviceSetMemoryLockedClocks, *dev, *s.mem_clock_mhz, *s.mem_clock_mhz); !r) return r;
    }
    if (s.power_limit_w) {
      if (auto r = CTL_CALL(DeviceSetPowerManagementLimit, *dev, *s.power_limit_w * 1000U); !r) return r;
    }
    return {};
  }

  Result<void> restore(const std::string& uuid, const GpuControlState& o) override {
    auto dev = handle(uuid);
    if (!dev) return dev.error();
    const Api& api = ctx_->api;
    // Each step is tried even when an earlier one failed: put back as much as possible.
    std::string failures;
    auto note = [&](const Result<void>& r) {
      if (!r && r.error().code != Errc::unsupported) failures += (failures.empty() ? "" : "; ") + r.error().message;
    };
    if (o.gpu_locked) {
      note(CTL_CALL(DeviceSetGpuLockedClocks, *dev, o.gpu_locked->min_mhz, o.gpu_locked->max_mhz));
    } else if (api.DeviceResetGpuLockedClocks != nullptr) {
      note(CTL_CALL(DeviceResetGpuLockedClocks, *dev));
    }
    if (o.mem_locked) {
      note(CTL_CALL(DeviceSetMemoryLockedClocks, *dev, o.mem_locked->min_mhz, o.mem_locked->max_mhz));
    } else if (api.DeviceResetMemoryLockedClocks != nullptr) {
      note(CTL_CALL(DeviceResetMemoryLockedClocks, *dev));
    }
    if (o.app_gpu_mhz && o.app_mem_mhz) note(CTL_CALL(DeviceSetApplicationsClocks, *dev, *o.app_mem_mhz, *o.app_gpu_mhz));
    if (o.power_limit_mw) note(CTL_CALL(DeviceSetPowerManagementLimit, *dev, *o.power_limit_mw));
    if (!failures.empty()) return make_error(Errc::vendor, "restoring GPU " + uuid + ": " + failures);
    return {};
  }

  Result<std::pair<unsigned, unsigned>> current_clocks(const std::string& uuid) override {
    auto dev = handle(uuid);
    if (!dev) return dev.error();
    unsigned g = 0, m = 0;
    if (auto r = CTL_CALL(DeviceGetClockInfo, *dev, nvml::kClockSm, &g); !r) return r.error();
    if (auto r = CTL_CALL(DeviceGetClockInfo, *dev, nvml::kClockMem, &m); !r) return r.error();
    return std::pair<unsigned, unsigned>{g, m};
  }

 private:
  Result<nvmlDevice_t> handle(const std::string& uuid) {
    nvmlDevice_t dev = nullptr;
    if (auto r = CTL_CALL(DeviceGetHandleByUUID, uuid.c_str(), &dev); !r) {
      return make_error(r.error().code == Errc::not_found ? Errc::not_found : r.error().code,
                        "GPU " + uuid + " not found: " + r.error().message);
    }
    return dev;
  }

  std::vector<unsigned> list(nvmlReturn_t (*fn)(nvmlDevice_t, unsigned*, unsigned*), nvmlDevice_t dev) {
    unsigned buf[512];
    unsigned n = 512;
    if (fn == nullptr || fn(dev, &n, buf) != nvml::kSuccess) return {};
    return {buf, buf + n};
  }

  GpuCapabilities capabilities(nvmlDevice_t dev, int index) {
    const Api& api = ctx_->api;
    GpuCapabilities c;
    c.index = index;
    char text[128] = {0};
    if (api.DeviceGetUUID != nullptr && api.DeviceGetUUID(dev, text, sizeof(text)) == nvml::kSuccess) c.uuid = text;
    text[0] = 0;
    if (api.DeviceGetName != nullptr && api.DeviceGetName(dev, text, sizeof(text)) == nvml::kSuccess) c.name = text;
    c.mem_clocks_mhz = list(api.DeviceGetSupportedMemoryClocks, dev);
    for (unsigned m : c.mem_clocks_mhz) {
      unsigned buf[512];
      unsigned n = 512;
      if (api.DeviceGetSupportedGraphicsClocks != nullptr &&
          api.DeviceGetSupportedGraphicsClocks(dev, m, &n, buf) == nvml::kSuccess) {
        c.gpu_clocks_mhz[m] = std::vector<unsigned>(buf, buf + n);
      }
    }
    unsigned lo = 0, hi = 0, def = 0;
    if (api.DeviceGetPowerManagementLimitConstraints != nullptr &&
        api.DeviceGetPowerManagementLimitConstraints(dev, &lo, &hi) == nvml::kSuccess) {
      c.power_limit_min_mw = lo;
      c.power_limit_max_mw = hi;
    }
    if (api.DeviceGetPowerManagementDefaultLimit != nullptr &&
        api.DeviceGetPowerManagementDefaultLimit(dev, &def) == nvml::kSuccess) {
      c.power_limit_default_mw = def;
    }
    unsigned v = 0;
    c.app_clocks = api.DeviceGetApplicationsClock != nullptr &&
                   api.DeviceGetApplicationsClock(dev, nvml::kClockGraphics, &v) == nvml::kSuccess;
    c.locked_clocks = api.DeviceSetGpuLockedClocks != nullptr;
    c.mem_locked_clocks = api.DeviceSetMemoryLockedClocks != nullptr;
    c.power_limit = api.DeviceSetPowerManagementLimit != nullptr && c.power_limit_max_mw.has_value();
    return c;
  }

  std::shared_ptr<nvml::Context> ctx_;
  std::string lib_;
};

}  // namespace

Result<std::unique_ptr<ControlBackend>> open_nvml_control(const std::string& library) {
  auto ctx = nvml::Context::open(library);
  if (!ctx) return ctx.error();
  return std::unique_ptr<ControlBackend>(std::make_unique<NvmlControl>(*ctx, library));
}

}  // namespace jouleprof::control
