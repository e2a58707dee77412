// The subset of the NVML C ABI that jouleprof calls, declared by us (no nvml.h needed to
// build). tests/device/nvml_abi_test.cpp checks these against the real nvml.h on the device.
#pragma once

#include <cstdint>

extern "C" {

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef int nvmlReturn_t;
typedef int nvmlValueType_t;
typedef int nvmlSamplingType_t;
typedef int nvmlClockType_t;
typedef int nvmlTemperatureSensors_t;
typedef int nvmlEnableState_t;
typedef int nvmlRestrictedAPI_t;

typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlSample_st {
  unsigned long long timeStamp;  // CLOCK_REALTIME microseconds
  nvmlValue_t sampleValue;
} nvmlSample_t;

typedef struct nvmlFieldValue_st {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;  // CLOCK_REALTIME microseconds
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlPciInfo_st {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

// GPM (GPU performance monitoring, Hopper and later): activity metrics between two samples
// (issue 19, src/activity/). NVML_GPM_METRIC_MAX grew across drivers (98, 210, 333); the driver
// reads numMetrics entries, so the largest size is safe.
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;
typedef struct nvmlGpmMetricInfo_st {
  char* shortName;
  char* longName;
  char* unit;
} nvmlGpmMetricInfo_t;
typedef struct nvmlGpmMetric_st {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  nvmlGpmMetricInfo_t metricInfo;
} nvmlGpmMetric_t;
typedef struct nvmlGpmMetricsGet_st {
  unsigned int version;  // 1
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[333];
} nvmlGpmMetricsGet_t;
typedef struct nvmlGpmSupport_st {
  unsigned int version;  // 1
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

}  // extern "C"

namespace jouleprof::nvml {

constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kErrorUninitialized = 1;
constexpr nvmlReturn_t kErrorInvalidArgument = 2;
constexpr nvmlReturn_t kErrorNotSupported = 3;
constexpr nvmlReturn_t kErrorNoPermission = 4;
constexpr nvmlReturn_t kErrorNotFound = 6;
constexpr nvmlReturn_t kErrorInsufficientSize = 7;
constexpr nvmlReturn_t kErrorDriverNotLoaded = 9;
constexpr nvmlReturn_t kErrorLibraryNotFound = 12;
constexpr nvmlReturn_t kErrorFunctionNotFound = 13;
constexpr nvmlReturn_t kErrorGpuIsLost = 15;
constexpr nvmlReturn_t kErrorNoData = 21;
constexpr nvmlReturn_t kErrorUnknown = 999;

constexpr nvmlSamplingType_t kTotalPowerSamples = 0;
constexpr nvmlValueType_t kValueDouble = 0;
constexpr nvmlValueType_t kValueUnsignedInt = 1;
constexpr nvmlValueType_t kValueUnsignedLong = 2;
constexpr nvmlValueType_t kValueUnsignedLongLong = 3;
constexpr nvmlValueType_t kValueSignedLongLong = 4;
constexpr nvmlValueType_t kValueSignedInt = 5;
constexpr nvmlClockType_t kClockGraphics = 0;
constexpr nvmlClockType_t kClockSm = 1;
constexpr nvmlClockType_t kClockMem = 2;
constexpr nvmlTemperatureSensors_t kTemperatureGpu = 0;
constexpr nvmlRestrictedAPI_t kRestrictedSetApplicationClocks = 0;  // NVML_RESTRICTED_API_SET_APPLICATION_CLOCKS
constexpr nvmlRestrictedAPI_t kRestrictedSetAutoBoostedClocks = 1;
constexpr unsigned kFieldPowerAverage = 185;  // NVML_FI_DEV_POWER_AVERAGE
constexpr unsigned kFieldPowerInstant = 186;  // NVML_FI_DEV_POWER_INSTANT
constexpr unsigned kGpmMetricsGetVersion = 1;   // NVML_GPM_METRICS_GET_VERSION
constexpr unsigned kGpmSupportVersion = 1;      // NVML_GPM_SUPPORT_VERSION
// NVML_GPM_METRIC_* ids (values in percent)
constexpr unsigned kGpmSmUtil = 2;
constexpr unsigned kGpmSmOccupancy = 3;
constexpr unsigned kGpmAnyTensorUtil = 5;
constexpr unsigned kGpmDramBwUtil = 10;
constexpr unsigned kGpmFp64Util = 11;
constexpr unsigned kGpmFp32Util = 12;
constexpr unsigned kGpmFp16Util = 13;

}  // namespace jouleprof::nvml
