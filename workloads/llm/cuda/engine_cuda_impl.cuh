// The CUDA engine's class, implemented in engine_cuda.cu. Internal to jouleprof-llm: one
// translation unit includes it. The engine owns the weights, the buffers of a run shape, prefill,
// the separate kernels of every decode component (what isolation replays), and the decode plan
// that runs the step; the plans (plan_*.cuh) see only its PlanContext (plan_context.cuh).
#pragma once
#include <cublas_v2.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <map>
#include <numeric>

#include "../host/numeric.hpp"
#include "../host/safetensors.hpp"
#include "../host/weights.hpp"
#include "engine_cuda.hpp"
#include "../host/decode_plan.hpp"
#include "kernels.cuh"
#include "plan_context.cuh"

namespace jouleprof::llm {
namespace {

using kern::AdvanceParams;
using kern::AttnParams;
using kern::GemvParams;

constexpr double kGiB = 1024.0 * 1024 * 1024;

const char* blas_str(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "alloc failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "arch mismatch";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    default: return "error";
  }
}

template <typename T>
struct TypeInfo;
template <>
struct TypeInfo<__nv_bfloat16> {
  static constexpr cudaDataType_t cuda = CUDA_R_16BF;
  static uint16_t bits(float f) { return float_to_bf16_bits(f); }
};
template <>
struct TypeInfo<__half> {
  static constexpr cudaDataType_t cuda = CUDA_R_16F;
  static uint16_t bits(float f) { return float_to_f16_bits(f); }
};

/// A prefill pass: some sequences of equal prompt length, positions [p0, p0 + len).
struct Chunk {
  std::vector<int> seqs;
  int p0 = 0, len = 0;
  int tok_off = 0;  ///< into the token arrays
  int seq_off = 0;  ///< into the per-chunk sequence arrays
  bool last = false;
  int qrows = 0;    ///< attention query rows per sub-pass
};

/// The host side of a run's prefill: per token its id, sequence and position; per chunk and
/// sequence its sequence and the row of its last token.
struct PrefillTokens {
  std::vector<int> tok_ids, tok_seq, tok_pos, chunk_seq, chunk_last;
};

template <typename T>
class CudaEngine final : public LlmEngine, private PlanEngine<T> {
 public:
  ~CudaEngine() override { release(); }
  static Result<std::unique_ptr<LlmEngine>> create(const EngineOptions& o, LlmConfig c);

  const LlmConfig& config() const override { return c_; }
  DType dtype() const override { return dt_; }
  std::string device_name() const override { return prop_.name; }
  std::string describe() const override {
    std::string s = plan_ ? plan_->describe() : std::string("not prepared");
    if (layer_plan_ && layer_plan_ != plan_.get()) s += "; isolated layers: " + layer_plan_->describe();
    s += o_.graphs ? ", one CUDA graph per step" : ", no graphs";
    if (o_.pdl) s += ", programmatic dependent launch";
    s += ", " + describe_sampling(o_.sampling);
    return s;
  }
  Result<void> prepare(const RunShape& s) override;
  void prefill() override;
  void decode(int steps) override;
  void rewind() override;
  int component(Component c, int layer, int reps) override;
  int layer_block(int layer, int reps) override;
  int step(int reps) override;
  void synchronize() override {
    check(cudaStreamSynchronize(st_), "cudaStreamSynchronize");
  }
  Result<void> status() override {
    if (!err_.empty()) return make_error(Errc::vendor, err_);
    return {};
  }
  Result<std::vector<std::vector<int>>> generated() override;
  Result<std::vector<float>> last_logits() override;
  std::vector<KernelSpan> timeline() override;
  void range_push(const std::string& name) override { nvtxRangePushA(name.c_str()); }
  void range_pop() override { nvtxRangePop(); }

 private:
  using LayerW = LayerWeights<T>;
  using GemvFn = typename PlanEngine<T>::GemvFn;

