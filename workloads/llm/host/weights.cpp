#include "weights.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "numeric.hpp"
#include "safetensors.hpp"

namespace jouleprof::llm {

std::vector<float>& LayerWeights::get(LayerTensor t) {
  switch (t) {
    case lt_attn_norm: return attn_norm;
    case lt_q: return wq;
    case lt_k: return wk;
    case lt_v: return wv;
    case lt_o: return wo;
    case lt_mlp_norm: return mlp_norm;
    case lt_gate: return wg;
    case lt_up: return wu;
    case lt_down:
    case lt_count: break;
  }
  return wd;
}
const std::vector<float>& LayerWeights::get(LayerTensor t) const { return const_cast<LayerWeights*>(this)->get(t); }

std::vector<TensorSpec> tensor_specs(const LlmConfig& c) {
  std::vector<TensorSpec> s;
  const int64_t h = c.hidden, q = c.q_dim(), kv = c.kv_dim(), in = c.intermediate;
  s.push_back({"model.embed_tokens.weight", {c.vocab, h}, t_embed, false, -1, lt_count});
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    auto add = [&](const std::string& n, std::vector<int64_t> shape, LayerTensor k) {
      s.push_back({p + n, std::move(shape), layer_tensor_id(l, k), k == lt_attn_norm || k == lt_mlp_norm, l, k});
    };
    add("input_layernorm.weight", {h}, lt_attn_norm);
    add("self_attn.q_proj.weight", {q, h}, lt_q);
    add("self_attn.k_proj.weight", {kv, h}, lt_k);
    add("self_attn.v_proj.weight", {kv, h}, lt_v);
    add("self_attn.o_proj.weight", {h, q}, lt_o);
    add("post_attention_layernorm.weight", {h}, lt_mlp_norm);
    add("mlp.gate_proj.weight", {in, h}, lt_gate);
    add("mlp.up_proj.weight", {in, h}, lt_up);
    add("mlp.down_proj.weight", {h, in}, lt_down);
  }
  s.push_back({"model.norm.weight", {h}, t_final_norm, true, -1, lt_count});
  if (!c.tie_embeddings) s.push_back({"lm_head.weight", {c.vocab, h}, t_lm_head, false, -1, lt_count});
  return s;
}

std::vector<float>& HostWeights::tensor(const TensorSpec& s) {
  if (s.layer >= 0) return layers[static_cast<std::size_t>(s.layer)].get(s.kind);
  if (s.rng_id == t_embed) return embed;
  if (s.rng_id == t_lm_head) return lm_head;
  return final_norm;
}

HostWeights random_host_weights(const LlmConfig& c, uint64_t seed, DType d) {
  HostWeights w;
  w.layers.resize(static_cast<std::size_t>(c.layers));
  const float std_dev = static_cast<float>(c.init_std);
  for (const auto& s : tensor_specs(c)) {
    auto& v = w.tensor(s);
    int64_t n = 1;
    for (int64_t x : s.shape) n *= x;
    v.resize(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const float f = random_weight(seed, s.rng_id, static_cast<uint64_t>(i), s.norm, std_dev);
      v[static_cast<std::size_t>(i)] = s.norm ? f : round_to(d, f);
    }
  }
  return w;
}

Result<HostWeights> load_host_weights(const LlmConfig& c, const Checkpoint& ck, DType d) {
  HostWeights w;
  w.layers.resize(static_cast<std::size_t>(c.layers));
  for (const auto& s : tensor_specs(c)) {
    auto& v = w.tensor(s);
    if (auto r = ck.read_float(s.hf_name, s.shape, v); !r) return r.error();
    if (!s.norm) {
      for (float& f : v) f = round_to(d, f);
    }
  }
  return w;
}

Result<LlmConfig> load_checkpoint_config(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path p = fs::path(dir) / "config.json";
  std::ifstream in(p);
  if (!in) return make_error(Errc::not_found, "no config.json in " + dir);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string name = fs::path(dir).filename().string();
  if (name.empty()) name = fs::path(dir).parent_path().filename().string();
  return parse_hf_config(ss.str(), name);
}

Result<void> save_checkpoint(const std::string& dir, const LlmConfig& c, const HostWeights& w, DType d) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  {
    std::ofstream out(fs::path(dir) / "config.json");
    if (!out) return make_error(Errc::io, "cannot write " + dir + "/config.json");
    out << to_hf_config_json(c, d) << "\n";
  }
  std::vector<TensorToWrite> ts;
  HostWeights& mw = const_cast<HostWeights&>(w);
  // Norm weights stay float32: the engine keeps them so, and the random ones are not bf16 values.
  for (const auto& s : tensor_specs(c)) ts.push_back({s.hf_name, s.shape, mw.tensor(s).data(), s.norm ? "F32" : ""});
  const std::string dt = d == DType::bf16 ? "BF16" : d == DType::f16 ? "F16" : "F32";
  return write_safetensors((fs::path(dir) / "model.safetensors").string(), ts, dt);
}

}  // namespace jouleprof::llm
