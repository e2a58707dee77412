// Built-in model builders: the networks people ask about, as primitive-op graphs (the ops an
// eager framework runs: PyTorch/torchvision/transformers definitions), plus single-op
// micro-graphs used for calibration ("gemm:MxNxK", "copy:N" ...).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "jouleprof/estimate/graph.hpp"

namespace jouleprof::estimate {

struct ModelOptions {
  int64_t batch = 1;
  DType dtype = DType::bf16;
  std::string phase = "prefill";  ///< LLMs: "prefill" (prompt tokens) or "decode" (one token)
  int64_t prompt = 512;           ///< LLM prefill: tokens per sequence
  int64_t context = 1024;         ///< LLM decode: tokens already in the KV cache
  int64_t seq = 128;              ///< BERT / LSTM sequence length
  int64_t image = 224;            ///< CNN / ViT input resolution
  /// LLM decode: append to the KV cache by concatenation (HF DynamicCache: the whole cache is
  /// copied every step) instead of an in-place write of the new token.
  bool kv_concat = false;
  /// LLM prefill: compute logits for every prompt token instead of the last one only.
  bool all_logits = false;
};

struct ModelInfo {
  std::string name;
  std::string description;
  bool llm = false;
};

/// Every built-in model (for --list-models), micro-graph forms last.
const std::vector<ModelInfo>& model_catalog();

/// Builds a model by name; unknown names get an error that suggests close ones.
Result<Graph> build_model(std::string_view name, const ModelOptions& opt);

/// Llama-architecture decoder configuration.
struct LlamaConfig {
  std::string name;
  int64_t hidden = 2048, intermediate = 8192, layers = 16, heads = 32, kv_heads = 8, head_dim = 64;
  int64_t vocab = 128256;
  bool tied_embeddings = true;
};
Result<LlamaConfig> llama_config(std::string_view name);
Result<Graph> build_llama(const LlamaConfig& cfg, const ModelOptions& opt);

/// Edit-distance suggestions ("did you mean") among candidates, closest first.
std::vector<std::string> closest_names(std::string_view name, const std::vector<std::string>& candidates,
                                       std::size_t max = 3);

}  // namespace jouleprof::estimate
