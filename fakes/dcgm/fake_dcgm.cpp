// A fake libdcgm.so.4: the entry points the dcgm activity source calls, with a "host engine" in
// the library that updates each watched field every updateFreq on the host clock, with a fixed
// value per field (kValues). Environment:
//   JOULEPROF_FAKE_DCGM_MODE  ok (default) | no-hostengine (dcgmConnect: connection not valid;
//                             dcgmStartEmbedded works) | no-engine (neither works) |
//                             counters-busy (dcgmWatchFields: DCGM_ST_IN_USE) |
//                             no-profiling (dcgmWatchFields: DCGM_ST_PROFILING_NOT_SUPPORTED) |
//                             no-fp64 (field 1006 comes back blank with DCGM_ST_NOT_SUPPORTED)
//   JOULEPROF_FAKE_DCGM_GPUS  number of GPUs (default 1); dcgmGroupAddDevice refuses others
#include <time.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "dcgm_abi.hpp"

using namespace jouleprof::dcgm;

namespace {

const std::map<unsigned short, double> kValues{{kFieldSmActive, 0.7},     {kFieldSmOccupancy, 0.3},
                                               {kFieldTensorActive, 0.5}, {kFieldDramActive, 0.4},
                                               {kFieldFp64Active, 0.0},   {kFieldFp32Active, 0.1},
                                               {kFieldFp16Active, 0.05}};
constexpr dcgmHandle_t kHandle = 0x4a50;

struct Watch {
  std::vector<unsigned> gpus;
  std::vector<unsigned short> fields;
  long long every_us = 0, since_us = 0;  ///< updates at since_us + k × every_us, k ≥ 1
};

std::mutex mu;
bool initialized = false, connected = false;
std::map<dcgmGpuGrp_t, std::vector<unsigned>> groups;
std::map<dcgmFieldGrp_t, std::vector<unsigned short>> field_groups;
std::map<std::pair<dcgmGpuGrp_t, dcgmFieldGrp_t>, Watch> watches;
uintptr_t next_id = 100;

std::string mode() {
  const char* m = std::getenv("JOULEPROF_FAKE_DCGM_MODE");
  return m != nullptr ? m : "ok";
}
long long now_us() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}
bool ready(dcgmHandle_t h) {
  return initialized && connected && h == kHandle;
}

}  // namespace

#define JP_EXPORT extern "C" __attribute__((visibility("default")))

