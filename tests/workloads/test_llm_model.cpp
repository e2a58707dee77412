// Model configurations, rounding, rotary frequencies, safetensors and checkpoints.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "host/cpu_reference.hpp"
#include "host/model_config.hpp"
#include "host/numeric.hpp"
#include "host/safetensors.hpp"
#include "host/weights.hpp"

using namespace jouleprof::llm;
namespace fs = std::filesystem;

namespace {
fs::path tmp(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("jp-llm-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}
}  // namespace

TEST(LlmConfig, BuiltinParameterCountsMatchThePublishedModels) {
  // Published parameter counts of the Hugging Face checkpoints.
  EXPECT_EQ(builtin_config("llama-3.2-1b")->total_params(), 1235814400);
  EXPECT_EQ(builtin_config("llama-3.2-3b")->total_params(), 3212749824);
  EXPECT_EQ(builtin_config("llama-3.1-8b")->total_params(), 8030261248);
  for (const auto& n : builtin_names()) {
    auto c = builtin_config(n);
    ASSERT_TRUE(c) << n;
    EXPECT_TRUE(c->validate()) << n;
  }
  auto bad = builtin_config("llama-9");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("llama-3.1-8b"), std::string::npos);
}

TEST(LlmConfig, DecodeBytesAreTheWeightsPlusTheCache) {
  const auto c = *builtin_config("llama-3.1-8b");
  // 7.50e9 matrix elements (layers + LM head) at 2 bytes, norms in fp32, one embedding row.
  const double w = WorkModel::decode_weight_bytes(c, DType::bf16, 1);
  EXPECT_NEAR(w, 2.0 * (8030261248.0 - 525336576.0 - 266240.0) + 4.0 * 266240 + 2.0 * 4096, 1.0);
  // KV cache: 32 layers x 8 heads x 128 x (K, V) x 2 bytes = 128 KiB per position.
  EXPECT_DOUBLE_EQ(WorkModel::decode_kv_bytes(c, DType::bf16, 99), 131072.0 * 101);
  EXPECT_NEAR(WorkModel::prefill_flops(c, 1), 2.0 * (6979321856.0 + 525336576.0) + 4.0 * 32 * 4096, 1.0);
}

TEST(LlmConfig, MemoryPlanSaysWhatIsNeeded) {
  const auto c = *builtin_config("llama-3.1-8b");
  const auto p = plan_memory(c, DType::bf16, 32, 8192, 8192, 1 << 30);
  EXPECT_NEAR(p.kv_cache, 131072.0 * 32 * 8192, 1);
  EXPECT_GT(p.weights, 16.0e9);
  EXPECT_NE(p.describe().find("KV cache 32.0"), std::string::npos) << p.describe();
}

TEST(LlmConfig, Llama3RopeScalingMatchesTransformers) {
  // Values from transformers' _compute_llama3_parameters (in float64).
  const auto f = rope_inv_freq(*builtin_config("llama-3.1-8b"));
  ASSERT_EQ(f.size(), 64u);
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_NEAR(f[20], 0.016560440080994446, 1e-15);
  EXPECT_NEAR(f[40] / 3.428102195952591e-05, 1.0, 1e-12);
  EXPECT_NEAR(f[45] / 1.2297638677963614e-05, 1.0, 1e-12);
  EXPECT_NEAR(f[50] / 4.411534674558404e-06, 1.0, 1e-12);
  EXPECT_NEAR(f[63] / 3.068925988914511e-07, 1.0, 1e-12);
  const auto t = rope_inv_freq(*builtin_config("tiny"));
  EXPECT_NEAR(t[3] / 0.06430987242772707, 1.0, 1e-12);  // the smoothed band
  EXPECT_NEAR(t[15] / 2.2228492625486534e-05, 1.0, 1e-12);
  auto plain = *builtin_config("tiny");
  plain.rope.llama3 = false;
  EXPECT_NEAR(rope_inv_freq(plain)[15], std::pow(10000.0, -30.0 / 32), 1e-18);
}

TEST(LlmConfig, ParsesHuggingFaceConfigs) {
  const std::string llama32 = R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
    "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32, "num_hidden_layers": 16,
    "num_key_value_heads": 8, "head_dim": 64, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "tie_word_embeddings": true, "vocab_size": 128256, "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16"})";
  auto c = parse_hf_config(llama32, "Llama-3.2-1B");
  ASSERT_TRUE(c) << c.error().message;
  const auto b = *builtin_config("llama-3.2-1b");
  EXPECT_EQ(c->total_params(), b.total_params());
  EXPECT_EQ(rope_inv_freq(*c), rope_inv_freq(b));
  EXPECT_TRUE(c->tie_embeddings);
  // transformers 5 writes rope settings as rope_parameters.
  auto v5 = parse_hf_config(R"({"model_type": "llama", "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
    "rope_parameters": {"rope_type": "llama3", "rope_theta": 20000.0, "factor": 8.0, "low_freq_factor": 1.0,
                        "high_freq_factor": 4.0, "original_max_position_embeddings": 64}})", "x");
  ASSERT_TRUE(v5) << v5.error().message;
  EXPECT_EQ(v5->head_dim, 16);
  EXPECT_DOUBLE_EQ(v5->rope_theta, 20000.0);
  EXPECT_TRUE(v5->rope.llama3);
  // Round trip through our own writer.
  auto rt = parse_hf_config(to_hf_config_json(b, DType::bf16), "rt");
  ASSERT_TRUE(rt);
  EXPECT_EQ(rope_inv_freq(*rt), rope_inv_freq(b));
}

