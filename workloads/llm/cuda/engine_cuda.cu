// The CUDA Llama engine: weights and activations in bf16 or fp16, float accumulation and residual
// stream, cuBLAS for prefill matrix products, own kernels for the rest. Decode runs as one CUDA
// graph per step: at small batch through fused GEMV kernels (RMSNorm folded into the projections
// that follow it, SwiGLU into the gate/up product, residual adds into the output products), at
// larger batch through cuBLAS.
#include <cublas_v2.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>

#include "../host/numeric.hpp"
#include "../host/safetensors.hpp"
#include "../host/weights.hpp"
#include "engine_cuda.hpp"
#include "flow_kernel.cuh"
#include "kernels.cuh"

namespace jouleprof::llm {
namespace {

using kern::AdvanceParams;
using kern::AttnParams;
using kern::GemvParams;

constexpr double kGiB = 1024.0 * 1024 * 1024;

#define JP_CK(call)                                                                                 \
  do {                                                                                              \
    const cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) return make_error(Errc::vendor, std::string(#call) + ": " + cudaGetErrorString(e_)); \
  } while (0)

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

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
int ceil_div(int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); }

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

template <typename T>
class CudaEngine final : public LlmEngine {
 public:
  ~CudaEngine() override { release(); }
  static Result<std::unique_ptr<LlmEngine>> create(const EngineOptions& o, LlmConfig c);

