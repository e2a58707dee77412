// The CUDA Llama engine: weights and activations in bf16 or fp16, float accumulation and residual
// stream, cuBLAS for prefill matrix products, own kernels for the rest. Decode runs as one CUDA
// graph per step in the form of its decode plan (decode_plan.hpp; plan_*.cuh): the separate
// kernels (GEMV or cuBLAS), with the cluster QKV-attention kernel, or the dataflow persistent
// kernel.
#include "engine_cuda_impl.cuh"
#include "plan_cluster.cuh"
#include "plan_dataflow.cuh"
#include "plan_separate.cuh"

namespace jouleprof::llm {
namespace {

template <typename T>
Result<std::unique_ptr<DecodePlan<T>>> CudaEngine<T>::make_plan(PlanKind k, bool by_default) {
  std::unique_ptr<DecodePlan<T>> p;
  switch (k) {
    case PlanKind::separate: p = std::make_unique<SeparatePlan<T>>(plan_context(), o_.plan.separate); break;
    case PlanKind::cluster: p = std::make_unique<ClusterPlan<T>>(plan_context(), o_.plan.cluster); break;
    case PlanKind::dataflow: p = std::make_unique<DataflowPlan<T>>(plan_context(), o_.plan.dataflow); break;
  }
  auto ok = p->prepare(by_default);
  if (!ok) return ok.error();
  if (!*ok) p.reset();
  return Result<std::unique_ptr<DecodePlan<T>>>(std::move(p));
}

template <typename T>
Result<void> CudaEngine<T>::choose_plan() {
  plan_.reset();
  layer_owned_.reset();
  layer_plan_ = nullptr;
  const PlanSituation here{prop_.major, B_, max_ctx_, c_.hidden};
  const std::vector<PlanKind> table = default_plans(here);
  for (PlanKind k : o_.plan.automatic ? table : std::vector<PlanKind>{o_.plan.kind}) {
    auto p = make_plan(k, o_.plan.automatic);
    if (!p) return p.error();
    if (*p) {
      plan_ = std::move(*p);
      break;
    }
  }
  if (!plan_) return make_error(Errc::internal, "no decode plan can run this shape");  // the separate plan always can
  layer_plan_ = plan_.get();
  if (plan_->kind() == PlanKind::dataflow) {
    // Its step has no layers to replay alone: isolated layers run in the table's next plan that can.
    for (PlanKind k : table) {
      if (k == PlanKind::dataflow) continue;
      auto p = make_plan(k, true);
      if (!p) return p.error();
      if (*p) {
        layer_owned_ = std::move(*p);
        break;
      }
    }
    if (!layer_owned_) return make_error(Errc::internal, "no plan for isolated layers");
    layer_plan_ = layer_owned_.get();
  }
  return {};
}

template <typename T>
void CudaEngine<T>::enqueue_step(bool advance) {
  stamp_kernels_.clear();
  stamping_ = advance;
  plan_->enqueue_step(advance);
  stamping_ = false;
}

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
}

template <typename T>
Result<std::unique_ptr<LlmEngine>> CudaEngine<T>::create(const EngineOptions& o, LlmConfig c) {
  std::unique_ptr<CudaEngine<T>> e(new CudaEngine<T>());
  e->c_ = std::move(c);
  e->o_ = o;
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
typename CudaEngine<T>::GemvFn CudaEngine<T>::gemv_fn(bool norm) const {
  switch (nb_) {
    case 1: return norm ? kern::gemv_kernel<T, 1, true, 8> : kern::gemv_kernel<T, 1, false, 8>;
    case 2: return norm ? kern::gemv_kernel<T, 2, true, 4> : kern::gemv_kernel<T, 2, false, 4>;
    case 4: return norm ? kern::gemv_kernel<T, 4, true, 2> : kern::gemv_kernel<T, 4, false, 2>;
    default: return norm ? kern::gemv_kernel<T, 8, true, 1> : kern::gemv_kernel<T, 8, false, 1>;
  }
}

template <typename T>
Result<void> CudaEngine<T>::prepare_gemv(int carveout) {
  const int kmax = gemv_width(c_);
  const size_t tb = sizeof(T);
  for (GemvFn fn : {gemv_fn(false), gemv_fn(true)}) {
    const int smem = nb_ * kmax * static_cast<int>(tb);
    JP_CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int blocks = 1;
    JP_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, kern::kGemvThreads, static_cast<size_t>(nb_) * c_.hidden * tb));
    gemv_blocks_[fn] = std::max(1, blocks);
  }
  return set_carveout(carveout, gemv_fn(false), gemv_fn(true));
}

