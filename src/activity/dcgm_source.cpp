// DCGM profiling fields from a running DCGM host engine (nv-hostengine): DCGM multiplexes the
// GPU's performance counters among its clients, so this source may be used while DCGM's exporter
// runs (on Hopper and later DCGM reads them through NVML GPM). One connection for all GPUs; each
// GPU gets a group and a field group, watched every half window; each poll takes the values since
// the last.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

#include "dcgm_abi.hpp"
#include "dcgm_window.hpp"
#include "jouleprof/core/library.hpp"

namespace jouleprof::activity {

using namespace jouleprof::dcgm;

struct DcgmApi {
#define JP_DCGM(member, ret, params, sym) ret(*member) params = nullptr;
#include "dcgm_entry_points.def"
#undef JP_DCGM
  std::string describe(const char* call, dcgmReturn_t rc) const {
    const char* text = ErrorString != nullptr ? ErrorString(rc) : nullptr;
    return std::string(call) + " failed: " + (text != nullptr ? text : "unknown error") + " (" +
           std::to_string(rc) + ")";
  }
};

class DcgmSession {
 public:
  DcgmSession(DcgmApi a, dcgmHandle_t h, void* lib, std::string n)
      : api(a), handle(h), note(std::move(n)), lib_(lib) {}
  ~DcgmSession() {
    if (note.empty())
      api.Disconnect(handle);
    else
      api.StopEmbedded(handle);
    api.Shutdown();
    dlclose(lib_);
  }
  DcgmSession(const DcgmSession&) = delete;
  DcgmSession& operator=(const DcgmSession&) = delete;
  const DcgmApi api;
  const dcgmHandle_t handle;
  const std::string note;  ///< "" when connected to a host engine; else why DCGM runs embedded

 private:
  void* lib_;
};

const std::string& dcgm_session_note(const DcgmSession& s) {
  return s.note;
}

const std::array<DcgmField, 7>& dcgm_fields() {
  static const std::array<DcgmField, 7> f{{{"sm_active", kFieldSmActive},
                                           {"sm_occupancy", kFieldSmOccupancy},
                                           {"tensor_active", kFieldTensorActive},
                                           {"dram_active", kFieldDramActive},
                                           {"fp64_active", kFieldFp64Active},
                                           {"fp32_active", kFieldFp32Active},
                                           {"fp16_active", kFieldFp16Active}}};
  return f;
}

Window dcgm_window(const std::vector<DcgmValue>& values, double t0_s, double t1_s) {
  const auto& fields = dcgm_fields();
  std::array<double, 7> sum{}, n{};
  for (const auto& v : values) {
    if (v.status != kOk || !(v.value >= 0) || v.value >= kFp64Blank) continue;
    for (std::size_t k = 0; k < fields.size(); ++k)
      if (fields[k].id == v.field) {
        sum[k] += v.value;
        n[k] += 1;
      }
  }
  Window w{t0_s, t1_s, {}};
  for (std::size_t k = 0; k < fields.size(); ++k)
    w.values.push_back(n[k] > 0 ? sum[k] / n[k] : -1.0);
  return w;
}

namespace {

class Dcgm final : public Source {
 public:
  Dcgm(std::shared_ptr<DcgmSession> s, dcgmGpuGrp_t group, dcgmFieldGrp_t fields)
      : s_(std::move(s)), group_(group), fields_(fields) {
    for (const auto& f : dcgm_fields()) names_.emplace_back(f.metric);
  }
  ~Dcgm() override {
    s_->api.UnwatchFields(s_->handle, group_, fields_);
    s_->api.FieldGroupDestroy(s_->handle, fields_);
    s_->api.GroupDestroy(s_->handle, group_);
  }
  std::string name() const override { return "dcgm"; }
  const std::vector<std::string>& metrics() const override { return names_; }
  std::vector<std::string> definitions() const override {
    std::vector<std::string> d;
    for (const auto& f : dcgm_fields()) d.push_back("DCGM field " + std::to_string(f.id));
    return d;
  }
  Result<std::optional<Window>> poll(double now_s) override {
    std::vector<DcgmValue> values;
    long long next = since_;
    const dcgmReturn_t rc = s_->api.GetValuesSince(
        s_->handle, group_, fields_, since_, &next,
        [](unsigned int, dcgmFieldValue_v1* v, int n, void* user) {
          auto* out = static_cast<std::vector<DcgmValue>*>(user);
          for (int i = 0; i < n; ++i)
            out->push_back({v[i].fieldId, v[i].status,
                            v[i].fieldType == kFieldTypeDouble ? v[i].value.dbl : -1.0});
          return 0;
        },
        &values);
    if (rc != kOk) return make_error(Errc::vendor, s_->api.describe("dcgmGetValuesSince", rc));
    since_ = next;
    const double t0 = last_t_;
    last_t_ = now_s;
    if (t0 < 0)
      return std::optional<Window>{};  // the watch has just started: nothing to average yet
    return std::optional<Window>(dcgm_window(values, t0, now_s));
  }

