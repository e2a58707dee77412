// Model weights on the host (float32, rounded to the dtype the engine stores), their Hugging Face
// names and shapes, random seeded initialisation and loading from a checkpoint directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model_config.hpp"
#include "rng.hpp"

namespace jouleprof::llm {

class Checkpoint;

struct TensorSpec {
  std::string hf_name;
  std::vector<int64_t> shape;
  uint32_t rng_id = 0;
  bool norm = false;
  int layer = -1;               ///< -1: not a layer tensor
  LayerTensor kind = lt_count;  ///< for layer tensors
};
/// Every tensor of the model (the LM head only when not tied).
std::vector<TensorSpec> tensor_specs(const LlmConfig& c);

struct LayerWeights {
  std::vector<float> attn_norm, wq, wk, wv, wo, mlp_norm, wg, wu, wd;
  std::vector<float>& get(LayerTensor t);
  const std::vector<float>& get(LayerTensor t) const;
};

struct HostWeights {
  std::vector<float> embed, lm_head, final_norm;  ///< lm_head empty when tied to embed
  std::vector<LayerWeights> layers;
  const std::vector<float>& head() const { return lm_head.empty() ? embed : lm_head; }
  std::vector<float>& tensor(const TensorSpec& s);
};

/// The seeded random weights the CUDA engine generates on the GPU (matrices rounded to dtype).
HostWeights random_host_weights(const LlmConfig& c, uint64_t seed, DType d);
/// Reads every tensor of `c` from a checkpoint (matrices rounded to dtype). Errors name the tensor.
Result<HostWeights> load_host_weights(const LlmConfig& c, const Checkpoint& ck, DType d);
/// Opens DIR/config.json and DIR/*.safetensors.
Result<LlmConfig> load_checkpoint_config(const std::string& dir);
/// Writes config.json + model.safetensors (matrices in `d`, norm weights in float32).
Result<void> save_checkpoint(const std::string& dir, const LlmConfig& c, const HostWeights& w, DType d);

}  // namespace jouleprof::llm