template <typename T>
void CudaEngine<T>::gemv(GemvParams p, bool norm) {
  GemvFn fn = gemv_fn(norm);
  const int slots = kern::kGemvThreads / 32;
  // Each warp's first row pair: its first 512 elements asked of L2 before the wait for the
  // previous kernel (more evicts what that kernel streams; none left HBM idle at the start).
  p.prefetch_elems = 512;
  const size_t smem = static_cast<size_t>(nb_) * p.k * sizeof(T);
  // With programmatic dependent launch, one block per SM leaves room for the next kernel's block
  // to start early. (A block on every SM even where half its warps idle, for the 1024-unit output
  // and down products of the 1B model, was slower for the same reason, as was capping the gate/up
  // grid.)
  const int per_sm = o_.pdl ? 1 : (gemv_blocks_.count(fn) ? gemv_blocks_[fn] : 1);
  const int grid = std::max(1, std::min(prop_.multiProcessorCount * per_sm, ceil_div(p.units, slots)));
  p.stamps = next_stamps(grid);
  launch(fn, dim3(grid), dim3(kern::kGemvThreads), smem, true, p);
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
void CudaEngine<T>::enqueue_component(Component comp, int l, bool commit, Products products) {
  stamp_label_ = std::string(component_name(comp)) + (l >= 0 ? " " + std::to_string(l) : "");
  switch (comp) {
    case Component::attn_core: attention(l); break;
    case Component::embed: {
      AdvanceParams a{argmax_, hist_, gen_ + 1, step_, pos_, embed_, resid_d_, c_.hidden, commit ? 1 : 0, 1};
      launch(kern::advance_kernel<T>, dim3(B_), dim3(256), 0, true, a);
      break;
    }
    case Component::count: break;
    default:  // the matrix products, as the plan decided
      switch (products) {
        case Products::gemv: gemv_products(comp, l); break;
        case Products::cublas: cublas_products(comp, l); break;
      }
      if (comp == Component::lm_head) sample_topk(true);
  }
}

template <typename T>
void CudaEngine<T>::gemv_products(Component comp, int l) {
  const bool norm = comp == Component::attn_qkv || comp == Component::mlp_gate_up || comp == Component::lm_head;
  gemv(gemv_params(comp, l), norm);
}

template <typename T>
void CudaEngine<T>::cublas_products(Component comp, int l) {
  const int H = c_.hidden, I = c_.intermediate, QKV = c_.qkv_dim(), Q = c_.q_dim(), V = c_.vocab;
  const float eps = static_cast<float>(c_.rms_eps);
  const LayerW* L = l >= 0 ? &lw_[static_cast<size_t>(l)] : nullptr;
  auto rmsnorm = [&](const float* w) {
    launch(kern::rmsnorm_kernel<T>, dim3(B_), dim3(256), 0, true, static_cast<const float*>(resid_d_), H,
           static_cast<const int*>(nullptr), w, eps, xn_d_, H, H);
  };
  switch (comp) {
    case Component::attn_qkv:
      rmsnorm(L->attn_norm);
      gemm(L->wqkv, xn_d_, H, qkv_d_, QKV, B_, QKV, H, false, 0.f);
      break;
    case Component::attn_out: gemm(L->wo, attn_d_, Q, resid_d_, H, B_, H, Q, true, 1.f); break;
    case Component::mlp_gate_up:
      rmsnorm(L->mlp_norm);
      gemm(L->wgu, xn_d_, H, gu_d_, 2 * I, B_, 2 * I, H, false, 0.f);
      launch(kern::swiglu_kernel<T>, dim3(std::min(1024, ceil_div(int64_t{B_} * I, 256))), dim3(256), 0, true,
             static_cast<const T*>(gu_d_), act_d_, I, int64_t{B_} * I);
      break;
    case Component::mlp_down: gemm(L->wd, act_d_, I, resid_d_, H, B_, H, I, true, 1.f); break;
    case Component::lm_head:
      rmsnorm(final_norm_);
      gemm(lm_, xn_d_, H, logits_, V, B_, V, H, true, 0.f);
      launch(kern::argmax_kernel, dim3(B_), dim3(1024), 0, true, static_cast<const float*>(logits_), V,
             static_cast<const int*>(nullptr), argmax_, static_cast<float*>(nullptr));
      break;
    default: break;
  }
}

template <typename T>
Result<void> CudaEngine<T>::prepare(const RunShape& s) {
  if (!err_.empty()) return status();
  check(cudaStreamSynchronize(st_), "cudaStreamSynchronize");
  release_run();
  shape_ = s;
  B_ = s.batch;
  gen_ = std::max(1, s.gen);
  if (auto r = check_shape(s); !r) return r;
  if (auto r = size_kernels(); !r) return r;
  PrefillTokens pf = plan_prefill(s);
  if (auto r = alloc_run_buffers(s, pf); !r) return r;
  if (auto r = upload_prompts(s, pf); !r) return r;
  if (auto r = prepare_launches(); !r) return r;
  JP_CK(cudaStreamSynchronize(st_));
  prepared_ = true;
  return status();
}

// One prompt length per sequence, each at least 1, the context within the model's positions.
template <typename T>
Result<void> CudaEngine<T>::check_shape(const RunShape& s) {
  if (B_ < 1 || static_cast<int>(s.prompt_lens.size()) != B_) return make_error(Errc::invalid_argument, "one prompt length per sequence needed");
  for (int len : s.prompt_lens) {
    if (len < 1) return make_error(Errc::invalid_argument, "prompt lengths must be at least 1");
  }
  max_ctx_ = static_cast<int>(round_up(s.max_context(), 64));
  if (s.max_context() > c_.max_position) {
    return make_error(Errc::invalid_argument, "context " + std::to_string(s.max_context()) + " exceeds the model's " +
                                                  std::to_string(c_.max_position) + " positions");
  }
  return {};
}

// The separate kernels' sizes for the shape: the GEMV kernels' padded rows (whether they run is
// the plan's decision: plan_separate.cuh) and the attention splits.
template <typename T>
Result<void> CudaEngine<T>::size_kernels() {
  nb_ = gemv_rows(B_);
  // Attention splits: enough blocks to fill the GPU twice over, at least 64 positions each.
  const int target = std::max(1, ceil_div(2 * prop_.multiProcessorCount, int64_t{B_} * c_.kv_heads));
  chunk_ = static_cast<int>(std::max<int64_t>(64, round_up(ceil_div(max_ctx_, target), 64)));
  splits_ = ceil_div(max_ctx_, chunk_);
  return {};
}

template <typename T>
PrefillTokens CudaEngine<T>::plan_prefill(const RunShape& s) {
  // Prefill chunks: sequences grouped by prompt length, at most chunk_tokens tokens per pass.
  chunks_.clear();
  std::map<int, std::vector<int>> by_len;
  for (int b = 0; b < B_; ++b) by_len[s.prompt_lens[static_cast<size_t>(b)]].push_back(b);
  const int ct = std::max(1, o_.chunk_tokens);
  PrefillTokens pf;
  std::vector<int>&tok_ids = pf.tok_ids, &tok_seq = pf.tok_seq, &tok_pos = pf.tok_pos, &chunk_seq = pf.chunk_seq,
                   &chunk_last = pf.chunk_last;
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
        attn_need = std::max(attn_need, n * q * kv_max);
        max_chunk_tok = std::max(max_chunk_tok, static_cast<int>(group.size()) * ch.len);
        chunks_.push_back(std::move(ch));
      }
    }
  }
  chunk_tok_ = max_chunk_tok;
  attn_elems_ = attn_need;
  return pf;
}

