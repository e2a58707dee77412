#include "cupti_api.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include "jouleprof/trace/format.hpp"

namespace jouleprof::inject {

CuptiApi load_cupti(const std::string& library) {
  CuptiApi api;
  std::vector<std::string> candidates;
  if (!library.empty()) {
    candidates = {library};
  } else if (const char* env = std::getenv(trace_format::kCuptiLibEnv); env != nullptr && env[0] != '\0') {
    candidates = {env};
  } else {
    candidates = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  }
  void* handle = nullptr;
  std::string why;
  for (const std::string& c : candidates) {
    // One instance for the process: the CUDA and the NVTX entry points of this library share it.
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle != nullptr) {
      api.library = c;
      break;
    }
    const char* e = dlerror();
    why += (why.empty() ? "" : "; ") + std::string(e != nullptr ? e : c.c_str());
  }
  if (handle == nullptr) {
    api.error = "cannot load CUPTI: " + why;
    return api;
  }
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