  const LlmConfig& config() const override { return c_; }
  DType dtype() const override { return dt_; }
  std::string device_name() const override { return prop_.name; }
  std::string describe() const override {
    std::string s = fused_ ? "fused GEMV decode (RMSNorm, SwiGLU and residual adds folded in)" : "cuBLAS decode";
    s += o_.graphs ? ", one CUDA graph per step" : ", no graphs";
    if (o_.pdl) s += ", programmatic dependent launch";
    if (fqa_) {
      s += ", QKV projection and attention in one kernel (" + std::to_string(fqa_cluster_) + "-CTA clusters per KV head, " +
           std::to_string(fqa_resident_) + " resident at once, " + std::to_string(fqa_threads_) + " threads, " +
           std::to_string(fqa_stages_) + " ring stages per warp)";
    }
    if (fused_ && o_.gemv_blocks_per_sm > 0) s += ", " + std::to_string(o_.gemv_blocks_per_sm) + " GEMV block(s) per SM";
    if (fused_ && o_.gemv_unroll == 8 && nb_ == 1) s += ", 8 loads in flight per row";
    if (fused_ && o_.gemv_prefetch >= 0) s += ", prefetch " + std::to_string(o_.gemv_prefetch);
    if (fused_ && down_ksplit_ > 1) s += ", down projection " + std::to_string(down_ksplit_) + " warps per row pair";
    if (mega_) s = "persistent decode kernel (one block per SM, grid barriers between phases)";
    if (flow_lm_) s += ", LM head through the dataflow kernel";
    if (flow_mlp_) s += ", each layer's gate/up and down in one launch of the dataflow kernel";
    if (flow_) {
      s = "dataflow persistent decode kernel (one block per SM, weights streamed through a ring of " +
          std::to_string(flow_p_.slots) + " x " + std::to_string(flow_p_.slot_bytes / 1024) +
          " KiB bulk-copy slots, per-product dependency counters";
      if (flow_p_.l2_ahead > 0) s += ", L2 asked " + std::to_string(flow_p_.l2_ahead) + " chunks ahead";
      if (flow_p_.l2_idle > 0) s += ", L2 asked up to " + std::to_string(flow_p_.l2_idle) + " chunks ahead in dependency waits";
      if (flow_p_.attn_ring) {
        s += ", cached K/V through the ring, " + std::to_string(flow_p_.attn_splits) + " split(s) of " +
             std::to_string(flow_p_.attn_span) + " positions per KV head";
        if (flow_p_.kv_prefetch) s += flow_p_.kv_prefetch == 2 ? ", K/V asked of L2 (evict-last)" : ", K/V asked of L2";
      }
      if (flow_p_.bulk_ops) {
        static const char* names[] = {"QKV", "attention", "output", "gate/up", "down"};
        std::string ops;
        for (int op = 0; op < 5; ++op) {
          if ((flow_p_.bulk_ops >> op) & 1) ops += (ops.empty() ? "" : ", ") + std::string(names[op]);
        }
        s += ", rows handed over by bulk stores (" + ops + ")";
      }
      s += ")";
    }
    if (fused_ && o_.prefetch_after_attention) s += ", output projection prefetched during attention";
    if (fused_ && o_.l2_ahead_mb > 0) s += ", L2 prefetch " + std::to_string(o_.l2_ahead_mb) + " MB ahead";
    s += ", attention split in " + std::to_string(splits_) + " part(s) of " + std::to_string(chunk_) + " positions";
    s += flash_ ? ", flash prefill attention" : ", cuBLAS prefill attention";
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
  struct LayerW {
    T *wqkv, *wo, *wgu, *wd;
    float *attn_norm, *mlp_norm;
  };
  using GemvFn = void (*)(GemvParams);

  void fail(const std::string& what) {
    if (err_.empty()) err_ = what;
  }
  void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(e));
  }
  void check_blas(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS) fail(std::string(what) + ": cuBLAS " + blas_str(s));
  }
  /// Top-k sampling over logits_ (no-op when greedy: the argmax is already chosen).
  void sample(bool pdl) {
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
  void prefetch_ahead(const void* a, size_t na, const void* b, size_t nb);
  bool pending_side_ = false;
  void release();
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
  GemvFn gemv_fn(bool norm, int ksplit = 1) const;
  /// --variant fqa: QKV projection + attention as one cluster kernel inside decode steps and layers.
  Result<void> prepare_fqa();
  void qkv_attention(int l);
  using FqaFn = void (*)(kern::QkvAttnParams);
  FqaFn fqa_fn() const {
    const bool wide = fqa_threads_ == 512;
    switch (c_.head_dim) {
      case 32: return wide ? kern::qkv_attn_kernel<T, 32, 512> : kern::qkv_attn_kernel<T, 32, 256>;
      case 64: return wide ? kern::qkv_attn_kernel<T, 64, 512> : kern::qkv_attn_kernel<T, 64, 256>;
      default: return wide ? kern::qkv_attn_kernel<T, 128, 512> : kern::qkv_attn_kernel<T, 128, 256>;
    }
  }
  bool fqa_ = false, in_layer_ = false;
  int fqa_cluster_ = 0, fqa_stages_ = 0, fqa_piece_ = 0, fqa_resident_ = 0, fqa_threads_ = 256;
  int down_ksplit_ = 1;  ///< warps per row pair of the down projection's GEMV (split K)
  size_t fqa_smem_ = 0;
  // Diagnostic timeline: kern::kStampsPerBlock stamps per block for each kernel of a step.
  static constexpr int kStampBlocks = 1024, kStampKernels = 1024;
  unsigned long long* stamps_ = nullptr;
  bool stamping_ = false;
  std::string stamp_label_;
  std::vector<std::pair<std::string, int>> stamp_kernels_;  ///< label, blocks
  unsigned long long* next_stamps(int blocks) {
    if (!stamps_ || !stamping_ || blocks > kStampBlocks || static_cast<int>(stamp_kernels_.size()) >= kStampKernels) return nullptr;
    stamp_kernels_.emplace_back(stamp_label_, blocks);
    return stamps_ + (stamp_kernels_.size() - 1) * kern::kStampsPerBlock * kStampBlocks;
  }
  /// prefetch_all: every warp's first rows go to L2 in full before the wait for the previous
  /// kernel (the whole matrix when each warp has one row pair).
  void gemv(GemvParams p, bool norm, bool prefetch_all = false, int ksplit = 1);
  /// The fused GEMV of a component (l: layer, -1 for the LM head), shared with the persistent kernel.
  GemvParams gemv_params(Component comp, int l) const;
  AttnParams attn_params(int l) const;
  /// --variant mega: the parameters of every phase on the device, and the step as one launch.
  Result<void> prepare_mega();
  void launch_mega();
  using MegaFn = void (*)(kern::MegaParams);
  MegaFn mega_kernel() const {
    switch (c_.head_dim) {
      case 32: return kern::decode_step_kernel<T, 32>;
      case 64: return kern::decode_step_kernel<T, 64>;
      default: return kern::decode_step_kernel<T, 128>;
    }
  }
  bool mega_ = false;
  /// --variant flow: the dataflow persistent decode kernel (flow_kernel.cuh).
  Result<void> prepare_flow();
  /// Products first..last of the step (kern::flow_product, kern::flow_lm_product).
  void launch_flow(int first, int last);
  using FlowFn = void (*)(kern::FlowParams);
  FlowFn flow_kernel() const {
    switch (c_.head_dim) {
      case 32: return kern::flow_decode_kernel<T, 32>;
      case 64: return kern::flow_decode_kernel<T, 64>;
      default: return kern::flow_decode_kernel<T, 128>;
    }
  }
  bool flow_ = false, flow_lm_ = false, flow_mlp_ = false;  ///< the whole step, the LM head, the MLPs
  kern::FlowParams flow_p_{};
  size_t flow_smem_ = 0;
  kern::GemvParams* mega_gemv_ = nullptr;
  kern::AttnParams* mega_attn_ = nullptr;
  unsigned* mega_barrier_ = nullptr;
  void attention(int l);
  void enqueue(Component c, int l, bool commit);
  void enqueue_step(bool advance);
  int run_graph(const std::string& key, int reps, int units_per_body, const std::function<void()>& body);
  T* kcache(int l) const { return kc_ + static_cast<int64_t>(l) * B_ * c_.kv_heads * max_ctx_ * c_.head_dim; }
  T* vcache(int l) const { return vc_ + static_cast<int64_t>(l) * B_ * c_.kv_heads * max_ctx_ * c_.head_dim; }

  LlmConfig c_;
  EngineOptions o_;       ///< the options of the prepared run: asked_ with the defaults for its shape
  EngineOptions asked_;   ///< the options as given
  bool flow_by_default() const;
  Result<void> prepare_flow_kernel();
  DType dt_ = DType::bf16;
  cudaDeviceProp prop_{};
  cudaStream_t st_ = nullptr;
  cudaStream_t side_ = nullptr;      ///< L2 prefetch branch of the decode graph (--variant aheadN)
  cudaEvent_t fork_ = nullptr, join_ = nullptr;
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
  bool fused_ = true, flash_ = true;
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

template <typename T>
void CudaEngine<T>::release_run() {
  if (step_graph_) cudaGraphExecDestroy(step_graph_);
  step_graph_ = nullptr;
  for (auto& [k, g] : graphs_) cudaGraphExecDestroy(g.first);
  graphs_.clear();
  for (void* p : run_allocs_) cudaFree(p);
  run_allocs_.clear();
  prepared_ = false;
}

template <typename T>
void CudaEngine<T>::release() {
  if (st_) cudaStreamSynchronize(st_);
  release_run();
  for (void* p : allocs_) cudaFree(p);
  allocs_.clear();
  if (blas_) cublasDestroy(blas_);
  blas_ = nullptr;
  if (st_) cudaStreamDestroy(st_);
  st_ = nullptr;
  if (side_) cudaStreamDestroy(side_);
  side_ = nullptr;
  if (fork_) cudaEventDestroy(fork_);
  if (join_) cudaEventDestroy(join_);
  fork_ = join_ = nullptr;
}

template <typename T>
Result<std::unique_ptr<LlmEngine>> CudaEngine<T>::create(const EngineOptions& o, LlmConfig c) {
  std::unique_ptr<CudaEngine<T>> e(new CudaEngine<T>());
  e->c_ = std::move(c);
  e->o_ = e->asked_ = o;
  e->dt_ = o.dtype;
  JP_CK(cudaSetDevice(o.device));
  JP_CK(cudaGetDeviceProperties(&e->prop_, o.device));
  {
    cudaFuncAttributes fa{};
    const cudaError_t err = cudaFuncGetAttributes(&fa, kern::argmax_kernel);
    if (err != cudaSuccess) {
      return make_error(Errc::unsupported, std::string("this build's kernels do not run on ") + e->prop_.name + " (compute capability " +
                                               std::to_string(e->prop_.major) + "." + std::to_string(e->prop_.minor) +
                                               "): " + cudaGetErrorString(err) + "; rebuild with CMAKE_CUDA_ARCHITECTURES for it");
    }
  }
  JP_CK(cudaStreamCreateWithFlags(&e->st_, cudaStreamNonBlocking));
  JP_CK(cudaStreamCreateWithFlags(&e->side_, cudaStreamNonBlocking));
  JP_CK(cudaEventCreateWithFlags(&e->fork_, cudaEventDisableTiming));
  JP_CK(cudaEventCreateWithFlags(&e->join_, cudaEventDisableTiming));
  if (cublasCreate(&e->blas_) != CUBLAS_STATUS_SUCCESS) return make_error(Errc::vendor, "cublasCreate failed");
  const size_t ws = 32u << 20;
  if (auto r = e->alloc(&e->blas_ws_, ws, false); !r) return r.error();
  cublasSetStream(e->blas_, e->st_);
  cublasSetWorkspace(e->blas_, e->blas_ws_, ws);

  const LlmConfig& m = e->c_;
  const MemoryPlan plan = plan_memory(m, o.dtype, 1, 1, 0, 0);
  size_t free_b = 0, total_b = 0;
  JP_CK(cudaMemGetInfo(&free_b, &total_b));
  if (plan.weights > static_cast<double>(free_b)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.1f GiB of weights but only %.1f GiB free on %s", plan.weights / kGiB, free_b / kGiB,
                  e->prop_.name);
    return make_error(Errc::unavailable, "model " + m.name + " needs " + buf);
  }
  auto take = [&](void** p, size_t bytes) { return e->alloc(p, bytes, false); };
  const size_t tb = sizeof(T);
  const int64_t hd = m.hidden;
  e->lw_.resize(static_cast<size_t>(m.layers));
  for (auto& L : e->lw_) {
    void* p = nullptr;
    const int64_t n_qkv = int64_t{m.qkv_dim()} * hd, n_o = hd * m.q_dim(), n_gu = 2 * hd * m.intermediate,
                  n_d = hd * m.intermediate;
    if (auto r = take(&p, (n_qkv + n_o + n_gu + n_d) * tb); !r) return r.error();
    L.wqkv = static_cast<T*>(p);
    L.wo = L.wqkv + n_qkv;
    L.wgu = L.wo + n_o;
    L.wd = L.wgu + n_gu;
    if (auto r = take(&p, 2 * hd * sizeof(float)); !r) return r.error();
    L.attn_norm = static_cast<float*>(p);
    L.mlp_norm = L.attn_norm + hd;
  }
  void* p = nullptr;
  if (auto r = take(&p, int64_t{m.vocab} * hd * tb); !r) return r.error();
  e->embed_ = static_cast<T*>(p);
  if (m.tie_embeddings) {
    e->lm_ = e->embed_;
  } else {
    if (auto r = take(&p, int64_t{m.vocab} * hd * tb); !r) return r.error();
    e->lm_ = static_cast<T*>(p);
  }
  if (auto r = take(&p, hd * sizeof(float)); !r) return r.error();
  e->final_norm_ = static_cast<float*>(p);
  std::vector<float> inv;
  for (double f : rope_inv_freq(m)) inv.push_back(static_cast<float>(f));
  if (auto r = take(&p, inv.size() * sizeof(float)); !r) return r.error();
  e->inv_freq_ = static_cast<float*>(p);
  JP_CK(cudaMemcpy(e->inv_freq_, inv.data(), inv.size() * sizeof(float), cudaMemcpyHostToDevice));
  auto w = o.weights_dir.empty() ? e->init_weights() : e->load_weights(o.weights_dir);
  if (!w) return w.error();
  JP_CK(cudaStreamSynchronize(e->st_));
  JP_CK(cudaGetLastError());
  return std::unique_ptr<LlmEngine>(std::move(e));
}

template <typename T>
Result<void> CudaEngine<T>::init_weights() {
  const uint64_t seed = o_.seed;
  const float sd = static_cast<float>(c_.init_std);
  auto fill = [&](T* dst, int64_t n, uint32_t id) {
    kern::fill_random_kernel<T><<<1024, 256, 0, st_>>>(dst, n, seed, id, sd);
  };
  auto fill_norm = [&](float* dst, int n, uint32_t id) { kern::fill_norm_kernel<<<64, 256, 0, st_>>>(dst, n, seed, id); };
  const int64_t h = c_.hidden, q = c_.q_dim(), kv = c_.kv_dim(), in = c_.intermediate;
  for (int l = 0; l < c_.layers; ++l) {
    const LayerW& L = lw_[static_cast<size_t>(l)];
    fill(L.wqkv, q * h, layer_tensor_id(l, lt_q));
    fill(L.wqkv + q * h, kv * h, layer_tensor_id(l, lt_k));
    fill(L.wqkv + (q + kv) * h, kv * h, layer_tensor_id(l, lt_v));
    fill(L.wo, h * q, layer_tensor_id(l, lt_o));
    fill(L.wgu, in * h, layer_tensor_id(l, lt_gate));
    fill(L.wgu + in * h, in * h, layer_tensor_id(l, lt_up));
    fill(L.wd, h * in, layer_tensor_id(l, lt_down));
    fill_norm(L.attn_norm, c_.hidden, layer_tensor_id(l, lt_attn_norm));
    fill_norm(L.mlp_norm, c_.hidden, layer_tensor_id(l, lt_mlp_norm));
  }
  fill(embed_, int64_t{c_.vocab} * h, t_embed);
  if (!c_.tie_embeddings) fill(lm_, int64_t{c_.vocab} * h, t_lm_head);
  fill_norm(final_norm_, c_.hidden, t_final_norm);
  JP_CK(cudaGetLastError());
  return {};
}

template <typename T>
Result<void> CudaEngine<T>::load_weights(const std::string& dir) {
  auto ck = Checkpoint::open_dir(dir);
  if (!ck) return ck.error();
  std::vector<float> host;
  std::vector<uint16_t> bits;
  const int64_t h = c_.hidden, q = c_.q_dim(), kv = c_.kv_dim(), in = c_.intermediate;
  for (const auto& s : tensor_specs(c_)) {
    if (auto r = (*ck)->read_float(s.hf_name, s.shape, host); !r) return r.error();
    void* dst = nullptr;
    if (s.norm) {
      float* nd = s.layer < 0 ? final_norm_
                              : (s.kind == lt_attn_norm ? lw_[static_cast<size_t>(s.layer)].attn_norm
                                                        : lw_[static_cast<size_t>(s.layer)].mlp_norm);
      JP_CK(cudaMemcpy(nd, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
      continue;
    }
    if (s.layer < 0) {
      dst = s.rng_id == t_embed ? embed_ : lm_;
    } else {
      const LayerW& L = lw_[static_cast<size_t>(s.layer)];
      switch (s.kind) {
        case lt_q: dst = L.wqkv; break;
        case lt_k: dst = L.wqkv + q * h; break;
        case lt_v: dst = L.wqkv + (q + kv) * h; break;
        case lt_o: dst = L.wo; break;
        case lt_gate: dst = L.wgu; break;
        case lt_up: dst = L.wgu + in * h; break;
        default: dst = L.wd; break;
      }
    }
    bits.resize(host.size());
    for (size_t i = 0; i < host.size(); ++i) bits[i] = TypeInfo<T>::bits(host[i]);
    JP_CK(cudaMemcpy(dst, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
  }
  return {};
}

template <typename T>
typename CudaEngine<T>::GemvFn CudaEngine<T>::gemv_fn(bool norm, int ksplit) const {
  // Split K is instantiated for the batch-1 products without a norm (the down projection).
  if (ksplit == 2 && nb_ == 1 && o_.gemv_unroll == 8 && !norm) return kern::gemv_kernel<T, 1, false, 8, 2>;
  switch (nb_) {
    case 1:
      if (o_.gemv_unroll == 8) return norm ? kern::gemv_kernel<T, 1, true, 8> : kern::gemv_kernel<T, 1, false, 8>;
      return norm ? kern::gemv_kernel<T, 1, true, 4> : kern::gemv_kernel<T, 1, false, 4>;
    case 2: return norm ? kern::gemv_kernel<T, 2, true, 4> : kern::gemv_kernel<T, 2, false, 4>;
    case 4: return norm ? kern::gemv_kernel<T, 4, true, 2> : kern::gemv_kernel<T, 4, false, 2>;
    default: return norm ? kern::gemv_kernel<T, 8, true, 1> : kern::gemv_kernel<T, 8, false, 1>;
  }
}

template <typename T>
void CudaEngine<T>::gemv(GemvParams p, bool norm, bool prefetch_all, int ksplit) {
  // Split K only where it is instantiated (gemv_fn) and K divides into slices of 8 elements.
  if (gemv_fn(norm, ksplit) == gemv_fn(norm) || p.k % (8 * ksplit) != 0) ksplit = 1;
  GemvFn fn = gemv_fn(norm, ksplit);
  const int slots = kern::kGemvThreads / 32 / ksplit;
  // Early L2 prefetch of the first rows (default 512 elements; -1: none under PDL, where the
  // kernel may start long before its turn and the lines be evicted by the running kernel's stream).
  p.prefetch_elems = prefetch_all ? p.k : o_.gemv_prefetch >= 0 ? o_.gemv_prefetch : (o_.pdl ? 0 : 2048);
  const size_t smem = static_cast<size_t>(nb_) * p.k * sizeof(T);
  int per_sm = gemv_blocks_.count(fn) ? gemv_blocks_[fn] : 1;
  // With programmatic dependent launch, one block per SM leaves room for the next kernel's block.
  if (o_.gemv_blocks_per_sm > 0) {
    per_sm = o_.gemv_blocks_per_sm;
  } else if (o_.pdl) {
    per_sm = 1;
  }
  // (A block on every SM even where half its warps idle, for the 1024-unit output and down
  // products of the 1B model, measured slower: it keeps the next kernel's blocks from starting
  // early, as does capping the gate/up grid; docs/validation/bench-llm.md runs 27-28.)
  const int grid = std::max(1, std::min(prop_.multiProcessorCount * per_sm, ceil_div(p.units, slots)));
  p.stamps = next_stamps(grid);
  launch(fn, dim3(grid), dim3(kern::kGemvThreads), smem, true, p);
}

template <typename T>
Result<void> CudaEngine<T>::prepare_fqa() {
  fqa_ = false;
  if (o_.fused_attention == 0 || !fused_ || B_ != 1) return {};  // batch > 1: the separate kernels
  const bool asked = o_.fused_attention > 0;  // by default it is used only where it can run
  if (prop_.major < 9) {
    if (!asked) return {};
    return make_error(Errc::unsupported, std::string("--variant fqa needs thread block clusters (compute capability 9.0 or newer); ") +
                                             prop_.name + " has " + std::to_string(prop_.major) + "." + std::to_string(prop_.minor));
  }
  const int g = c_.heads / c_.kv_heads, hd = c_.head_dim;
  if (g > kern::kMaxGroup || (hd != 32 && hd != 64 && hd != 128) || c_.hidden % 8 != 0) {
    if (!asked) return {};
    return make_error(Errc::unsupported, "--variant fqa takes head sizes 32, 64 or 128 and at most " +
                                             std::to_string(kern::kMaxGroup) + " query heads per KV head");
  }
  const int R = (g + 2) * hd, K = c_.hidden;
  fqa_piece_ = std::min(kern::kQaPieceMax, K);

  // The largest cluster (16, 8, 4, 2 CTAs) of which all KV heads' clusters can be resident at once,
  // unless one is asked for; 512 threads and 2 ring stages per warp unless asked otherwise.
  // (Since the exchanges became pushes the kernel needs 110 registers, not 250 with spills at 512
  // threads, and on the H100 512 threads with 2 stages beat 256 threads and 3-6 stages for 1B,
  // 3B and 8B: runs 45-47, docs/validation/bench-llm.md. Fewer weights requested before the wait
  // leave HBM to the kernel still running.)
  const std::vector<int> sizes = o_.fused_attention_cluster > 0 ? std::vector<int>{o_.fused_attention_cluster} : std::vector<int>{16, 8, 4, 2};
  for (int cs : sizes) {
    fqa_threads_ = o_.fused_attention_threads > 0 ? o_.fused_attention_threads : 512;
    const int warps = fqa_threads_ / 32;
    FqaFn fn = fqa_fn();
    JP_CK(cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    int stages = o_.fused_attention_stages > 0 ? o_.fused_attention_stages : 2;
    auto smem_of = [&](int st) { return kern::qkv_attn_smem(warps, K, hd, R, fqa_piece_, st, static_cast<int>(sizeof(T))); };
    while (stages > 2 && smem_of(stages) > prop_.sharedMemPerBlockOptin) --stages;
    const size_t smem = smem_of(stages);
    if (smem > prop_.sharedMemPerBlockOptin) continue;
    JP_CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(c_.kv_heads * cs);
    cfg.blockDim = dim3(static_cast<unsigned>(fqa_threads_));
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(cs);
    attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, fn, &cfg) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (clusters >= c_.kv_heads || (o_.fused_attention_cluster > 0 && clusters >= 1)) {
      // By default only while each CTA's share of the context is one shared-memory tile: its
      // tiles are loaded one after another, and beyond that the split kernel was faster (1B at
      // 4k context 1.544 vs 1.502 ms/step, 8B at 1k 6.09 vs 6.01; run 36).
      if (!asked && ceil_div(max_ctx_, cs) > kern::kQaTile) return {};
      fqa_cluster_ = cs;
      fqa_stages_ = stages;
      fqa_smem_ = smem;
      fqa_resident_ = clusters;
      fqa_ = true;
      return {};
    }
  }
  if (!asked) return {};
  return make_error(Errc::unsupported, std::string("--variant fqa: ") + std::to_string(c_.kv_heads) +
                                           " clusters of the fused QKV-attention kernel do not fit on " + prop_.name + " at once");
}

template <typename T>
void CudaEngine<T>::qkv_attention(int l) {
  kern::QkvAttnParams qp{};
  qp.g = gemv_params(Component::attn_qkv, l);
  qp.a = attn_params(l);
  qp.cluster = fqa_cluster_;
  qp.piece = fqa_piece_;
  qp.stages = fqa_stages_;
  qp.pre = o_.fused_attention_pre >= 0 ? o_.fused_attention_pre : fqa_stages_;
  const int grid = c_.kv_heads * fqa_cluster_;
  qp.a.stamps = next_stamps(grid);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(static_cast<unsigned>(fqa_threads_));
  cfg.dynamicSmemBytes = fqa_smem_;
  cfg.stream = st_;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(fqa_cluster_);
  attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = o_.pdl ? 2 : 1;
  check(cudaLaunchKernelEx(&cfg, fqa_fn(), qp), "cudaLaunchKernelEx(qkv_attn_kernel)");
}

template <typename T>
AttnParams CudaEngine<T>::attn_params(int l) const {
  AttnParams a{};
  a.qkv = qkv_d_;
  a.qkv_ld = c_.qkv_dim();
  a.kcache = kcache(l);
  a.vcache = vcache(l);
  a.max_ctx = max_ctx_;
  a.pos = pos_;
  a.inv_freq = inv_freq_;
  a.scale_log2 = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(c_.head_dim)));
  a.heads = c_.heads;
  a.kv_heads = c_.kv_heads;
  a.splits = splits_;
  a.chunk = chunk_;
  a.part_acc = part_acc_;
  a.part_ml = part_ml_;
  a.counters = counters_;
  a.out = attn_d_;
  a.out_ld = c_.q_dim();
  a.early_kv = o_.graphs ? 1 : 0;  // launched one by one, the previous step's advance may still run
  return a;
}

template <typename T>
void CudaEngine<T>::attention(int l) {
  AttnParams a = attn_params(l);
  const dim3 grid(splits_, c_.kv_heads, B_);
  a.stamps = next_stamps(static_cast<int>(grid.x * grid.y * grid.z));
  switch (c_.head_dim) {
    case 32: launch(kern::attn_decode_kernel<T, 32>, grid, dim3(kern::kAttnThreads), 0, true, a); break;
    case 64: launch(kern::attn_decode_kernel<T, 64>, grid, dim3(kern::kAttnThreads), 0, true, a); break;
    default: launch(kern::attn_decode_kernel<T, 128>, grid, dim3(kern::kAttnThreads), 0, true, a); break;
  }
}

template <typename T>
GemvParams CudaEngine<T>::gemv_params(Component comp, int l) const {
  const int H = c_.hidden, I = c_.intermediate, QKV = c_.qkv_dim(), Q = c_.q_dim(), V = c_.vocab;
  const float eps = static_cast<float>(c_.rms_eps);
  const LayerW* L = l >= 0 ? &lw_[static_cast<size_t>(l)] : nullptr;
  GemvParams p{};
  switch (comp) {
    case Component::attn_qkv:
      p.w = L->wqkv; p.units = QKV / 2; p.k = H; p.mode = kern::gemv_store;
      p.resid_in = resid_d_; p.ld_resid_in = H; p.norm_w = L->attn_norm; p.eps = eps;
      p.y = qkv_d_; p.ldy = QKV;
      break;
    case Component::attn_out:
      p.w = L->wo; p.units = H / 2; p.k = Q; p.mode = kern::gemv_add;
      p.x = attn_d_; p.ldx = Q; p.resid = resid_d_; p.ld_resid = H;
      break;
    case Component::mlp_gate_up:
      p.w = L->wgu; p.units = I; p.k = H; p.mode = kern::gemv_swiglu; p.pair_offset = I;
      p.resid_in = resid_d_; p.ld_resid_in = H; p.norm_w = L->mlp_norm; p.eps = eps;
      p.y = act_d_; p.ldy = I;
      break;
    case Component::mlp_down:
      p.w = L->wd; p.units = H / 2; p.k = I; p.mode = kern::gemv_add;
      p.x = act_d_; p.ldx = I; p.resid = resid_d_; p.ld_resid = H;
      break;
    case Component::lm_head:
      p.w = lm_; p.units = V / 2; p.k = H; p.mode = kern::gemv_logits;
      p.resid_in = resid_d_; p.ld_resid_in = H; p.norm_w = final_norm_; p.eps = eps;
      p.y = logits_; p.ldy = V; p.argmax = argmax_;
      break;
    default: break;
  }
  p.b = B_;
  return p;
}

template <typename T>
void CudaEngine<T>::enqueue(Component comp, int l, bool commit) {
  stamp_label_ = std::string(component_name(comp)) + (l >= 0 ? " " + std::to_string(l) : "");
  const int H = c_.hidden, I = c_.intermediate, QKV = c_.qkv_dim(), Q = c_.q_dim(), V = c_.vocab;
  const float eps = static_cast<float>(c_.rms_eps);
  const LayerW* L = l >= 0 ? &lw_[static_cast<size_t>(l)] : nullptr;
  switch (comp) {
    case Component::attn_qkv:
      if (fqa_ && in_layer_) {
        qkv_attention(l);
      } else if (fused_) {
        gemv(gemv_params(comp, l), true);
      } else {
        launch(kern::rmsnorm_kernel<T>, dim3(B_), dim3(256), 0, true, static_cast<const float*>(resid_d_), H,
               static_cast<const int*>(nullptr), static_cast<const float*>(L->attn_norm), eps, xn_d_, H, H);
        gemm(L->wqkv, xn_d_, H, qkv_d_, QKV, B_, QKV, H, false, 0.f);
      }
      break;
    case Component::attn_core:
      if (!(fqa_ && in_layer_)) attention(l);  // fqa: done by the QKV kernel
      break;
    case Component::attn_out:
      if (fused_) {
        gemv(gemv_params(comp, l), false, o_.prefetch_after_attention);
      } else {
        gemm(L->wo, attn_d_, Q, resid_d_, H, B_, H, Q, true, 1.f);
      }
      break;
    case Component::mlp_gate_up:
      if (fused_) {
        gemv(gemv_params(comp, l), true);
      } else {
        launch(kern::rmsnorm_kernel<T>, dim3(B_), dim3(256), 0, true, static_cast<const float*>(resid_d_), H,
               static_cast<const int*>(nullptr), static_cast<const float*>(L->mlp_norm), eps, xn_d_, H, H);
        gemm(L->wgu, xn_d_, H, gu_d_, 2 * I, B_, 2 * I, H, false, 0.f);
        launch(kern::swiglu_kernel<T>, dim3(std::min(1024, ceil_div(int64_t{B_} * I, 256))), dim3(256), 0, true,
               static_cast<const T*>(gu_d_), act_d_, I, int64_t{B_} * I);
      }
      break;
    case Component::mlp_down:
      if (fused_) {
        gemv(gemv_params(comp, l), false, false, down_ksplit_);
      } else {
        gemm(L->wd, act_d_, I, resid_d_, H, B_, H, I, true, 1.f);
      }
      break;
    case Component::lm_head:
      if (flow_lm_) {
        launch_flow(kern::flow_lm_product(c_.layers), kern::flow_lm_product(c_.layers));
        sample(true);
      } else if (fused_) {
        gemv(gemv_params(comp, l), true);
        sample(true);
      } else {
        launch(kern::rmsnorm_kernel<T>, dim3(B_), dim3(256), 0, true, static_cast<const float*>(resid_d_), H,
               static_cast<const int*>(nullptr), static_cast<const float*>(final_norm_), eps, xn_d_, H, H);
        gemm(lm_, xn_d_, H, logits_, V, B_, V, H, true, 0.f);
        launch(kern::argmax_kernel, dim3(B_), dim3(1024), 0, true, static_cast<const float*>(logits_), V,
               static_cast<const int*>(nullptr), argmax_, static_cast<float*>(nullptr));
        sample(true);
      }
      break;
    case Component::embed: {
      AdvanceParams a{argmax_, hist_, gen_ + 1, step_, pos_, embed_, resid_d_, H, commit ? 1 : 0, 1};
      launch(kern::advance_kernel<T>, dim3(B_), dim3(256), 0, true, a);
      break;
    }
    case Component::count: break;
  }
}

template <typename T>
void CudaEngine<T>::prefetch_ahead(const void* a, size_t na, const void* b, size_t nb) {
  check(cudaEventRecord(fork_, st_), "cudaEventRecord");
  check(cudaStreamWaitEvent(side_, fork_, 0), "cudaStreamWaitEvent");
  kern::l2_prefetch_kernel<<<1, 128, 0, side_>>>(static_cast<const char*>(a), na, static_cast<const char*>(b), nb);
  pending_side_ = true;
}

template <typename T>
Result<void> CudaEngine<T>::prepare_mega() {
  if (!fused_ || B_ != 1 || !o_.sampling.greedy()) {
    return make_error(Errc::invalid_argument,
                      "--variant mega (persistent decode kernel) runs batch 1, greedy, through the fused GEMV path");
  }
  const int layers = c_.layers;
  std::vector<GemvParams> g;
  for (int l = 0; l < layers; ++l) {
    for (Component comp : {Component::attn_qkv, Component::attn_out, Component::mlp_gate_up, Component::mlp_down}) {
      g.push_back(gemv_params(comp, l));
    }
  }
  g.push_back(gemv_params(Component::lm_head, -1));
  // Before each barrier every warp asks L2 for the start of its first row pair: at most
  // mega_prefetch_mb per phase (more evicts what the running phase streams), the whole rows by default.
  const int warps = prop_.multiProcessorCount * (kern::kGemvThreads / 32);
  for (GemvParams& p : g) {
    const int64_t pairs = std::min<int64_t>(p.units, warps);
    const int64_t budget = o_.mega_prefetch_mb < 0 ? INT64_MAX : (int64_t{o_.mega_prefetch_mb} << 20) / (pairs * 2 * int64_t{sizeof(T)});
    p.prefetch_elems = static_cast<int>(std::min<int64_t>(p.k, budget));
  }
  std::vector<AttnParams> a;
  for (int l = 0; l < layers; ++l) a.push_back(attn_params(l));
  auto alloc_run = [&](void** ptr, size_t bytes) { return alloc(ptr, bytes, true); };
  void *gp = nullptr, *ap = nullptr, *bp = nullptr;
  if (auto r = alloc_run(&gp, g.size() * sizeof(GemvParams)); !r) return r.error();
  if (auto r = alloc_run(&ap, a.size() * sizeof(AttnParams)); !r) return r.error();
  if (auto r = alloc_run(&bp, 64); !r) return r.error();
  mega_gemv_ = static_cast<GemvParams*>(gp);
  mega_attn_ = static_cast<AttnParams*>(ap);
  mega_barrier_ = static_cast<unsigned*>(bp);
  JP_CK(cudaMemcpy(mega_gemv_, g.data(), g.size() * sizeof(GemvParams), cudaMemcpyHostToDevice));
  JP_CK(cudaMemcpy(mega_attn_, a.data(), a.size() * sizeof(AttnParams), cudaMemcpyHostToDevice));
  JP_CK(cudaMemset(mega_barrier_, 0, 64));
  const size_t smem = static_cast<size_t>(std::max({c_.hidden, c_.q_dim(), c_.intermediate})) * sizeof(T);
  JP_CK(cudaFuncSetAttribute(mega_kernel(), cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  int blocks = 0;
  JP_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, mega_kernel(), kern::kGemvThreads, smem));
  if (blocks < 1) return make_error(Errc::unsupported, "the persistent decode kernel does not fit on an SM of this GPU");
  mega_ = true;
  return {};
}

template <typename T>
void CudaEngine<T>::launch_mega() {
  kern::MegaParams mp{};
  mp.gemv = mega_gemv_;
  mp.attn = mega_attn_;
  mp.advance = AdvanceParams{argmax_, hist_, gen_ + 1, step_, pos_, embed_, resid_d_, c_.hidden, 1, 1};
  mp.layers = c_.layers;
  mp.attn_items = splits_ * c_.kv_heads;
  mp.barrier = mega_barrier_;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(prop_.multiProcessorCount);
  cfg.blockDim = dim3(kern::kGemvThreads);
  cfg.dynamicSmemBytes = static_cast<size_t>(std::max({c_.hidden, c_.q_dim(), c_.intermediate})) * sizeof(T);
  cfg.stream = st_;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeCooperative;  // every block resident at once, or the launch fails
  attr[0].val.cooperative = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  check(cudaLaunchKernelEx(&cfg, mega_kernel(), mp), "cudaLaunchKernelEx(decode_step_kernel)");
}

// Where the dataflow kernel (ring attention, bulk-store hand-overs, 4 ring slots, L2 asked for 4
// chunks in dependency waits) decodes batch 1 unless a variant names the form: where it was
// measured faster than the separate kernels on the H100 without costing more energy per token
// (docs/validation/bench-llm.md, runs 104-111). It saves time at each of a step's 80 product
// boundaries, which weighs most where the products are short: hidden sizes up to 2048
// (Llama-3.2-1B +4% at contexts of 128-512, +10 to +35% at 1k-8k; energy per token +0.9-1.5% at
// prompt 128, within the spread between calls, and -2.6% at 1k). For Llama-3.2-3B and 3.1-8B it is
// slower than the fused QKV-attention kernel at short contexts (3B -5%, 8B even) and faster than
// the separate attention kernels at 1k-4k (+3 to +7%), but there it draws ~50 W more: 8B at 1k
// +3.5% tok/s, +6.5% energy per token. Contexts measured up to kFlowDefaultMaxContext.
template <typename T>
bool CudaEngine<T>::flow_by_default() const {
  return asked_.flow_auto && !asked_.flow && !asked_.flow_lm && !asked_.flow_mlp && !asked_.mega && fused_ && B_ == 1 &&
         prop_.major == 9 && c_.hidden <= 2048 && max_ctx_ <= kern::kFlowDefaultMaxContext;
}

template <typename T>
Result<void> CudaEngine<T>::prepare_flow() {
  const bool by_default = flow_by_default();
  if (by_default) {
    o_.flow = true;
    o_.flow_ring_span = 0;
    o_.flow_bulk_rows = true;
    o_.flow_slots = 4;    // 4 beat 5 (as many as fit) by 0.3-0.7% with bulk hand-overs (runs 97, 100)
    o_.flow_l2_idle = 4;  // +0.8% (4, 8, 16 and 32 alike, run 104)
    // (fqa_, prepared before, is then not launched: the dataflow kernel takes the whole step.)
  }
  auto r = prepare_flow_kernel();
  if (!r && by_default) {  // a model the kernel does not take: the separate kernels, as asked
    o_ = asked_;
    flow_ = flow_lm_ = flow_mlp_ = false;
    return {};
  }
  return r;
}

template <typename T>
Result<void> CudaEngine<T>::prepare_flow_kernel() {
  flow_ = flow_lm_ = flow_mlp_ = false;
  if (!o_.flow && !o_.flow_lm && !o_.flow_mlp) return {};
  if (!fused_ || B_ != 1) {
    return make_error(Errc::invalid_argument,
                      "--variant flow/flowlm/flowmlp (dataflow persistent decode kernel) runs batch 1 through the fused GEMV path");
  }
  if (prop_.major < 9) {
    return make_error(Errc::unsupported, std::string("--variant flow needs bulk copies (compute capability 9.0 or newer); ") +
                                             prop_.name + " is " + std::to_string(prop_.major) + "." +
                                             std::to_string(prop_.minor));
  }
  if (c_.layers > kern::kFlowMaxLayers) {
    return make_error(Errc::unsupported, "--variant flow takes at most " + std::to_string(kern::kFlowMaxLayers) + " layers");
  }
  if (c_.hidden > kern::kFlowMaxHidden) {
    return make_error(Errc::unsupported, "--variant flow takes hidden sizes up to " + std::to_string(kern::kFlowMaxHidden));
  }
  const int slot_bytes = o_.flow_chunk_kb * 1024;
  const int slot_elems = slot_bytes / static_cast<int>(sizeof(T));
  std::string err;
  auto shape = [&](int rows, int k) {
    kern::FlowShape s{rows, k, 1, 1, 0, 1};
    const int fit = slot_elems / k;
    if (fit < 1) {
      err = "--variant flow: a row of " + std::to_string(k) + " elements does not fit a " +
            std::to_string(o_.flow_chunk_kb) + " KiB chunk (flowcN)";
      return s;
    }
    if (fit >= kern::kFlowWarps) {
      s.r = std::min(fit, kern::kFlowMaxRows);  // each warp whole rows
      if (o_.flow_bulk_rows) s.r -= s.r % 8;     // whole 16-byte pieces of rows for the bulk stores
    } else {
      while (s.r * 2 <= fit) s.r *= 2;  // a power of two, so that every row gets the same warps
      s.g = kern::kFlowWarps / s.r;
    }
    s.items = ceil_div(rows, s.r);
    return s;
  };
  kern::FlowParams& P = flow_p_;
  P = kern::FlowParams{};
  const int H = c_.hidden, I = c_.intermediate, Q = c_.q_dim();
  P.qkv = shape(c_.qkv_dim(), H);
  P.out = shape(H, Q);
  P.gu = shape(I, H);
  P.down = shape(H, I);
  P.lm = shape(c_.vocab, H);
  if (!err.empty()) return make_error(Errc::unsupported, err);
  std::vector<kern::FlowLayer> layers;
  for (const LayerW& L : lw_) {
    const size_t i = layers.size();
    AttnParams a = attn_params(static_cast<int>(i));
    a.early_kv = 1;  // the consumers have waited for the previous kernel before any item
    a.stamps = nullptr;
    layers.push_back({L.wqkv, L.wo, L.wgu, L.wd, L.attn_norm, L.mlp_norm, a});
  }
  void *lp = nullptr, *cp = nullptr;
  const size_t counters = static_cast<size_t>(kern::flow_counter_words(c_.layers));
  if (auto r = alloc(&lp, layers.size() * sizeof(kern::FlowLayer), true); !r) return r.error();
  if (auto r = alloc(&cp, counters * sizeof(unsigned), true); !r) return r.error();
  JP_CK(cudaMemcpy(lp, layers.data(), layers.size() * sizeof(kern::FlowLayer), cudaMemcpyHostToDevice));
  JP_CK(cudaMemset(cp, 0, counters * sizeof(unsigned)));
  P.layer = static_cast<const kern::FlowLayer*>(lp);
  P.layers = c_.layers;
  P.lm_w = lm_;
  P.final_norm = final_norm_;
  P.eps = static_cast<float>(c_.rms_eps);
  P.attn_out = attn_d_;
  P.attn_items = splits_ * c_.kv_heads;
  int attn_floats = 0;
  if (o_.flow_ring_span >= 0) {
    const int tpos = slot_elems / c_.head_dim;
    if (tpos < 1) return make_error(Errc::unsupported, "--variant flowr: a cached row does not fit a chunk");
    if (c_.heads / c_.kv_heads > kern::kFlowRingGroup) {
      return make_error(Errc::unsupported, "--variant flowr takes at most " + std::to_string(kern::kFlowRingGroup) +
                                               " query heads per KV head");
    }
    // By default the separate kernels' splits (64 positions each up to 2 x 132 items): measured on
    // the H100 (bench-llm.md runs 78-79), one split per KV head of 384 positions made 1B decode ~3.5%
    // slower than six of 64, whose items run on six times as many SMs. No more splits than the
    // partials buffers hold (splits_ per head).
    // And by default no more items than SMs: with more, some blocks take two items one after the
    // other (1B at prompt 1024: 160 items on 132 SMs, 8% slower than the separate kernels; run 104).
    const int per_head = std::max(1, prop_.multiProcessorCount / c_.kv_heads);
    int span = o_.flow_ring_span > 0 ? o_.flow_ring_span : std::max(chunk_, ceil_div(max_ctx_, per_head));
    span = std::max(span, ceil_div(max_ctx_, splits_));
    P.attn_ring = 1;
    P.attn_span = span;
    P.attn_splits = ceil_div(max_ctx_, span);
    P.attn_items = P.attn_splits * c_.kv_heads;
    P.kv_prefetch = o_.flow_kv_prefetch;
    attn_floats = kern::flow_attn_floats(c_.head_dim, tpos);
    P.attn_floats = attn_floats;
  }
  P.resid = resid_d_;
  P.qkv_y = qkv_d_;
  P.act = act_d_;
  P.logits = logits_;
  P.argmax = argmax_;
  P.counters = static_cast<unsigned*>(cp);
  P.slot_bytes = slot_bytes;
  P.l2_ahead = o_.flow_l2_ahead;
  P.l2_idle = o_.flow_l2_idle;
  P.poll_ns = o_.flow_poll_ns;
  if (o_.flow_bulk_rows) {
    // Bulk stores move whole 16-byte pieces: an item's rows must be such. Where a chunk's rows
    // are not (1B's down projection: 2 rows of 4 bytes), an item takes as many chunks of
    // consecutive rows as make them so; products that still do not fit keep the release add.
    const int nblk = prop_.multiProcessorCount;
    auto eligible = [&](kern::FlowShape& s, int esz, int op) {
      int c = 1;
      while ((s.r * c * esz) % 16 != 0) c *= 2;
      if (c > 1 && (s.rows % (s.r * c) != 0 || s.r * c > kern::kFlowMaxRows)) return;
      if (((s.rows % (s.r * c)) * esz) % 16 != 0) return;
      s.c = c;
      s.items = ceil_div(s.rows, s.r * c);
      P.bulk_ops |= 1 << op;
      P.bulk_bytes = std::max(P.bulk_bytes, ceil_div(s.items, nblk) * s.r * c * esz);
    };
    eligible(P.qkv, sizeof(T), kern::flow_qkv);
    eligible(P.out, sizeof(float), kern::flow_out);
    eligible(P.gu, sizeof(T), kern::flow_gate_up);
    eligible(P.down, sizeof(float), kern::flow_down);
    if (P.attn_ring) {  // ring attention items stage their records and rows themselves
      const int g = c_.heads / c_.kv_heads;
      P.bulk_ops |= 1 << kern::flow_attn;
      P.attn_last_combines = o_.flow_last_combines ? 1 : 0;
      P.attn_stage = kern::flow_attn_record(g, c_.head_dim) * 4 + (g * c_.head_dim * static_cast<int>(sizeof(T)) + 15) / 16 * 16;
      P.bulk_bytes = std::max(P.bulk_bytes, ceil_div(P.attn_items, nblk) * P.attn_stage);
      void* ap = nullptr;
      const size_t n = static_cast<size_t>(P.attn_items) * kern::flow_attn_record(g, c_.head_dim);
      if (auto r = alloc(&ap, n * sizeof(float), true); !r) return r.error();
      P.attn_part = static_cast<float*>(ap);
    }
  }
  // Ring slots: as many as shared memory holds beside the kernel's static arrays (attention's).
  cudaFuncAttributes fa{};
  JP_CK(cudaFuncGetAttributes(&fa, flow_kernel()));
  const int kmax = std::max({H, Q, I});
  const size_t avail = prop_.sharedMemPerBlockOptin - fa.sharedSizeBytes;
  int slots = o_.flow_slots;
  if (slots == 0) {
    slots = 2;
    while (slots < 32 &&
           kern::flow_smem(slots + 1, slot_bytes, kmax, sizeof(T), attn_floats, P.bulk_bytes).bytes <= avail) {
      ++slots;
    }
  }
  flow_smem_ = kern::flow_smem(slots, slot_bytes, kmax, sizeof(T), attn_floats, P.bulk_bytes).bytes;
  if (flow_smem_ > avail) {
    return make_error(Errc::unsupported, "--variant flow: " + std::to_string(slots) + " slots of " +
                                             std::to_string(o_.flow_chunk_kb) + " KiB need " + std::to_string(flow_smem_) +
                                             " bytes of shared memory per block; this GPU has " + std::to_string(avail));
  }
  P.slots = slots;
  JP_CK(cudaFuncSetAttribute(flow_kernel(), cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(flow_smem_)));
  int blocks = 0;
  JP_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, flow_kernel(), kern::kFlowThreads, flow_smem_));
  if (blocks < 1) return make_error(Errc::unsupported, "the dataflow decode kernel does not fit on an SM of this GPU");
  flow_ = o_.flow;
  flow_lm_ = o_.flow_lm && !flow_;
  flow_mlp_ = o_.flow_mlp && !flow_;
  return {};
}

template <typename T>
void CudaEngine<T>::launch_flow(int first, int last) {
  kern::FlowParams p = flow_p_;
  p.first = first;
  p.last = last;
  if (first != 0 || last != kern::flow_lm_product(c_.layers)) p.stamps = nullptr;  // the timeline is of whole-step launches
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(prop_.multiProcessorCount);  // one block per SM
  cfg.blockDim = dim3(kern::kFlowThreads);
  cfg.dynamicSmemBytes = flow_smem_;
  cfg.stream = st_;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeCooperative;  // blocks wait for each other: all resident, or the launch fails
  attr[0].val.cooperative = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = o_.pdl ? 2 : 1;
  check(cudaLaunchKernelEx(&cfg, flow_kernel(), p), "cudaLaunchKernelEx(flow_decode_kernel)");
}

template <typename T>
void CudaEngine<T>::enqueue_step(bool advance) {
  if (mega_ && advance) return launch_mega();
  if (flow_) {
    stamp_kernels_.clear();
    flow_p_.stamps = nullptr;
    if (advance && stamps_ && prop_.multiProcessorCount <= kStampBlocks) {  // the timeline: one entry per product
      flow_p_.stamps = stamps_;
      flow_p_.stamp_blocks = kStampBlocks;
      for (int l = 0; l < c_.layers; ++l) {
        for (Component comp : kLayerComponents) {
          stamp_kernels_.emplace_back(std::string(component_name(comp)) + " " + std::to_string(l), prop_.multiProcessorCount);
        }
      }
      stamp_kernels_.emplace_back(component_name(Component::lm_head), prop_.multiProcessorCount);
      for (const char* w : {"wait-full-slot", "wait-dependency", "wait-empty-slot", "wait-ring-rows", "wait-ring-chunks",
                            "wait-ring-output", "wait-ring-slot"}) {
        stamp_kernels_.emplace_back(w, prop_.multiProcessorCount);
      }
    }
    launch_flow(0, kern::flow_lm_product(c_.layers));
    sample(true);
    if (advance) enqueue(Component::embed, -1, true);
    return;
  }
  stamping_ = advance;
  in_layer_ = true;
  stamp_kernels_.clear();
  // --variant aheadN: while the latency-bound attention core runs, a side branch asks L2 to fetch
  // the output projection and the first N MB of the gate/up matrix; while the down projection
  // streams, the first N MB of the next layer's QKV matrix (or of the LM head).
  const size_t ahead = static_cast<size_t>(o_.l2_ahead_mb) << 20;
  const size_t tb = sizeof(T);
  const int H = c_.hidden, I = c_.intermediate, QKV = c_.qkv_dim(), Q = c_.q_dim();
  for (int l = 0; l < c_.layers; ++l) {
    const LayerW& L = lw_[static_cast<size_t>(l)];
    for (Component comp : kLayerComponents) {
      if (fused_ && ahead > 0 && comp == Component::attn_core) {
        prefetch_ahead(L.wo, size_t{1} * H * Q * tb, L.wgu, std::min(ahead, size_t{2} * I * H * tb));
      }
      if (fused_ && ahead > 0 && comp == Component::mlp_down) {
        const bool last = l + 1 == c_.layers;
        const void* next = last ? static_cast<const void*>(lm_) : static_cast<const void*>(lw_[static_cast<size_t>(l) + 1].wqkv);
        const size_t next_bytes = last ? size_t{1} * c_.vocab * H * tb : size_t{1} * QKV * H * tb;
        prefetch_ahead(next, std::min(ahead, next_bytes), nullptr, 0);
      }
      if (flow_mlp_ && comp == Component::mlp_gate_up) {
        launch_flow(kern::flow_product(l, kern::flow_gate_up), kern::flow_product(l, kern::flow_down));
        continue;
      }
      if (flow_mlp_ && comp == Component::mlp_down) continue;
      enqueue(comp, l, true);
    }
  }
  in_layer_ = false;
  enqueue(Component::lm_head, -1, true);
  if (advance) enqueue(Component::embed, -1, true);
  stamping_ = false;
  if (pending_side_) {  // the branch rejoins the step, so a captured graph has one sink
    check(cudaEventRecord(join_, side_), "cudaEventRecord");
    check(cudaStreamWaitEvent(st_, join_, 0), "cudaStreamWaitEvent");
    pending_side_ = false;
  }
}

template <typename T>
Result<void> CudaEngine<T>::prepare(const RunShape& s) {
  if (!err_.empty()) return status();
  check(cudaStreamSynchronize(st_), "cudaStreamSynchronize");
  release_run();
  o_ = asked_;  // defaults that depend on the shape are chosen anew (prepare_flow)
  shape_ = s;
  B_ = s.batch;
  gen_ = std::max(1, s.gen);
  if (B_ < 1 || static_cast<int>(s.prompt_lens.size()) != B_) return make_error(Errc::invalid_argument, "one prompt length per sequence needed");
  for (int len : s.prompt_lens) {
    if (len < 1) return make_error(Errc::invalid_argument, "prompt lengths must be at least 1");
  }
  max_ctx_ = static_cast<int>(round_up(s.max_context(), 64));
  if (s.max_context() > c_.max_position) {
    return make_error(Errc::invalid_argument, "context " + std::to_string(s.max_context()) + " exceeds the model's " +
                                                  std::to_string(c_.max_position) + " positions");
  }
  const int H = c_.hidden, I = c_.intermediate, QKV = c_.qkv_dim(), Q = c_.q_dim(), V = c_.vocab;
  const int kmax = std::max({H, Q, I});
  // Decode path.
  nb_ = B_ <= 1 ? 1 : B_ <= 2 ? 2 : B_ <= 4 ? 4 : 8;
  const bool fits = B_ <= 8 && static_cast<size_t>(nb_) * kmax * sizeof(T) <= 200u * 1024;
  // Measured on H100 (docs/validation/bench-llm.md): at batch 8 cuBLAS beats the fused GEMV.
  const bool fused_pays = B_ <= o_.fused_max_batch;
  if (o_.decode_path == "fused" && !fits) {
    return make_error(Errc::invalid_argument, "the fused decode path takes at most 8 sequences and " +
                                                  std::to_string(200 * 1024 / (kmax * sizeof(T))) + " for this model; use --decode-path gemm");
  }
  fused_ = o_.decode_path == "fused" || (o_.decode_path == "auto" && fits && fused_pays);
  // Attention splits: enough blocks to fill the GPU twice over, at least 64 positions each.
  const int target = std::max(1, ceil_div(2 * prop_.multiProcessorCount, int64_t{B_} * c_.kv_heads));
  chunk_ = o_.attn_chunk > 0 ? static_cast<int>(round_up(o_.attn_chunk, 64))
                            : static_cast<int>(std::max<int64_t>(64, round_up(ceil_div(max_ctx_, target), 64)));
  splits_ = ceil_div(max_ctx_, chunk_);

  if (o_.prefill_attention != "flash" && o_.prefill_attention != "cublas") {
    return make_error(Errc::invalid_argument, "prefill attention is flash or cublas, not " + o_.prefill_attention);
  }
  flash_ = o_.prefill_attention == "flash";
  // Prefill chunks: sequences grouped by prompt length, at most chunk_tokens tokens per pass.
  chunks_.clear();
  std::map<int, std::vector<int>> by_len;
  for (int b = 0; b < B_; ++b) by_len[s.prompt_lens[static_cast<size_t>(b)]].push_back(b);
  const int ct = std::max(1, o_.chunk_tokens);
  std::vector<int> tok_ids, tok_seq, tok_pos, chunk_seq, chunk_last;
  int max_chunk_tok = 1;
  int64_t attn_need = 0;
  for (const auto& [len, seqs] : by_len) {
    const int per = len <= ct ? std::max(1, std::min<int>(static_cast<int>(seqs.size()), ct / len)) : 1;
    const int plen = std::min(len, ct);
    for (size_t s0 = 0; s0 < seqs.size(); s0 += static_cast<size_t>(per)) {
      const std::vector<int> group(seqs.begin() + static_cast<long>(s0),
                                   seqs.begin() + static_cast<long>(std::min(seqs.size(), s0 + static_cast<size_t>(per))));
      for (int p0 = 0; p0 < len; p0 += plen) {
        Chunk ch;
        ch.seqs = group;
        ch.p0 = p0;
        ch.len = std::min(plen, len - p0);
        ch.last = p0 + ch.len == len;
        ch.tok_off = static_cast<int>(tok_ids.size());
        ch.seq_off = static_cast<int>(chunk_seq.size());
        for (size_t gi = 0; gi < group.size(); ++gi) {
          const int b = group[gi];
          for (int j = 0; j < ch.len; ++j) {
            const auto& pt = s.prompt_tokens.empty() ? std::vector<int>() : s.prompt_tokens[static_cast<size_t>(b)];
            tok_ids.push_back(pt.empty() ? 0 : pt[static_cast<size_t>(p0 + j)]);
            tok_seq.push_back(b);
            tok_pos.push_back(p0 + j);
          }
          chunk_seq.push_back(b);
          chunk_last.push_back(static_cast<int>(gi) * ch.len + ch.len - 1);
        }
        const int64_t n = static_cast<int64_t>(group.size()) * c_.heads;
        const int64_t kv_max = p0 + ch.len;
        const int64_t budget_elems = static_cast<int64_t>(o_.attn_budget_bytes / 6);
        int64_t q = budget_elems / std::max<int64_t>(1, n * kv_max);
        q = std::min<int64_t>(ch.len, std::max<int64_t>(16, q / 16 * 16));
        ch.qrows = static_cast<int>(q);
        if (!flash_) attn_need = std::max(attn_need, n * q * kv_max);
        max_chunk_tok = std::max(max_chunk_tok, static_cast<int>(group.size()) * ch.len);
        chunks_.push_back(std::move(ch));
      }
    }
  }
  chunk_tok_ = max_chunk_tok;
  attn_elems_ = attn_need;

  // Memory.
  const MemoryPlan plan = plan_memory(c_, dt_, B_, max_ctx_, chunk_tok_, static_cast<double>(attn_elems_) * 6);
  size_t free_b = 0, total_b = 0;
  JP_CK(cudaMemGetInfo(&free_b, &total_b));
  const double need = plan.kv_cache + plan.activations;
  if (need > static_cast<double>(free_b) * 0.97) {
    char buf[300];
    std::snprintf(buf, sizeof buf,
                  "batch %d x context %d does not fit: it needs %.1f GiB more (KV cache %.1f, activations %.1f) "
                  "and %.1f GiB are free after the weights (%.1f GiB); whole run: %s",
                  B_, s.max_context(), need / kGiB, plan.kv_cache / kGiB, plan.activations / kGiB, free_b / kGiB,
                  plan.weights / kGiB, plan.describe().c_str());
    return make_error(Errc::unavailable, buf);
  }
  auto get = [&](auto** ptr, size_t bytes) -> Result<void> {
    void* v = nullptr;
    if (auto r = alloc(&v, bytes, true); !r) return r.error();
    *ptr = static_cast<std::remove_reference_t<decltype(*ptr)>>(v);
    return {};
  };
  const size_t tb = sizeof(T);
  const int64_t cache_elems = int64_t{c_.layers} * B_ * c_.kv_heads * max_ctx_ * c_.head_dim;
  auto all_ok = [&](std::initializer_list<Result<void>> rs) -> Result<void> {
    for (const auto& x : rs) {
      if (!x) return x.error();
    }
    return {};
  };
  auto r = all_ok({get(&kc_, cache_elems * tb), get(&vc_, cache_elems * tb), get(&pos_, B_ * 4), get(&step_, B_ * 4),
              get(&plen_, B_ * 4), get(&hist_, static_cast<size_t>(B_) * (gen_ + 1) * 4), get(&argmax_, B_ * 8),
              get(&counters_, static_cast<size_t>(B_) * c_.kv_heads * 4),
              get(&part_acc_, static_cast<size_t>(B_) * c_.heads * splits_ * c_.head_dim * 4),
              get(&part_ml_, static_cast<size_t>(B_) * c_.heads * splits_ * 2 * 4),
              get(&resid_d_, static_cast<size_t>(B_) * H * 4), get(&logits_, static_cast<size_t>(B_) * V * 4),
              get(&logits_tmp_, static_cast<size_t>(B_) * V * 4), get(&xn_d_, static_cast<size_t>(B_) * H * tb),
              get(&qkv_d_, static_cast<size_t>(B_) * QKV * tb), get(&attn_d_, static_cast<size_t>(B_) * Q * tb),
              get(&gu_d_, static_cast<size_t>(B_) * 2 * I * tb), get(&act_d_, static_cast<size_t>(B_) * I * tb)});
  if (!r) return r.error();
  if (!o_.sampling.greedy()) {
    // Top-k shards: about 2k logits each, as many as the picking block can hold k candidates of.
    const int k = std::min(o_.sampling.top_k, V);
    const int max_shards = std::max(1, kern::kMaxCandidates / k);
    shards_ = std::clamp(ceil_div(V, 2048), 1, max_shards);
    shard_len_ = static_cast<int>(round_up(ceil_div(V, shards_), 8));
    if (shard_len_ > kern::kMaxShardLen) {
      return make_error(Errc::invalid_argument, "top-k " + std::to_string(k) + " over a vocabulary of " + std::to_string(V) +
                                                    " needs shards of " + std::to_string(shard_len_) + " logits (at most " +
                                                    std::to_string(kern::kMaxShardLen) + "); use a smaller --top-k");
    }
    const size_t slots = static_cast<size_t>(B_) * shards_ * k;
    auto rs = all_ok({get(&cand_key_, slots * 4), get(&cand_idx_, slots * 4), get(&cand_n_, static_cast<size_t>(B_) * shards_ * 4)});
    if (!rs) return rs.error();
    JP_CK(cudaFuncSetAttribute(kern::topk_pick_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(pick_smem())));
  }
  const size_t ct_s = static_cast<size_t>(chunk_tok_);
  auto r2 = all_ok({get(&resid_p_, ct_s * H * 4), get(&xn_p_, ct_s * H * tb), get(&qkv_p_, ct_s * QKV * tb),
              get(&attn_p_, ct_s * Q * tb), get(&gu_p_, ct_s * 2 * I * tb), get(&act_p_, ct_s * I * tb),
              get(&sbuf_, static_cast<size_t>(attn_elems_) * 4), get(&pbuf_, static_cast<size_t>(attn_elems_) * tb),
              get(&tok_ids_, tok_ids.size() * 4), get(&tok_seq_, tok_seq.size() * 4), get(&tok_pos_, tok_pos.size() * 4),
              get(&chunk_seq_, chunk_seq.size() * 4), get(&chunk_last_, chunk_last.size() * 4)});
  if (!r2) return r2.error();
  void* pa = nullptr;
  const size_t np = static_cast<size_t>(B_) * c_.heads;
  if (auto x = alloc(&pa, 6 * np * sizeof(void*), true); !x) return x.error();
  void** pp = static_cast<void**>(pa);
  ptrs_ = kern::AttnPtrs{const_cast<const void**>(pp), const_cast<const void**>(pp + np), pp + 2 * np,
                         const_cast<const void**>(pp + 3 * np), const_cast<const void**>(pp + 4 * np), pp + 5 * np};

  // Prompt tokens: explicit, else seeded random ids.
  if (!s.prompt_tokens.empty()) {
    for (int b = 0; b < B_; ++b) {
      const auto& pt = s.prompt_tokens[static_cast<size_t>(b)];
      if (static_cast<int>(pt.size()) != s.prompt_lens[static_cast<size_t>(b)]) {
        return make_error(Errc::invalid_argument, "prompt tokens and lengths disagree");
      }
      for (int t : pt) {
        if (t < 0 || t >= V) return make_error(Errc::invalid_argument, "token id " + std::to_string(t) + " outside the vocabulary");
      }
    }
  } else {
    for (size_t i = 0; i < tok_ids.size(); ++i) {
      tok_ids[i] = prompt_token(c_, s.seed, tok_seq[i], tok_pos[i]);
    }
  }
  JP_CK(cudaMemcpy(tok_ids_, tok_ids.data(), tok_ids.size() * 4, cudaMemcpyHostToDevice));
  JP_CK(cudaMemcpy(tok_seq_, tok_seq.data(), tok_seq.size() * 4, cudaMemcpyHostToDevice));
  JP_CK(cudaMemcpy(tok_pos_, tok_pos.data(), tok_pos.size() * 4, cudaMemcpyHostToDevice));
  JP_CK(cudaMemcpy(chunk_seq_, chunk_seq.data(), chunk_seq.size() * 4, cudaMemcpyHostToDevice));
  JP_CK(cudaMemcpy(chunk_last_, chunk_last.data(), chunk_last.size() * 4, cudaMemcpyHostToDevice));
  JP_CK(cudaMemcpy(plen_, s.prompt_lens.data(), B_ * 4, cudaMemcpyHostToDevice));
  JP_CK(cudaMemset(counters_, 0, static_cast<size_t>(B_) * c_.kv_heads * 4));
  JP_CK(cudaMemset(argmax_, 0, B_ * 8));
  JP_CK(cudaMemset(hist_, 0, static_cast<size_t>(B_) * (gen_ + 1) * 4));
  JP_CK(cudaMemset(step_, 0, B_ * 4));
  JP_CK(cudaMemcpy(pos_, s.prompt_lens.data(), B_ * 4, cudaMemcpyHostToDevice));

  JP_CK(cudaFuncSetAttribute(kern::flash_prefill_kernel<T, 32>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kern::flash_smem_bytes<32>())));
  JP_CK(cudaFuncSetAttribute(kern::flash_prefill_kernel<T, 64>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kern::flash_smem_bytes<64>())));
  JP_CK(cudaFuncSetAttribute(kern::flash_prefill_kernel<T, 128>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kern::flash_smem_bytes<128>())));
  // Split K for the down projection only when asked (ksd2): for 1B it makes the product itself
  // 14.5 -> 11.1 us, but its 128 blocks leave no SM for the next fused QKV-attention kernel to
  // start on early, and the step gained -0.3 to +0.8% (runs 48-51); 8B 1.4% slower.
  down_ksplit_ = o_.gemv_ksplit_down == 2 ? 2 : 1;
  if (fused_) {
    for (GemvFn fn : {gemv_fn(false), gemv_fn(true), gemv_fn(false, 2)}) {
      const int smem = nb_ * kmax * static_cast<int>(tb);
      JP_CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      int blocks = 1;
      JP_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, kern::kGemvThreads, static_cast<size_t>(nb_) * H * tb));
      gemv_blocks_[fn] = std::max(1, blocks);
    }
  }
  if (auto r = prepare_fqa(); !r) return r.error();
  stamps_ = nullptr;
  if (o_.timeline) {
    void* sp = nullptr;
    const size_t bytes = size_t{kStampKernels} * kern::kStampsPerBlock * kStampBlocks * sizeof(unsigned long long);
    if (auto r = alloc(&sp, bytes, true); !r) return r.error();
    JP_CK(cudaMemset(sp, 0, bytes));
    stamps_ = static_cast<unsigned long long*>(sp);
  }
  mega_ = false;
  if (o_.mega) {
    if (auto r = prepare_mega(); !r) return r.error();
  }
  if (auto r = prepare_flow(); !r) return r.error();
  if (o_.graphs) {
    cudaGraph_t g = nullptr;
    JP_CK(cudaStreamBeginCapture(st_, cudaStreamCaptureModeThreadLocal));
    enqueue_step(true);
    JP_CK(cudaStreamEndCapture(st_, &g));
    if (!err_.empty()) return status();
    const cudaError_t ie = cudaGraphInstantiate(&step_graph_, g, 0);
    cudaGraphDestroy(g);
    JP_CK(ie);
  }
  JP_CK(cudaStreamSynchronize(st_));
  prepared_ = true;
  return status();
}

