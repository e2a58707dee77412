// What the benchmark drives: an inference engine for one model on one GPU. Implemented by the CUDA
// engine (workloads/llm/cuda, the jouleprof-llm binary) and by the simulated engine (a time model
// on the simulated GPU, so `jouleprof bench llm --device sim` runs without CUDA).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "model_config.hpp"
#include "sampling.hpp"

namespace jouleprof::llm {

/// The pieces of one decode step, in the order they run (each is one or a few kernels).
enum class Component { attn_qkv, attn_core, attn_out, mlp_gate_up, mlp_down, lm_head, embed, count };
constexpr int kComponentCount = static_cast<int>(Component::count);
/// The components each layer runs, in the order of a decode step.
inline constexpr Component kLayerComponents[] = {Component::attn_qkv, Component::attn_core, Component::attn_out,
                                                 Component::mlp_gate_up, Component::mlp_down};
const char* component_name(Component c);
const char* component_description(Component c);
/// Runs once per layer (else once per step).
bool component_per_layer(Component c);
/// Which group of the breakdown it belongs to: attention, mlp, output, embedding.
const char* component_group(Component c);

struct RunShape {
  int batch = 1;
  std::vector<int> prompt_lens;                  ///< one per sequence
  int gen = 16;                                  ///< tokens generated per sequence (the first by prefill)
  std::vector<std::vector<int>> prompt_tokens;   ///< explicit prompts (else seeded random ids)
  uint64_t seed = 1;
  int max_context() const;
};

struct EngineOptions {
  std::string model = "tiny";       ///< built-in name (ignored when weights_dir is set)
  std::string weights_dir;          ///< Hugging Face checkpoint directory
  DType dtype = DType::bf16;
  uint64_t seed = 1234;             ///< random weights
  int device = 0;                   ///< CUDA device ordinal
  int chunk_tokens = 8192;          ///< most prompt tokens per prefill pass
  double attn_budget_bytes = 1 << 30;  ///< attention scores per prefill pass
  std::string decode_path = "auto"; ///< auto | fused (GEMV kernels) | gemm (cuBLAS)
  bool graphs = true;               ///< CUDA graphs for decode steps
  bool pdl = true;                  ///< programmatic dependent launch between decode kernels
  int gemv_blocks_per_sm = 0;       ///< fused GEMV grid (0: 1 with pdl, else as many as fit)
  int gemv_unroll = 8;              ///< 16-byte loads in flight per lane and row at batch 1 (4 or 8)
  int gemv_prefetch = 512;          ///< elements of each first row prefetched to L2 (-1: 0 with PDL, else 2048)
  int gemv_ksplit_down = 0;         ///< batch-1 down projection: warps per row pair, each a slice of K (1 or 2; 0: 1)
  bool mega = false;                ///< batch-1 decode step as one persistent kernel (fused path, greedy)
  int mega_prefetch_mb = -1;        ///< mega: MB of each phase's weights prefetched to L2 before its barrier (-1: first row pairs whole)
  bool flow = false;                ///< batch-1 decode step as one dataflow persistent kernel (sm_90; fused path)
  /// Batch-1 decode: the dataflow kernel (flowr+flowb+flows4+flowi4) where it was measured faster than the
  /// separate kernels (CudaEngine::flow_by_default says where), else those. Every variant word that
  /// names a decode form (fused, nofqa, flow..., u8 ...) turns it off: the form named is run.
  bool flow_auto = true;
  int flow_slots = 0;               ///< flow: shared-memory ring slots per block (0: as many as fit)
  int flow_chunk_kb = 32;           ///< flow: KiB of weights per chunk (ring slot)
  int flow_l2_ahead = 0;            ///< flow: chunks asked of L2 ahead of the ring (0: none)
  int flow_l2_idle = 0;             ///< flow: chunks asked of L2 beyond the ring while a block waits for a dependency
  int flow_poll_ns = 0;             ///< flow: pause between reads of a dependency counter (0: none)
  int flow_ring_span = -1;          ///< flow: cached K/V rows through the ring, N positions per split (0: auto; -1: off)
  int flow_kv_prefetch = 0;         ///< flow ring attention: K/V asked of L2 at the start (1 normal, 2 evict-last)
  bool flow_bulk_rows = false;      ///< flow: products' rows handed over by bulk stores, without a release fence
  bool flow_last_combines = false;  ///< flowr+flowb: the last split to finish combines (as with more items than SMs)
  bool flow_lm = false;             ///< batch-1 decode: the LM head as a launch of the dataflow kernel (sm_90)
  bool flow_mlp = false;            ///< batch-1 decode: each layer's gate/up and down as one launch of it (sm_90)
  bool prefetch_after_attention = false;  ///< fused decode: the output projection's weights to L2 while attention runs
  int attn_chunk = 0;               ///< decode attention: positions per split block (0: enough splits to fill the GPU twice)
  int l2_ahead_mb = 0;              ///< fused decode: MB of the next matrices prefetched to L2 on a side branch (0: off)
  int fused_max_batch = 2;          ///< decode_path auto: fused GEMV up to this batch
  std::string prefill_attention = "cublas";  ///< cublas (scores materialised) | flash (tensor-core kernel)
  SamplingOptions sampling;         ///< greedy unless top_k > 1
  /// Batch-1 fused decode: QKV projection and attention as one kernel of thread block clusters.
  /// -1 (default): where the GPU (sm_90) and the model allow it and the context is at most 64
  /// positions per CTA (512 with 8-CTA clusters), else the separate kernels; 1: asked for (an error
  /// where it cannot run; any context); 0: off.
  int fused_attention = -1;
  int fused_attention_cluster = 0;  ///< fqa: CTAs per KV head (0: the largest of 16, 8, 4, 2 whose clusters all fit at once)
  int fused_attention_threads = 0;  ///< fqa: threads per CTA, 256 or 512 (0: 512)
  int fused_attention_pre = -1;     ///< fqa: ring stages requested before the wait (-1: all)
  int fused_attention_stages = 0;   ///< fqa: weight ring stages per warp (0: 2; fewer where shared memory does not allow)
  bool timeline = false;            ///< fused decode: record when each block of each kernel starts, has its inputs, ends (diagnostic)
};

/// One decode kernel of the last step, from the diagnostic timeline: microseconds from the step's
/// first block start to its first and last block start, the last block whose inputs were ready,
/// and its last block end.
struct KernelSpan {
  std::string name;  ///< component and layer, e.g. "attn_core 3"
  int blocks = 0;
  double first_start_us = 0, last_start_us = 0, last_ready_us = 0, last_end_us = 0;
  /// The kernel's own points, latest over blocks (fqa: input normed, rows done); -1: not reached.
  std::vector<double> marks_us;
};

class LlmEngine {
 public:
  virtual ~LlmEngine() = default;
  virtual const LlmConfig& config() const = 0;
  virtual DType dtype() const = 0;
  virtual std::string device_name() const = 0;
  virtual bool simulated() const { return false; }
  /// Decode path and options in words ("fused GEMV, CUDA graph").
  virtual std::string describe() const = 0;

