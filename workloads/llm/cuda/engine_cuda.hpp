// The CUDA engine (bf16/fp16, cuBLAS + own kernels) and device ceilings.
#pragma once

#include <memory>
#include <string>

#include "../host/engine.hpp"

namespace jouleprof::llm {

Result<std::unique_ptr<LlmEngine>> create_cuda_engine(const EngineOptions& o);

/// Measured ceilings of the device: device-to-device copy (bytes read + written per second) and
/// a large bf16 cuBLAS GEMM (FLOP/s).
struct DeviceCeilings {
  std::string name;
  double copy_bytes_per_s = 0;
  double gemm_flops = 0;
  int sm_count = 0;
  double l2_bytes = 0;
};
Result<DeviceCeilings> measure_ceilings(int device);

}  // namespace jouleprof::llm
