// The batch-norm tier of jouleprof-replay: cuDNN's legacy inference batch normalization
// (cudnnBatchNormalizationForwardInference), as PyTorch's aten::cudnn_batch_norm calls it in eval
// mode, through the library cudnn_conv.hpp loads at run time. Plain C++: tested on a CPU against
// fakes/cudnn; replay_cuda.cu gives it device buffers and a stream.
#pragma once

#include <cstddef>
#include <string>

#include "cudnn_conv.hpp"

namespace jouleprof::replay::cudnn {

// cudnnBatchNormMode_t
inline constexpr int kBatchNormPerActivation = 0, kBatchNormSpatial = 1;

/// One inference batch normalization described to cuDNN: x and y of the traced sizes and layout
/// (PyTorch's descriptors: at least 4-D, trailing 1s), scale/bias/mean/variance 1×C×1×1 in fp32
/// (fp64 for fp64 inputs); mode spatial, per-activation for a 2-D input, as PyTorch chooses.
class BatchNorm {
 public:
  BatchNorm() = default;
  BatchNorm(const BatchNorm&) = delete;
  BatchNorm& operator=(const BatchNorm&) = delete;
  ~BatchNorm() { release(); }
  /// Describes `it` (tier batchnorm) to cuDNN; "" or why it cannot run.
  std::string plan(Session& s, const Item& it);
  /// Enqueues one batch normalization on the session's stream; `params` holds scale, bias, mean
  /// and variance, `param_stride` bytes apart. "" or the cuDNN error.
  std::string run(const void* x, void* y, const void* params, size_t param_stride) const;
  void release();

  size_t data_bytes = 0;   ///< x (and y) in bytes
  size_t param_bytes = 0;  ///< one of scale, bias, mean, variance in bytes
  int mode = kBatchNormSpatial;

 private:
  Session* s_ = nullptr;
  TensorDesc x_ = nullptr, p_ = nullptr;
  bool f64_ = false;
};

}  // namespace jouleprof::replay::cudnn
