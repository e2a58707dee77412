// The part of DCGM's C ABI (libdcgm.so, DCGM 3/4) that the dcgm activity source calls, declared by
// us so the core builds without DCGM's headers (the library is dlopen()ed). From the public
// headers dcgm_structs.h, dcgm_fields.h and dcgm_agent.h of github.com/NVIDIA/DCGM (Apache-2.0;
// read at commit 72fa3fea, 2026-07) and the DCGM API reference (docs.nvidia.com/datacenter/dcgm/).
#pragma once

#include <cstdint>

namespace jouleprof::dcgm {

using dcgmReturn_t = int;                                    ///< enum dcgmReturn_t
inline constexpr dcgmReturn_t kOk = 0;                       ///< DCGM_ST_OK
inline constexpr dcgmReturn_t kBadParam = -1;                ///< DCGM_ST_BADPARAM
inline constexpr dcgmReturn_t kNotSupported = -6;            ///< DCGM_ST_NOT_SUPPORTED
inline constexpr dcgmReturn_t kConnectionNotValid = -21;     ///< DCGM_ST_CONNECTION_NOT_VALID
inline constexpr dcgmReturn_t kRequiresRoot = -29;           ///< DCGM_ST_REQUIRES_ROOT
inline constexpr dcgmReturn_t kInUse = -34;                  ///< DCGM_ST_IN_USE
inline constexpr dcgmReturn_t kProfilingNotSupported = -36;  ///< DCGM_ST_PROFILING_NOT_SUPPORTED

using dcgmHandle_t = uintptr_t;
using dcgmGpuGrp_t = uintptr_t;
using dcgmFieldGrp_t = uintptr_t;
inline constexpr int kGroupEmpty = 1;         ///< DCGM_GROUP_EMPTY
inline constexpr int kOperationModeAuto = 1;  ///< DCGM_OPERATION_MODE_AUTO (dcgmStartEmbedded)

// Profiling fields (dcgm_fields.h, DCGM_FI_PROF_*): ratios 0..1, doubles.
inline constexpr unsigned short kFieldSmActive = 1002;      ///< DCGM_FI_PROF_SM_ACTIVE
inline constexpr unsigned short kFieldSmOccupancy = 1003;   ///< DCGM_FI_PROF_SM_OCCUPANCY
inline constexpr unsigned short kFieldTensorActive = 1004;  ///< DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
inline constexpr unsigned short kFieldDramActive = 1005;    ///< DCGM_FI_PROF_DRAM_ACTIVE
inline constexpr unsigned short kFieldFp64Active = 1006;    ///< DCGM_FI_PROF_PIPE_FP64_ACTIVE
inline constexpr unsigned short kFieldFp32Active = 1007;    ///< DCGM_FI_PROF_PIPE_FP32_ACTIVE
inline constexpr unsigned short kFieldFp16Active = 1008;    ///< DCGM_FI_PROF_PIPE_FP16_ACTIVE

inline constexpr unsigned short kFieldTypeDouble = 'd';  ///< DCGM_FT_DOUBLE
/// DCGM_FP64_BLANK: values at or above it mean blank / not found / not supported.
inline constexpr double kFp64Blank = 140737488355328.0;

inline constexpr int kMaxStrLength = 256;    ///< DCGM_MAX_STR_LENGTH
inline constexpr int kMaxBlobLength = 4096;  ///< DCGM_MAX_BLOB_LENGTH

struct dcgmFieldValue_v1 {
  unsigned int version;
  unsigned short fieldId;
  unsigned short fieldType;
  int status;
  int64_t ts;  ///< usec since 1970
  union {
    int64_t i64;
    double dbl;
    char str[kMaxStrLength];
    char blob[kMaxBlobLength];
  } value;
};
/// MAKE_DCGM_VERSION(dcgmFieldValue_v1, 1)
inline constexpr unsigned int kFieldValueVersion1 =
    static_cast<unsigned int>(sizeof(dcgmFieldValue_v1) | (1u << 24));

/// dcgmFieldValueEnumeration_f: called with each GPU's new values; non-zero stops the enumeration.
using FieldValueEnumeration = int (*)(unsigned int gpuId, dcgmFieldValue_v1* values, int numValues,
                                      void* userData);

}  // namespace jouleprof::dcgm
