// Decode plans: the forms in which the CUDA engine runs a decode step, one strategy each
// (workloads/llm/cuda/plan_*.cuh), each with its own typed options; the table of measured defaults
// (which plan for which GPU, model, batch and context); and `--variant`, which names a plan and its
// options. Host code (no CUDA), so that the table and the parser are tested in CI.
#pragma once

#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "model_config.hpp"

namespace jouleprof::llm {

/// The decode forms that survived measurement (docs/validation/bench-llm.md): each is the fastest,
/// the most frugal or the only portable form somewhere, or the correctness reference of another.
enum class PlanKind {
  separate,  ///< one kernel per component: own GEMV kernels or cuBLAS, the split-KV attention kernel
  cluster,   ///< separate, but each layer's QKV projection and attention as one thread-block-cluster kernel
  dataflow,  ///< the whole batch-1 step as one persistent kernel, weights streamed through a ring
};
const char* plan_name(PlanKind k);

/// Separate kernels. Runs everywhere (sm_80 included), at any batch.
struct SeparateOptions {
  enum class Matvec { automatic, gemv, cublas };
  /// The decode matrix products: own GEMV kernels (RMSNorm, SwiGLU, residual adds folded in; at
  /// most 8 sequences) or cuBLAS; automatic: GEMV up to batch 2, cuBLAS above.
  Matvec matvec = Matvec::automatic;
};

/// The thread-block-cluster QKV-attention kernel inside the separate kernels (batch 1, sm_90).
struct ClusterOptions {
  int ctas = 0;  ///< CTAs per KV head (0: the largest of 16, 8, 4, 2 whose clusters are all resident)
};

/// The dataflow persistent kernel (batch 1, sm_90, at most 32 layers, hidden size <= 4096).
struct DataflowOptions {
  int slots = 4;           ///< ring slots per block
  int chunk_kb = 32;       ///< KiB of weights per chunk (ring slot)
  int l2_wait = 4;         ///< chunks beyond the ring asked of L2 while a block waits for a dependency
  int span = 0;            ///< cached positions per attention split (0: no more items than SMs)
  /// Products' rows handed over by bulk stores and relaxed counter adds (faster); false: release
  /// adds, the hand-over whose ordering the PTX memory model states (the reference form).
  bool bulk_handover = true;
};

/// The plan asked for: automatic (the table of measured defaults), or one plan with its options.
struct DecodeRequest {
  bool automatic = true;
  PlanKind kind = PlanKind::separate;  ///< when not automatic
  SeparateOptions separate;
  ClusterOptions cluster;
  DataflowOptions dataflow;
};

/// What the table of defaults looks at.
struct PlanSituation {
  int sm_major = 9;  ///< compute capability of the GPU
  int batch = 1;
  int context = 0;   ///< longest prompt + generated tokens
  int hidden = 0;    ///< the model's hidden size
};

/// The table of measured defaults: the plans to try, in order; the engine runs the first that can
/// run this model on this GPU (a plan chosen by default that cannot steps aside; one asked for
/// fails with its reason).
std::vector<PlanKind> default_plans(const PlanSituation& s);

/// Parses `--variant`: '+'-separated words, a plan first (auto, separate, cluster, dataflow; none:
/// auto), then that plan's options and the common one (nopdl). A word that does not exist or does
/// not apply to the plan is one error naming the plan's valid options. CUDA graphs and sampling
/// are the flags --no-graphs and --top-k, not words.
struct VariantSettings {
  DecodeRequest plan;
  bool pdl = true;     ///< nopdl: no programmatic dependent launch (a correctness reference)
};
Result<VariantSettings> parse_variant(const std::string& variant);

/// The options words of each plan, for help and errors ("gemv, cublas").
std::string plan_option_words(PlanKind k);

}  // namespace jouleprof::llm
