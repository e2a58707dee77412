// The CUPTI entry points, loaded at run time (cupti_entry_points.def lists them once).
#pragma once

#include <cupti.h>

#include <string>
#include <vector>

namespace jouleprof::inject {

struct CuptiApi {
#define JP_CUPTI(member, params, sym, required) \
  using member##_fn = CUptiResult(CUPTIAPI*) params; \
  member##_fn member = nullptr;
#include "cupti_entry_points.def"
#undef JP_CUPTI
  std::string library;
  std::vector<std::string> missing_required, missing_optional;
  std::string error;  ///< why loading failed (empty: loaded)
  bool ok() const { return error.empty() && missing_required.empty(); }
  /// "call failed: CUPTI message (code)"
  std::string describe(const char* call, CUptiResult rc) const;
};

/// dlopen()s `library` (empty: $JOULEPROF_CUPTI_LIB, else libcupti.so.13, libcupti.so) and
/// resolves every entry point.
CuptiApi load_cupti(const std::string& library = "");

}  // namespace jouleprof::inject