// The run's device buffers: KV cache, per-sequence state, decode and prefill activations,
// top-k candidates, attention pointers; refused when they do not fit beside the weights.
template <typename T>
Result<void> CudaEngine<T>::alloc_run_buffers(const RunShape& s, const PrefillTokens& pf) {
  const int H = c_.hidden, I = c_.intermediate, QKV = c_.qkv_dim(), Q = c_.q_dim(), V = c_.vocab;
  const std::vector<int>&tok_ids = pf.tok_ids, &tok_seq = pf.tok_seq, &tok_pos = pf.tok_pos, &chunk_seq = pf.chunk_seq,
                   &chunk_last = pf.chunk_last;
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
  return {};
}

// Prompt tokens to the device (explicit, else seeded random ids) and the sequences' state reset.
template <typename T>
Result<void> CudaEngine<T>::upload_prompts(const RunShape& s, PrefillTokens& pf) {
  const int V = c_.vocab;
  std::vector<int>&tok_ids = pf.tok_ids, &tok_seq = pf.tok_seq, &tok_pos = pf.tok_pos, &chunk_seq = pf.chunk_seq,
                   &chunk_last = pf.chunk_last;
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
  return {};
}

// The timeline stamps, the decode plan (which readies the kernels it runs) and the step's CUDA
// graph.
template <typename T>
Result<void> CudaEngine<T>::prepare_launches() {
  stamps_ = nullptr;
  if (o_.timeline) {
    void* sp = nullptr;
    const size_t bytes = size_t{kStampKernels} * kern::kStampsPerBlock * kStampBlocks * sizeof(unsigned long long);
    if (auto r = alloc(&sp, bytes, true); !r) return r.error();
    JP_CK(cudaMemset(sp, 0, bytes));
    stamps_ = static_cast<unsigned long long*>(sp);
  }
  if (auto r = choose_plan(); !r) return r.error();
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
  return {};
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
      for (int qoff = 0; qoff < ch.len; qoff += ch.qrows) {
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
  sample_topk(false);
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
  // The dataflow plan: "wait-..." entries hold nanoseconds per block, not times; zero: not reached.
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
  return run_graph(key, reps, n, [&] {  // (run only once prepared: a plan is there)
    const Products products = plan_->products();  // the step's own matrix products
    if (!per_layer) {
      enqueue_component(comp, -1, false, products);
    } else if (layer >= 0) {
      enqueue_component(comp, layer, false, products);
    } else {
      for (int l = 0; l < c_.layers; ++l) enqueue_component(comp, l, false, products);
    }
  });
}

template <typename T>
int CudaEngine<T>::layer_block(int layer, int reps) {
  return run_graph("l:" + std::to_string(layer), reps, 5, [&] {
    layer_plan_->enqueue_layer(layer);  // the layer's kernels as in a decode step
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
