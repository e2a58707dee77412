#include "cupti_pm_api.hpp"

#include <mutex>

#include "jouleprof/core/library.hpp"

namespace jouleprof::cupti {
namespace {

Result<PmApi> load(const std::string& cupti_library, const std::string& cuda_library) {
  PmApi api;
  // Global, as if linked: CUPTI's profiler loads libnvperf_* that resolve CUPTI's and the
  // driver's symbols.
  const OpenedLibrary c = open_first_library(
      library_candidates(cupti_library, "JOULEPROF_CUPTI_LIB", {"libcupti.so.13", "libcupti.so.12", "libcupti.so"}),
      RTLD_NOW | RTLD_GLOBAL);
  if (c.handle == nullptr) return make_error(Errc::unavailable, "cannot load CUPTI (" + c.why + ")");
  const OpenedLibrary d =
      open_first_library(library_candidates(cuda_library, "JOULEPROF_CUDA_LIB", {"libcuda.so.1"}), RTLD_NOW | RTLD_GLOBAL);
  if (d.handle == nullptr) return make_error(Errc::unavailable, "cannot load the CUDA driver (" + d.why + ")");
  api.cupti_library = c.name;
  api.cuda_library = d.name;
  void* cupti = c.handle;
  void* cuda = d.handle;
  std::string missing;
#define JP_CUPTI_PM(member, params, sym)                                   \
  api.member = reinterpret_cast<decltype(api.member)>(dlsym(cupti, #sym)); \
  if (api.member == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #sym;
#define JP_CUDA_DRV(member, params, sym)                                          \
  api.cu##member = reinterpret_cast<decltype(api.cu##member)>(dlsym(cuda, #sym)); \
  if (api.cu##member == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #sym;
#include "cupti_pm_entry_points.def"
#undef JP_CUPTI_PM
#undef JP_CUDA_DRV
  if (!missing.empty())
    return make_error(Errc::unavailable,
                      api.cupti_library +
                          " has no PM sampling (CUDA 12.6 or later is needed): missing " + missing);
  return api;  // the handles stay open for the process's life
}

}  // namespace

Result<const PmApi*> load_pm_api(const std::string& cupti_library,
                                 const std::string& cuda_library) {
  // One table per process; a failed load is retried by the next caller (it may name another
  // library).
  static std::mutex mu;
  static const PmApi* loaded = nullptr;
  std::lock_guard<std::mutex> l(mu);
  if (loaded != nullptr) return loaded;
  auto api = load(cupti_library, cuda_library);
  if (!api) return api.error();
  loaded = new PmApi(
      std::move(*api));  // never freed: CUPTI's profiler state lives as long as the process
  return loaded;
}

std::string PmApi::describe(const char* call, CUptiResult rc) const {
  const char* text = nullptr;
  if (GetResultString != nullptr) GetResultString(rc, &text);
  return std::string(call) + " failed: " + (text != nullptr ? text : "unknown error") + " (" +
         std::to_string(rc) + ")";
}

std::string PmApi::describe_cuda(const char* call, CUresult rc) const {
  const char* text = nullptr;
  if (cuGetErrorString != nullptr) cuGetErrorString(rc, &text);
  return std::string(call) + " failed: " + (text != nullptr ? text : "unknown error") + " (" +
         std::to_string(rc) + ")";
}

}  // namespace jouleprof::cupti