template <typename T>
void CudaEngine<T>::prefill() {
  if (!prepared_) return fail("prefill before prepare");
  const int H = c_.hidden, I = c_.intermediate, QKV = c_.qkv_dim(), Q = c_.q_dim(), V = c_.vocab, hd = c_.head_dim;
  const float eps = static_cast<float>(c_.rms_eps);
  const float scale_log2 = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(hd)));
  steps_done_ = 0;
  check(cudaMemcpyAsync(pos_, plen_, B_ * 4, cudaMemcpyDeviceToDevice, st_), "cudaMemcpyAsync");
  check(cudaMemsetAsync(step_, 0, B_ * 4, st_), "cudaMemsetAsync");
  for (const Chunk& ch : chunks_) {
    const int ns = static_cast<int>(ch.seqs.size());
    const int ntok = ns * ch.len;
    kern::embed_kernel<T><<<ntok, 256, 0, st_>>>(tok_ids_ + ch.tok_off, embed_, resid_p_, H);
    for (int l = 0; l < c_.layers; ++l) {
      const LayerW& L = lw_[static_cast<size_t>(l)];
      kern::rmsnorm_kernel<T><<<ntok, 256, 0, st_>>>(resid_p_, H, nullptr, L.attn_norm, eps, xn_p_, H, H);
      gemm(L.wqkv, xn_p_, H, qkv_p_, QKV, ntok, QKV, H, false, 0.f);
      kern::rope_store_kernel<T><<<ntok, 128, 0, st_>>>(qkv_p_, QKV, tok_seq_ + ch.tok_off, tok_pos_ + ch.tok_off, kcache(l),
                                                         vcache(l), max_ctx_, inv_freq_, c_.heads, c_.kv_heads, hd);
      const int n = ns * c_.heads;
      if (flash_) {
        kern::FlashParams fp{qkv_p_, QKV, kcache(l), vcache(l), max_ctx_, chunk_seq_ + ch.seq_off, ch.len, ch.p0,
                             c_.heads, c_.kv_heads, scale_log2, attn_p_, Q};
        const dim3 grid(ceil_div(ch.len, kern::kFlashRows), c_.heads, ns);
        switch (hd) {
          case 32: kern::flash_prefill_kernel<T, 32><<<grid, 128, kern::flash_smem_bytes<32>(), st_>>>(fp); break;
          case 64: kern::flash_prefill_kernel<T, 64><<<grid, 128, kern::flash_smem_bytes<64>(), st_>>>(fp); break;
          default: kern::flash_prefill_kernel<T, 128><<<grid, 128, kern::flash_smem_bytes<128>(), st_>>>(fp); break;
        }
      }
      for (int qoff = 0; !flash_ && qoff < ch.len; qoff += ch.qrows) {
        const int rows = std::min(ch.qrows, ch.len - qoff);
        const int kv_len = ch.p0 + qoff + rows;
        kern::build_ptrs_kernel<T><<<ceil_div(n, 128), 128, 0, st_>>>(
            ptrs_, chunk_seq_ + ch.seq_off, ns, c_.heads, c_.kv_heads, hd, kcache(l), vcache(l), max_ctx_, qkv_p_, QKV,
            ch.len, qoff, sbuf_, pbuf_, int64_t{rows} * kv_len, attn_p_, Q);
        const float one = 1.f, zero = 0.f;
        check_blas(cublasGemmBatchedEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, kv_len, rows, hd, &one, ptrs_.qk_a,
                                       TypeInfo<T>::cuda, hd, ptrs_.qk_b, TypeInfo<T>::cuda, QKV, &zero, ptrs_.qk_c,
                                       CUDA_R_32F, kv_len, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmBatchedEx(QK)");
        const int64_t warps = int64_t{rows} * n;
        kern::softmax_causal_kernel<T><<<ceil_div(warps * 32, 256), 256, 0, st_>>>(sbuf_, pbuf_, rows, kv_len,
                                                                                    ch.p0 + qoff, scale_log2, n);
        check_blas(cublasGemmBatchedEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, hd, rows, kv_len, &one, ptrs_.pv_a,
                                       TypeInfo<T>::cuda, hd, ptrs_.pv_b, TypeInfo<T>::cuda, kv_len, &zero, ptrs_.pv_c,
                                       TypeInfo<T>::cuda, Q, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmBatchedEx(PV)");
      }
      gemm(L.wo, attn_p_, Q, resid_p_, H, ntok, H, Q, true, 1.f);
      kern::rmsnorm_kernel<T><<<ntok, 256, 0, st_>>>(resid_p_, H, nullptr, L.mlp_norm, eps, xn_p_, H, H);
      gemm(L.wgu, xn_p_, H, gu_p_, 2 * I, ntok, 2 * I, H, false, 0.f);
      kern::swiglu_kernel<T><<<std::min(4096, ceil_div(int64_t{ntok} * I, 256)), 256, 0, st_>>>(gu_p_, act_p_, I,
                                                                                                int64_t{ntok} * I);
      gemm(L.wd, act_p_, I, resid_p_, H, ntok, H, I, true, 1.f);
    }
    if (ch.last) {
      kern::rmsnorm_kernel<T><<<ns, 256, 0, st_>>>(resid_p_, H, chunk_last_ + ch.seq_off, final_norm_, eps, xn_p_, H, H);
      gemm(lm_, xn_p_, H, logits_tmp_, V, ns, V, H, true, 0.f);
      kern::argmax_kernel<<<ns, 1024, 0, st_>>>(logits_tmp_, V, chunk_seq_ + ch.seq_off, argmax_, logits_);
    }
  }
  sample(false);
  AdvanceParams a{argmax_, hist_, gen_ + 1, step_, pos_, embed_, resid_d_, H, 1, 0};
  kern::advance_kernel<T><<<B_, 256, 0, st_>>>(a);
  check(cudaGetLastError(), "prefill launch");
}

template <typename T>
void CudaEngine<T>::decode(int steps) {
  if (!prepared_) return fail("decode before prepare");
  if (steps_done_ + steps > gen_ - 1) return fail("more decode steps than --gen allows since the last prefill/rewind");
  steps_done_ += steps;
  for (int i = 0; i < steps; ++i) {
    if (step_graph_) {
      check(cudaGraphLaunch(step_graph_, st_), "cudaGraphLaunch");
    } else {
      enqueue_step(true);
    }
  }
}

template <typename T>
std::vector<KernelSpan> CudaEngine<T>::timeline() {
  std::vector<KernelSpan> out;
  if (!stamps_ || stamp_kernels_.empty()) return out;
  constexpr int M = kern::kStampsPerBlock;
  std::vector<unsigned long long> h(stamp_kernels_.size() * M * kStampBlocks);
  check(cudaStreamSynchronize(st_), "cudaStreamSynchronize");
  check(cudaMemcpy(h.data(), stamps_, h.size() * sizeof(h[0]), cudaMemcpyDeviceToHost), "cudaMemcpy(stamps)");
  auto at = [&](size_t kernel, int block, int k) { return h[(kernel * kStampBlocks + block) * M + k]; };
  // --variant flow: "wait-..." entries hold nanoseconds per block, not times; zero: not reached.
  auto is_wait = [&](size_t i) { return stamp_kernels_[i].first.rfind("wait-", 0) == 0; };
  unsigned long long t0 = ~0ull;
  for (size_t i = 0; i < stamp_kernels_.size(); ++i) {
    if (is_wait(i)) continue;
    for (int b = 0; b < stamp_kernels_[i].second; ++b) {
      if (at(i, b, 0)) t0 = std::min(t0, at(i, b, 0));
    }
  }
  for (size_t i = 0; i < stamp_kernels_.size(); ++i) {
    KernelSpan k;
    k.name = stamp_kernels_[i].first;
    k.blocks = stamp_kernels_[i].second;
    if (is_wait(i)) {  // mean and largest per block, in the start and end fields
      double sum = 0, mx = 0;
      for (int b = 0; b < k.blocks; ++b) {
        sum += static_cast<double>(at(i, b, 0)) * 1e-3;
        mx = std::max(mx, static_cast<double>(at(i, b, 0)) * 1e-3);
      }
      k.first_start_us = k.last_start_us = k.last_ready_us = sum / k.blocks;
      k.last_end_us = mx;
      out.push_back(k);
      continue;
    }
    unsigned long long s0 = ~0ull, last[M] = {};
    for (int b = 0; b < k.blocks; ++b) {
      if (at(i, b, 0)) s0 = std::min(s0, at(i, b, 0));
      for (int m = 0; m < M; ++m) last[m] = std::max(last[m], at(i, b, m));
    }
    // Stamps not written this step (zero, or left from an earlier one) read as -1.
    auto us = [&](unsigned long long t) { return t >= t0 ? static_cast<double>(t - t0) * 1e-3 : -1.0; };
    k.first_start_us = us(s0);
    k.last_start_us = us(last[0]);
    k.last_ready_us = us(last[1]);
    k.last_end_us = us(last[2]);
    int n_marks = M - 3;
    while (n_marks > 0 && us(last[3 + n_marks - 1]) < 0) --n_marks;
    for (int m = 0; m < n_marks; ++m) k.marks_us.push_back(us(last[3 + m]));
    out.push_back(k);
  }
  return out;
}

template <typename T>
void CudaEngine<T>::rewind() {
  if (!prepared_) return fail("rewind before prepare");
  steps_done_ = 0;
  kern::rewind_kernel<T><<<B_, 256, 0, st_>>>(plen_, hist_, gen_ + 1, step_, pos_, argmax_, embed_, resid_d_, c_.hidden);
  check(cudaGetLastError(), "rewind launch");
}

template <typename T>
int CudaEngine<T>::run_graph(const std::string& key, int reps, int units_per_body, const std::function<void()>& body) {
  if (!prepared_) {
    fail("isolation before prepare");
    return 0;
  }
  reps = std::max(1, reps);
  if (!o_.graphs) {
    for (int i = 0; i < reps; ++i) body();
    return reps;
  }
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    // At least ~32 kernels per graph so the gaps between graph launches do not count.
    const int inner = std::max(1, std::min(reps, ceil_div(32, std::max(1, units_per_body))));
    cudaGraph_t g = nullptr;
    check(cudaStreamBeginCapture(st_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    for (int i = 0; i < inner; ++i) body();
    check(cudaStreamEndCapture(st_, &g), "cudaStreamEndCapture");
    cudaGraphExec_t ex = nullptr;
    if (g) {
      check(cudaGraphInstantiate(&ex, g, 0), "cudaGraphInstantiate");
      cudaGraphDestroy(g);
    }
    if (!ex) return 0;
    it = graphs_.emplace(key, std::make_pair(ex, inner)).first;
  }
  const int inner = it->second.second;
  const int outer = ceil_div(reps, inner);
  for (int i = 0; i < outer; ++i) check(cudaGraphLaunch(it->second.first, st_), "cudaGraphLaunch");
  return outer * inner;
}

template <typename T>
int CudaEngine<T>::component(Component comp, int layer, int reps) {
  const bool per_layer = component_per_layer(comp);
  const int n = per_layer && layer < 0 ? c_.layers : 1;
  const std::string key = std::string("c:") + component_name(comp) + ":" + std::to_string(layer);
  return run_graph(key, reps, n, [&] {
    if (!per_layer) {
      enqueue(comp, -1, false);
    } else if (layer >= 0) {
      enqueue(comp, layer, false);
    } else {
      for (int l = 0; l < c_.layers; ++l) enqueue(comp, l, false);
    }
  });
}

template <typename T>
int CudaEngine<T>::layer_block(int layer, int reps) {
  return run_graph("l:" + std::to_string(layer), reps, 5, [&] {
    in_layer_ = true;  // the layer's kernels as in a decode step
    for (Component comp : kLayerComponents) {
      enqueue(comp, layer, false);
    }
    in_layer_ = false;
  });
}

template <typename T>
int CudaEngine<T>::step(int reps) {
  return run_graph("step", reps, 5 * c_.layers + 1, [&] { enqueue_step(false); });
}

template <typename T>
Result<std::vector<std::vector<int>>> CudaEngine<T>::generated() {
  synchronize();
  if (!err_.empty()) return make_error(Errc::vendor, err_);
  std::vector<int> steps(static_cast<size_t>(B_)), hist(static_cast<size_t>(B_) * (gen_ + 1));
  JP_CK(cudaMemcpy(steps.data(), step_, B_ * 4, cudaMemcpyDeviceToHost));
  JP_CK(cudaMemcpy(hist.data(), hist_, hist.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<std::vector<int>> out(static_cast<size_t>(B_));
  for (int b = 0; b < B_; ++b) {
    const int n = std::min(steps[static_cast<size_t>(b)], gen_ + 1);
    out[static_cast<size_t>(b)].assign(hist.begin() + static_cast<long>(b) * (gen_ + 1),
                                       hist.begin() + static_cast<long>(b) * (gen_ + 1) + n);
  }
  return out;
}

template <typename T>
Result<std::vector<float>> CudaEngine<T>::last_logits() {
  synchronize();
  if (!err_.empty()) return make_error(Errc::vendor, err_);
  std::vector<float> out(static_cast<size_t>(B_) * c_.vocab);
  JP_CK(cudaMemcpy(out.data(), logits_, out.size() * 4, cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace

Result<std::unique_ptr<LlmEngine>> create_cuda_engine(const EngineOptions& o) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    return make_error(Errc::unavailable, std::string("no CUDA device: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "none found"));
  }
  if (o.device < 0 || o.device >= n) return make_error(Errc::not_found, "no CUDA device " + std::to_string(o.device));
  Result<LlmConfig> cfg = o.weights_dir.empty() ? builtin_config(o.model) : load_checkpoint_config(o.weights_dir);
  if (!cfg) return cfg.error();
  if (auto v = cfg->validate(); !v) return v.error();
  if (cfg->head_dim != 32 && cfg->head_dim != 64 && cfg->head_dim != 128) {
    return make_error(Errc::unsupported, "the CUDA engine supports head_dim 32, 64 and 128, not " + std::to_string(cfg->head_dim));
  }
  if (auto v = validate_sampling(o.sampling); !v) return v.error();
  switch (o.dtype) {
    case DType::bf16: return CudaEngine<__nv_bfloat16>::create(o, std::move(*cfg));
    case DType::f16: return CudaEngine<__half>::create(o, std::move(*cfg));
    case DType::f32: break;
  }
  return make_error(Errc::unsupported, "the CUDA engine runs bf16 and fp16; fp32 is the CPU reference's (jouleprof-llm check)");
}

Result<DeviceCeilings> measure_ceilings(int device) {
  DeviceCeilings d;
  JP_CK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  JP_CK(cudaGetDeviceProperties(&prop, device));
  d.name = prop.name;
  d.sm_count = prop.multiProcessorCount;
  d.l2_bytes = prop.l2CacheSize;
  cudaEvent_t a = nullptr, b = nullptr;
  JP_CK(cudaEventCreate(&a));
  JP_CK(cudaEventCreate(&b));
  {
    const size_t bytes = size_t{2} << 30;
    void *x = nullptr, *y = nullptr;
    JP_CK(cudaMalloc(&x, bytes));
    JP_CK(cudaMalloc(&y, bytes));
    kern::fill_random_kernel<__nv_bfloat16><<<1024, 256>>>(static_cast<__nv_bfloat16*>(x), int64_t(bytes / 2), 7, 1, 1.f);
    std::vector<float> ms;
    for (int r = 0; r < 7; ++r) {
      JP_CK(cudaEventRecord(a));
      for (int i = 0; i < 5; ++i) JP_CK(cudaMemcpyAsync(i % 2 ? x : y, i % 2 ? y : x, bytes, cudaMemcpyDeviceToDevice));
      JP_CK(cudaEventRecord(b));
      JP_CK(cudaEventSynchronize(b));
      float t = 0;
      JP_CK(cudaEventElapsedTime(&t, a, b));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    d.copy_bytes_per_s = 2.0 * bytes * 5 / (ms[ms.size() / 2] / 1e3);
    cudaFree(x);
    cudaFree(y);
  }
  {
    const int n = 8192;
    void *x = nullptr, *y = nullptr, *z = nullptr;
    const size_t bytes = size_t{n} * n * 2;
    JP_CK(cudaMalloc(&x, bytes));
    JP_CK(cudaMalloc(&y, bytes));
    JP_CK(cudaMalloc(&z, bytes));
    kern::fill_random_kernel<__nv_bfloat16><<<1024, 256>>>(static_cast<__nv_bfloat16*>(x), int64_t{n} * n, 8, 1, 1.f);
    kern::fill_random_kernel<__nv_bfloat16><<<1024, 256>>>(static_cast<__nv_bfloat16*>(y), int64_t{n} * n, 9, 1, 1.f);
    cublasHandle_t h = nullptr;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return make_error(Errc::vendor, "cublasCreate failed");
    const float one = 1.f, zero = 0.f;
    auto run = [&] {
      return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, x, CUDA_R_16BF, n, y, CUDA_R_16BF, n, &zero, z,
                          CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
    for (int i = 0; i < 3; ++i) run();
    std::vector<float> ms;
    for (int r = 0; r < 5; ++r) {
      JP_CK(cudaEventRecord(a));
      for (int i = 0; i < 10; ++i) run();
      JP_CK(cudaEventRecord(b));
      JP_CK(cudaEventSynchronize(b));
      float t = 0;
      JP_CK(cudaEventElapsedTime(&t, a, b));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    d.gemm_flops = 2.0 * n * double(n) * n * 10 / (ms[ms.size() / 2] / 1e3);
    cublasDestroy(h);
    cudaFree(x);
    cudaFree(y);
    cudaFree(z);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  JP_CK(cudaGetLastError());
  return d;
}

}  // namespace jouleprof::llm
