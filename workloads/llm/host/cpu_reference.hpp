// The reference forward pass: plain C++, float32 values, double accumulation, one token at a time
// through a KV cache. It defines what the CUDA engine must compute (tests compare the two).
#pragma once

#include <vector>

#include "model_config.hpp"
#include "weights.hpp"

namespace jouleprof::llm {

struct CpuOptions {
  /// Round intermediate activations to `dtype` where the CUDA engine stores them (normalised
  /// inputs, q/k/v, the KV cache, attention outputs, the SwiGLU product), for a tighter comparison.
  bool round_activations = false;
  DType dtype = DType::f32;
};

class CpuModel {
 public:
  CpuModel(LlmConfig c, HostWeights w, CpuOptions o = {});
  const LlmConfig& config() const { return c_; }
  /// Forgets every sequence; `max_context` positions per sequence.
  void reset(int sequences, int max_context);
  /// Appends `tokens` to sequence `seq` and returns their logits, [n, vocab] (all_logits) or the last row.
  Result<std::vector<float>> forward(int seq, const std::vector<int>& tokens, bool all_logits);
  /// Greedy generation: the prompt, then `gen` tokens; returns the generated tokens and the logits
  /// that chose each ([gen, vocab]).
  Result<std::vector<int>> generate(int seq, const std::vector<int>& prompt, int gen, std::vector<float>* logits);
  int length(int seq) const { return len_.at(static_cast<std::size_t>(seq)); }

  // Building blocks, public for tests.
  static void rmsnorm(const float* x, const float* w, int n, double eps, float* out);
  static void rope(float* v, int head_dim, int pos, const std::vector<float>& inv_freq);
  static float silu(float x);

 private:
  float r(float x) const;
  LlmConfig c_;
  HostWeights w_;
  CpuOptions o_;
  std::vector<float> inv_freq_;
  int max_ctx_ = 0;
  std::vector<int> len_;
  std::vector<std::vector<float>> k_, v_;  ///< per sequence: [layer][pos][kv_dim]
};

/// Index of the largest value (the first on ties), as the engine's sampler picks.
int argmax(const float* v, int n);
/// ||a - b|| / ||b|| over n values; NaN anywhere gives infinity.
double rel_l2(const float* a, const float* b, std::size_t n);

}  // namespace jouleprof::llm