  /// Allocates the KV cache and buffers for this shape and captures the decode graphs.
  virtual Result<void> prepare(const RunShape& s) = 0;
  /// Runs every prompt through the model (overwriting the cache) and picks the first token.
  virtual void prefill() = 0;
  /// `steps` more decode steps (at most gen-1 after a prefill or rewind).
  virtual void decode(int steps) = 0;
  /// Back to the state right after prefill (the first generated token, positions = prompt lengths).
  virtual void rewind() = 0;
  /// Isolation: component c of `layer` (-1: every layer in turn) repeated at least `reps` times,
  /// at the current decode state, without advancing it. Returns the repetitions run.
  virtual int component(Component c, int layer, int reps) = 0;
  /// Isolation: every kernel of one decode layer, at least `reps` times. Returns the repetitions.
  virtual int layer_block(int layer, int reps) = 0;
  /// Isolation: a whole decode step without its token bookkeeping. Returns the repetitions.
  virtual int step(int reps) = 0;
  /// Waits for the GPU.
  virtual void synchronize() = 0;
  /// The first error met since creation (CUDA or cuBLAS call that failed), if any.
  virtual Result<void> status() { return {}; }
  /// Tokens generated so far, [batch][n].
  virtual Result<std::vector<std::vector<int>>> generated() = 0;
  /// Logits that chose the last token, [batch, vocab].
  virtual Result<std::vector<float>> last_logits() = 0;
  /// The diagnostic timeline of the last decode step (empty unless EngineOptions::timeline).
  virtual std::vector<KernelSpan> timeline() { return {}; }
  /// NVTX ranges around the benchmark's windows (no-op without CUDA).
  virtual void range_push(const std::string& name) { (void)name; }
  virtual void range_pop() {}
};

/// Applies an engine variant: '+'-separated words fused|gemm|auto, pdl|nopdl, nograph, bps1|bps2,
/// u4|u8, nopf|pfN, cublas-pf|flash-pf, fusedN (auto fused up to batch N), topkN (top-k sampling),
/// aheadN (N MB of the next matrices prefetched to L2 during the attention core and down projection),
/// chunkN (N positions per decode-attention split), pfo (output projection prefetched to L2 during
/// the attention core), mega (the batch-1 decode step as one persistent kernel), megapfN (its L2 prefetch per phase, MB),
/// fqa / fqaN / nofqa (batch 1: QKV projection and attention in one kernel of thread block clusters, N CTAs
/// each; on by default where it applies), fqsN (its weight ring stages per warp), fqpN (of
/// them, those requested before the wait), fqt256 / fqt512 (its
/// threads per CTA), ksd1 / ksd2 (the batch-1 down projection's GEMV with 1 or 2 warps per row pair),
/// flow / noflow (the batch-1 decode step as one dataflow persistent kernel, sm_90), flowsN (its ring
/// slots per block), flowcN (KiB per chunk), flowaN (chunks asked of L2 ahead of the ring), flowpN (ns between polls of a counter), flowr / flowrN
/// (its attention with the cached K/V rows streamed through the ring, N positions per split), flowkN (ring
/// attention's K/V asked of L2 at the start: 1 normal priority, 2 evict-last), flowlm / flowmlp
/// (only the LM head, or each layer's gate/up and down projections, through the dataflow kernel).
/// Empty: no change.
Result<void> apply_variant(const std::string& variant, EngineOptions& o);

/// Refuses a top-k above kMaxTopK, a negative k, or a temperature that is not a finite number.
Result<void> validate_sampling(const SamplingOptions& s);
/// "greedy" or "top-k 40, temperature 0.8, seed 1".
std::string describe_sampling(const SamplingOptions& s);

/// Token i of sequence `seq`'s seeded random prompt (the same on every engine).
int prompt_token(const LlmConfig& c, uint64_t seed, int seq, int i);
std::vector<int> random_prompt(const LlmConfig& c, uint64_t seed, int seq, int len);
/// Parses a token-id file: one sequence per line, ids separated by spaces or commas.
Result<std::vector<std::vector<int>>> read_token_file(const std::string& path, int vocab);

}  // namespace jouleprof::llm
