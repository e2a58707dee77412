// The separate-kernels decode plan: one kernel (or a few) per component — the engine's own GEMV
// kernels with RMSNorm, SwiGLU and residual adds folded in, or cuBLAS; the split-KV attention
// kernel — chained by programmatic dependent launch. The form every GPU and batch runs (sm_80
// included), and the one isolation replays components with.
#pragma once

#include "engine_cuda_impl.cuh"

namespace jouleprof::llm {
namespace {

template <typename T>
class SeparatePlan : public DecodePlan<T> {
 public:
  explicit SeparatePlan(CudaEngine<T>& e) : e_(e) {}
  PlanKind kind() const override { return PlanKind::separate; }
  /// This plan's decision for the separate kernels' matrix products at a run shape: the engine's
  /// GEMV kernels (the input rows of up to 8 sequences, padded to `nb`, in shared memory) up to
  /// batch 2, cuBLAS above (faster from batch 8 on), unless `--variant separate+gemv|+cublas`
  /// asks for one. The engine's component kernels (every plan's isolation replays) follow it.
  static Result<bool> uses_gemv(const DecodeRequest& plan, int batch, int nb, int kmax) {
    const bool fits = batch <= 8 && static_cast<size_t>(nb) * kmax * sizeof(T) <= 200u * 1024;
    using Matvec = SeparateOptions::Matvec;
    const Matvec mv = !plan.automatic && plan.kind == PlanKind::separate ? plan.separate.matvec : Matvec::automatic;
    if (mv == Matvec::gemv && !fits) {
      return make_error(Errc::invalid_argument, "the GEMV kernels take at most 8 sequences and " +
                                                    std::to_string(200 * 1024 / (kmax * sizeof(T))) +
                                                    " for this model; use --variant separate+cublas");
    }
    return mv == Matvec::gemv || (mv == Matvec::automatic && fits && batch <= 2);
  }
  Result<bool> prepare(bool) override {
    // The driver's own L1/shared split for the GEMV kernels (the cluster plan sets another).
    if (e_.gemv_products()) {
      if (auto r = set_carveout(cudaSharedmemCarveoutDefault, e_.gemv_fn(false), e_.gemv_fn(true)); !r) return r.error();
    }
    return true;
  }
  std::string describe() const override { return "separate kernels: " + e_.describe_separate(); }
  void enqueue_step(bool advance) override {
    e_.stamping_ = advance;
    for (int l = 0; l < e_.c_.layers; ++l) this->enqueue_layer(l);
    e_.enqueue(Component::lm_head, -1, true);
    if (advance) e_.enqueue(Component::embed, -1, true);
    e_.stamping_ = false;
  }
  void enqueue_layer(int l) override {
    for (Component comp : kLayerComponents) e_.enqueue(comp, l, true);
  }

 protected:
  CudaEngine<T>& e_;
};

}  // namespace
}  // namespace jouleprof::llm
