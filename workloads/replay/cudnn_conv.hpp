// The convolution tier of jouleprof-replay through cuDNN's legacy convolution API, loaded at run
// time (dlopen of $JOULEPROF_CUDNN_LIB, else libcudnn.so.9: the library PyTorch ships in its
// wheels), never linked. Plain C++ with the few cuDNN types declared here (the C API is a stable
// ABI; cuDNN 9 API reference): the host side is built everywhere and tested against
// fakes/cudnn; replay_cuda.cu gives it device buffers and a stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replay_cuda.hpp"

// cuDNN's opaque handle types and CUDA's stream, by their C names (global, as in cudnn.h).
struct cudnnContext;
struct cudnnTensorStruct;
struct cudnnFilterStruct;
struct cudnnConvolutionStruct;
struct CUstream_st;

namespace jouleprof::replay::cudnn {

using Status = int;  // cudnnStatus_t: CUDNN_STATUS_SUCCESS = 0
using Handle = ::cudnnContext*;
using Stream = ::CUstream_st*;  // cudaStream_t
using TensorDesc = ::cudnnTensorStruct*;
using FilterDesc = ::cudnnFilterStruct*;
using ConvDesc = ::cudnnConvolutionStruct*;
using BackendDesc = void*;  // cudnnBackendDescriptor_t

inline constexpr Status kSuccess = 0;
// cudnnDataType_t
inline constexpr int kFloat = 0, kDouble = 1, kHalf = 2, kBfloat16 = 9;
// cudnnTensorFormat_t
inline constexpr int kNchw = 0, kNhwc = 1;
// cudnnConvolutionMode_t: PyTorch's convolutions are cross-correlations
inline constexpr int kCrossCorrelation = 1;
// cudnnMathType_t
inline constexpr int kDefaultMath = 0, kTensorOpMath = 1, kFmaMath = 3;
inline constexpr int kForwardAlgos = 8;  // CUDNN_CONVOLUTION_FWD_ALGO_COUNT

/// cudnnConvolutionFwdAlgoPerf_t
struct AlgoPerf {
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

struct Api {
#define JP_CUDNN(member, ret, params, sym) \
  using member##_fn = ret(*) params;       \
  member##_fn member = nullptr;
#include "cudnn_entry_points.def"
#undef JP_CUDNN
  std::string library;
  std::shared_ptr<void> handle;
  /// "cudnnConvolutionForward: CUDNN_STATUS_BAD_PARAM (2000)".
  std::string describe(const char* call, Status s) const;
};

/// Loads `library` ("": $JOULEPROF_CUDNN_LIB, else libcudnn.so.9). Null and `error` set when the
/// library or an entry point is missing.
std::shared_ptr<const Api> load(const std::string& library, std::string& error);

/// The library and a handle on the engine's stream, opened at the first convolution; a failure
/// is kept (later convolutions answer with it at once).
class Session {
 public:
  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();
  /// "" once a handle is bound to `stream`, else why not.
  std::string open(Stream stream);
  const Api* api() const { return api_.get(); }
  Handle handle() const { return handle_; }
  std::string version() const;  ///< "9.10.2" once open

 private:
  bool tried_ = false;
  std::string error_;
  std::shared_ptr<const Api> api_;
  Handle handle_ = nullptr;
};

/// One forward convolution described to cuDNN, its algorithm chosen as PyTorch does with
/// benchmark off (the heuristic's first that succeeds within the workspace limit).
class Conv {
 public:
  Conv() = default;
  Conv(const Conv&) = delete;
  Conv& operator=(const Conv&) = delete;
  ~Conv() { release(); }
  /// Describes `it` (tier conv) to cuDNN; "" or why it cannot run.
  std::string plan(Session& s, const Item& it, size_t max_workspace);
  /// Enqueues one forward convolution on the session's stream; "" or the cuDNN error.
  std::string run(void* x, void* w, void* y, void* workspace) const;
  void release();

  size_t input_bytes = 0, weight_bytes = 0, output_bytes = 0, workspace_bytes = 0;
  int algo = -1, math_type = 0;

 private:
  std::string describe(const Item& it);
  std::string choose_algorithm(size_t max_workspace, bool fp32_no_tf32);

  Session* s_ = nullptr;
  TensorDesc x_ = nullptr, y_ = nullptr;
  FilterDesc w_ = nullptr;
  ConvDesc conv_ = nullptr;
  bool f64_ = false;
};

/// Shared by the cuDNN tiers (cudnn_conv.cpp, cudnn_batchnorm.cpp).
namespace detail {
int data_type(const std::string& dtype);  ///< cudnnDataType_t of bf16 fp16 fp32 fp64; -1 otherwise
size_t elem_bytes(const std::string& dtype);
/// Packed strides of `dims` (N C spatial..) in NCHW order, or NHWC order when channels-last.
std::vector<int> packed_strides(const std::vector<int>& dims, bool channels_last);
std::vector<int> ints(const std::vector<int64_t>& v);
size_t count(const std::vector<int>& dims);
/// The engine's one line for a row of a cuDNN tier replayed as its memory-bound stand-in:
/// "conv not run through cuDNN (why): a memory-bound kernel moving the op's bytes stands in".
std::string stand_in(const std::string& tier, const std::string& failed, const std::string& why);
}  // namespace detail

}  // namespace jouleprof::replay::cudnn
