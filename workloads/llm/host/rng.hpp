// Seeded random weights, identical on the CPU and the GPU: a counter-based hash of
// (seed, tensor id, element index) gives a uniform value in [-1, 1) with 24 random bits, exactly
// representable in float, so the CPU reference and the CUDA engine see the same numbers.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define JP_HD __host__ __device__ __forceinline__
#else
#define JP_HD inline
#endif

namespace jouleprof::llm {

JP_HD uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Uniform in [-1, 1).
JP_HD float rand_uniform(uint64_t seed, uint32_t tensor, uint64_t index) {
  const uint64_t h = mix64(mix64(seed * 0x100000001B3ull + tensor) + index);
  return static_cast<float>(static_cast<uint32_t>(h >> 40)) * (1.0f / 8388608.0f) - 1.0f;
}

/// Tensor ids of the random initialisation (per layer: base + kind).
enum TensorKind : uint32_t { t_embed = 1, t_lm_head = 2, t_final_norm = 3 };
enum LayerTensor : uint32_t { lt_attn_norm = 0, lt_q, lt_k, lt_v, lt_o, lt_mlp_norm, lt_gate, lt_up, lt_down, lt_count };
JP_HD uint32_t layer_tensor_id(int layer, LayerTensor t) { return 16u + static_cast<uint32_t>(layer) * 16u + t; }

/// Value of element i of a random tensor: matrices uniform with standard deviation `std`
/// (half-width std*sqrt(3)), norm weights 1 + 0.1*u (not exactly 1, so a missing scale shows).
JP_HD float random_weight(uint64_t seed, uint32_t tensor, uint64_t i, bool norm, float std) {
  const float u = rand_uniform(seed, tensor, i);
  return norm ? 1.0f + 0.1f * u : u * (std * 1.7320508f);
}

}  // namespace jouleprof::llm
