// The CPU float32 reference: building blocks with known answers and properties of the whole pass.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "host/cpu_reference.hpp"
#include "host/engine.hpp"
#include "host/model_config.hpp"
#include "host/numeric.hpp"
#include "host/weights.hpp"

using namespace jouleprof::llm;

TEST(LlmReference, RmsNormOfAKnownVector) {
  const float x[2] = {3.f, 4.f}, w[2] = {1.f, 2.f};
  float y[2];
  CpuModel::rmsnorm(x, w, 2, 0.0, y);
  const double r = std::sqrt(12.5);
  EXPECT_NEAR(y[0], 3 / r, 1e-6);
  EXPECT_NEAR(y[1], 8 / r, 1e-6);
}

TEST(LlmReference, RopeRotatesPairsAndKeepsRelativePositions) {
  const auto c = *builtin_config("tiny");
  std::vector<float> inv;
  for (double f : rope_inv_freq(c)) inv.push_back(static_cast<float>(f));
  std::vector<float> q(32), k(32);
  for (int i = 0; i < 32; ++i) {
    q[static_cast<std::size_t>(i)] = std::sin(1.3f * static_cast<float>(i)) + 0.1f;
    k[static_cast<std::size_t>(i)] = std::cos(0.7f * static_cast<float>(i)) - 0.2f;
  }
  auto q0 = q;
  CpuModel::rope(q0.data(), 32, 0, inv);
  EXPECT_EQ(q0, q);  // position 0: identity
  // Element i pairs with i + 16 (rotate_half), rotated by pos * inv_freq[i].
  auto q5 = q;
  CpuModel::rope(q5.data(), 32, 5, inv);
  const double a = 5.0 * static_cast<double>(inv[2]);
  const double q2 = q[2], q18 = q[18];
  EXPECT_NEAR(q5[2], q2 * std::cos(a) - q18 * std::sin(a), 1e-5);
  EXPECT_NEAR(q5[18], q18 * std::cos(a) + q2 * std::sin(a), 1e-5);
  auto dot_at = [&](int m, int n) {
    auto qa = q, kb = k;
    CpuModel::rope(qa.data(), 32, m, inv);
    CpuModel::rope(kb.data(), 32, n, inv);
    double s = 0;
    for (int i = 0; i < 32; ++i) s += static_cast<double>(qa[static_cast<std::size_t>(i)]) * static_cast<double>(kb[static_cast<std::size_t>(i)]);
    return s;
  };
  EXPECT_NEAR(dot_at(7, 3), dot_at(104, 100), 1e-4);  // depends on m - n only
  EXPECT_GT(std::fabs(dot_at(7, 3) - dot_at(7, 6)), 1e-3);
}

TEST(LlmReference, SiluValues) {
  EXPECT_FLOAT_EQ(CpuModel::silu(0.f), 0.f);
  EXPECT_NEAR(CpuModel::silu(2.f), 2.0 / (1.0 + std::exp(-2.0)), 1e-7);
}

TEST(LlmReference, IsCausalAndKeepsSequencesApart) {
  const auto c = *builtin_config("tiny");
  const auto w = random_host_weights(c, 3, DType::bf16);
  CpuModel m(c, w);
  m.reset(2, 32);
  const std::vector<int> a = {1, 2, 3, 4, 5, 6}, b = {1, 2, 3, 9, 9, 9};
  auto la = m.forward(0, a, true);
  auto lb = m.forward(1, b, true);
  ASSERT_TRUE(la && lb);
  const std::size_t V = static_cast<std::size_t>(c.vocab);
  // The first three positions see the same tokens: identical logits; the fourth differs.
  EXPECT_EQ(std::vector<float>(la->begin(), la->begin() + static_cast<long>(3 * V)),
            std::vector<float>(lb->begin(), lb->begin() + static_cast<long>(3 * V)));
  EXPECT_GT(rel_l2(la->data() + 3 * V, lb->data() + 3 * V, V), 1e-3);
  // Feeding the tokens one at a time through the cache gives the same last logits.
  CpuModel m2(c, w);
  m2.reset(1, 32);
  std::vector<float> last;
  for (int t : a) last = *m2.forward(0, {t}, false);
  EXPECT_LT(rel_l2(last.data(), la->data() + 5 * V, V), 1e-6);
  EXPECT_EQ(m.length(0), 6);
  EXPECT_FALSE(m.forward(0, {c.vocab}, false));  // outside the vocabulary
}

