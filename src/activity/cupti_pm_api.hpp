// The CUPTI PM-sampling function table, loaded at run time (cupti_pm_entry_points.def lists it).
#pragma once

#include <string>

#include "cupti_pm_abi.hpp"
#include "jouleprof/core/error.hpp"

namespace jouleprof::cupti {

struct PmApi {
#define JP_CUPTI_PM(member, params, sym) CUptiResult(*member) params = nullptr;
#define JP_CUDA_DRV(member, params, sym) CUresult(*cu##member) params = nullptr;
#include "cupti_pm_entry_points.def"
#undef JP_CUPTI_PM
#undef JP_CUDA_DRV
  std::string cupti_library, cuda_library;  ///< what was loaded
  /// "cuptiPmSamplingEnable failed: CUPTI_ERROR_... (35)"
  std::string describe(const char* call, CUptiResult rc) const;
  std::string describe_cuda(const char* call, CUresult rc) const;
};

/// The process's table: CUPTI from `cupti_library` (empty: $JOULEPROF_CUPTI_LIB, else
/// libcupti.so.13, .12, libcupti.so) and the driver from `cuda_library` (empty:
/// $JOULEPROF_CUDA_LIB, else libcuda.so.1). Loaded once and kept for the process's life (CUPTI's
/// profiler state is per process); Errc::unavailable when a library or a symbol is missing.
Result<const PmApi*> load_pm_api(const std::string& cupti_library = "",
                                 const std::string& cuda_library = "");

}  // namespace jouleprof::cupti