  // What the plans call (PlanEngine, through their PlanContext).
  void enqueue(Component c, int l, Products p) override { enqueue_component(c, l, true, p); }
  void sample() override { sample_topk(true); }
  Result<void> prepare_gemv(int carveout) override;
  GemvFn gemv_fn(bool norm) const override;
  GemvParams gemv_params(Component comp, int l) const override;
  AttnParams attn_params(int l) const override;
  Result<void*> alloc_run(size_t bytes) override {
    void* p = nullptr;
    if (auto r = alloc(&p, bytes, true); !r) return r.error();
    return p;
  }
  void check(cudaError_t e, const char* what) override {
    if (e != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(e));
  }
  unsigned long long* stamps(const std::vector<std::string>& labels, int blocks) override {
    if (!stamps_ || !stamping_ || blocks > kStampBlocks || stamp_kernels_.size() + labels.size() > size_t{kStampKernels}) {
      return nullptr;
    }
    unsigned long long* first = stamps_ + stamp_kernels_.size() * kern::kStampsPerBlock * kStampBlocks;
    for (const std::string& label : labels) stamp_kernels_.emplace_back(label, blocks);
    return first;
  }
  PlanContext<T> plan_context() {
    return PlanContext<T>{c_, prop_, B_, max_ctx_, chunk_, splits_, o_.pdl, st_, lw_, lm_, final_norm_,
                          DecodeBuffers<T>{resid_d_, qkv_d_, attn_d_, act_d_, logits_, argmax_}, *this};
  }

  void fail(const std::string& what) {
    if (err_.empty()) err_ = what;
  }
  void check_blas(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS) fail(std::string(what) + ": cuBLAS " + blas_str(s));
  }
  /// Top-k sampling over logits_ (no-op when greedy: the argmax is already chosen).
  void sample_topk(bool pdl) {
    const SamplingOptions& so = o_.sampling;
    if (so.greedy()) return;
    const kern::SampleParams sp{logits_, c_.vocab, std::min(so.top_k, c_.vocab), 1.0f / so.temperature, so.seed, step_,
                                argmax_, shards_, shard_len_, cand_key_, cand_idx_, cand_n_};
    launch(kern::topk_shard_kernel, dim3(shards_, B_), dim3(kern::kShardThreads), 0, pdl, sp);
    launch(kern::topk_pick_kernel, dim3(B_), dim3(kern::kPickThreads), pick_smem(), pdl, sp);
  }
  size_t pick_smem() const { return static_cast<size_t>(shards_) * std::min(o_.sampling.top_k, c_.vocab) * 8; }
  int shards_ = 0, shard_len_ = 0;
  uint32_t* cand_key_ = nullptr;
  int *cand_idx_ = nullptr, *cand_n_ = nullptr;
  template <typename... P, typename... A>
  void launch(void (*k)(P...), dim3 grid, dim3 block, size_t smem, bool pdl, A&&... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st_;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = (pdl && o_.pdl) ? 1 : 0;
    check(cudaLaunchKernelEx(&cfg, k, std::forward<A>(args)...), "kernel launch");
  }
  Result<void> alloc(void** p, size_t bytes, bool run) {
    JP_CK(cudaMalloc(p, std::max<size_t>(bytes, 256)));
    (run ? run_allocs_ : allocs_).push_back(*p);
    return {};
  }
  void release_run();
  void release();
  // The steps of prepare(), in order.
  Result<void> check_shape(const RunShape& s);
  Result<void> size_kernels();
  PrefillTokens plan_prefill(const RunShape& s);
  Result<void> alloc_run_buffers(const RunShape& s, const PrefillTokens& pf);
  Result<void> upload_prompts(const RunShape& s, PrefillTokens& pf);
  Result<void> prepare_launches();
  Result<void> init_weights();
  Result<void> load_weights(const std::string& dir);

