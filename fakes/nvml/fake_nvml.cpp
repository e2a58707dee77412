// A fake libnvidia-ml.so.1: the subset of the NVML C ABI jouleprof calls, backed by the
// simulated GPU model and driven by a scenario file, so the real loader and sampler are
// tested without a GPU. Environment:
//   JOULEPROF_FAKE_NVML_SCENARIO  scenario file (docs/simulated-gpu.md); default: 1 idle H100
//   JOULEPROF_FAKE_NVML_INIT_ERROR  nvmlReturn_t that nvmlInit returns (e.g. 9: driver not loaded)
//   JOULEPROF_FAKE_NVML_STATE   file holding the GPUs' clock/power-limit settings, so that they
//                               outlive a process as a real GPU's do (read at nvmlInit, rewritten
//                               atomically after every successful set call); unset: in memory
//   JOULEPROF_FAKE_NVML_SET_LOG file to which every set/reset call is appended, one line each:
//                               "PID CALL gpu=I ARGS... rc=RC" (tests read it)
//   JOULEPROF_FAKE_NVML_NO_PERMISSION=1  set calls answer NO_PERMISSION (not root)
//   JOULEPROF_FAKE_NVML_NO_APP_CLOCKS=1  application clocks answer NOT_SUPPORTED (deprecated)
//   JOULEPROF_FAKE_NVML_RESTRICTED=1     GetAPIRestriction says clocks are restricted to root
// Model time 0 is the first nvmlInit; timestamps are CLOCK_REALTIME microseconds as in NVML.
// Tests drive time themselves: jouleprof_fake_nvml_set_clock(fn, ctx) before nvmlInit makes
// fn(ctx) the CLOCK_REALTIME nanoseconds (a fake clock the test advances); nullptr: the system's.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
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

// What a GPU keeps between processes: its clock and power-limit settings.
struct FakeControl {
  bool gpu_locked = false;
  unsigned gpu_min = 0, gpu_max = 0;
  bool mem_locked = false;
  unsigned mem_min = 0, mem_max = 0;
  unsigned app_gpu = 1980, app_mem = 2619;  // H100 SXM default application clocks
  unsigned power_mw = 700000;
  int persistence = 1;
};

