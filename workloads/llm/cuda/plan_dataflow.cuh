// The dataflow decode plan: the whole batch-1 step as one persistent kernel (flow_kernel.cuh;
// sm_90) — one block per SM, weights and cached K/V streamed through a ring of bulk-copy slots,
// per-product dependency counters instead of kernel boundaries. The default for Llama-3.2-1B-sized
// models at batch 1 (decode_plan.cpp says where and why). The token advance and top-k sampling
// stay separate kernels of the step's graph.
#pragma once

#include "flow_kernel.cuh"
#include "plan_context.cuh"

namespace jouleprof::llm {
namespace {

template <typename T>
class DataflowPlan final : public DecodePlan<T> {
 public:
  DataflowPlan(const PlanContext<T>& ctx, const DataflowOptions& o) : ctx_(ctx), o_(o) {}
  PlanKind kind() const override { return PlanKind::dataflow; }
  Result<bool> prepare(bool by_default) override {
    auto r = prepare_kernel();
    if (!r && by_default) return false;  // a model the kernel does not take: the next plan of the table
    if (!r) return r.error();
    // Components are replayed by the GEMV kernels, as its step runs them (the isolated layers'
    // plan, prepared after this one, sets their L1/shared split).
    if (auto g = ctx_.engine.prepare_gemv(cudaSharedmemCarveoutDefault); !g) return g.error();
    return true;
  }
  /// Batch 1 on the GEMV kernels' products (check_engine).
  Products products() const override { return Products::gemv; }
  std::string describe() const override {
    std::string s = "dataflow plan: the step as one persistent kernel (one block per SM, weights streamed through a ring of " +
                    std::to_string(p_.slots) + " x " + std::to_string(p_.slot_bytes / 1024) +
                    " KiB bulk-copy slots, per-product dependency counters";
    if (p_.l2_wait > 0) s += ", L2 asked up to " + std::to_string(p_.l2_wait) + " chunks ahead in dependency waits";
    s += ", cached K/V through the ring, " + std::to_string(p_.attn_splits) + " split(s) of " + std::to_string(p_.attn_span) +
         " positions per KV head";
    if (p_.bulk_ops) {
      static const char* names[] = {"QKV", "attention", "output", "gate/up", "down"};
      std::string ops;
      for (int op = 0; op < 5; ++op) {
        if ((p_.bulk_ops >> op) & 1) ops += (ops.empty() ? "" : ", ") + std::string(names[op]);
      }
      s += ", rows handed over by bulk stores (" + ops + ")";
    } else {
      s += ", rows handed over by release adds";
    }
    return s + ")";
  }
  void enqueue_step(bool advance) override;
  /// Not separable into layers: the engine replays isolated layers with another plan.
  void enqueue_layer(int l) override {
    for (Component comp : kLayerComponents) ctx_.engine.enqueue(comp, l, products());
  }

