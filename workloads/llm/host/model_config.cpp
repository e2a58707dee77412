#include "model_config.hpp"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numbers>

namespace jouleprof::llm {

const char* to_string(DType d) {
  switch (d) {
    case DType::bf16: return "bf16";
    case DType::f16: return "fp16";
    case DType::f32: return "fp32";
  }
  return "?";
}

Result<DType> dtype_from_string(const std::string& s) {
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp16" || s == "f16" || s == "float16" || s == "half") return DType::f16;
  if (s == "fp32" || s == "f32" || s == "float32") return DType::f32;
  return make_error(Errc::invalid_argument, "unknown dtype '" + s + "' (bf16, fp16 or fp32)");
}

int64_t LlmConfig::layer_matmul_params() const {
  const int64_t h = hidden;
  return h * qkv_dim() + int64_t{q_dim()} * h + 3 * h * intermediate;
}

int64_t LlmConfig::matmul_params() const { return layer_matmul_params() * layers + int64_t{vocab} * hidden; }

int64_t LlmConfig::total_params() const {
  const int64_t emb = int64_t{vocab} * hidden;
  return layer_matmul_params() * layers + int64_t{2} * hidden * layers + hidden + emb + (tie_embeddings ? 0 : emb);
}

Result<void> LlmConfig::validate() const {
  auto bad = [&](const std::string& what) {
    return make_error(Errc::invalid_argument, "model '" + name + "': " + what);
  };
  if (vocab <= 0 || hidden <= 0 || intermediate <= 0 || layers <= 0 || heads <= 0 || kv_heads <= 0 || head_dim <= 0) {
    return bad("every dimension must be positive");
  }
  if (heads % kv_heads != 0) return bad("num_attention_heads must be a multiple of num_key_value_heads");
  if (group() > 8) return bad("more than 8 query heads per key/value head is not supported");
  if (head_dim % 2 != 0 || head_dim > 256 || (128 % head_dim != 0 && head_dim % 128 != 0) || head_dim < 16) {
    return bad("head_dim must be 16, 32, 64, 128 or 256");
  }
  if (hidden % 8 != 0 || intermediate % 8 != 0) return bad("hidden and intermediate sizes must be multiples of 8");
  if (vocab % 2 != 0) return bad("vocab size must be even");
  if (!(rms_eps > 0)) return bad("rms_norm_eps must be positive");
  return {};
}

namespace {
LlmConfig llama3(const char* name, int hidden, int inter, int layers, int heads, int hd, double factor, bool tie) {
  LlmConfig c;
  c.name = name;
  c.vocab = 128256;
  c.hidden = hidden;
  c.intermediate = inter;
  c.layers = layers;
  c.heads = heads;
  c.kv_heads = 8;
  c.head_dim = hd;
  c.rope_theta = 500000;
  c.rope = RopeScaling{true, factor, 1.0, 4.0, 8192};
  c.rms_eps = 1e-5;
  c.tie_embeddings = tie;
  c.max_position = 131072;
  return c;
}
}  // namespace

std::vector<std::string> builtin_names() { return {"tiny", "llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b"}; }

Result<LlmConfig> builtin_config(const std::string& name) {
  if (name == "llama-3.2-1b") return llama3("llama-3.2-1b", 2048, 8192, 16, 32, 64, 32.0, true);
  if (name == "llama-3.2-3b") return llama3("llama-3.2-3b", 3072, 8192, 28, 24, 128, 32.0, true);
  if (name == "llama-3.1-8b") return llama3("llama-3.1-8b", 4096, 14336, 32, 32, 128, 8.0, false);
  if (name == "tiny") {
    // Small enough for the CPU reference in CI, shaped to reach every code path: hidden size
    // different from heads*head_dim, widths that are not multiples of 256, grouped-query
    // attention, an untied LM head and Llama-3 rope scaling whose three bands all occur.
    LlmConfig c;
    c.name = "tiny";
    c.vocab = 1000;
    c.hidden = 192;
    c.intermediate = 352;
    c.layers = 2;
    c.heads = 4;
    c.kv_heads = 2;
    c.head_dim = 32;
    c.rope_theta = 10000;
    c.rope = RopeScaling{true, 8.0, 1.0, 4.0, 64};
    c.rms_eps = 1e-5;
    c.tie_embeddings = false;
    c.max_position = 4096;
    c.init_std = 0.1;
    return c;
  }
  std::string names;
  for (const auto& n : builtin_names()) names += (names.empty() ? "" : ", ") + n;
  return make_error(Errc::invalid_argument, "unknown model '" + name + "' (built in: " + names + "; or --weights DIR)");
}

Result<LlmConfig> parse_hf_config(const std::string& json_text, const std::string& name) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    return make_error(Errc::parse, "config.json: " + std::string(e.what()));
  }
  if (!j.is_object()) return make_error(Errc::parse, "config.json: not a JSON object");
  bool llama = j.value("model_type", std::string()) == "llama";
  if (j.contains("architectures") && j["architectures"].is_array()) {
    for (const auto& a : j["architectures"]) {
      if (a.is_string() && a.get<std::string>() == "LlamaForCausalLM") llama = true;
    }
  }
  if (!llama) {
    std::string arch = j.contains("architectures") ? j["architectures"].dump() : j.value("model_type", std::string("?"));
    return make_error(Errc::invalid_argument, "unsupported architecture " + arch + " (only LlamaForCausalLM / model_type llama)");
  }
  LlmConfig c;
  c.name = name;
  try {
    auto need = [&](const char* key) -> int {
      if (!j.contains(key) || !j[key].is_number_integer()) {
        throw std::runtime_error(std::string("config.json: missing integer '") + key + "'");
      }
      return j[key].get<int>();
    };
    c.vocab = need("vocab_size");
    c.hidden = need("hidden_size");
    c.intermediate = need("intermediate_size");
    c.layers = need("num_hidden_layers");
    c.heads = need("num_attention_heads");
    c.kv_heads = j.contains("num_key_value_heads") && j["num_key_value_heads"].is_number_integer()
                     ? j["num_key_value_heads"].get<int>()
                     : c.heads;
    c.head_dim = j.contains("head_dim") && j["head_dim"].is_number_integer() ? j["head_dim"].get<int>()
                                                                              : (c.heads > 0 ? c.hidden / c.heads : 0);
    c.rope_theta = j.value("rope_theta", 10000.0);
    c.rms_eps = j.value("rms_norm_eps", 1e-6);
    c.tie_embeddings = j.value("tie_word_embeddings", false);
    c.max_position = j.value("max_position_embeddings", 131072);
    if (j.value("mlp_bias", false) || j.value("attention_bias", false)) {
      throw std::runtime_error("config.json: attention_bias / mlp_bias are not supported");
    }
    const std::string act = j.value("hidden_act", std::string("silu"));
    if (act != "silu") throw std::runtime_error("config.json: hidden_act '" + act + "' is not supported (silu only)");
    // transformers 5 moved rope settings into rope_parameters; older files use rope_scaling.
    const nlohmann::json* rs = nullptr;
    if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) rs = &j["rope_scaling"];
    if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
      rs = &j["rope_parameters"];
      if (rs->contains("rope_theta")) c.rope_theta = (*rs)["rope_theta"].get<double>();
    }
    if (rs != nullptr) {
      const std::string type = rs->value("rope_type", rs->value("type", std::string("default")));
      if (type == "llama3") {
        c.rope.llama3 = true;
        c.rope.factor = rs->value("factor", 8.0);
        c.rope.low_freq_factor = rs->value("low_freq_factor", 1.0);
        c.rope.high_freq_factor = rs->value("high_freq_factor", 4.0);
        c.rope.original_max_position = rs->value("original_max_position_embeddings", 8192);
      } else if (type != "default") {
        throw std::runtime_error("config.json: rope_type '" + type + "' is not supported (default, llama3)");
      }
    }
  } catch (const std::exception& e) {
    return make_error(Errc::parse, e.what());
  }
  if (auto v = c.validate(); !v) return v.error();
  return c;
}