TEST(LlmConfig, ReadsTheConfigTransformers5Writes) {
  // config.json as transformers 5.17 saved it on the GPU machine (docs/validation/bench-llm.md).
  const std::string hf = R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 1, "dtype": "bfloat16", "eos_token_id": 2, "head_dim": 32, "hidden_act": "silu", "hidden_size": 192,
    "initializer_range": 0.02, "intermediate_size": 352, "max_position_embeddings": 4096, "mlp_bias": false,
    "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
    "pad_token_id": null, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_parameters": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                        "original_max_position_embeddings": 64, "rope_theta": 10000.0, "rope_type": "llama3"},
    "tie_word_embeddings": false, "transformers_version": "5.17.0", "use_cache": true, "vocab_size": 1000})";
  auto c = parse_hf_config(hf, "hf");
  ASSERT_TRUE(c) << c.error().message;
  const auto tiny = *builtin_config("tiny");
  EXPECT_EQ(c->total_params(), tiny.total_params());
  EXPECT_EQ(rope_inv_freq(*c), rope_inv_freq(tiny));
}

TEST(LlmConfig, RejectsWhatItCannotRun) {
  auto mistral = parse_hf_config(R"({"architectures": ["MistralForCausalLM"], "model_type": "mistral"})", "m");
  ASSERT_FALSE(mistral);
  EXPECT_NE(mistral.error().message.find("MistralForCausalLM"), std::string::npos);
  auto missing = parse_hf_config(R"({"model_type": "llama", "vocab_size": 10})", "m");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("hidden_size"), std::string::npos);
  auto yarn = parse_hf_config(R"({"model_type": "llama", "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 1, "num_attention_heads": 4, "rope_scaling": {"rope_type": "yarn", "factor": 4}})", "m");
  ASSERT_FALSE(yarn);
  EXPECT_NE(yarn.error().message.find("yarn"), std::string::npos);
  auto gqa = parse_hf_config(R"({"model_type": "llama", "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 3})", "m");
  ASSERT_FALSE(gqa);
  EXPECT_FALSE(parse_hf_config("{not json", "m"));
}

TEST(LlmNumeric, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-8f), 0x3F80);               // tie: even stays
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-7f + 0x1p-8f), 0x3F82);     // tie: odd rounds up
  EXPECT_EQ(float_to_bf16_bits(-2.5f), 0xC020);
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7C00);                     // rounds to infinity
  EXPECT_EQ(float_to_f16_bits(0x1p-24f), 0x0001);                     // smallest subnormal
  EXPECT_EQ(float_to_f16_bits(0x1p-25f), 0x0000);                     // tie to even: zero
  EXPECT_EQ(float_to_f16_bits(1.0f + 0x1p-11f), 0x3C00);              // tie: even
  EXPECT_EQ(float_to_f16_bits(1.0f + 3 * 0x1p-11f), 0x3C02);
  for (float v : {0.1f, -3.14159f, 1e-5f, 1234.5f, -6.1e-5f}) {
    EXPECT_NEAR(f16_bits_to_float(float_to_f16_bits(v)), v, std::max(std::fabs(v) * 1e-3f, 0x1p-25f));  // subnormals: 2^-24 steps
    EXPECT_NEAR(bf16_bits_to_float(float_to_bf16_bits(v)), v, std::fabs(v) * 4e-3f);
  }
}