struct nvmlDevice_st {
  unsigned index = 0;
  std::unique_ptr<SimGpuModel> model;
  FakeControl control;
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

// The test's clock, when one is set (jouleprof_fake_nvml_set_clock); set while no GPU is open.
int64_t (*g_clock)(void*) = nullptr;
void* g_clock_ctx = nullptr;

int64_t realtime_ns() {
  if (g_clock != nullptr) return g_clock(g_clock_ctx);
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

bool env_on(const char* name) {
  const char* e = std::getenv(name);
  return e != nullptr && e[0] != '\0' && e[0] != '0';
}

// The model obeys the settings: the locked clock bounds the graphics clock, the power limit the power.
void apply_control(nvmlDevice_st& d) {
  jouleprof::SimControl c;
  if (d.control.gpu_locked) {
    c.sm_clock_lock_mhz = d.control.gpu_max;
  } else if (!env_on("JOULEPROF_FAKE_NVML_NO_APP_CLOCKS")) {
    c.sm_clock_lock_mhz = d.control.app_gpu;
  }
  if (d.control.mem_locked) c.mem_clock_lock_mhz = d.control.mem_max;
  c.power_limit_w = d.control.power_mw / 1000.0;
  d.model->set_control(c);
}

// State file: one line per GPU, "I gpu_locked MIN MAX mem_locked MIN MAX app GPU MEM power_mw P persistence M".
void load_control() {
  const char* path = std::getenv("JOULEPROF_FAKE_NVML_STATE");
  if (path == nullptr) return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    unsigned i = 0;
    FakeControl c;
    int gl = 0, ml = 0;
    std::string k1, k2, k3, k4, k5;
    if (!(ls >> i >> k1 >> gl >> c.gpu_min >> c.gpu_max >> k2 >> ml >> c.mem_min >> c.mem_max >> k3 >> c.app_gpu >>
          c.app_mem >> k4 >> c.power_mw >> k5 >> c.persistence)) {
      continue;
    }
    c.gpu_locked = gl != 0;
    c.mem_locked = ml != 0;
    if (i < state().devices.size()) state().devices[i].control = c;
  }
}

void save_control() {
  const char* path = std::getenv("JOULEPROF_FAKE_NVML_STATE");
  if (path == nullptr) return;
  std::string text;
  for (const auto& d : state().devices) {
    const FakeControl& c = d.control;
    char buf[256];
    std::snprintf(buf, sizeof(buf), "%u gpu_locked %d %u %u mem_locked %d %u %u app %u %u power_mw %u persistence %d\n",
                  d.index, c.gpu_locked ? 1 : 0, c.gpu_min, c.gpu_max, c.mem_locked ? 1 : 0, c.mem_min, c.mem_max,
                  c.app_gpu, c.app_mem, c.power_mw, c.persistence);
    text += buf;
  }
  // Written whole and renamed: a process killed mid-write leaves the old or the new state.
  const std::string tmp = std::string(path) + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (ok) std::rename(tmp.c_str(), path);
  else ::unlink(tmp.c_str());
}

// One line per set call, appended with a single write (O_APPEND): lines of concurrent
// processes never interleave.
void log_set(const char* call, const nvmlDevice_st& d, const std::string& args, nvmlReturn_t rc) {
  const char* path = std::getenv("JOULEPROF_FAKE_NVML_SET_LOG");
  if (path == nullptr) return;
  const std::string line = std::to_string(getpid()) + " " + call + " gpu=" + std::to_string(d.index) +
                           (args.empty() ? "" : " " + args) + " rc=" + std::to_string(rc) + "\n";
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

bool clock_supported(unsigned mem, unsigned gfx) {
  const auto list = jouleprof::sim_supported_gpu_clocks(mem);
  return std::find(list.begin(), list.end(), gfx) != list.end();
}

bool mem_clock_supported(unsigned mem) {
  const auto list = jouleprof::sim_supported_mem_clocks();
  return std::find(list.begin(), list.end(), mem) != list.end();
}

// A set call: logged whatever it returns; the state is saved when it succeeds.
template <class F>
nvmlReturn_t do_set(nvmlDevice_t d, const char* call, const std::string& args, F change) {
  double now = 0;
  nvmlReturn_t rc = enter(d, now);
  if (rc == nv::kSuccess && env_on("JOULEPROF_FAKE_NVML_NO_PERMISSION")) rc = nv::kErrorNoPermission;
  if (rc == nv::kSuccess) rc = change(d->control);
  if (d != nullptr) log_set(call, *d, args, rc);
  if (rc == nv::kSuccess) {
    apply_control(*d);
    save_control();
  }
  return rc;
}

}  // namespace

extern "C" {

// Not NVML: the tests' clock seam (see the top of this file).
__attribute__((visibility("default"))) void jouleprof_fake_nvml_set_clock(int64_t (*fn)(void*), void* ctx) {
  std::lock_guard<std::mutex> lock(state().mu);
  g_clock = fn;
  g_clock_ctx = ctx;
}

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
    s.devices[i].control.power_mw = static_cast<unsigned>(cfg.tdp_w * 1000);
  }
  load_control();
  for (auto& d : s.devices) apply_control(d);
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
    case 4: return "Insufficient Permissions";
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
  *mw = d->control.power_mw;
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
  *m = d->control.persistence;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned* cur, unsigned* pend) {
  FAKE_ENTER(d, "mig");
  *cur = *pend = d->model->config().mig_enabled ? 1 : 0;
  return nv::kSuccess;
}