std::string to_hf_config_json(const LlmConfig& c, DType dtype) {
  nlohmann::json j;
  j["architectures"] = {"LlamaForCausalLM"};
  j["model_type"] = "llama";
  j["vocab_size"] = c.vocab;
  j["hidden_size"] = c.hidden;
  j["intermediate_size"] = c.intermediate;
  j["num_hidden_layers"] = c.layers;
  j["num_attention_heads"] = c.heads;
  j["num_key_value_heads"] = c.kv_heads;
  j["head_dim"] = c.head_dim;
  j["hidden_act"] = "silu";
  j["max_position_embeddings"] = c.max_position;
  j["rms_norm_eps"] = c.rms_eps;
  j["rope_theta"] = c.rope_theta;
  if (c.rope.llama3) {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", c.rope.factor},
                         {"low_freq_factor", c.rope.low_freq_factor},
                         {"high_freq_factor", c.rope.high_freq_factor},
                         {"original_max_position_embeddings", c.rope.original_max_position}};
  }
  j["tie_word_embeddings"] = c.tie_embeddings;
  j["attention_bias"] = false;
  j["mlp_bias"] = false;
  j["torch_dtype"] = dtype == DType::bf16 ? "bfloat16" : dtype == DType::f16 ? "float16" : "float32";
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  return j.dump(2);
}