TEST(LlmNumeric, RandomWeightsAreSeededAndScaled) {
  double s = 0, s2 = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double v = random_weight(7, 3, static_cast<uint64_t>(i), false, 0.02f);
    s += v;
    s2 += v * v;
    ASSERT_LT(std::fabs(v), 0.02 * std::sqrt(3.0) + 1e-9);
  }
  EXPECT_NEAR(s / n, 0.0, 5e-4);
  EXPECT_NEAR(std::sqrt(s2 / n), 0.02, 3e-4);
  EXPECT_EQ(random_weight(7, 3, 5, false, 0.02f), random_weight(7, 3, 5, false, 0.02f));
  EXPECT_NE(random_weight(7, 3, 5, false, 0.02f), random_weight(8, 3, 5, false, 0.02f));
  EXPECT_NE(random_weight(7, 3, 5, false, 0.02f), random_weight(7, 4, 5, false, 0.02f));
}

TEST(LlmSafetensors, WritesAndReadsBack) {
  const std::vector<float> a = {1.0f, -2.0f, 0.1f, 3.5f, 1e-3f, -7.25f};
  const std::string p = tmp("a.safetensors").string();
  ASSERT_TRUE(write_safetensors(p, {{"x.weight", {2, 3}, a.data(), ""}, {"y", {6}, a.data(), ""}}, "BF16"));
  auto f = SafetensorsFile::open(p);
  ASSERT_TRUE(f) << f.error().message;
  ASSERT_EQ((*f)->tensors().size(), 2u);
  const auto& x = (*f)->tensors().at("x.weight");
  EXPECT_EQ(x.dtype, "BF16");
  EXPECT_EQ(x.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.bytes, 12u);
  auto ck = Checkpoint::open_dir(fs::path(p).parent_path().string());
  ASSERT_TRUE(ck);
  std::vector<float> back;
  ASSERT_TRUE((*ck)->read_float("x.weight", {2, 3}, back));
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(back[i], round_to(DType::bf16, a[i]));
  auto wrong = (*ck)->read_float("x.weight", {3, 2}, back);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("[2, 3]"), std::string::npos);
  auto missing = (*ck)->read_float("z", {1}, back);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no tensor z"), std::string::npos);
}

TEST(LlmSafetensors, RejectsBrokenFiles) {
  const fs::path d = tmp("broken");
  fs::create_directories(d);
  {
    std::ofstream(d / "t.safetensors", std::ios::binary) << "abc";
  }
  auto f = SafetensorsFile::open((d / "t.safetensors").string());
  EXPECT_FALSE(f);
  // A header that claims more data than the file holds.
  const std::string h = R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  {
    std::ofstream out(d / "t.safetensors", std::ios::binary);
    uint64_t n = h.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << h << "12345678";
  }
  f = SafetensorsFile::open((d / "t.safetensors").string());
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("outside the file"), std::string::npos);
  // An integer tensor where floats are needed.
  const std::string hi = R"({"w":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})";
  {
    std::ofstream out(d / "t.safetensors", std::ios::binary);
    uint64_t n = hi.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << hi << "12345678";
  }
  auto ck = Checkpoint::open_dir(d.string());
  ASSERT_TRUE(ck) << ck.error().message;
  std::vector<float> v;
  auto r = (*ck)->read_float("w", {2}, v);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("I32"), std::string::npos);
  EXPECT_FALSE(Checkpoint::open_dir((d / "nope").string()));
}