TEST(LlmReference, GroupedQueryAttentionEqualsRepeatedHeads) {
  // GQA with 2 KV heads for 4 query heads equals multi-head attention whose K/V projections
  // repeat each KV head for its group: query head h reads KV head h / 2.
  const auto c = *builtin_config("tiny");
  const auto w = random_host_weights(c, 11, DType::f32);
  auto mha = c;
  mha.kv_heads = c.heads;
  auto wm = w;
  const int hd = c.head_dim, H = c.hidden, g = c.group();
  for (auto& L : wm.layers) {
    std::vector<float> k(static_cast<std::size_t>(mha.kv_dim()) * H), v(k.size());
    for (int h = 0; h < c.heads; ++h) {
      for (int r = 0; r < hd; ++r) {
        for (int i = 0; i < H; ++i) {
          const std::size_t dst = (static_cast<std::size_t>(h) * hd + r) * H + i;
          const std::size_t src = (static_cast<std::size_t>(h / g) * hd + r) * H + i;
          k[dst] = L.wk[src];
          v[dst] = L.wv[src];
        }
      }
    }
    L.wk = k;
    L.wv = v;
  }
  CpuModel a(c, w), b(mha, wm);
  a.reset(1, 16);
  b.reset(1, 16);
  const std::vector<int> p = {10, 20, 30, 40, 50, 60, 70};
  auto la = a.forward(0, p, true), lb = b.forward(0, p, true);
  ASSERT_TRUE(la && lb);
  EXPECT_LT(rel_l2(la->data(), lb->data(), la->size()), 1e-6);
  // And a wrong grouping (h % kv_heads) is distinguishable.
  auto wrong = w;
  for (auto& L : wrong.layers) std::swap_ranges(L.wk.begin(), L.wk.begin() + hd * H, L.wk.begin() + hd * H);
  CpuModel d(c, wrong);
  d.reset(1, 16);
  EXPECT_GT(rel_l2(d.forward(0, p, true)->data(), la->data(), la->size()), 1e-3);
}

TEST(LlmReference, GreedyGenerationIsDeterministic) {
  const auto c = *builtin_config("tiny");
  const auto w = random_host_weights(c, 1234, DType::bf16);
  CpuModel m(c, w);
  m.reset(1, 64);
  std::vector<float> logits;
  auto toks = m.generate(0, random_prompt(c, 1, 0, 9), 6, &logits);
  ASSERT_TRUE(toks);
  ASSERT_EQ(toks->size(), 6u);
  ASSERT_EQ(logits.size(), 6u * static_cast<std::size_t>(c.vocab));
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ((*toks)[static_cast<std::size_t>(i)], argmax(logits.data() + static_cast<std::size_t>(i) * c.vocab, c.vocab));
  }
  CpuModel m2(c, w);
  m2.reset(1, 64);
  EXPECT_EQ(*m2.generate(0, random_prompt(c, 1, 0, 9), 6, nullptr), *toks);
  // Rounding the activations as the engine does moves the logits by bf16 rounding, no more.
  CpuModel r(c, w, CpuOptions{true, DType::bf16});
  r.reset(1, 64);
  std::vector<float> lr;
  ASSERT_TRUE(r.generate(0, random_prompt(c, 1, 0, 9), 1, &lr));
  const double e = rel_l2(lr.data(), logits.data(), static_cast<std::size_t>(c.vocab));
  EXPECT_GT(e, 1e-5);
  EXPECT_LT(e, 2e-2);
}

TEST(LlmReference, PromptsAndTokenFiles) {
  const auto c = *builtin_config("tiny");
  const auto p = random_prompt(c, 5, 2, 50);
  ASSERT_EQ(p.size(), 50u);
  for (int t : p) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, c.vocab);
  }
  EXPECT_EQ(prompt_token(c, 5, 2, 17), p[17]);
  EXPECT_NE(random_prompt(c, 5, 3, 50), p);
}

TEST(LlmReference, MatchesTransformersOnTheSameWeights) {
  // Golden logits from transformers 5.17 (LlamaForCausalLM, float32, CPU) on the GPU machine, for
  // the tiny model's seeded random weights exported with bf16 norm weights (run 1 of
  // docs/validation/bench-llm.md; workloads/llm/python/hf_compare.py wrote the file).
  std::ifstream in(JOULEPROF_LLM_FIXTURES "/golden_tiny_hf.json");
  ASSERT_TRUE(in.good());
  const auto g = nlohmann::json::parse(in);
  const auto c = *builtin_config("tiny");
  auto w = random_host_weights(c, g["seed"].get<uint64_t>(), DType::bf16);
  auto round_bf16 = [](std::vector<float>& v) {
    for (float& f : v) f = round_to(DType::bf16, f);
  };
  for (auto& L : w.layers) {
    round_bf16(L.attn_norm);
    round_bf16(L.mlp_norm);
  }
  round_bf16(w.final_norm);
  CpuModel m(c, w);
  m.reset(1, 64);
  const auto prompt = g["prompt"].get<std::vector<int>>();
  auto logits = m.forward(0, prompt, true);
  ASSERT_TRUE(logits);
  const auto positions = g["positions"].get<std::vector<int>>();
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const float* ours = logits->data() + static_cast<std::size_t>(positions[i]) * c.vocab;
    const auto ref = g["logits_head"][i].get<std::vector<float>>();
    EXPECT_LT(rel_l2(ours, ref.data(), ref.size()), 1e-5) << "position " << positions[i];
    EXPECT_EQ(argmax(ours, c.vocab), g["argmax"][i].get<int>());
  }
  // A reference that got the rope scaling wrong would not match.
  auto c2 = c;
  c2.rope.llama3 = false;
  CpuModel m2(c2, w);
  m2.reset(1, 64);
  auto l2 = m2.forward(0, prompt, true);
  const auto ref = g["logits_head"][2].get<std::vector<float>>();
  EXPECT_GT(rel_l2(l2->data() + 22 * static_cast<std::size_t>(c.vocab), ref.data(), ref.size()), 1e-3);
}