JP_EXPORT dcgmReturn_t dcgmInit() {
  std::lock_guard<std::mutex> l(mu);
  initialized = true;
  return kOk;
}
JP_EXPORT dcgmReturn_t dcgmShutdown() {
  std::lock_guard<std::mutex> l(mu);
  initialized = connected = false;
  return kOk;
}
JP_EXPORT dcgmReturn_t dcgmConnect(const char* addr, dcgmHandle_t* h) {
  std::lock_guard<std::mutex> l(mu);
  if (!initialized) return -10;  // DCGM_ST_UNINITIALIZED
  if (addr == nullptr || h == nullptr) return kBadParam;
  if (mode() == "no-hostengine" || mode() == "no-engine") return kConnectionNotValid;
  connected = true;
  *h = kHandle;
  return kOk;
}
JP_EXPORT dcgmReturn_t dcgmStartEmbedded(int op_mode, dcgmHandle_t* h) {
  std::lock_guard<std::mutex> l(mu);
  if (!initialized) return -10;
  if (h == nullptr || op_mode != kOperationModeAuto) return kBadParam;
  if (mode() == "no-engine") return -7;  // DCGM_ST_INIT_ERROR
  connected = true;
  *h = kHandle;
  return kOk;
}
JP_EXPORT dcgmReturn_t dcgmStopEmbedded(dcgmHandle_t h) {
  std::lock_guard<std::mutex> l(mu);
  if (!ready(h)) return kBadParam;
  connected = false;
  return kOk;
}
JP_EXPORT dcgmReturn_t dcgmDisconnect(dcgmHandle_t h) {
  std::lock_guard<std::mutex> l(mu);
  if (!ready(h)) return kBadParam;
  connected = false;
  return kOk;
}
JP_EXPORT const char* errorString(dcgmReturn_t rc) {
  switch (rc) {
    case kOk:
      return "Success";
    case kBadParam:
      return "Bad parameter passed to function";
    case kNotSupported:
      return "This request is not supported";
    case -7:
      return "DCGM initialization error";
    case kConnectionNotValid:
      return "Connection to the host engine is not valid any longer";
    case kInUse:
      return "The requested operation could not be completed because the affected resource is in "
             "use.";
    case kProfilingNotSupported:
      return "Profiling is not supported for this group of GPUs or GPU";
    default:
      return "Unknown error";
  }
}
JP_EXPORT dcgmReturn_t dcgmGroupCreate(dcgmHandle_t h, int type, const char* name,
                                       dcgmGpuGrp_t* id) {
  std::lock_guard<std::mutex> l(mu);
  if (!ready(h) || type != kGroupEmpty || name == nullptr || id == nullptr) return kBadParam;
  *id = next_id++;
  groups[*id] = {};
  return kOk;
}
JP_EXPORT dcgmReturn_t dcgmGroupDestroy(dcgmHandle_t h, dcgmGpuGrp_t id) {
  std::lock_guard<std::mutex> l(mu);
  return ready(h) && groups.erase(id) == 1 ? kOk : kBadParam;
}
JP_EXPORT dcgmReturn_t dcgmGroupAddDevice(dcgmHandle_t h, dcgmGpuGrp_t id, unsigned gpu) {
  std::lock_guard<std::mutex> l(mu);
  const char* n = std::getenv("JOULEPROF_FAKE_DCGM_GPUS");
  if (!ready(h) || groups.count(id) == 0 ||
      gpu >= static_cast<unsigned>(n != nullptr ? std::atoi(n) : 1))
    return kBadParam;
  groups[id].push_back(gpu);
  return kOk;
}
JP_EXPORT dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t h, int n, const unsigned short* ids,
                                            const char* name, dcgmFieldGrp_t* id) {
  std::lock_guard<std::mutex> l(mu);
  if (!ready(h) || n <= 0 || ids == nullptr || name == nullptr || id == nullptr) return kBadParam;
  for (int i = 0; i < n; ++i)
    if (kValues.count(ids[i]) == 0) return kBadParam;
  *id = next_id++;
  field_groups[*id] = std::vector<unsigned short>(ids, ids + n);
  return kOk;
}
JP_EXPORT dcgmReturn_t dcgmFieldGroupDestroy(dcgmHandle_t h, dcgmFieldGrp_t id) {
  std::lock_guard<std::mutex> l(mu);
  return ready(h) && field_groups.erase(id) == 1 ? kOk : kBadParam;
}
JP_EXPORT dcgmReturn_t dcgmWatchFields(dcgmHandle_t h, dcgmGpuGrp_t g, dcgmFieldGrp_t f,
                                       long long every_us, double keep_s, int keep_samples) {
  std::lock_guard<std::mutex> l(mu);
  if (!ready(h) || groups.count(g) == 0 || field_groups.count(f) == 0 || every_us <= 0 ||
      keep_s < 0 || keep_samples < 0)
    return kBadParam;
  if (mode() == "counters-busy") return kInUse;
  if (mode() == "no-profiling") return kProfilingNotSupported;
  watches[{g, f}] = Watch{groups[g], field_groups[f], every_us, now_us()};
  return kOk;
}
JP_EXPORT dcgmReturn_t dcgmUnwatchFields(dcgmHandle_t h, dcgmGpuGrp_t g, dcgmFieldGrp_t f) {
  std::lock_guard<std::mutex> l(mu);
  return ready(h) && watches.erase({g, f}) == 1 ? kOk : kBadParam;
}
JP_EXPORT dcgmReturn_t dcgmGetValuesSince(dcgmHandle_t h, dcgmGpuGrp_t g, dcgmFieldGrp_t f,
                                          long long since, long long* next,
                                          FieldValueEnumeration cb, void* user) {
  std::lock_guard<std::mutex> l(mu);
  const auto it = watches.find({g, f});
  if (!ready(h) || next == nullptr || cb == nullptr) return kBadParam;
  if (it == watches.end()) return -16;  // DCGM_ST_NOT_WATCHED
  const Watch& w = it->second;
  const long long now = now_us();
  for (unsigned gpu : w.gpus) {
    std::vector<dcgmFieldValue_v1> out;
    for (long long t = w.since_us + w.every_us; t <= now; t += w.every_us) {
      if (t <= since) continue;
      for (unsigned short id : w.fields) {
        dcgmFieldValue_v1 v{};
        v.version = kFieldValueVersion1;
        v.fieldId = id;
        v.fieldType = kFieldTypeDouble;
        v.ts = t;
        const bool missing = id == kFieldFp64Active && mode() == "no-fp64";
        v.status = missing ? kNotSupported : kOk;
        v.value.dbl = missing ? kFp64Blank + 2 : kValues.at(id);
        out.push_back(v);
      }
    }
    if (!out.empty() && cb(gpu, out.data(), static_cast<int>(out.size()), user) != 0) break;
  }
  *next = now;
  return kOk;
}

// Each export's signature matches the source's table (dcgm_entry_points.def).
#define JP_DCGM(member, ret, params, sym) \
  static_assert(std::is_same_v<decltype(&sym), ret(*) params>, #sym " differs from the table");
#include "dcgm_entry_points.def"
#undef JP_DCGM
