#include "xgboost_lib.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace jouleprof::models::detail {

Result<const XgbApi*> xgboost_api() {
  static std::once_flag once;
  static XgbApi api;
  static std::string failure;
  std::call_once(once, [] {
    void* h = nullptr;
    std::string tried;
    std::vector<std::string> names;
    if (const char* env = std::getenv("JOULEPROF_XGBOOST_LIB"); env && *env) names.emplace_back(env);
    names.emplace_back("libxgboost.so.0");
    names.emplace_back("libxgboost.so");
    for (const auto& n : names) {
      h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h) break;
      tried += (tried.empty() ? "" : ", ") + n;
    }
    if (!h) {
      failure = "the xgboost form needs libxgboost (Debian: libxgboost0); not loadable: " + tried;
      return;
    }
#define JOULEPROF_XGB_LOAD(name, ret, args)                                    \
  api.name = reinterpret_cast<ret(*) args>(dlsym(h, #name));                   \
  if (!api.name && failure.empty()) failure = "libxgboost lacks " #name;
    JOULEPROF_XGB_ENTRY_POINTS(JOULEPROF_XGB_LOAD)
#undef JOULEPROF_XGB_LOAD
  });
  if (!failure.empty()) return make_error(Errc::unavailable, failure);
  return &api;
}

Result<void> xgb_check(const XgbApi& api, int rc, const char* call) {
  if (rc == 0) return {};
  // libxgboost's message may carry a native stack trace over many lines: the first line says it.
  std::string msg = api.XGBGetLastError() ? api.XGBGetLastError() : "";
  if (const auto nl = msg.find_first_of("\r\n"); nl != std::string::npos) msg.resize(nl);
  if (msg.size() > 300) msg = msg.substr(0, 300) + "...";
  return make_error(Errc::vendor, std::string(call) + " failed: " + msg);
}

}  // namespace jouleprof::models::detail
