// Compiles only if our CUPTI PM-sampling declarations (src/activity/cupti_pm_abi.hpp) match the
// installed CUPTI headers: every struct's size, structSize constant and field offsets.
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include <cstddef>

#include "cupti_pm_abi.hpp"

namespace ours = jouleprof::cupti;

#define SAME_FIELD(T, O, f) \
  static_assert(offsetof(T, f) == offsetof(O, f) && sizeof(T::f) == sizeof(O::f), #T "." #f);
#define SAME_SIZE(T, O, last)                                                        \
  static_assert(T##_STRUCT_SIZE == JP_CUPTI_STRUCT_SIZE(O, last), #T " structSize"); \
  static_assert(sizeof(T) == sizeof(O), #T " size");

SAME_SIZE(CUpti_Profiler_Initialize_Params, ours::CUpti_Profiler_Initialize_Params, pPriv)
SAME_SIZE(CUpti_Device_GetChipName_Params, ours::CUpti_Device_GetChipName_Params, pChipName)
SAME_FIELD(CUpti_Device_GetChipName_Params, ours::CUpti_Device_GetChipName_Params, deviceIndex)
SAME_SIZE(CUpti_PmSampling_GetCounterAvailability_Params,
          ours::CUpti_PmSampling_GetCounterAvailability_Params, pCounterAvailabilityImage)
SAME_FIELD(CUpti_PmSampling_GetCounterAvailability_Params,
           ours::CUpti_PmSampling_GetCounterAvailability_Params, counterAvailabilityImageSize)
SAME_SIZE(CUpti_Profiler_Host_Initialize_Params, ours::CUpti_Profiler_Host_Initialize_Params,
          pHostObject)
SAME_FIELD(CUpti_Profiler_Host_Initialize_Params, ours::CUpti_Profiler_Host_Initialize_Params,
           profilerType)
SAME_FIELD(CUpti_Profiler_Host_Initialize_Params, ours::CUpti_Profiler_Host_Initialize_Params,
           pChipName)
SAME_FIELD(CUpti_Profiler_Host_Initialize_Params, ours::CUpti_Profiler_Host_Initialize_Params,
           pCounterAvailabilityImage)
SAME_SIZE(CUpti_Profiler_Host_Deinitialize_Params, ours::CUpti_Profiler_Host_Deinitialize_Params,
          pHostObject)
SAME_SIZE(CUpti_Profiler_Host_ConfigAddMetrics_Params,
          ours::CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics)
SAME_FIELD(CUpti_Profiler_Host_ConfigAddMetrics_Params,
           ours::CUpti_Profiler_Host_ConfigAddMetrics_Params, ppMetricNames)
SAME_SIZE(CUpti_Profiler_Host_GetConfigImageSize_Params,
          ours::CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize)
SAME_SIZE(CUpti_Profiler_Host_GetConfigImage_Params,
          ours::CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage)
SAME_FIELD(CUpti_Profiler_Host_GetConfigImage_Params,
           ours::CUpti_Profiler_Host_GetConfigImage_Params, configImageSize)
SAME_SIZE(CUpti_Profiler_Host_GetNumOfPasses_Params,
          ours::CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses)
SAME_FIELD(CUpti_Profiler_Host_GetNumOfPasses_Params,
           ours::CUpti_Profiler_Host_GetNumOfPasses_Params, pConfigImage)
SAME_SIZE(CUpti_Profiler_Host_EvaluateToGpuValues_Params,
          ours::CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues)
SAME_FIELD(CUpti_Profiler_Host_EvaluateToGpuValues_Params,
           ours::CUpti_Profiler_Host_EvaluateToGpuValues_Params, pCounterDataImage)
SAME_FIELD(CUpti_Profiler_Host_EvaluateToGpuValues_Params,
           ours::CUpti_Profiler_Host_EvaluateToGpuValues_Params, rangeIndex)
SAME_FIELD(CUpti_Profiler_Host_EvaluateToGpuValues_Params,
           ours::CUpti_Profiler_Host_EvaluateToGpuValues_Params, numMetrics)
SAME_SIZE(CUpti_PmSampling_Enable_Params, ours::CUpti_PmSampling_Enable_Params, pPmSamplingObject)
SAME_FIELD(CUpti_PmSampling_Enable_Params, ours::CUpti_PmSampling_Enable_Params, deviceIndex)
SAME_SIZE(CUpti_PmSampling_Disable_Params, ours::CUpti_PmSampling_Object_Params, pPmSamplingObject)
SAME_SIZE(CUpti_PmSampling_Start_Params, ours::CUpti_PmSampling_Object_Params, pPmSamplingObject)
SAME_SIZE(CUpti_PmSampling_Stop_Params, ours::CUpti_PmSampling_Object_Params, pPmSamplingObject)
SAME_SIZE(CUpti_PmSampling_SetConfig_Params, ours::CUpti_PmSampling_SetConfig_Params,
          hwBufferAppendMode)
SAME_FIELD(CUpti_PmSampling_SetConfig_Params, ours::CUpti_PmSampling_SetConfig_Params, configSize)
SAME_FIELD(CUpti_PmSampling_SetConfig_Params, ours::CUpti_PmSampling_SetConfig_Params, pConfig)
SAME_FIELD(CUpti_PmSampling_SetConfig_Params, ours::CUpti_PmSampling_SetConfig_Params,
           hardwareBufferSize)
SAME_FIELD(CUpti_PmSampling_SetConfig_Params, ours::CUpti_PmSampling_SetConfig_Params,
           samplingInterval)
SAME_FIELD(CUpti_PmSampling_SetConfig_Params, ours::CUpti_PmSampling_SetConfig_Params, triggerMode)
SAME_SIZE(CUpti_PmSampling_GetCounterDataSize_Params,
          ours::CUpti_PmSampling_GetCounterDataSize_Params, counterDataSize)
SAME_FIELD(CUpti_PmSampling_GetCounterDataSize_Params,
           ours::CUpti_PmSampling_GetCounterDataSize_Params, pMetricNames)
SAME_FIELD(CUpti_PmSampling_GetCounterDataSize_Params,
           ours::CUpti_PmSampling_GetCounterDataSize_Params, numMetrics)
SAME_FIELD(CUpti_PmSampling_GetCounterDataSize_Params,
           ours::CUpti_PmSampling_GetCounterDataSize_Params, maxSamples)
SAME_SIZE(CUpti_PmSampling_CounterDataImage_Initialize_Params,
          ours::CUpti_PmSampling_CounterDataImage_Initialize_Params, pCounterData)
SAME_FIELD(CUpti_PmSampling_CounterDataImage_Initialize_Params,
           ours::CUpti_PmSampling_CounterDataImage_Initialize_Params, counterDataSize)
SAME_SIZE(CUpti_PmSampling_DecodeData_Params, ours::CUpti_PmSampling_DecodeData_Params, overflow)
SAME_FIELD(CUpti_PmSampling_DecodeData_Params, ours::CUpti_PmSampling_DecodeData_Params,
           pCounterDataImage)
SAME_FIELD(CUpti_PmSampling_DecodeData_Params, ours::CUpti_PmSampling_DecodeData_Params,
           counterDataImageSize)
SAME_FIELD(CUpti_PmSampling_DecodeData_Params, ours::CUpti_PmSampling_DecodeData_Params,
           decodeStopReason)
SAME_SIZE(CUpti_PmSampling_GetCounterDataInfo_Params,
          ours::CUpti_PmSampling_GetCounterDataInfo_Params, numCompletedSamples)
SAME_FIELD(CUpti_PmSampling_GetCounterDataInfo_Params,
           ours::CUpti_PmSampling_GetCounterDataInfo_Params, pCounterDataImage)
SAME_FIELD(CUpti_PmSampling_GetCounterDataInfo_Params,
           ours::CUpti_PmSampling_GetCounterDataInfo_Params, numTotalSamples)
SAME_SIZE(CUpti_PmSampling_CounterData_GetSampleInfo_Params,
          ours::CUpti_PmSampling_CounterData_GetSampleInfo_Params, endTimestamp)
SAME_FIELD(CUpti_PmSampling_CounterData_GetSampleInfo_Params,
           ours::CUpti_PmSampling_CounterData_GetSampleInfo_Params, sampleIndex)
SAME_FIELD(CUpti_PmSampling_CounterData_GetSampleInfo_Params,
           ours::CUpti_PmSampling_CounterData_GetSampleInfo_Params, startTimestamp)

static_assert(CUPTI_PROFILER_TYPE_PM_SAMPLING == ours::kProfilerTypePmSampling);
static_assert(CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL ==
              ours::kTriggerModeGpuTimeInterval);
static_assert(CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST ==
              ours::kAppendModeKeepOldest);
static_assert(CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL ==
              ours::kDecodeStopReasonCounterDataFull);
static_assert(CUPTI_ERROR_OUT_OF_MEMORY == ours::kErrorOutOfMemory);
static_assert(CUPTI_ERROR_HARDWARE_BUSY == ours::kErrorHardwareBusy);
static_assert(CUPTI_ERROR_NOT_SUPPORTED == ours::kErrorNotSupported);
static_assert(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES == ours::kErrorInsufficientPrivileges);
static_assert(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES ==
              ours::kErrorVirtualizedInsufficientPrivileges);
