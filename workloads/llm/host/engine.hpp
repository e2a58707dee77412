// What the benchmark drives: an inference engine for one model on one GPU. Implemented by the CUDA
// engine (workloads/llm/cuda, the jouleprof-llm binary) and by the simulated engine (a time model
// on the simulated GPU, so `jouleprof bench llm --device sim` runs without CUDA).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "decode_plan.hpp"
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
  DecodeRequest plan;               ///< the decode plan (decode_plan.hpp): automatic, or one with its options
  bool graphs = true;               ///< CUDA graphs for decode steps (off: a correctness reference)
  bool pdl = true;                  ///< programmatic dependent launch between decode kernels (sm_90)
  SamplingOptions sampling;         ///< greedy unless top_k > 1
  bool timeline = false;            ///< record when each block of each decode kernel starts, has its inputs, ends (diagnostic)
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

/// Applies --variant (decode_plan.hpp: a plan, its options, nopdl) to o.
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