std::vector<double> rope_inv_freq(const LlmConfig& c) {
  const int half = c.head_dim / 2;
  std::vector<double> f(half);
  for (int i = 0; i < half; ++i) f[i] = 1.0 / std::pow(c.rope_theta, (2.0 * i) / c.head_dim);
  if (!c.rope.llama3) return f;
  // transformers' _compute_llama3_parameters.
  const double old_len = c.rope.original_max_position;
  const double low_wavelen = old_len / c.rope.low_freq_factor;
  const double high_wavelen = old_len / c.rope.high_freq_factor;
  for (double& inv : f) {
    const double wavelen = 2 * std::numbers::pi / inv;
    double v = wavelen > low_wavelen ? inv / c.rope.factor : inv;
    if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen)) {
      const double smooth = (old_len / wavelen - c.rope.low_freq_factor) /
                            (c.rope.high_freq_factor - c.rope.low_freq_factor);
      v = (1 - smooth) * v / c.rope.factor + smooth * v;
    }
    inv = v;
  }
  return f;
}

double WorkModel::decode_weight_bytes(const LlmConfig& c, DType d, int batch) {
  const double b = dtype_bytes(d);
  const double norms = 4.0 * (2.0 * c.hidden * c.layers + c.hidden);  // kept in fp32
  return static_cast<double>(c.matmul_params()) * b + norms + static_cast<double>(batch) * c.hidden * b;
}

double WorkModel::decode_kv_bytes(const LlmConfig& c, DType d, int pos) {
  const double per_pos = 2.0 * c.layers * c.kv_dim() * dtype_bytes(d);
  return per_pos * (pos + 1) + per_pos;  // read positions 0..pos, write the new one
}

double WorkModel::prefill_flops(const LlmConfig& c, int len) {
  const double n = len;
  const double matmul = 2.0 * static_cast<double>(c.layer_matmul_params()) * c.layers * n;
  const double attn = 4.0 * c.layers * c.heads * c.head_dim * (n * (n + 1) / 2);
  return matmul + attn + 2.0 * c.vocab * c.hidden;
}

double WorkModel::decode_flops(const LlmConfig& c, int pos) {
  return 2.0 * static_cast<double>(c.matmul_params()) + 4.0 * c.layers * c.heads * c.head_dim * (pos + 1.0);
}

std::string MemoryPlan::describe() const {
  constexpr double gib = 1024.0 * 1024 * 1024;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%.1f GiB (weights %.1f, KV cache %.1f, activations %.1f, workspace %.1f)", total() / gib,
                weights / gib, kv_cache / gib, activations / gib, workspace / gib);
  return buf;
}

MemoryPlan plan_memory(const LlmConfig& c, DType d, int batch, int max_context, int chunk_tokens, double attn_budget) {
  const double b = dtype_bytes(d);
  MemoryPlan p;
  const double emb = static_cast<double>(c.vocab) * c.hidden;
  p.weights = (static_cast<double>(c.layer_matmul_params()) * c.layers + emb + (c.tie_embeddings ? 0 : emb)) * b +
              4.0 * (2.0 * c.hidden * c.layers + c.hidden);
  p.kv_cache = 2.0 * c.layers * batch * static_cast<double>(c.kv_dim()) * max_context * b;
  const double t = chunk_tokens;
  p.activations = t * (4.0 * c.hidden + b * (c.hidden + c.qkv_dim() + c.q_dim() + 3.0 * c.intermediate)) + attn_budget +
                  batch * (4.0 * c.vocab + 4.0 * c.hidden + b * (c.hidden + c.qkv_dim() + c.q_dim() + 3.0 * c.intermediate)) +
                  4.0 * batch * c.heads * 64.0 * (c.head_dim + 2);
  p.workspace = 64.0 * 1024 * 1024;
  return p;
}

}  // namespace jouleprof::llm