// ---- Control (issue 17) ----

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* d) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().init_count == 0) return nv::kErrorUninitialized;
  if (uuid == nullptr || d == nullptr) return nv::kErrorInvalidArgument;
  for (auto& dev : state().devices) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "GPU-fa4e0000-0000-4000-8000-%012u", dev.index);
    if (std::strcmp(buf, uuid) == 0) {
      *d = &dev;
      return nv::kSuccess;
    }
  }
  return nv::kErrorNotFound;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t d, unsigned* count,
                                                                                      unsigned* clocks) {
  FAKE_ENTER(d, "clocks");
  const auto list = jouleprof::sim_supported_mem_clocks();
  if (count == nullptr) return nv::kErrorInvalidArgument;
  const unsigned room = *count;
  *count = static_cast<unsigned>(list.size());
  if (clocks == nullptr || room < list.size()) return nv::kErrorInsufficientSize;
  std::copy(list.begin(), list.end(), clocks);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t d, unsigned mem,
                                                                                        unsigned* count, unsigned* clocks) {
  FAKE_ENTER(d, "clocks");
  if (count == nullptr) return nv::kErrorInvalidArgument;
  if (!mem_clock_supported(mem)) return nv::kErrorNotFound;
  const auto list = jouleprof::sim_supported_gpu_clocks(mem);
  const unsigned room = *count;
  *count = static_cast<unsigned>(list.size());
  if (clocks == nullptr || room < list.size()) return nv::kErrorInsufficientSize;
  std::copy(list.begin(), list.end(), clocks);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceSetGpuLockedClocks(nvmlDevice_t d, unsigned lo, unsigned hi) {
  std::lock_guard<std::mutex> lock(state().mu);
  return do_set(d, "SetGpuLockedClocks", "min=" + std::to_string(lo) + " max=" + std::to_string(hi),
                [&](FakeControl& c) -> nvmlReturn_t {
                  if (lo > hi || !clock_supported(2619, lo) || !clock_supported(2619, hi)) return nv::kErrorInvalidArgument;
                  c.gpu_locked = true;
                  c.gpu_min = lo;
                  c.gpu_max = hi;
                  return nv::kSuccess;
                });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceResetGpuLockedClocks(nvmlDevice_t d) {
  std::lock_guard<std::mutex> lock(state().mu);
  return do_set(d, "ResetGpuLockedClocks", "", [](FakeControl& c) -> nvmlReturn_t {
    c.gpu_locked = false;
    c.gpu_min = c.gpu_max = 0;
    return nv::kSuccess;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceSetMemoryLockedClocks(nvmlDevice_t d, unsigned lo, unsigned hi) {
  std::lock_guard<std::mutex> lock(state().mu);
  return do_set(d, "SetMemoryLockedClocks", "min=" + std::to_string(lo) + " max=" + std::to_string(hi),
                [&](FakeControl& c) -> nvmlReturn_t {
                  if (lo > hi || !mem_clock_supported(lo) || !mem_clock_supported(hi)) return nv::kErrorInvalidArgument;
                  c.mem_locked = true;
                  c.mem_min = lo;
                  c.mem_max = hi;
                  return nv::kSuccess;
                });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceResetMemoryLockedClocks(nvmlDevice_t d) {
  std::lock_guard<std::mutex> lock(state().mu);
  return do_set(d, "ResetMemoryLockedClocks", "", [](FakeControl& c) -> nvmlReturn_t {
    c.mem_locked = false;
    c.mem_min = c.mem_max = 0;
    return nv::kSuccess;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t d, nvmlClockType_t type,
                                                                                  unsigned* mhz) {
  FAKE_ENTER(d, "clocks");
  if (env_on("JOULEPROF_FAKE_NVML_NO_APP_CLOCKS")) return nv::kErrorNotSupported;
  if (type == nv::kClockGraphics || type == nv::kClockSm) {
    *mhz = d->control.app_gpu;
  } else if (type == nv::kClockMem) {
    *mhz = d->control.app_mem;
  } else {
    return nv::kErrorNotSupported;
  }
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceSetApplicationsClocks(nvmlDevice_t d, unsigned mem, unsigned gfx) {
  std::lock_guard<std::mutex> lock(state().mu);
  return do_set(d, "SetApplicationsClocks", "mem=" + std::to_string(mem) + " gpu=" + std::to_string(gfx),
                [&](FakeControl& c) -> nvmlReturn_t {
                  if (env_on("JOULEPROF_FAKE_NVML_NO_APP_CLOCKS")) return nv::kErrorNotSupported;
                  if (!clock_supported(mem, gfx)) return nv::kErrorInvalidArgument;
                  c.app_gpu = gfx;
                  c.app_mem = mem;
                  return nv::kSuccess;
                });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned* mw) {
  FAKE_ENTER(d, "power_limit");
  *mw = d->control.power_mw;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned* mw) {
  FAKE_ENTER(d, "power_limit");
  *mw = static_cast<unsigned>(d->model->config().tdp_w * 1000);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t d, unsigned mw) {
  std::lock_guard<std::mutex> lock(state().mu);
  return do_set(d, "SetPowerManagementLimit", "mw=" + std::to_string(mw), [&](FakeControl& c) -> nvmlReturn_t {
    if (mw < 200000 || mw > static_cast<unsigned>(d->model->config().tdp_w * 1000)) return nv::kErrorInvalidArgument;
    c.power_mw = mw;
    return nv::kSuccess;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetAPIRestriction(nvmlDevice_t d, nvmlRestrictedAPI_t,
                                                                               nvmlEnableState_t* restricted) {
  FAKE_ENTER(d, "clocks");
  *restricted = env_on("JOULEPROF_FAKE_NVML_RESTRICTED") ? 1 : 0;
  return nv::kSuccess;
}

// GPM: a sample holds its time and the simulated load (power above idle over the TDP's range);
// metrics are that load averaged over the two samples, split over the units in fixed shares.
// `unsupported gpm` in a scenario makes the device unsupported (the utilization fallback).
struct nvmlGpmSample_st {
  nvmlDevice_t device = nullptr;
  double t = -1, load = 0;
};

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t* s) {
  std::lock_guard<std::mutex> lock(state().mu);
  double now = 0;
  if (nvmlReturn_t rc = enter(d, now); rc != 0) return rc;
  if (s == nullptr || s->version != nv::kGpmSupportVersion) return nv::kErrorInvalidArgument;
  s->isSupportedDevice = d->model->supports("gpm") ? 1 : 0;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* s) {
  if (s == nullptr) return nv::kErrorInvalidArgument;
  *s = new nvmlGpmSample_st;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s) {
  delete s;
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t s) {
  FAKE_ENTER(d, "gpm");
  if (s == nullptr) return nv::kErrorInvalidArgument;
  const auto& cfg = d->model->config();
  s->device = d;
  s->t = now;
  s->load = std::clamp((d->model->power_instant_w(now) - cfg.idle_w) / (cfg.tdp_w - cfg.idle_w), 0.0, 1.0);
  return nv::kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* m) {
  if (m == nullptr || m->version != nv::kGpmMetricsGetVersion || m->sample1 == nullptr || m->sample2 == nullptr ||
      m->numMetrics > sizeof(m->metrics) / sizeof(m->metrics[0]))
    return nv::kErrorInvalidArgument;
  if (m->sample1->t < 0 || m->sample2->t <= m->sample1->t || m->sample1->device != m->sample2->device)
    return nv::kErrorInvalidArgument;
  const double load = (m->sample1->load + m->sample2->load) / 2;
  for (unsigned i = 0; i < m->numMetrics; ++i) {
    auto& r = m->metrics[i];
    r.nvmlReturn = nv::kSuccess;
    switch (r.metricId) {
      case nv::kGpmSmUtil: r.value = 100 * load; break;
      case nv::kGpmSmOccupancy: r.value = 50 * load; break;
      case nv::kGpmAnyTensorUtil: r.value = 60 * load; break;
      case nv::kGpmDramBwUtil: r.value = 30 * load; break;
      case nv::kGpmFp16Util: r.value = 10 * load; break;
      case nv::kGpmFp32Util: r.value = 20 * load; break;
      case nv::kGpmFp64Util: r.value = 0; break;
      default: r.nvmlReturn = nv::kErrorNotSupported; r.value = 0;
    }
  }
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
