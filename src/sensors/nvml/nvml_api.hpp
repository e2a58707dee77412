// The NVML function table, loaded at run time (dlopen by soname, never linked).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "nvml_types.hpp"

namespace jouleprof::nvml {

struct Api {
#define JP_NVML(member, ret, params, sym, fallback) \
  using member##_fn = ret(*) params;                \
  member##_fn member = nullptr;
#include "nvml_entry_points.def"
#undef JP_NVML
  std::vector<std::string> missing;  ///< entry points the library lacks
  std::string library;               ///< what was loaded
};

/// Seam over the dynamic loader: tests resolve symbols from a table instead of a library.
struct SymbolResolver {
  std::function<void*(const char*)> resolve;
  std::shared_ptr<void> keep_alive;  ///< e.g. the dlopen handle
};

/// dlopen()s `library` (a soname or path). Errc::unavailable when it cannot be opened.
Result<SymbolResolver> open_library(const std::string& library);

/// Fills the table from a resolver; the versioned symbol is preferred.
Api load_api(const SymbolResolver& resolver, const std::string& library);

/// "nvmlDeviceGetSamples(...) failed: GPU is lost (15)".
std::string describe(const Api& api, const char* call, nvmlReturn_t rc);

}  // namespace jouleprof::nvml
