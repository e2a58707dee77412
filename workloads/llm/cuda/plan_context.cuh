// What a decode plan (plan_*.cuh) gets from the CUDA engine: the run's dimensions, the device
// weights and decode buffers, the stream, and the few engine services a plan calls (the separate
// kernels of a component, top-k sampling, run memory, error recording, timeline stamps); and the
// DecodePlan interface the engine drives plans through. Plans see this and nothing else of the
// engine (issue 31: a narrow context, not the engine's private members).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../host/decode_plan.hpp"
#include "../host/engine.hpp"
#include "kernels.cuh"

namespace jouleprof::llm {
namespace {

#define JP_CK(call)                                                                                 \
  do {                                                                                              \
    const cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) return make_error(Errc::vendor, std::string(#call) + ": " + cudaGetErrorString(e_)); \
  } while (0)

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
int ceil_div(int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); }

/// Sets the kernels' preferred L1/shared split (a cudaSharedmemCarveout value or a percentage).
template <typename... Kernel>
Result<void> set_carveout(int carveout, Kernel... kernels) {
  for (const void* k : {reinterpret_cast<const void*>(kernels)...}) {
    JP_CK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
  }
  return {};
}

/// The matrix products of the engine's separate kernels: its own GEMV kernels (RMSNorm, SwiGLU
/// and residual adds folded in) or cuBLAS with separate norm/SwiGLU kernels. Each plan decides.
enum class Products { gemv, cublas };

/// The GEMV kernels hold the input rows of the batch, padded to 1, 2, 4 or 8 sequences, in
/// shared memory: at most 8 sequences and 200 KiB of rows.
constexpr size_t kGemvRowBytes = 200u * 1024;
inline int gemv_rows(int batch) { return batch <= 1 ? 1 : batch <= 2 ? 2 : batch <= 4 ? 4 : 8; }
inline int gemv_width(const LlmConfig& c) { return std::max({c.hidden, c.q_dim(), c.intermediate}); }
template <typename T>
bool gemv_fits(const LlmConfig& c, int batch) {
  return batch <= 8 && static_cast<size_t>(gemv_rows(batch)) * gemv_width(c) * sizeof(T) <= kGemvRowBytes;
}

/// The timeline's stamp buffer: kern::kStampsPerBlock stamps per block, for up to kStampBlocks
/// blocks of each of up to kStampKernels kernels of a step.
constexpr int kStampBlocks = 1024, kStampKernels = 1024;

/// One layer's weights on the device: the QKV, output, gate/up and down matrices (row-major
/// [out][in]) and the two RMSNorm weight vectors.
template <typename T>
struct LayerWeights {
  T *wqkv, *wo, *wgu, *wd;
  float *attn_norm, *mlp_norm;
};

/// The decode step's buffers (batch rows each): the float residual stream, the QKV projections,
/// the attention output, the SwiGLU activations, the logits and each sequence's (value, token) argmax.
template <typename T>
struct DecodeBuffers {
  float* resid;
  T *qkv, *attn, *act;
  float* logits;
  unsigned long long* argmax;
};

/// The engine's services a plan calls.
template <typename T>
class PlanEngine {
 public:
  using GemvFn = void (*)(kern::GemvParams);
  /// One component by the engine's separate kernels, its matrix products as `p` (the token
  /// advance, Component::embed, commits the token).
  virtual void enqueue(Component c, int l, Products p) = 0;
  /// Top-k sampling over the logits (nothing when greedy: the argmax is the token).
  virtual void sample() = 0;
  /// The GEMV kernels' shared memory and occupancy for this run, and their L1/shared split.
  virtual Result<void> prepare_gemv(int carveout) = 0;
  virtual GemvFn gemv_fn(bool norm) const = 0;
  /// A component's GEMV parameters as the separate kernels use them (l: layer, -1: LM head).
  virtual kern::GemvParams gemv_params(Component c, int l) const = 0;
  /// Layer l's split-KV attention parameters.
  virtual kern::AttnParams attn_params(int l) const = 0;
  /// Device memory that lives until the next run shape is prepared.
  virtual Result<void*> alloc_run(size_t bytes) = 0;
  /// Records the first failure of an asynchronous call (the engine's status() reports it).
  virtual void check(cudaError_t e, const char* what) = 0;
  /// Timeline stamps for one kernel per label, `blocks` blocks each, consecutive in the buffer
  /// (kStampBlocks blocks apart); nullptr when this step is not stamped or they do not fit.
  virtual unsigned long long* stamps(const std::vector<std::string>& labels, int blocks) = 0;

 protected:
  ~PlanEngine() = default;
};

/// Everything a plan reads of the engine for one prepared run shape.
template <typename T>
struct PlanContext {
  const LlmConfig& model;
  const cudaDeviceProp& device;
  int batch;        ///< sequences
  int max_ctx;      ///< longest context, rounded up to 64 positions (the KV cache's length)
  int attn_chunk;   ///< positions per split of the separate attention kernel
  int attn_splits;  ///< splits per KV head (the partials buffers hold this many)
  bool pdl;         ///< programmatic dependent launch
  cudaStream_t stream;
  const std::vector<LayerWeights<T>>& layers;
  const T* lm_head;
  const float* final_norm;
  DecodeBuffers<T> buf;
  PlanEngine<T>& engine;
};

/// A decode form on the CUDA engine (decode_plan.hpp's PlanKind; one implementation per form, in
/// plan_<name>.cuh). The engine prepares it for each run shape and asks it for the decode step and
/// for the kernels of one layer (what `--per-layer` isolation replays); components are replayed by
/// the engine's separate kernels with the plan's matrix products.
template <typename T>
class DecodePlan {
 public:
  virtual ~DecodePlan() = default;
  virtual PlanKind kind() const = 0;
  /// Readies the plan for the context's shape. Chosen by the table of defaults, a plan that cannot
  /// run there steps aside (false); asked for, it fails with the reason.
  virtual Result<bool> prepare(bool by_default) = 0;
  /// In words, beginning with the plan ("separate kernels: GEMV kernels ...", "cluster plan: ...":
  /// `jouleprof-llm check` counts its cases per plan by these beginnings).
  virtual std::string describe() const = 0;
  /// The separate kernels' matrix products this plan runs (decided or required in prepare).
  virtual Products products() const = 0;
  /// One decode step on the stream; advance: with the token bookkeeping.
  virtual void enqueue_step(bool advance) = 0;
  /// The kernels of one layer, as in a step.
  virtual void enqueue_layer(int l) = 0;
};

}  // namespace
}  // namespace jouleprof::llm
