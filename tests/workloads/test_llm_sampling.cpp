// Top-k sampling: the host twin of the CUDA sampling kernel (workloads/llm/host/sampling.hpp),
// which `jouleprof-llm check` uses to verify every sampled token on the GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "tiny_sim_bench.hpp"
#include "jouleprof/workloads/bench_llm.hpp"
#include "host/engine.hpp"
#include "host/sampling.hpp"

using namespace jouleprof::llm;

TEST(LlmSampling, UniformIsACounterInUnitInterval) {
  double sum = 0;
  for (int step = 0; step < 20000; ++step) {
    const float u = sample_uniform(7, 3, step);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += static_cast<double>(u);
    EXPECT_EQ(u, sample_uniform(7, 3, step));  // the same draw when a step is replayed
  }
  EXPECT_NEAR(sum / 20000, 0.5, 0.01);
  EXPECT_NE(sample_uniform(7, 3, 5), sample_uniform(7, 4, 5));  // sequences draw independently
  EXPECT_NE(sample_uniform(7, 3, 5), sample_uniform(8, 3, 5));
}

TEST(LlmSampling, TopOneIsArgmaxAndTiesPreferSmallerIds) {
  const std::vector<float> l{0.5f, 2.0f, -1.0f, 2.0f, 1.9f};
  EXPECT_EQ(top_k_draw(l.data(), 5, 1, 1.0f, 0.99f).token, 1);
  // k = 2 keeps the two 2.0 logits (ids 1 and 3, in that order), each with probability 1/2.
  EXPECT_EQ(top_k_draw(l.data(), 5, 2, 1.0f, 0.49f).token, 1);
  EXPECT_EQ(top_k_draw(l.data(), 5, 2, 1.0f, 0.51f).token, 3);
  const TopKDraw edge = top_k_draw(l.data(), 5, 2, 1.0f, 0.5f + 1e-6f);
  EXPECT_LT(edge.margin, 1e-5);
  EXPECT_EQ(edge.neighbour, 1);
}

TEST(LlmSampling, FrequenciesFollowTheTruncatedSoftmax) {
  const std::vector<float> l{1.0f, 3.0f, 0.0f, 2.5f, 2.0f, -4.0f};
  const int k = 3;
  const float temp = 0.7f;
  // Expected: softmax of {3.0, 2.5, 2.0} / 0.7 over ids {1, 3, 4}; nothing else is ever drawn.
  const double w[3] = {1.0, std::exp(-0.5 / 0.7), std::exp(-1.0 / 0.7)};
  const double total = w[0] + w[1] + w[2];
  std::map<int, int> n;
  const int draws = 60000;
  for (int i = 0; i < draws; ++i) ++n[top_k_draw(l.data(), 6, k, temp, sample_uniform(11, 0, i)).token];
  ASSERT_EQ(n.size(), 3u);
  EXPECT_NEAR(n[1] / double(draws), w[0] / total, 0.01);
  EXPECT_NEAR(n[3] / double(draws), w[1] / total, 0.01);
  EXPECT_NEAR(n[4] / double(draws), w[2] / total, 0.01);
}

TEST(LlmSampling, KLargerThanVocabularyUsesEveryToken) {
  const std::vector<float> l{0.0f, 0.0f};
  EXPECT_EQ(top_k_draw(l.data(), 2, 40, 1.0f, 0.75f).token, 1);
}

TEST(LlmSampling, OptionsAreValidatedAndDescribed) {
  SamplingOptions s;
  EXPECT_TRUE(s.greedy());
  EXPECT_EQ(describe_sampling(s), "greedy");
  s.top_k = 40;
  s.temperature = 0.8f;
  EXPECT_FALSE(s.greedy());
  EXPECT_TRUE(validate_sampling(s));
  EXPECT_EQ(describe_sampling(s), "top-k 40, temperature 0.8, seed 1");
  s.top_k = kMaxTopK + 1;
  auto bad = validate_sampling(s);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("--top-k"), std::string::npos);
  s.top_k = 5;
  s.temperature = NAN;
  EXPECT_FALSE(validate_sampling(s));
  s.temperature = 0.0f;  // temperature 0 is greedy
  EXPECT_TRUE(s.greedy());
}

TEST(LlmSampling, TopKIsAFlagNotAVariantWord) {
  EngineOptions e;
  EXPECT_FALSE(apply_variant("separate+gemv+topk40", e));  // issue 31: --top-k is its one spelling
  EXPECT_EQ(e.sampling.top_k, 0);
  EXPECT_FALSE(apply_variant("topk", e));
  EXPECT_FALSE(apply_variant("topkx", e));
}

TEST(LlmSampling, SimulatedBenchRecordsTheSamplingAndRefusesABadK) {
  BenchOptions o = tiny_sim_bench();
  o.top_k = 40;
  auto r = run_bench(o, sim_engine_factory(), nullptr);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->llm["points"][0]["sampling"], "top-k 40, temperature 1, seed 1234");
  EXPECT_NE(r->llm["points"][0]["variant"].get<std::string>().find("topk40"), std::string::npos);
  o.top_k = kMaxTopK + 1;
  auto bad = run_bench(o, sim_engine_factory(), nullptr);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("--top-k"), std::string::npos);
}
