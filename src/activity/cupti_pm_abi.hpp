// The part of the CUPTI PM-sampling and profiler-host C ABI (CUDA 12.6+, CUPTI 2024) that the
// cupti-pm activity source calls, declared by us so the core builds without CUDA's headers (the
// library itself is dlopen()ed). Layouts follow the public headers cupti_pmsampling.h,
// cupti_profiler_host.h, cupti_profiler_target.h and cupti_target.h (CUPTI API reference,
// docs.nvidia.com/cupti/api/); tests/activity/cupti_pm_abi_check.cpp checks every struct's size
// and offsets against those headers wherever they are installed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace jouleprof::cupti {

using CUptiResult = int;  ///< enum CUptiResult
inline constexpr CUptiResult kSuccess = 0;
inline constexpr CUptiResult kErrorOutOfMemory = 8;
inline constexpr CUptiResult kErrorHardwareBusy = 26;
inline constexpr CUptiResult kErrorNotSupported = 27;
inline constexpr CUptiResult kErrorInsufficientPrivileges = 35;
inline constexpr CUptiResult kErrorVirtualizedInsufficientPrivileges = 40;

struct CUpti_PmSampling_Object;
struct CUpti_Profiler_Host_Object;

// CUPTI_PROFILER_TYPE_PM_SAMPLING, CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL,
// CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST,
// CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL
inline constexpr int kProfilerTypePmSampling = 1;
inline constexpr int kTriggerModeGpuTimeInterval = 1;
inline constexpr int kAppendModeKeepOldest = 0;
inline constexpr int kDecodeStopReasonCounterDataFull = 1;

/// CUPTI_PROFILER_STRUCT_SIZE: each params struct's structSize is the end of its last field.
#define JP_CUPTI_STRUCT_SIZE(type, last) \
  (offsetof(type, last) + sizeof(static_cast<type*>(nullptr)->last))

struct CUpti_Profiler_Initialize_Params {
  size_t structSize;
  void* pPriv;
};
struct CUpti_Device_GetChipName_Params {
  size_t structSize;
  void* pPriv;
  size_t deviceIndex;
  const char* pChipName;
};
struct CUpti_PmSampling_GetCounterAvailability_Params {
  size_t structSize;
  void* pPriv;
  size_t deviceIndex;
  size_t counterAvailabilityImageSize;
  uint8_t* pCounterAvailabilityImage;
};
struct CUpti_Profiler_Host_Initialize_Params {
  size_t structSize;
  void* pPriv;
  int profilerType;
  const char* pChipName;
  const uint8_t* pCounterAvailabilityImage;
  CUpti_Profiler_Host_Object* pHostObject;
};
struct CUpti_Profiler_Host_Deinitialize_Params {
  size_t structSize;
  void* pPriv;
  CUpti_Profiler_Host_Object* pHostObject;
};
struct CUpti_Profiler_Host_ConfigAddMetrics_Params {
  size_t structSize;
  void* pPriv;
  CUpti_Profiler_Host_Object* pHostObject;
  const char** ppMetricNames;
  size_t numMetrics;
};
struct CUpti_Profiler_Host_GetConfigImageSize_Params {
  size_t structSize;
  void* pPriv;
  CUpti_Profiler_Host_Object* pHostObject;
  size_t configImageSize;
};
struct CUpti_Profiler_Host_GetConfigImage_Params {
  size_t structSize;
  void* pPriv;
  CUpti_Profiler_Host_Object* pHostObject;
  size_t configImageSize;
  uint8_t* pConfigImage;
};
struct CUpti_Profiler_Host_GetNumOfPasses_Params {
  size_t structSize;
  void* pPriv;
  size_t configImageSize;
  uint8_t* pConfigImage;
  size_t numOfPasses;
};
struct CUpti_Profiler_Host_EvaluateToGpuValues_Params {
  size_t structSize;
  void* pPriv;
  CUpti_Profiler_Host_Object* pHostObject;
  const uint8_t* pCounterDataImage;
  size_t counterDataImageSize;
  size_t rangeIndex;
  const char** ppMetricNames;
  size_t numMetrics;
  double* pMetricValues;
};
struct CUpti_PmSampling_Enable_Params {
  size_t structSize;
  void* pPriv;
  size_t deviceIndex;
  CUpti_PmSampling_Object* pPmSamplingObject;
};
/// Disable, Start and Stop take the same parameters.
struct CUpti_PmSampling_Object_Params {
  size_t structSize;
  void* pPriv;
  CUpti_PmSampling_Object* pPmSamplingObject;
};
struct CUpti_PmSampling_SetConfig_Params {
  size_t structSize;
  void* pPriv;
  CUpti_PmSampling_Object* pPmSamplingObject;
  size_t configSize;
  const uint8_t* pConfig;
  size_t hardwareBufferSize;
  uint64_t samplingInterval;
  int triggerMode;
  int hwBufferAppendMode;
};
struct CUpti_PmSampling_GetCounterDataSize_Params {
  size_t structSize;
  void* pPriv;
  CUpti_PmSampling_Object* pPmSamplingObject;
  const char** pMetricNames;
  size_t numMetrics;
  uint32_t maxSamples;
  size_t counterDataSize;
};
struct CUpti_PmSampling_CounterDataImage_Initialize_Params {
  size_t structSize;
  void* pPriv;
  CUpti_PmSampling_Object* pPmSamplingObject;
  size_t counterDataSize;
  uint8_t* pCounterData;
};
struct CUpti_PmSampling_DecodeData_Params {
  size_t structSize;
  void* pPriv;
  CUpti_PmSampling_Object* pPmSamplingObject;
  uint8_t* pCounterDataImage;
  size_t counterDataImageSize;
  int decodeStopReason;
  uint8_t overflow;
};
struct CUpti_PmSampling_GetCounterDataInfo_Params {
  size_t structSize;
  void* pPriv;
  const uint8_t* pCounterDataImage;
  size_t counterDataImageSize;
  size_t numTotalSamples;
  size_t numPopulatedSamples;
  size_t numCompletedSamples;
};
struct CUpti_PmSampling_CounterData_GetSampleInfo_Params {
  size_t structSize;
  void* pPriv;
  CUpti_PmSampling_Object* pPmSamplingObject;
  const uint8_t* pCounterDataImage;
  size_t counterDataImageSize;
  size_t sampleIndex;
  uint64_t
      startTimestamp;  ///< ns, CLOCK_REALTIME like every CUPTI timestamp (docs/ARCHITECTURE.md)
  uint64_t endTimestamp;
};

// The CUDA driver calls the source makes (cuda.h: CUresult and CUdevice are ints).
using CUresult = int;
inline constexpr CUresult kCudaSuccess = 0;
struct CUctx_st;

}  // namespace jouleprof::cupti
