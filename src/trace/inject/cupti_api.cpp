#include "cupti_api.hpp"

#include "jouleprof/core/library.hpp"
#include "jouleprof/trace/format.hpp"

namespace jouleprof::inject {

CuptiApi load_cupti(const std::string& library) {
  CuptiApi api;
  // One instance for the process: the CUDA and the NVTX entry points of this library share it.
  const OpenedLibrary opened = open_first_library(
      library_candidates(library, trace_format::kCuptiLibEnv, {"libcupti.so.13", "libcupti.so.12", "libcupti.so"}),
      RTLD_NOW | RTLD_GLOBAL);
  if (opened.handle == nullptr) {
    api.error = "cannot load CUPTI: " + opened.why;
    return api;
  }
  api.library = opened.name;
  void* handle = opened.handle;
  // The handle stays open for the process's life: CUPTI calls back into us until exit.
#define JP_CUPTI(member, params, sym, required)                                    \
  api.member = reinterpret_cast<CuptiApi::member##_fn>(dlsym(handle, #sym));       \
  if (api.member == nullptr) (required ? api.missing_required : api.missing_optional).emplace_back(#sym);
#include "cupti_entry_points.def"
#undef JP_CUPTI
  return api;
}

std::string CuptiApi::describe(const char* call, CUptiResult rc) const {
  const char* text = nullptr;
  if (GetResultString != nullptr) GetResultString(rc, &text);
  return std::string(call) + " failed: " + (text != nullptr ? text : "unknown error") + " (" +
         std::to_string(static_cast<int>(rc)) + ")";
}

}  // namespace jouleprof::inject