TEST(LlmCheckpoint, RandomWeightsRoundTripThroughAHuggingFaceDirectory) {
  const auto c = *builtin_config("tiny");
  const auto w = random_host_weights(c, 99, DType::bf16);
  const std::string dir = tmp("ckpt").string();
  ASSERT_TRUE(save_checkpoint(dir, c, w, DType::bf16));
  auto c2 = load_checkpoint_config(dir);
  ASSERT_TRUE(c2) << c2.error().message;
  EXPECT_EQ(c2->total_params(), c.total_params());
  auto ck = Checkpoint::open_dir(dir);
  ASSERT_TRUE(ck);
  EXPECT_EQ((*ck)->tensor_count(), tensor_specs(c).size());
  auto w2 = load_host_weights(*c2, **ck, DType::bf16);
  ASSERT_TRUE(w2) << w2.error().message;
  EXPECT_EQ(w2->layers[1].wd, w.layers[1].wd);  // bf16 matrices are exact
  EXPECT_EQ(w2->lm_head, w.lm_head);
  EXPECT_EQ(w2->final_norm, w.final_norm);  // norms are written in float32
  EXPECT_EQ((*ck)->find("model.norm.weight")->dtype, "F32");
  EXPECT_EQ((*ck)->find("model.layers.0.mlp.up_proj.weight")->dtype, "BF16");
  // The same forward pass from either copy.
  CpuModel a(c, w), b(*c2, *w2);
  a.reset(1, 16);
  b.reset(1, 16);
  const std::vector<int> prompt = {3, 14, 15, 92, 65};
  auto la = a.forward(0, prompt, false), lb = b.forward(0, prompt, false);
  ASSERT_TRUE(la && lb);
  EXPECT_EQ(*la, *lb);
}

TEST(LlmCheckpoint, NamesTheMissingTensor) {
  const auto c = *builtin_config("tiny");
  const auto w = random_host_weights(c, 1, DType::bf16);
  const std::string dir = tmp("ckpt-missing").string();
  ASSERT_TRUE(save_checkpoint(dir, c, w, DType::bf16));
  // Rewrite the weights without layer 1's down projection.
  std::vector<TensorToWrite> ts;
  HostWeights& mw = const_cast<HostWeights&>(w);
  for (const auto& s : tensor_specs(c)) {
    if (s.hf_name != "model.layers.1.mlp.down_proj.weight") ts.push_back({s.hf_name, s.shape, mw.tensor(s).data(), ""});
  }
  ASSERT_TRUE(write_safetensors(dir + "/model.safetensors", ts, "BF16"));
  auto ck = Checkpoint::open_dir(dir);
  ASSERT_TRUE(ck);
  auto r = load_host_weights(c, **ck, DType::bf16);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("model.layers.1.mlp.down_proj.weight"), std::string::npos);
}

TEST(LlmCheckpoint, ReadsShardedCheckpoints) {
  const auto c = *builtin_config("tiny");
  const auto w = random_host_weights(c, 5, DType::f16);
  const fs::path dir = tmp("sharded");
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << to_hf_config_json(c, DType::f16);
  std::vector<TensorToWrite> a, b;
  nlohmann::json map;
  HostWeights& mw = const_cast<HostWeights&>(w);
  for (const auto& s : tensor_specs(c)) {
    auto& dst = s.layer == 1 ? b : a;
    dst.push_back({s.hf_name, s.shape, mw.tensor(s).data(), ""});
    map[s.hf_name] = s.layer == 1 ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  }
  ASSERT_TRUE(write_safetensors((dir / "model-00001-of-00002.safetensors").string(), a, "F16"));
  ASSERT_TRUE(write_safetensors((dir / "model-00002-of-00002.safetensors").string(), b, "F32"));
  std::ofstream(dir / "model.safetensors.index.json") << nlohmann::json{{"weight_map", map}}.dump();
  auto ck = Checkpoint::open_dir(dir.string());
  ASSERT_TRUE(ck) << ck.error().message;
  auto w2 = load_host_weights(c, **ck, DType::f16);
  ASSERT_TRUE(w2) << w2.error().message;
  EXPECT_EQ(w2->layers[0].wq, w.layers[0].wq);
  EXPECT_EQ(w2->layers[1].wq, w.layers[1].wq);
}
