// A fake libnvidia-ml.so.1: the subset of the NVML C ABI jouleprof calls, backed by the
// simulated GPU model and driven by a scenario file, so the real loader and sampler are
// tested without a GPU. Environment:
//   JOULEPROF_FAKE_NVML_SCENARIO  scenario file (docs/simulated-gpu.md); default: 1 idle H100
//   JOULEPROF_FAKE_NVML_INIT_ERROR  nvmlReturn_t that nvmlInit returns (e.g. 9: driver not loaded)
// Model time 0 is the first nvmlInit; timestamps are CLOCK_REALTIME microseconds as in NVML.
#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "jouleprof/sensors/sim_model.hpp"
#include "nvml/nvml_api.hpp"

using jouleprof::SimConfig;
using jouleprof::SimGpuModel;
namespace nv = jouleprof::nvml;

struct nvmlDevice_st {
  unsigned index = 0;
  std::unique_ptr<SimGpuModel> model;
};

namespace {

struct State {
  std::mutex mu;
  int init_count = 0;
  int64_t origin_ns = 0;
  SimConfig cfg;
  std::vector<nvmlDevice_st> devices;
  std::string load_file;
  std::streamoff load_offset = 0;
  std::string pending;
};

State& state() {
  static State s;
  return s;
}

int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double model_now() { return static_cast<double>(realtime_ns() - state().origin_ns) * 1e-9; }

unsigned long long to_us(double model_t) {
  return static_cast<unsigned long long>((state().origin_ns + static_cast<int64_t>(std::llround(model_t * 1e9))) / 1000);
}

// Reads "realtime_ns watts" lines a test workload appended to the load file.
void poll_load_file() {
  State& s = state();
  if (s.load_file.empty()) return;
  std::ifstream in(s.load_file, std::ios::binary);
  if (!in) return;
  in.seekg(s.load_offset);
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  s.load_offset += static_cast<std::streamoff>(chunk.size());
  s.pending += chunk;
  std::size_t nl;
  while ((nl = s.pending.find('\n')) != std::string::npos) {
    std::istringstream line(s.pending.substr(0, nl));
    s.pending.erase(0, nl + 1);
    long long ns = 0;
    double w = 0;
    if (line >> ns >> w) {
      const double t = static_cast<double>(ns - s.origin_ns) * 1e-9;
      for (auto& d : s.devices) d.model->schedule().set_constant(t, w);
    }
  }
}

// Common prologue of every device call: initialised, valid handle, not lost.
nvmlReturn_t enter(nvmlDevice_t dev, double& now) {
  State& s = state();
  if (s.init_count == 0) return nv::kErrorUninitialized;
  if (dev == nullptr) return nv::kErrorInvalidArgument;
  poll_load_file();
  now = model_now();
  if (dev->model->failed(now)) return nv::kErrorGpuIsLost;
  return nv::kSuccess;
}

#define FAKE_ENTER(dev, feature)                        \
  std::lock_guard<std::mutex> lock(state().mu);         \
  double now = 0;                                       \
  if (nvmlReturn_t rc_ = enter(dev, now); rc_ != 0) return rc_; \
  if (!(dev)->model->supports(feature)) return nv::kErrorNotSupported;

void copy_str(char* dst, unsigned len, const std::string& s) {
  if (len == 0) return;
  std::snprintf(dst, len, "%s", s.c_str());
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2() {
  std::lock_guard<std::mutex> lock(state().mu);
  State& s = state();
  if (const char* e = std::getenv("JOULEPROF_FAKE_NVML_INIT_ERROR")) {
    const int rc = std::atoi(e);
    if (rc != 0) return rc;
  }
  if (s.init_count++ > 0) return nv::kSuccess;
  s.origin_ns = realtime_ns();
  SimConfig cfg;
  cfg.name = "NVIDIA H100 80GB HBM3 (fake NVML)";
  cfg.driver_version = "580.159-fake";
  cfg.initial.high_w = cfg.idle_w;
  if (const char* path = std::getenv("JOULEPROF_FAKE_NVML_SCENARIO")) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    auto parsed = jouleprof::parse_sim_scenario(ss.str(), cfg);
    if (!in || !parsed) {
      std::fprintf(stderr, "fake NVML: bad scenario %s: %s\n", path,
                   parsed ? "cannot read" : parsed.error().message.c_str());
      s.init_count = 0;
      return nv::kErrorUnknown;
    }
    cfg = *parsed;
  }
  s.cfg = cfg;
  s.load_file = cfg.load_file;
  s.devices.clear();
  s.devices.resize(static_cast<std::size_t>(cfg.gpus));
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    s.devices[i].index = static_cast<unsigned>(i);
    s.devices[i].model = std::make_unique<SimGpuModel>(cfg);
  }
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown() {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().init_count == 0) return nv::kErrorUninitialized;
  state().init_count--;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
  }
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetDriverVersion(char* v, unsigned len) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().init_count == 0) return nv::kErrorUninitialized;
  copy_str(v, len, state().cfg.driver_version);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* n) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().init_count == 0) return nv::kErrorUninitialized;
  *n = static_cast<unsigned>(state().devices.size());
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().init_count == 0) return nv::kErrorUninitialized;
  if (i >= state().devices.size()) return nv::kErrorInvalidArgument;
  *d = &state().devices[i];
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned len) {
  FAKE_ENTER(d, "name");
  copy_str(name, len, d->model->config().name);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid, unsigned len) {
  FAKE_ENTER(d, "uuid");
  char buf[64];
  std::snprintf(buf, sizeof(buf), "GPU-fa4e0000-0000-4000-8000-%012u", d->index);
  copy_str(uuid, len, buf);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* pci) {
  FAKE_ENTER(d, "pci");
  std::memset(pci, 0, sizeof(*pci));
  pci->bus = 0x18 + d->index;
  std::snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", pci->bus);
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", pci->bus);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t d, nvmlSamplingType_t type,
                                                                         unsigned long long last_seen,
                                                                         nvmlValueType_t* vtype, unsigned* count,
                                                                         nvmlSample_t* samples) {
  FAKE_ENTER(d, "samples");
  if (type != nv::kTotalPowerSamples) return nv::kErrorNotSupported;
  if (count == nullptr || vtype == nullptr) return nv::kErrorInvalidArgument;
  const double after = last_seen == 0 ? -1e18
                                      : static_cast<double>(static_cast<int64_t>(last_seen) * 1000 - state().origin_ns) * 1e-9;
  const auto raw = d->model->samples(after, now);
  *vtype = nv::kValueUnsignedInt;
  if (samples == nullptr) {
    *count = static_cast<unsigned>(raw.size());
    return raw.empty() ? nv::kErrorNotFound : nv::kSuccess;
  }
  if (raw.empty()) return nv::kErrorNotFound;
  const unsigned n = std::min<unsigned>(*count, static_cast<unsigned>(raw.size()));
  for (unsigned i = 0; i < n; ++i) {
    samples[i].timeStamp = to_us(raw[i].t_s);
    samples[i].sampleValue.uiVal = static_cast<unsigned>(std::lround(raw[i].power_w * 1000.0));
  }
  *count = n;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n,
                                                                             nvmlFieldValue_t* values) {
  FAKE_ENTER(d, "fields");
  for (int i = 0; i < n; ++i) {
    nvmlFieldValue_t& f = values[i];
    f.timestamp = static_cast<long long>(to_us(now));
    f.latencyUsec = 0;
    f.valueType = nv::kValueUnsignedInt;
    if (f.fieldId == nv::kFieldPowerInstant && d->model->supports("instant")) {
      f.value.uiVal = static_cast<unsigned>(std::lround(d->model->power_instant_w(now) * 1000.0));
      f.nvmlReturn = nv::kSuccess;
    } else if (f.fieldId == nv::kFieldPowerAverage && d->model->supports("average")) {
      f.value.uiVal = static_cast<unsigned>(std::lround(d->model->power_average_w(now) * 1000.0));
      f.nvmlReturn = nv::kSuccess;
    } else {
      f.nvmlReturn = nv::kErrorNotSupported;
    }
  }
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* mw) {
  FAKE_ENTER(d, "average");
  *mw = static_cast<unsigned>(std::lround(d->model->power_average_w(now) * 1000.0));
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d,
                                                                                        unsigned long long* mj) {
  FAKE_ENTER(d, "energy");
  *mj = d->model->energy_mj(now);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, nvmlClockType_t type,
                                                                           unsigned* mhz) {
  FAKE_ENTER(d, "clocks");
  if (type == nv::kClockSm || type == 0) {
    *mhz = static_cast<unsigned>(d->model->sm_clock_mhz(now));
  } else if (type == nv::kClockMem) {
    *mhz = static_cast<unsigned>(d->model->mem_clock_mhz(now));
  } else {
    return nv::kErrorNotSupported;
  }
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  FAKE_ENTER(d, "utilization");
  u->gpu = static_cast<unsigned>(d->model->gpu_util_pct(now));
  u->memory = u->gpu * 2 / 5;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, nvmlTemperatureSensors_t,
                                                                             unsigned* c) {
  FAKE_ENTER(d, "temperature");
  *c = static_cast<unsigned>(std::lround(d->model->temperature_c(now)));
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  FAKE_ENTER(d, "memory");
  m->total = 80ULL << 30;
  m->used = 1ULL << 30;
  m->free = m->total - m->used;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned* mw) {
  FAKE_ENTER(d, "power_limit");
  *mw = static_cast<unsigned>(d->model->config().tdp_w * 1000);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t d,
                                                                                                 unsigned* lo,
                                                                                                 unsigned* hi) {
  FAKE_ENTER(d, "power_limit");
  *lo = 200000;
  *hi = static_cast<unsigned>(d->model->config().tdp_w * 1000);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d,
                                                                                           unsigned long long* r) {
  FAKE_ENTER(d, "throttle");
  *r = d->model->throttle_reasons(now);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, nvmlEnableState_t* m) {
  FAKE_ENTER(d, "persistence");
  *m = 1;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned* cur, unsigned* pend) {
  FAKE_ENTER(d, "mig");
  *cur = *pend = d->model->config().mig_enabled ? 1 : 0;
  return nv::kSuccess;
}

}  // extern "C"

// The entry-point table checks that the fake defines every entry point, with the signature the
// loader uses.
#define JP_NVML(member, ret, params, sym, fallback)                           \
  static_assert(std::is_same_v<decltype(&sym), jouleprof::nvml::Api::member##_fn>, \
                #sym " differs from nvml_entry_points.def");
#include "nvml/nvml_entry_points.def"
#undef JP_NVML
