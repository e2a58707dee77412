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
  Result<bool> prepare(bool) override {
    // The driver's own L1/shared split for the GEMV kernels (the cluster plan sets another).
    if (e_.fused_) {
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
