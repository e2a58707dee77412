// Compile-time check of our NVML declarations against the real nvml.h (device machine only:
// `g++ -std=c++20 -fsyntax-only -Isrc/sensors -I$CUDA/include tests/device/nvml_abi_check.cpp`).
#include <nvml.h>

#include <cstddef>
#include <cstdint>  // before the namespace below: our header's include is then a no-op

namespace ours {
#include "nvml/nvml_types.hpp"
}

#define SAME_LAYOUT(T)                                                   \
  static_assert(sizeof(ours::T) == sizeof(::T), #T " size differs");     \
  static_assert(alignof(ours::T) == alignof(::T), #T " alignment differs")

SAME_LAYOUT(nvmlValue_t);
SAME_LAYOUT(nvmlSample_t);
SAME_LAYOUT(nvmlFieldValue_t);
SAME_LAYOUT(nvmlUtilization_t);
SAME_LAYOUT(nvmlMemory_t);
SAME_LAYOUT(nvmlPciInfo_t);
static_assert(offsetof(ours::nvmlSample_t, sampleValue) == offsetof(::nvmlSample_t, sampleValue));
static_assert(offsetof(ours::nvmlFieldValue_t, timestamp) == offsetof(::nvmlFieldValue_t, timestamp));
static_assert(offsetof(ours::nvmlFieldValue_t, valueType) == offsetof(::nvmlFieldValue_t, valueType));
static_assert(offsetof(ours::nvmlFieldValue_t, nvmlReturn) == offsetof(::nvmlFieldValue_t, nvmlReturn));
static_assert(offsetof(ours::nvmlFieldValue_t, value) == offsetof(::nvmlFieldValue_t, value));
static_assert(offsetof(ours::nvmlPciInfo_t, busId) == offsetof(::nvmlPciInfo_t, busId));
static_assert(sizeof(ours::nvmlReturn_t) == sizeof(::nvmlReturn_t));

namespace n = ours::jouleprof::nvml;
static_assert(n::kFieldPowerInstant == NVML_FI_DEV_POWER_INSTANT);
static_assert(n::kFieldPowerAverage == NVML_FI_DEV_POWER_AVERAGE);
static_assert(n::kTotalPowerSamples == NVML_TOTAL_POWER_SAMPLES);
static_assert(n::kClockSm == NVML_CLOCK_SM && n::kClockMem == NVML_CLOCK_MEM);
static_assert(n::kTemperatureGpu == NVML_TEMPERATURE_GPU);
static_assert(n::kValueUnsignedInt == NVML_VALUE_TYPE_UNSIGNED_INT);
static_assert(n::kValueDouble == NVML_VALUE_TYPE_DOUBLE);
static_assert(n::kErrorNotSupported == NVML_ERROR_NOT_SUPPORTED && n::kErrorNotFound == NVML_ERROR_NOT_FOUND);
static_assert(n::kErrorGpuIsLost == NVML_ERROR_GPU_IS_LOST && n::kErrorDriverNotLoaded == NVML_ERROR_DRIVER_NOT_LOADED);
static_assert(n::kErrorNoData == NVML_ERROR_NO_DATA && n::kErrorFunctionNotFound == NVML_ERROR_FUNCTION_NOT_FOUND);

// Control (issue 17).
static_assert(n::kErrorNoPermission == NVML_ERROR_NO_PERMISSION && n::kClockGraphics == NVML_CLOCK_GRAPHICS);
static_assert(n::kRestrictedSetApplicationClocks == NVML_RESTRICTED_API_SET_APPLICATION_CLOCKS);
static_assert(n::kRestrictedSetAutoBoostedClocks == NVML_RESTRICTED_API_SET_AUTO_BOOSTED_CLOCKS);
static_assert(sizeof(ours::nvmlRestrictedAPI_t) == sizeof(::nvmlRestrictedAPI_t));

// Activity metrics: GPM (issue 19). Our metrics[] is at least as long as the driver's (it grew).
SAME_LAYOUT(nvmlGpmMetric_t);
SAME_LAYOUT(nvmlGpmSupport_t);
static_assert(offsetof(ours::nvmlGpmMetric_t, value) == offsetof(::nvmlGpmMetric_t, value));
static_assert(offsetof(ours::nvmlGpmMetricsGet_t, sample2) == offsetof(::nvmlGpmMetricsGet_t, sample2));
static_assert(offsetof(ours::nvmlGpmMetricsGet_t, metrics) == offsetof(::nvmlGpmMetricsGet_t, metrics));
static_assert(sizeof(ours::nvmlGpmMetricsGet_t) >= sizeof(::nvmlGpmMetricsGet_t));
static_assert(n::kGpmMetricsGetVersion == NVML_GPM_METRICS_GET_VERSION && n::kGpmSupportVersion == NVML_GPM_SUPPORT_VERSION);
static_assert(n::kGpmSmUtil == NVML_GPM_METRIC_SM_UTIL && n::kGpmSmOccupancy == NVML_GPM_METRIC_SM_OCCUPANCY);
static_assert(n::kGpmAnyTensorUtil == NVML_GPM_METRIC_ANY_TENSOR_UTIL && n::kGpmDramBwUtil == NVML_GPM_METRIC_DRAM_BW_UTIL);
static_assert(n::kGpmFp64Util == NVML_GPM_METRIC_FP64_UTIL && n::kGpmFp32Util == NVML_GPM_METRIC_FP32_UTIL &&
              n::kGpmFp16Util == NVML_GPM_METRIC_FP16_UTIL);

int main() { return 0; }
