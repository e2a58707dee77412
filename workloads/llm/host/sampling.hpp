// Top-k sampling shared by the CUDA engine's kernel and the host-side check: the same uniform
// number for (seed, sequence, step) on both sides, and the same candidate order — larger logit
// first, then the smaller token id — so a sampled token can be verified from the logits alone.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "rng.hpp"

namespace jouleprof::llm {

/// Largest k the CUDA sampling kernel handles (its candidates live in shared memory).
inline constexpr int kMaxTopK = 256;

struct SamplingOptions {
  int top_k = 0;              ///< 0 or 1: greedy (argmax)
  float temperature = 1.0f;   ///< softmax temperature over the k candidates; <= 0: greedy
  uint64_t seed = 1;          ///< with (sequence, step) picks the uniform number of each draw
  bool greedy() const { return top_k <= 1 || temperature <= 0.0f; }
};

/// Uniform in [0, 1) with 24 random bits for draw `step` (0: the token chosen by prefill) of
/// sequence `seq`: a counter, so rewinding and replaying a step draws the same number.
JP_HD float sample_uniform(uint64_t seed, int seq, int step) {
  const uint64_t h = mix64(mix64(seed ^ 0x5851F42D4C957F2Dull) + (static_cast<uint64_t>(seq) << 32) +
                           static_cast<uint32_t>(step));
  return static_cast<float>(static_cast<uint32_t>(h >> 40)) * (1.0f / 16777216.0f);
}

/// What the host reference decides for one row of logits.
struct TopKDraw {
  int token = -1;
  /// Distance of the draw from the nearest cumulative-probability boundary (as a fraction of the
  /// total): a device summing in another order may pick the neighbour when this is tiny.
  double margin = 1.0;
  int neighbour = -1;  ///< the token on the other side of that boundary
};

/// Host reference of the kernel's rule: the k largest logits (ties: smaller id first), softmax at
/// `temperature` relative to the largest, the first candidate whose cumulative weight exceeds
/// u × total.
inline TopKDraw top_k_draw(const float* logits, int vocab, int k, float temperature, float u) {
  std::vector<int> idx(static_cast<size_t>(vocab));
  for (int i = 0; i < vocab; ++i) idx[static_cast<size_t>(i)] = i;
  k = std::min(k, vocab);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  std::vector<double> w(static_cast<size_t>(k));
  double total = 0;
  for (int i = 0; i < k; ++i) {
    const double gap = static_cast<double>(logits[idx[static_cast<size_t>(i)]]) - static_cast<double>(logits[idx[0]]);
    w[static_cast<size_t>(i)] = std::exp(gap / static_cast<double>(temperature));
    total += w[static_cast<size_t>(i)];
  }
  const double target = static_cast<double>(u) * total;
  TopKDraw d;
  double cum = 0;
  for (int i = 0; i < k; ++i) {
    const double lo = cum;
    cum += w[static_cast<size_t>(i)];
    if (target < cum || i == k - 1) {
      d.token = idx[static_cast<size_t>(i)];
      const double to_lo = i > 0 ? (target - lo) / total : 1.0, to_hi = i < k - 1 ? (cum - target) / total : 1.0;
      d.margin = std::min(to_lo, to_hi);
      d.neighbour = to_lo < to_hi ? (i > 0 ? idx[static_cast<size_t>(i - 1)] : -1) : (i < k - 1 ? idx[static_cast<size_t>(i + 1)] : -1);
      break;
    }
  }
  return d;
}

}  // namespace jouleprof::llm
