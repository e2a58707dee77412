// The separate-kernels decode plan: one kernel (or a few) per component — the engine's own GEMV
// kernels with RMSNorm, SwiGLU and residual adds folded in, or cuBLAS; the split-KV attention
// kernel — chained by programmatic dependent launch. The form every GPU and batch runs (sm_80
// included), and the one isolation replays components with.
#pragma once

#include "plan_context.cuh"

namespace jouleprof::llm {
namespace {

template <typename T>
class SeparatePlan : public DecodePlan<T> {
 public:
  SeparatePlan(const PlanContext<T>& ctx, const SeparateOptions& o) : ctx_(ctx), o_(o) {}
  PlanKind kind() const override { return PlanKind::separate; }
  Result<bool> prepare(bool) override {
    auto p = choose_products();
    if (!p) return p.error();
    products_ = *p;
    // The driver's own L1/shared split for the GEMV kernels (the cluster plan sets another).
    if (products_ == Products::gemv) {
      if (auto r = ctx_.engine.prepare_gemv(cudaSharedmemCarveoutDefault); !r) return r.error();
    }
    return true;
  }
  std::string describe() const override { return "separate kernels: " + describe_kernels(); }
  Products products() const override { return products_; }
  void enqueue_step(bool advance) override {
    for (int l = 0; l < ctx_.model.layers; ++l) this->enqueue_layer(l);
    ctx_.engine.enqueue(Component::lm_head, -1, products_);
    if (advance) ctx_.engine.enqueue(Component::embed, -1, products_);
  }
  void enqueue_layer(int l) override {
    for (Component comp : kLayerComponents) ctx_.engine.enqueue(comp, l, products_);
  }

 protected:
  /// What the separate kernels are for this shape (the matrix products, the attention splits).
  std::string describe_kernels() const {
    std::string s = products_ == Products::gemv
                        ? "GEMV kernels (RMSNorm, SwiGLU and residual adds folded in, 8 loads in flight per row at batch 1)"
                        : "cuBLAS matrix products";
    return s + ", attention split in " + std::to_string(ctx_.attn_splits) + " part(s) of " + std::to_string(ctx_.attn_chunk) +
           " positions";
  }
  PlanContext<T> ctx_;
  SeparateOptions o_;
  Products products_ = Products::gemv;

 private:
  /// The GEMV kernels up to batch 2, cuBLAS above (faster from batch 8 on), unless the options
  /// ask for one (`--variant separate+gemv|+cublas`).
  Result<Products> choose_products() const {
    const bool fits = gemv_fits<T>(ctx_.model, ctx_.batch);
    switch (o_.matvec) {
      case SeparateOptions::Matvec::cublas: return Products::cublas;
      case SeparateOptions::Matvec::gemv:
        if (fits) return Products::gemv;
        return make_error(Errc::invalid_argument,
                          "the GEMV kernels take at most 8 sequences and " +
                              std::to_string(kGemvRowBytes / (gemv_width(ctx_.model) * sizeof(T))) +
                              " for this model; use --variant separate+cublas");
      case SeparateOptions::Matvec::automatic: break;
    }
    return fits && ctx_.batch <= 2 ? Products::gemv : Products::cublas;
  }
};

}  // namespace
}  // namespace jouleprof::llm
