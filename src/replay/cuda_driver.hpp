// The CUDA driver API as the graph replay uses it: the few types (ABI of cuda.h, CUDA 12 and 13)
// and the function table loaded from libcuda.so.1 at run time (dlopen, never linked). No CUDA
// header is needed to build it; fakes/cuda/fake_cuda.cpp implements the same table for the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace jouleprof::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphNode = struct CUgraphNode_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUfunction = struct CUfunc_st*;
using CUkernel = struct CUkern_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

inline constexpr CUresult kSuccess = 0, kNotReady = 600, kInvalidValue = 1;
// CUgraphNodeType
inline constexpr int kNodeKernel = 0, kNodeMemcpy = 1, kNodeMemset = 2, kNodeHost = 3, kNodeGraph = 4, kNodeEmpty = 5,
                     kNodeWaitEvent = 6, kNodeEventRecord = 7, kNodeSemSignal = 8, kNodeSemWait = 9, kNodeMemAlloc = 10,
                     kNodeMemFree = 11, kNodeBatchMemOp = 12, kNodeConditional = 13;
inline constexpr int kPointerAttributeMemoryType = 2;
inline constexpr int kMemoryTypeHost = 1, kMemoryTypeDevice = 2, kMemoryTypeArray = 3, kMemoryTypeUnified = 4;

/// A kernel launched with `extra` (cuLaunchKernel's packed argument buffer): CU_LAUNCH_PARAM_*.
inline void* const kLaunchParamEnd = nullptr;
inline void* const kLaunchParamBufferPointer = reinterpret_cast<void*>(1);
inline void* const kLaunchParamBufferSize = reinterpret_cast<void*>(2);

/// CUDA_KERNEL_NODE_PARAMS_v2
struct CudaKernelNodeParams {
  CUfunction func;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  void** kernelParams;
  void** extra;
  CUkernel kern;
  CUcontext ctx;
};

/// CUDA_MEMCPY3D_v2
struct CudaMemcpy3D {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  int srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  void* srcArray;
  void* reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  int dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  void* dstArray;
  void* reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
};

/// CUuuid
struct CudaUuid {
  unsigned char bytes[16];
};

/// CUDA_MEMSET_NODE_PARAMS
struct CudaMemsetNodeParams {
  CUdeviceptr dst;
  size_t pitch;
  unsigned int value, elementSize;
  size_t width, height;
};

/// CUmemPoolProps (v1)
struct CudaMemPoolProps {
  int allocType, handleTypes;
  int locationType, locationId;  ///< CUmemLocation
  void* win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
};

/// CUDA_MEM_ALLOC_NODE_PARAMS (v1, what cuGraphMemAllocNodeGetParams fills): the graph-owned
/// range [dptr, dptr + bytesize) of a stream-ordered allocation (cudaMallocAsync under capture).
struct CudaMemAllocNodeParams {
  CudaMemPoolProps poolProps;
  const void* accessDescs;
  size_t accessDescCount;
  size_t bytesize;
  CUdeviceptr dptr;
};
// The layout of cuda.h (CUDA 12 and 13, x86-64 and aarch64), checked against the header.
static_assert(sizeof(CudaMemPoolProps) == 88 && sizeof(CudaMemAllocNodeParams) == 120);
static_assert(offsetof(CudaMemAllocNodeParams, bytesize) == 104 && offsetof(CudaMemAllocNodeParams, dptr) == 112);

struct Api {
#define JP_CUDA(member, params, sym)        \
  using member##_fn = CUresult(*) params; \
  member##_fn member = nullptr;
#include "cuda_entry_points.def"
#undef JP_CUDA
  std::vector<std::string> missing;
  std::string library;
  std::shared_ptr<void> handle;
  /// "cuGraphLaunch: CUDA_ERROR_ILLEGAL_ADDRESS (700)".
  std::string describe(const char* call, CUresult rc) const;
};

/// Loads `library` ("" : $JOULEPROF_CUDA_LIB, else libcuda.so.1). Null and `error` set when the
/// library or a required entry point is missing.
std::shared_ptr<const Api> load_driver(const std::string& library, std::string& error);

}  // namespace jouleprof::cuda
