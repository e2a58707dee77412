#include "engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "jouleprof/core/files.hpp"
#include "rng.hpp"

namespace jouleprof::llm {

const char* component_name(Component c) {
  switch (c) {
    case Component::attn_qkv: return "attn_qkv";
    case Component::attn_core: return "attn_core";
    case Component::attn_out: return "attn_out";
    case Component::mlp_gate_up: return "mlp_gate_up";
    case Component::mlp_down: return "mlp_down";
    case Component::lm_head: return "lm_head";
    case Component::embed: return "embed";
    case Component::count: break;
  }
  return "?";
}

const char* component_description(Component c) {
  switch (c) {
    case Component::attn_qkv: return "input RMSNorm + fused q/k/v projection";
    case Component::attn_core: return "RoPE, KV-cache append, softmax(QK^T)V (GQA)";
    case Component::attn_out: return "output projection + residual add";
    case Component::mlp_gate_up: return "post-attention RMSNorm + gate/up projection + SiLU*up";
    case Component::mlp_down: return "down projection + residual add";
    case Component::lm_head: return "final RMSNorm + LM head + greedy pick";
    case Component::embed: return "token bookkeeping + embedding gather";
    case Component::count: break;
  }
  return "?";
}

bool component_per_layer(Component c) { return c != Component::lm_head && c != Component::embed; }

const char* component_group(Component c) {
  switch (c) {
    case Component::attn_qkv:
    case Component::attn_core:
    case Component::attn_out: return "attention";
    case Component::mlp_gate_up:
    case Component::mlp_down: return "mlp";
    case Component::lm_head: return "output";
    default: return "embedding";
  }
}

Result<void> apply_variant(const std::string& variant, EngineOptions& o) {
  auto v = parse_variant(variant);
  if (!v) return v.error();
  o.plan = v->plan;
  o.pdl = o.pdl && v->pdl;
  return {};
}

Result<void> validate_sampling(const SamplingOptions& s) {
  if (s.top_k < 0 || s.top_k > kMaxTopK) {
    return make_error(Errc::invalid_argument, "--top-k must be between 0 (greedy) and " + std::to_string(kMaxTopK) +
                                                  ", not " + std::to_string(s.top_k));
  }
  if (!std::isfinite(s.temperature)) return make_error(Errc::invalid_argument, "--temperature must be a finite number");
  return {};
}

std::string describe_sampling(const SamplingOptions& s) {
  if (s.greedy()) return "greedy";
  char buf[96];
  std::snprintf(buf, sizeof buf, "top-k %d, temperature %g, seed %llu", s.top_k, static_cast<double>(s.temperature),
                static_cast<unsigned long long>(s.seed));
  return buf;
}

int RunShape::max_context() const {
  int m = 0;
  for (int l : prompt_lens) m = std::max(m, l);
  return m + gen;
}

int prompt_token(const LlmConfig& c, uint64_t seed, int seq, int i) {
  const uint64_t h = mix64(mix64(seed ^ 0x5EEDull) + (static_cast<uint64_t>(seq) << 32) + static_cast<uint64_t>(i));
  return static_cast<int>(h % static_cast<uint64_t>(c.vocab));
}

std::vector<int> random_prompt(const LlmConfig& c, uint64_t seed, int seq, int len) {
  std::vector<int> out(static_cast<std::size_t>(std::max(0, len)));
  for (int i = 0; i < len; ++i) out[static_cast<std::size_t>(i)] = prompt_token(c, seed, seq, i);
  return out;
}

Result<std::vector<std::vector<int>>> read_token_file(const std::string& path, int vocab) {
  // Bounded, one open; a folder or a device such as /dev/zero is refused (core/files).
  auto text = read_text_file(path, std::size_t{256} << 20);
  if (!text) return make_error(text.error().code, "cannot read token file " + path + ": " + text.error().message);
  std::istringstream in(*text);
  std::vector<std::vector<int>> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    for (char& ch : line) {
      if (ch == ',' || ch == '\t' || ch == '[' || ch == ']') ch = ' ';
    }
    std::istringstream ss(line);
    std::vector<int> seq;
    std::string tok;
    while (ss >> tok) {
      std::size_t used = 0;
      long v = -1;
      try {
        v = std::stol(tok, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != tok.size() || v < 0 || v >= vocab) {
        return make_error(Errc::parse, path + ":" + std::to_string(lineno) + ": '" + tok + "' is not a token id below " +
                                           std::to_string(vocab));
      }
      seq.push_back(static_cast<int>(v));
    }
    if (!seq.empty()) out.push_back(std::move(seq));
  }
  if (out.empty()) return make_error(Errc::parse, path + ": no token ids");
  return out;
}

}  // namespace jouleprof::llm