  // y = x W^T for row-major x [m][k] (ld ldx) and W [n][k]; y [m][n] (ld ldy) as T or float.
  void gemm(const T* w, const T* x, int ldx, void* y, int ldy, int m, int n, int k, bool y_f32, float beta) {
    const float alpha = 1.f;
    check_blas(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, w, TypeInfo<T>::cuda, k, x,
                            TypeInfo<T>::cuda, ldx, &beta, y, y_f32 ? CUDA_R_32F : TypeInfo<T>::cuda, ldy,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
  }
  // Diagnostic timeline: kern::kStampsPerBlock stamps per block for each kernel of a step.
  unsigned long long* stamps_ = nullptr;
  bool stamping_ = false;  ///< while the plan enqueues an advancing step
  std::string stamp_label_;
  std::vector<std::pair<std::string, int>> stamp_kernels_;  ///< label, blocks
  unsigned long long* next_stamps(int blocks) { return stamps({stamp_label_}, blocks); }
  /// The GEMV kernel of a product (norm: RMSNorm of the residual folded in), one block per SM
  /// under programmatic dependent launch.
  void gemv(GemvParams p, bool norm);
  void attention(int l);
  /// One component by the separate kernels (l: layer, -1 for the LM head and embed), its matrix
  /// products as the plan decided; commit: the token advance records the token.
  void enqueue_component(Component c, int l, bool commit, Products p);
  /// A component's matrix products (QKV, output, gate/up, down, LM head) by the GEMV kernels
  /// (RMSNorm, SwiGLU and residual adds folded in), or by cuBLAS with separate norm/SwiGLU kernels.
  void gemv_products(Component c, int l);
  void cublas_products(Component c, int l);
  /// The decode step by the plan (stamped for the timeline when it advances).
  void enqueue_step(bool advance);
  /// Picks the plan of the prepared shape: the one asked for, or the first of the table of
  /// defaults that can run (decode_plan.hpp); and the plan that runs isolated layers.
  Result<void> choose_plan();
  Result<std::unique_ptr<DecodePlan<T>>> make_plan(PlanKind k, bool by_default);
  std::unique_ptr<DecodePlan<T>> plan_;        ///< runs the decode step
  std::unique_ptr<DecodePlan<T>> layer_owned_;  ///< runs isolated layers where plan_ cannot (the dataflow plan)
  DecodePlan<T>* layer_plan_ = nullptr;
  int run_graph(const std::string& key, int reps, int units_per_body, const std::function<void()>& body);
  T* kcache(int l) const { return kc_ + static_cast<int64_t>(l) * B_ * c_.kv_heads * max_ctx_ * c_.head_dim; }
  T* vcache(int l) const { return vc_ + static_cast<int64_t>(l) * B_ * c_.kv_heads * max_ctx_ * c_.head_dim; }

  LlmConfig c_;
  EngineOptions o_;       ///< the options as given
  DType dt_ = DType::bf16;
  cudaDeviceProp prop_{};
  cudaStream_t st_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::vector<void*> allocs_, run_allocs_;
  std::string err_;

  std::vector<LayerW> lw_;
  T *embed_ = nullptr, *lm_ = nullptr;
  float *final_norm_ = nullptr, *inv_freq_ = nullptr;
  void* blas_ws_ = nullptr;

  // run state
  bool prepared_ = false;
  RunShape shape_;
  int B_ = 0, max_ctx_ = 0, gen_ = 0, nb_ = 1, splits_ = 1, chunk_ = 64, steps_done_ = 0;
  T *kc_ = nullptr, *vc_ = nullptr;
  int *pos_ = nullptr, *step_ = nullptr, *plen_ = nullptr, *hist_ = nullptr;
  unsigned long long* argmax_ = nullptr;
  unsigned* counters_ = nullptr;
  float *part_acc_ = nullptr, *part_ml_ = nullptr;
  float *resid_d_ = nullptr, *logits_ = nullptr, *logits_tmp_ = nullptr;
  T *xn_d_ = nullptr, *qkv_d_ = nullptr, *attn_d_ = nullptr, *gu_d_ = nullptr, *act_d_ = nullptr;
  int chunk_tok_ = 0;
  float *resid_p_ = nullptr, *sbuf_ = nullptr;
  T *xn_p_ = nullptr, *qkv_p_ = nullptr, *attn_p_ = nullptr, *gu_p_ = nullptr, *act_p_ = nullptr, *pbuf_ = nullptr;
  int64_t attn_elems_ = 0;
  int *tok_ids_ = nullptr, *tok_seq_ = nullptr, *tok_pos_ = nullptr, *chunk_seq_ = nullptr, *chunk_last_ = nullptr;
  kern::AttnPtrs ptrs_{};
  std::vector<Chunk> chunks_;
  cudaGraphExec_t step_graph_ = nullptr;
  std::map<std::string, std::pair<cudaGraphExec_t, int>> graphs_;
  std::map<GemvFn, int> gemv_blocks_;
};

}  // namespace
}  // namespace jouleprof::llm
