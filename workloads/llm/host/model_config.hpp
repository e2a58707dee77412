// Llama-architecture model configurations: the built-in ones (tiny, Llama-3.2-1B/3B, Llama-3.1-8B),
// Hugging Face config.json parsing, rotary frequencies with Llama-3 scaling, and the byte / FLOP /
// memory arithmetic that the speed and energy figures are divided by.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace jouleprof::llm {

enum class DType { bf16, f16, f32 };
const char* to_string(DType d);
Result<DType> dtype_from_string(const std::string& s);
inline int dtype_bytes(DType d) { return d == DType::f32 ? 4 : 2; }

struct RopeScaling {
  bool llama3 = false;        ///< rope_type "llama3"; otherwise plain RoPE
  double factor = 1;
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  int original_max_position = 8192;
};

struct LlmConfig {
  std::string name;           ///< "llama-3.2-1b", or the checkpoint directory's name
  int vocab = 0;
  int hidden = 0;
  int intermediate = 0;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  double rope_theta = 10000;
  RopeScaling rope;
  double rms_eps = 1e-5;
  bool tie_embeddings = false;
  int max_position = 131072;
  double init_std = 0.02;     ///< random weights: uniform with this standard deviation

  int q_dim() const { return heads * head_dim; }
  int kv_dim() const { return kv_heads * head_dim; }
  int qkv_dim() const { return q_dim() + 2 * kv_dim(); }
  int group() const { return heads / kv_heads; }
  /// Elements of the matrices one token's forward pass multiplies by (all layers + LM head).
  int64_t matmul_params() const;
  int64_t layer_matmul_params() const;
  /// All parameters (embedding counted once when tied).
  int64_t total_params() const;
  Result<void> validate() const;
};

/// Built-in configurations. Names: tiny, llama-3.2-1b, llama-3.2-3b, llama-3.1-8b.
Result<LlmConfig> builtin_config(const std::string& name);
std::vector<std::string> builtin_names();

/// A Hugging Face config.json (LlamaForCausalLM / model_type llama).
Result<LlmConfig> parse_hf_config(const std::string& json_text, const std::string& name);
/// The config.json text for a configuration (what HF's LlamaConfig reads back).
std::string to_hf_config_json(const LlmConfig& c, DType dtype);

/// Rotary inverse frequencies, head_dim/2 of them, with Llama-3 scaling as transformers computes it.
std::vector<double> rope_inv_freq(const LlmConfig& c);

/// Bytes and operations of the work, for speeds and bandwidths.
struct WorkModel {
  /// Weight bytes read by one decode step (all layer matrices, norms, LM head, one embedding row per sequence).
  static double decode_weight_bytes(const LlmConfig& c, DType d, int batch);
  /// KV-cache bytes one decode step reads and writes for one sequence whose new token sits at `pos`.
  static double decode_kv_bytes(const LlmConfig& c, DType d, int pos);
  /// FLOPs of a prefill of `len` tokens of one sequence (matmuls + causal attention + one LM-head row).
  static double prefill_flops(const LlmConfig& c, int len);
  /// FLOPs of one decode step for one sequence at position pos.
  static double decode_flops(const LlmConfig& c, int pos);
};

/// GPU memory the CUDA engine needs.
struct MemoryPlan {
  double weights = 0, kv_cache = 0, activations = 0, workspace = 0;
  double total() const { return weights + kv_cache + activations + workspace; }
  std::string describe() const;  ///< "61.3 GiB (weights 15.0, KV cache 38.7, activations 7.6, workspace 0.1)"
};
/// `chunk_tokens`: most prompt tokens one prefill pass processes; `attn_budget`: bytes of attention scores.
MemoryPlan plan_memory(const LlmConfig& c, DType d, int batch, int max_context, int chunk_tokens, double attn_budget);

}  // namespace jouleprof::llm
