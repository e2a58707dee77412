// The cluster decode plan: the separate kernels, with each layer's QKV projection and attention
// as one kernel of thread block clusters (cluster_kernel.cuh; batch 1, sm_90). One cluster per KV
// head exchanges the projections and the softmax partials through distributed shared memory,
// which removes a kernel boundary and two round trips through global memory per layer.
#pragma once

#include "cluster_kernel.cuh"
#include "plan_separate.cuh"

namespace jouleprof::llm {
namespace {

template <typename T>
class ClusterPlan final : public SeparatePlan<T> {
 public:
  ClusterPlan(const PlanContext<T>& ctx, const ClusterOptions& o) : SeparatePlan<T>(ctx, SeparateOptions{}), o_(o) {}
  PlanKind kind() const override { return PlanKind::cluster; }
  Result<bool> prepare(bool by_default) override;
  std::string describe() const override {
    return "cluster plan: QKV projection and attention in one kernel (" + std::to_string(cluster_) +
           "-CTA clusters per KV head, " + std::to_string(resident_) + " resident at once, " + std::to_string(kThreads) +
           " threads, " + std::to_string(stages_) + " ring stages per warp), the rest as separate kernels: " +
           this->describe_kernels();
  }
  void enqueue_layer(int l) override {
    launch(l);  // attn_qkv and attn_core
    for (Component comp : {Component::attn_out, Component::mlp_gate_up, Component::mlp_down}) {
      this->ctx_.engine.enqueue(comp, l, this->products_);
    }
  }

 private:
  // 512 threads and 2 weight-ring stages per warp: faster than 256 threads and 3-6 stages for
  // 1B, 3B and 8B on the H100 once the exchanges were pushes (110 registers, no spills).
  static constexpr int kThreads = 512, kStages = 2;
  using Fn = void (*)(kern::QkvAttnParams);
  Fn fn() const {
    switch (this->ctx_.model.head_dim) {
      case 32: return kern::qkv_attn_kernel<T, 32, kThreads>;
      case 64: return kern::qkv_attn_kernel<T, 64, kThreads>;
      default: return kern::qkv_attn_kernel<T, 128, kThreads>;
    }
  }
  void launch(int l);
  ClusterOptions o_;
  int cluster_ = 0, stages_ = 0, piece_ = 0, resident_ = 0;
  size_t smem_ = 0;
};

template <typename T>
Result<bool> ClusterPlan<T>::prepare(bool by_default) {
  const PlanContext<T>& ctx = this->ctx_;
  const LlmConfig& c = ctx.model;
  const cudaDeviceProp& prop = ctx.device;
  // Its other products are the GEMV kernels: batch 1.
  if (ctx.batch != 1 || !gemv_fits<T>(c, ctx.batch)) {
    if (by_default) return false;
    return make_error(Errc::invalid_argument, "the cluster plan runs batch 1 (GEMV kernels); this run has batch " +
                                                  std::to_string(ctx.batch));
  }
  if (prop.major < 9) {
    if (by_default) return false;
    return make_error(Errc::unsupported, std::string("the cluster plan needs thread block clusters (compute capability 9.0 or newer); ") +
                                             prop.name + " has " + std::to_string(prop.major) + "." + std::to_string(prop.minor));
  }
  const int g = c.heads / c.kv_heads, hd = c.head_dim;
  if (g > kern::kMaxGroup || (hd != 32 && hd != 64 && hd != 128) || c.hidden % 8 != 0) {
    if (by_default) return false;
    return make_error(Errc::unsupported, "the cluster plan takes head sizes 32, 64 or 128 and at most " +
                                             std::to_string(kern::kMaxGroup) + " query heads per KV head");
  }
  const int R = (g + 2) * hd, K = c.hidden;
  piece_ = std::min(kern::kQaPieceMax, K);

  // The largest cluster (16, 8, 4, 2 CTAs) of which all KV heads' clusters can be resident at
  // once, unless one is asked for.
  const std::vector<int> sizes = o_.ctas > 0 ? std::vector<int>{o_.ctas} : std::vector<int>{16, 8, 4, 2};
  for (int cs : sizes) {
    const int warps = kThreads / 32;
    Fn f = fn();
    if (auto err = cudaFuncSetAttribute(f, cudaFuncAttributeNonPortableClusterSizeAllowed, 1); err != cudaSuccess) {
      return make_error(Errc::vendor, std::string("cudaFuncSetAttribute(qkv_attn_kernel): ") + cudaGetErrorString(err));
    }
    const size_t smem = kern::qkv_attn_smem(warps, K, hd, R, piece_, kStages, static_cast<int>(sizeof(T)));
    if (smem > prop.sharedMemPerBlockOptin) continue;
    if (auto err = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)); err != cudaSuccess) {
      return make_error(Errc::vendor, std::string("cudaFuncSetAttribute(qkv_attn_kernel): ") + cudaGetErrorString(err));
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(c.kv_heads * cs);
    cfg.blockDim = dim3(static_cast<unsigned>(kThreads));
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(cs);
    attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, f, &cfg) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (clusters >= c.kv_heads || (o_.ctas > 0 && clusters >= 1)) {
      // By default only while each CTA's share of the context is one shared-memory tile: its
      // tiles are loaded one after another, and beyond that the split kernel was faster (1B at
      // 4k context 1.544 vs 1.502 ms/step, 8B at 1k 6.09 vs 6.01).
      if (by_default && ceil_div(ctx.max_ctx, cs) > kern::kQaTile) return false;
      cluster_ = cs;
      stages_ = kStages;
      smem_ = smem;
      resident_ = clusters;
      // The cluster kernel and the GEMV kernels it alternates with under PDL get one L1/shared
      // split (all shared): with the driver's choice per kernel the SMs switched between them and
      // lost the overlap (H100, 2026-11-26: 3B 363.5 -> 377.4 tok/s, 8B 176.0 -> 178.4).
      this->products_ = Products::gemv;
      if (auto r = ctx.engine.prepare_gemv(cudaSharedmemCarveoutMaxShared); !r) return r.error();
      if (auto r = set_carveout(cudaSharedmemCarveoutMaxShared, fn()); !r) return r.error();
      return true;
    }
  }
  if (by_default) return false;
  return make_error(Errc::unsupported, "the cluster plan: " + std::to_string(c.kv_heads) +
                                           " clusters of the QKV-attention kernel do not fit on " + prop.name + " at once");
}

template <typename T>
void ClusterPlan<T>::launch(int l) {
  const PlanContext<T>& ctx = this->ctx_;
  kern::QkvAttnParams qp{};
  qp.g = ctx.engine.gemv_params(Component::attn_qkv, l);
  qp.a = ctx.engine.attn_params(l);
  qp.cluster = cluster_;
  qp.piece = piece_;
  qp.stages = stages_;
  qp.pre = stages_;  // every stage requested before the wait (fewer left HBM idle longer)
  const int grid = ctx.model.kv_heads * cluster_;
  qp.a.stamps = ctx.engine.stamps({std::string(component_name(Component::attn_qkv)) + " " + std::to_string(l)}, grid);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(static_cast<unsigned>(kThreads));
  cfg.dynamicSmemBytes = smem_;
  cfg.stream = ctx.stream;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(cluster_);
  attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = ctx.pdl ? 2 : 1;
  ctx.engine.check(cudaLaunchKernelEx(&cfg, fn(), qp), "cudaLaunchKernelEx(qkv_attn_kernel)");
}

}  // namespace
}  // namespace jouleprof::llm