 private:
  // prepare_kernel() and its steps, in order.
  Result<void> prepare_kernel();
  Result<void> check_engine() const;
  Result<void> plan_products(int slot_elems);
  Result<void> upload_layers();
  Result<void> plan_ring_attention(int slot_elems);
  Result<void> plan_bulk_handover();
  Result<void> fit_shared_memory();
  void launch();
  std::vector<std::string> timeline_labels() const;
  using Fn = void (*)(kern::FlowParams);
  Fn kernel() const {
    switch (ctx_.model.head_dim) {
      case 32: return kern::flow_decode_kernel<T, 32>;
      case 64: return kern::flow_decode_kernel<T, 64>;
      default: return kern::flow_decode_kernel<T, 128>;
    }
  }
  PlanContext<T> ctx_;
  DataflowOptions o_;
  kern::FlowParams p_{};
  size_t smem_ = 0;
};

template <typename T>
Result<void> DataflowPlan<T>::prepare_kernel() {
  if (auto r = check_engine(); !r) return r;
  const int slot_elems = o_.chunk_kb * 1024 / static_cast<int>(sizeof(T));
  p_ = kern::FlowParams{};
  if (auto r = plan_products(slot_elems); !r) return r;
  if (auto r = upload_layers(); !r) return r;
  if (auto r = plan_ring_attention(slot_elems); !r) return r;
  if (o_.bulk_handover) {
    if (auto r = plan_bulk_handover(); !r) return r;
  }
  return fit_shared_memory();
}

// Batch 1 on GEMV kernels, bulk copies (sm_90), and a model within the kernel's bounds.
template <typename T>
Result<void> DataflowPlan<T>::check_engine() const {
  const LlmConfig& c_ = ctx_.model;
  const cudaDeviceProp& prop_ = ctx_.device;
  const int B_ = ctx_.batch;
  if (B_ != 1 || !gemv_fits<T>(c_, B_)) {
    return make_error(Errc::invalid_argument, "the dataflow plan runs batch 1 (GEMV kernels); this run has batch " +
                                                  std::to_string(B_));
  }
  if (prop_.major < 9) {
    return make_error(Errc::unsupported, std::string("the dataflow plan needs bulk copies (compute capability 9.0 or newer); ") +
                                             prop_.name + " is " + std::to_string(prop_.major) + "." +
                                             std::to_string(prop_.minor));
  }
  if (c_.layers > kern::kFlowMaxLayers) {
    return make_error(Errc::unsupported, "the dataflow plan takes at most " + std::to_string(kern::kFlowMaxLayers) + " layers");
  }
  if (c_.hidden > kern::kFlowMaxHidden) {
    return make_error(Errc::unsupported, "the dataflow plan takes hidden sizes up to " + std::to_string(kern::kFlowMaxHidden));
  }
  return {};
}

// Each matrix product's rows per ring chunk (whole rows per warp, or a row split over warps).
template <typename T>
Result<void> DataflowPlan<T>::plan_products(int slot_elems) {
  const LlmConfig& c_ = ctx_.model;
  std::string err;
  auto shape = [&](int rows, int k) {
    kern::FlowShape s{rows, k, 1, 1, 0, 1};
    const int fit = slot_elems / k;
    if (fit < 1) {
      err = "the dataflow plan: a row of " + std::to_string(k) + " elements does not fit a " +
            std::to_string(o_.chunk_kb) + " KiB chunk (chunkN)";
      return s;
    }
    if (fit >= kern::kFlowWarps) {
      s.r = std::min(fit, kern::kFlowMaxRows);  // each warp whole rows
      if (o_.bulk_handover) s.r -= s.r % 8;     // whole 16-byte pieces of rows for the bulk stores
    } else {
      while (s.r * 2 <= fit) s.r *= 2;  // a power of two, so that every row gets the same warps
      s.g = kern::kFlowWarps / s.r;
    }
    s.items = ceil_div(rows, s.r);
    return s;
  };
  kern::FlowParams& P = p_;
  const int H = c_.hidden, I = c_.intermediate, Q = c_.q_dim();
  P.qkv = shape(c_.qkv_dim(), H);
  P.out = shape(H, Q);
  P.gu = shape(I, H);
  P.down = shape(H, I);
  P.lm = shape(c_.vocab, H);
  if (!err.empty()) return make_error(Errc::unsupported, err);
  return {};
}

// The layers' weights and attention parameters, the dependency counters, and the step's buffers.
template <typename T>
Result<void> DataflowPlan<T>::upload_layers() {
  const PlanContext<T>& e = ctx_;
  const LlmConfig& c_ = e.model;
  kern::FlowParams& P = p_;
  std::vector<kern::FlowLayer> layers;
  for (const auto& L : e.layers) {
    const size_t i = layers.size();
    kern::AttnParams a = e.engine.attn_params(static_cast<int>(i));
    a.early_kv = 1;  // the consumers have waited for the previous kernel before any item
    a.stamps = nullptr;
    layers.push_back({L.wqkv, L.wo, L.wgu, L.wd, L.attn_norm, L.mlp_norm, a});
  }
  const size_t counters = static_cast<size_t>(kern::flow_counter_words(c_.layers));
  auto lp = e.engine.alloc_run(layers.size() * sizeof(kern::FlowLayer));
  if (!lp) return lp.error();
  auto cp = e.engine.alloc_run(counters * sizeof(unsigned));
  if (!cp) return cp.error();
  JP_CK(cudaMemcpy(*lp, layers.data(), layers.size() * sizeof(kern::FlowLayer), cudaMemcpyHostToDevice));
  JP_CK(cudaMemset(*cp, 0, counters * sizeof(unsigned)));
  P.layer = static_cast<const kern::FlowLayer*>(*lp);
  P.first = 0;  // the whole step
  P.last = kern::flow_lm_product(c_.layers);
  P.layers = c_.layers;
  P.lm_w = e.lm_head;
  P.final_norm = e.final_norm;
  P.eps = static_cast<float>(c_.rms_eps);
  P.attn_out = e.buf.attn;
  P.resid = e.buf.resid;
  P.qkv_y = e.buf.qkv;
  P.act = e.buf.act;
  P.logits = e.buf.logits;
  P.argmax = e.buf.argmax;
  P.counters = static_cast<unsigned*>(*cp);
  P.slot_bytes = o_.chunk_kb * 1024;
  P.l2_wait = o_.l2_wait;
  P.poll_ns = 0;
  return {};
}

// Ring attention: the cached K/V rows streamed through the ring like weights.
template <typename T>
Result<void> DataflowPlan<T>::plan_ring_attention(int slot_elems) {
  const LlmConfig& c_ = ctx_.model;
  const cudaDeviceProp& prop_ = ctx_.device;
  const int max_ctx_ = ctx_.max_ctx, chunk_ = ctx_.attn_chunk, splits_ = ctx_.attn_splits;
  kern::FlowParams& P = p_;
  P.attn_items = splits_ * c_.kv_heads;
  const int tpos = slot_elems / c_.head_dim;
  if (tpos < 1) return make_error(Errc::unsupported, "the dataflow plan: a cached row does not fit a chunk");
  if (c_.heads / c_.kv_heads > kern::kFlowRingGroup) {
    return make_error(Errc::unsupported, "the dataflow plan takes at most " + std::to_string(kern::kFlowRingGroup) +
                                             " query heads per KV head");
  }
  // By default the separate kernels' splits (64 positions each up to 2 x SMs items): on the
  // H100 one split per KV head of 384 positions made 1B decode ~3.5% slower than six of 64,
  // whose items run on six times as many SMs. No more splits than the partials buffers hold
  // (splits_ per head). And no more items than SMs: with more, some blocks take two items one
  // after the other (1B at prompt 1024: 160 items on 132 SMs, 8% slower than the separate kernels).
  const int per_head = std::max(1, prop_.multiProcessorCount / c_.kv_heads);
  int span = o_.span > 0 ? o_.span : std::max(chunk_, ceil_div(max_ctx_, per_head));
  span = std::max(span, ceil_div(max_ctx_, splits_));
  P.attn_ring = 1;
  P.attn_span = span;
  P.attn_splits = ceil_div(max_ctx_, span);
  P.attn_items = P.attn_splits * c_.kv_heads;
  P.kv_prefetch = 0;
  P.attn_floats = kern::flow_attn_floats(c_.head_dim, tpos);
  return {};
}

// Bulk stores move whole 16-byte pieces: an item's rows must be such. Where a chunk's rows
// are not (1B's down projection: 2 rows of 4 bytes), an item takes as many chunks of
// consecutive rows as make them so; products that still do not fit keep the release add.
template <typename T>
Result<void> DataflowPlan<T>::plan_bulk_handover() {
  const LlmConfig& c_ = ctx_.model;
  const cudaDeviceProp& prop_ = ctx_.device;
  kern::FlowParams& P = p_;
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
    P.attn_last_combines = 0;
    P.attn_stage = kern::flow_attn_record(g, c_.head_dim) * 4 + (g * c_.head_dim * static_cast<int>(sizeof(T)) + 15) / 16 * 16;
    P.bulk_bytes = std::max(P.bulk_bytes, ceil_div(P.attn_items, nblk) * P.attn_stage);
    const size_t n = static_cast<size_t>(P.attn_items) * kern::flow_attn_record(g, c_.head_dim);
    auto ap = ctx_.engine.alloc_run(n * sizeof(float));
    if (!ap) return ap.error();
    P.attn_part = static_cast<float*>(*ap);
  }
  return {};
}

template <typename T>
Result<void> DataflowPlan<T>::fit_shared_memory() {
  const LlmConfig& c_ = ctx_.model;
  const cudaDeviceProp& prop_ = ctx_.device;
  const int H = c_.hidden, I = c_.intermediate, Q = c_.q_dim();
  const int slot_bytes = o_.chunk_kb * 1024;
  kern::FlowParams& P = p_;
  // Ring slots: as many as shared memory holds beside the kernel's static arrays (attention's).
  cudaFuncAttributes fa{};
  JP_CK(cudaFuncGetAttributes(&fa, kernel()));
  const int kmax = std::max({H, Q, I});
  const size_t avail = prop_.sharedMemPerBlockOptin - fa.sharedSizeBytes;
  const int slots = o_.slots;
  smem_ = kern::flow_smem(slots, slot_bytes, kmax, sizeof(T), P.attn_floats, P.bulk_bytes).bytes;
  if (smem_ > avail) {
    return make_error(Errc::unsupported, "the dataflow plan: " + std::to_string(slots) + " slots of " +
                                             std::to_string(o_.chunk_kb) + " KiB need " + std::to_string(smem_) +
                                             " bytes of shared memory per block; this GPU has " + std::to_string(avail));
  }
  P.slots = slots;
  JP_CK(cudaFuncSetAttribute(kernel(), cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_)));
  int blocks = 0;
  JP_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel(), kern::kFlowThreads, smem_));
  if (blocks < 1) return make_error(Errc::unsupported, "the dataflow decode kernel does not fit on an SM of this GPU");
  return {};
}

