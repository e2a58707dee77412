#include <dlfcn.h>

#include "nvml_api.hpp"

namespace jouleprof::nvml {

Result<SymbolResolver> open_library(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return make_error(Errc::unavailable, "cannot load NVML (" + library + "): " +
                                             (why != nullptr ? why : "unknown reason") +
                                             " — is the NVIDIA driver installed?");
  }
  SymbolResolver r;
  r.keep_alive = std::shared_ptr<void>(handle, [](void* h) { dlclose(h); });
  r.resolve = [handle](const char* name) { return dlsym(handle, name); };
  return r;
}

Api load_api(const SymbolResolver& resolver, const std::string& library) {
  Api api;
  api.library = library;
  auto find = [&](const char* sym, const char* fallback) -> void* {
    void* p = resolver.resolve(sym);
    if (p == nullptr && fallback[0] != '\0') p = resolver.resolve(fallback);
    return p;
  };
#define JP_NVML(member, ret, params, sym, fallback)                        \
  api.member = reinterpret_cast<Api::member##_fn>(find(#sym, fallback)); \
  if (api.member == nullptr) api.missing.emplace_back(#sym);
#include "nvml_entry_points.def"
#undef JP_NVML
  return api;
}

std::string describe(const Api& api, const char* call, nvmlReturn_t rc) {
  std::string text = "unknown error";
  if (api.ErrorString != nullptr) {
    const char* s = api.ErrorString(rc);
    if (s != nullptr) text = s;
  }
  return std::string(call) + " failed: " + text + " (" + std::to_string(rc) + ")";
}

}  // namespace jouleprof::nvml
