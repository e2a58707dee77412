#include "cupti_api.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include "jouleprof/trace/format.hpp"

namespace jouleprof::inject {

void* open_cupti(const std::string& library, std::string* which, std::string* why) {
  std::vector<std::string> candidates;
  if (!library.empty()) {
    candidates = {library};
  } else if (const char* env = std::getenv(trace_format::kCuptiLibEnv); env != nullptr && env[0] != '\0') {
    candidates = {env};
  } else {
    candidates = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  }
  for (const std::string& c : candidates) {
    // One instance for the process: the CUDA and the NVTX entry points of this library share it.
    if (void* handle = dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL); handle != nullptr) {
      if (which != nullptr) *which = c;
      return handle;
    }
    const char* e = dlerror();
    if (why != nullptr) *why += (why->empty() ? "" : "; ") + std::string(e != nullptr ? e : c.c_str());
  }
  return nullptr;
}

CuptiApi load_cupti(const std::string& library) {
  CuptiApi api;
  std::string why;
  void* handle = open_cupti(library, &api.library, &why);
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