template <typename T>
void DataflowPlan<T>::launch() {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(ctx_.device.multiProcessorCount);  // one block per SM
  cfg.blockDim = dim3(kern::kFlowThreads);
  cfg.dynamicSmemBytes = smem_;
  cfg.stream = ctx_.stream;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeCooperative;  // blocks wait for each other: all resident, or the launch fails
  attr[0].val.cooperative = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = ctx_.pdl ? 2 : 1;
  ctx_.engine.check(cudaLaunchKernelEx(&cfg, kernel(), p_), "cudaLaunchKernelEx(flow_decode_kernel)");
}

// The step's timeline entries: one per product, then the waits (nanoseconds per block).
template <typename T>
std::vector<std::string> DataflowPlan<T>::timeline_labels() const {
  std::vector<std::string> labels;
  for (int l = 0; l < ctx_.model.layers; ++l) {
    for (Component comp : kLayerComponents) labels.push_back(std::string(component_name(comp)) + " " + std::to_string(l));
  }
  labels.emplace_back(component_name(Component::lm_head));
  for (const char* w : {"wait-full-slot", "wait-dependency", "wait-empty-slot", "wait-ring-rows", "wait-ring-chunks",
                        "wait-ring-output", "wait-ring-slot"}) {
    labels.emplace_back(w);
  }
  return labels;
}

template <typename T>
void DataflowPlan<T>::enqueue_step(bool advance) {
  p_.stamps = advance ? ctx_.engine.stamps(timeline_labels(), ctx_.device.multiProcessorCount) : nullptr;
  p_.stamp_blocks = kStampBlocks;
  launch();
  ctx_.engine.sample();
  if (advance) ctx_.engine.enqueue(Component::embed, -1, products());
}

}  // namespace
}  // namespace jouleprof::llm
