#include "engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

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

namespace {
/// The number after `prefix` in word w ("ahead16" -> 16) when w is prefix + digits and the number
/// lies in [lo, hi]; nullopt when w is not such a word; an error when the number is out of range.
std::optional<Result<int>> variant_number(const std::string& w, const std::string& prefix, int lo, int hi) {
  if (w.size() <= prefix.size() || w.compare(0, prefix.size(), prefix) != 0 ||
      w.find_first_not_of("0123456789", prefix.size()) != std::string::npos) {
    return std::nullopt;
  }
  const std::string digits = w.substr(prefix.size());
  const long long v = digits.size() > 9 ? -1 : std::stoll(digits);
  if (v < lo || v > hi) {
    return Result<int>(make_error(Errc::invalid_argument, "engine variant '" + w + "': the number must be between " +
                                                              std::to_string(lo) + " and " + std::to_string(hi)));
  }
  return Result<int>(static_cast<int>(v));
}
}  // namespace

Result<void> apply_variant(const std::string& variant, EngineOptions& o) {
  // Words ending in a number: prefix, range, and what the number sets.
  struct Numbered {
    const char* prefix;
    int lo, hi;
    void (*set)(EngineOptions&, int);
  };
  static const Numbered numbered[] = {
      {"megapf", 0, 100000, [](EngineOptions& e, int v) {
         e.mega = true;
         e.mega_prefetch_mb = v;
       }},
      {"flows", 2, 64, [](EngineOptions& e, int v) {
         e.flow = true;
         e.flow_slots = v;
       }},
      {"flowc", 1, 64, [](EngineOptions& e, int v) {
         e.flow = true;
         e.flow_chunk_kb = v;
       }},
      {"flowa", 0, 256, [](EngineOptions& e, int v) {
         e.flow = true;
         e.flow_l2_ahead = v;
       }},
      {"flowi", 0, 256, [](EngineOptions& e, int v) {
         e.flow = true;
         e.flow_l2_idle = v;
       }},
      {"flowp", 0, 100000, [](EngineOptions& e, int v) {
         e.flow = true;
         e.flow_poll_ns = v;
       }},
      {"flowr", 1, 1 << 20, [](EngineOptions& e, int v) {
         e.flow = true;
         e.flow_ring_span = v;
       }},
      {"flowk", 0, 2, [](EngineOptions& e, int v) {
         e.flow = true;
         if (e.flow_ring_span < 0) e.flow_ring_span = 0;
         e.flow_kv_prefetch = v;
       }},
      {"ahead", 0, 100000, [](EngineOptions& e, int v) { e.l2_ahead_mb = v; }},
      {"chunk", 0, 1 << 24, [](EngineOptions& e, int v) { e.attn_chunk = v; }},
      {"topk", 0, kMaxTopK, [](EngineOptions& e, int v) { e.sampling.top_k = v; }},
      {"fused", 1, 8, [](EngineOptions& e, int v) { e.fused_max_batch = v; }},
      {"fqa", 2, 16, [](EngineOptions& e, int v) {
         e.fused_attention = 1;
         e.fused_attention_cluster = v;
       }},
      {"fqs", 2, 8, [](EngineOptions& e, int v) { e.fused_attention_stages = v; }},
      {"fqp", 0, 8, [](EngineOptions& e, int v) { e.fused_attention_pre = v; }},
      {"pf", 0, 1 << 24, [](EngineOptions& e, int v) { e.gemv_prefetch = v; }},
  };
  std::size_t i = 0;
  while (i < variant.size()) {
    std::size_t j = variant.find('+', i);
    if (j == std::string::npos) j = variant.size();
    const std::string w = variant.substr(i, j - i);
    i = j + 1;
    if (w.empty()) continue;
    // Words that leave the decode form to the engine: "auto", graphs, prefill attention, sampling.
    const bool keeps_default = w == "auto" || w == "nograph" || w == "cublas-pf" || w == "flash-pf" ||
                               variant_number(w, "topk", 0, kMaxTopK).has_value();
    if (!keeps_default) o.flow_auto = false;
    if (w == "fused" || w == "gemm" || w == "auto") {
      o.decode_path = w;
    } else if (w == "pdl" || w == "nopdl") {
      o.pdl = w == "pdl";
    } else if (w == "nograph") {
      o.graphs = false;
    } else if (w == "bps1" || w == "bps2") {
      o.gemv_blocks_per_sm = w[3] - '0';
    } else if (w == "u4" || w == "u8") {
      o.gemv_unroll = w[1] - '0';
    } else if (w == "mega") {
      o.mega = true;
    } else if (w == "flow" || w == "noflow") {
      o.flow = w == "flow";
    } else if (w == "flowr") {
      o.flow = true;
      o.flow_ring_span = 0;
    } else if (w == "flowb") {
      o.flow = true;
      o.flow_bulk_rows = true;
    } else if (w == "flowlast") {
      o.flow = true;
      o.flow_last_combines = true;
    } else if (w == "flowlm") {
      o.flow_lm = true;
    } else if (w == "flowmlp") {
      o.flow_mlp = true;
    } else if (w == "pfo") {
      o.prefetch_after_attention = true;
    } else if (w == "nopf") {
      o.gemv_prefetch = 0;
    } else if (w == "fqa" || w == "nofqa") {
      o.fused_attention = w == "fqa" ? 1 : 0;
    } else if (w == "ksd1" || w == "ksd2") {
      o.gemv_ksplit_down = w[3] - '0';
    } else if (w == "fqt256" || w == "fqt512") {
      o.fused_attention_threads = w == "fqt256" ? 256 : 512;
    } else if (w == "cublas-pf" || w == "flash-pf") {
      o.prefill_attention = w.substr(0, w.size() - 3);
    } else {
      bool matched = false;
      for (const Numbered& n : numbered) {
        auto v = variant_number(w, n.prefix, n.lo, n.hi);
        if (!v) continue;
        if (!*v) return v->error();
        n.set(o, **v);
        matched = true;
        break;
      }
      if (!matched) {
        return make_error(Errc::invalid_argument, "unknown engine variant word '" + w + "' in '" + variant + "'");
      }
    }
  }
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
  std::ifstream in(path);
  if (!in) return make_error(Errc::not_found, "cannot read token file " + path);
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