 private:
  std::shared_ptr<DcgmSession> s_;
  dcgmGpuGrp_t group_;
  dcgmFieldGrp_t fields_;
  std::vector<std::string> names_;
  long long since_ = 0;
  double last_t_ = -1;
};

std::string pick(const std::string& given, const char* env, const char* fallback) {
  if (!given.empty()) return given;
  if (const char* e = std::getenv(env); e != nullptr && e[0] != '\0') return e;
  return fallback;
}

}  // namespace

Result<std::shared_ptr<DcgmSession>> connect_dcgm(const std::string& library,
                                                  const std::string& host, bool embedded) {
  const OpenedLibrary opened = open_first_library(
      library_candidates(library, "JOULEPROF_DCGM_LIB", {"libdcgm.so.4", "libdcgm.so.3"}), RTLD_NOW | RTLD_LOCAL);
  if (opened.handle == nullptr) return make_error(Errc::unavailable, "no DCGM library (" + opened.tried + ")");
  void* lib = opened.handle;
  DcgmApi api;
  std::string missing;
#define JP_DCGM(member, ret, params, sym)                                \
  api.member = reinterpret_cast<decltype(api.member)>(dlsym(lib, #sym)); \
  if (api.member == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #sym;
#include "dcgm_entry_points.def"
#undef JP_DCGM
  if (!missing.empty()) {
    dlclose(lib);
    return make_error(Errc::unavailable, "the DCGM library lacks " + missing);
  }
  if (const dcgmReturn_t rc = api.Init(); rc != kOk) {
    const std::string why = api.describe("dcgmInit", rc);
    dlclose(lib);
    return make_error(Errc::unavailable, why);
  }
  const std::string addr = pick(host, "JOULEPROF_DCGM_HOST", "127.0.0.1");
  dcgmHandle_t h = 0;
  if (const dcgmReturn_t rc = api.Connect(addr.c_str(), &h); rc != kOk) {
    std::string why = "no DCGM host engine at " + addr + " (" + api.describe("dcgmConnect", rc);
    // An engine of our own (DCGM collecting on its own schedule) when none runs.
    if (embedded) {
      const dcgmReturn_t erc = api.StartEmbedded(kOperationModeAuto, &h);
      if (erc == kOk)
        return std::make_shared<DcgmSession>(api, h, lib,
                                             "DCGM embedded in jouleprof: " + why + ")");
      why += "; " + api.describe("dcgmStartEmbedded", erc);
    }
    api.Shutdown();
    dlclose(lib);
    return make_error(Errc::unavailable, why + "; start nv-hostengine)");
  }
  return std::make_shared<DcgmSession>(api, h, lib, "");
}

Result<std::unique_ptr<Source>> open_dcgm(std::shared_ptr<DcgmSession> s, unsigned gpu_id,
                                          double period_s) {
  const DcgmApi& api = s->api;
  const std::string tag = "jouleprof-" + std::to_string(::getpid()) + "-" + std::to_string(gpu_id);
  dcgmGpuGrp_t group = 0;
  if (const dcgmReturn_t rc = api.GroupCreate(s->handle, kGroupEmpty, tag.c_str(), &group);
      rc != kOk)
    return make_error(Errc::vendor, api.describe("dcgmGroupCreate", rc));
  if (const dcgmReturn_t rc = api.GroupAddDevice(s->handle, group, gpu_id); rc != kOk) {
    api.GroupDestroy(s->handle, group);
    return make_error(
        Errc::unavailable,
        api.describe(("dcgmGroupAddDevice(GPU " + std::to_string(gpu_id) + ")").c_str(), rc));
  }
  std::vector<unsigned short> ids;
  for (const auto& f : dcgm_fields()) ids.push_back(f.id);
  dcgmFieldGrp_t fields = 0;
  if (const dcgmReturn_t rc = api.FieldGroupCreate(s->handle, static_cast<int>(ids.size()),
                                                   ids.data(), tag.c_str(), &fields);
      rc != kOk) {
    api.GroupDestroy(s->handle, group);
    return make_error(Errc::vendor, api.describe("dcgmFieldGroupCreate", rc));
  }
  // Twice per window, at least every 100 ms (DCGM's profiling floor); kept a minute.
  const auto every_us = static_cast<long long>(std::max(0.1, period_s / 2) * 1e6);
  if (const dcgmReturn_t rc = api.WatchFields(s->handle, group, fields, every_us, 60.0, 0);
      rc != kOk) {
    api.FieldGroupDestroy(s->handle, fields);
    api.GroupDestroy(s->handle, group);
    std::string why = api.describe("dcgmWatchFields", rc);
    if (rc == kInUse)
      why += " — the profiling counters are held by another client (a profiler; before Hopper also "
             "jouleprof --metrics-source cupti-pm)";
    if (rc == kProfilingNotSupported) why += " — this GPU has no DCGM profiling fields";
    return make_error(Errc::unavailable, why);
  }
  return std::unique_ptr<Source>(new Dcgm(std::move(s), group, fields));
}

}  // namespace jouleprof::activity
