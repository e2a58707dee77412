// jouleprof-llm: the CUDA Llama workload. `jouleprof bench llm` runs `jouleprof-llm bench` for real
// GPUs; the other subcommands check the engine against the CPU reference, time it, and export or
// compare logits.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "jouleprof/workloads/bench_llm.hpp"
#include "../host/cpu_reference.hpp"
#include "../host/numeric.hpp"
#include "../host/safetensors.hpp"
#include "../host/weights.hpp"
#include "engine_cuda.hpp"
#include "jouleprof/sampler/monitor.hpp"

using namespace jouleprof;
using namespace jouleprof::llm;

namespace {

int fail(const Error& e) { return report_error(e); }

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

Result<LlmConfig> config_for(const std::string& model, const std::string& weights) {
  return weights.empty() ? builtin_config(model) : load_checkpoint_config(weights);
}

Result<HostWeights> host_weights_for(const LlmConfig& c, const std::string& weights, uint64_t seed, DType d) {
  if (weights.empty()) return random_host_weights(c, seed, d);
  auto ck = Checkpoint::open_dir(weights);
  if (!ck) return ck.error();
  return load_host_weights(c, **ck, d);
}

// ---------------------------------------------------------------------------------------------
// check: CUDA logits against the CPU reference, over shapes that reach every code path.
struct CheckOptions {
  std::string model = "tiny", weights, dtype = "bf16";
  uint64_t seed = 1234;
  // bf16 keeps 8 significant bits: transformers' own bf16 forward differs from its fp32 one by
  // 1.7e-2 on this model (docs/validation/bench-llm.md); a wrong kernel gives errors near 1.
  double tol = 3e-2, tol_emulated = 2.5e-2;
  std::string json;
};

struct Case {
  Case(std::string name_, std::vector<int> prompts_, int gen_, std::string variant_, int top_k_ = 0,
       float temperature_ = 1.f, int chunk_tokens_ = 8192, double attn_budget_ = 1 << 30)
      : name(std::move(name_)), prompts(std::move(prompts_)), gen(gen_), variant(std::move(variant_)), top_k(top_k_),
        temperature(temperature_), chunk_tokens(chunk_tokens_), attn_budget(attn_budget_) {}
  std::string name;
  std::vector<int> prompts;
  int gen;
  std::string variant;  ///< --variant words: the plan, its options, nopdl
  bool graphs = true;   ///< false: decode kernels launched one by one (--no-graphs), a reference
  Case& no_graphs() {
    graphs = false;
    return *this;
  }
  int top_k;            ///< > 1: sampled tokens, verified against the host twin of the sampling kernel
  float temperature;
  int chunk_tokens;
  double attn_budget;
};

// Every decode plan and each of its options, the default choice, graphs and PDL off as the
// references, ragged / padded / chunked shapes, split attention, top-k sampling.
std::vector<Case> check_cases() {
  const double sub_pass_budget = 70.0 * 16 * 4 * 2 * 6;  // attention scores of 16-row sub-passes
  return {
      {"b1 p7 gemv nopdl", {7}, 10, "separate+gemv+nopdl"},
      {"b1 p7 gemv", {7}, 10, "separate+gemv"},
      Case{"b1 p7 cublas nograph nopdl", {7}, 10, "separate+cublas+nopdl"}.no_graphs(),
      {"b3 ragged gemv", {5, 17, 33}, 8, "separate+gemv"},
      {"b3 ragged cublas", {5, 17, 33}, 8, "separate+cublas"},
      {"b5 gemv (pad 8)", {9, 9, 9, 9, 9}, 6, "separate+gemv"},
      {"b2 chunked prefill", {40, 40}, 6, "separate+gemv", 0, 1.f, 16},
      {"b2 attn sub-passes", {70, 70}, 6, "separate+cublas", 0, 1.f, 8192, sub_pass_budget},
      {"b2 p150 chunk 64", {150, 150}, 6, "separate+gemv", 0, 1.f, 64},
      {"b1 p90 gemv nopdl", {90}, 12, "separate+gemv+nopdl"},
      {"b1 p300 split attn", {300}, 20, "separate+gemv"},
      {"b2 p200 split nopdl", {200, 130}, 12, "separate+gemv+nopdl"},
      {"b12 auto (cublas)", std::vector<int>(12, 11), 5, "auto"},
      {"b1 p7 separate", {7}, 10, "separate"},
      Case{"b1 p300 separate nograph", {300}, 20, "separate"}.no_graphs(),
      {"b1 p7 cluster", {7}, 10, "cluster"},
      Case{"b1 p300 cluster nograph", {300}, 20, "cluster"}.no_graphs(),
      {"b1 p90 cluster4 nopdl top-k", {90}, 12, "cluster+ctas4+nopdl", 5, 1.2f},
      {"b1 p1100 cluster tiles", {1100}, 8, "cluster"},
      Case{"b1 p1100 cluster2 tiles nograph", {1100}, 6, "cluster+ctas2"}.no_graphs(),
      {"b1 p300 cluster4", {300}, 12, "cluster+ctas4"},
      {"b1 p7 dataflow", {7}, 10, "dataflow"},
      {"b1 p300 dataflow, 1 KiB chunks", {300}, 20, "dataflow+chunk1"},
      Case{"b1 p90 dataflow 2 slots nograph nopdl top-k", {90}, 12, "dataflow+slots2+nopdl", 5, 1.2f}.no_graphs(),
      Case{"b1 p1100 dataflow splits nograph nopdl, 2 KiB", {1100}, 8, "dataflow+chunk2+nopdl"}.no_graphs(),
      {"b1 p300 dataflow one split, 1 KiB", {300}, 20, "dataflow+span512+chunk1"},
      {"b1 p300 dataflow 64-position splits", {300}, 20, "dataflow+span64"},
      {"b1 p90 dataflow 2-chunk bulk items, 2 KiB", {90}, 12, "dataflow+chunk2"},
      {"b1 p300 dataflow L2 in waits 8", {300}, 20, "dataflow+l2wait8"},
      {"b1 p300 dataflow release hand-overs", {300}, 20, "dataflow+release"},
      Case{"b1 p7 dataflow release 4 KiB nograph", {7}, 10, "dataflow+release+chunk4"}.no_graphs(),
      {"b1 p90 dataflow release top-k", {90}, 12, "dataflow+release", 5, 1.2f},
      {"b1 p7 default engine", {7}, 10, "auto"},
      Case{"b1 p300 default engine nograph", {300}, 20, "auto"}.no_graphs(),
      {"b1 p90 default engine top-k", {90}, 12, "auto", 5, 1.2f},
      {"b1 p1100 default engine", {1100}, 8, "auto"},
      {"b3 ragged top-k 40", {5, 17, 33}, 10, "separate+gemv", 40, 0.8f},
      Case{"b1 top-k 5 nograph nopdl", {7}, 12, "separate+cublas+nopdl", 5, 1.0f}.no_graphs(),
      {"b12 top-k 256 T1.5", std::vector<int>(12, 11), 6, "auto", 256, 1.5f},
  };
}

Result<EngineOptions> case_engine_options(const CheckOptions& o, const Case& k, DType dt) {
  EngineOptions eo;
  eo.model = o.model;
  eo.weights_dir = o.weights;
  eo.dtype = dt;
  eo.seed = o.seed;
  eo.chunk_tokens = k.chunk_tokens;
  eo.attn_budget_bytes = k.attn_budget;
  if (auto v = apply_variant(k.variant, eo); !v) return v.error();
  eo.graphs = k.graphs;
  eo.sampling.top_k = k.top_k;
  eo.sampling.temperature = k.temperature;
  eo.sampling.seed = o.seed + 5;
  return eo;
}

// What the engine produced for one case: logits after prefill and after each decode step, the
// tokens, and whether a rewind decodes the same tokens again.
struct EngineRun {
  std::vector<std::vector<float>> steps;
  std::vector<std::vector<int>> tokens;
  bool repeatable = false;
};

Result<EngineRun> run_case_engine(LlmEngine& e, const Case& k) {
  EngineRun run;
  e.prefill();
  auto lg = e.last_logits();
  if (!lg) return lg.error();
  run.steps.push_back(*lg);
  for (int i = 0; i < k.gen - 1; ++i) {
    e.decode(1);
    lg = e.last_logits();
    if (!lg) return lg.error();
    run.steps.push_back(*lg);
  }
  auto toks = e.generated();
  if (!toks) return toks.error();
  run.tokens = *toks;
  // Rewind and decode again: the same tokens.
  e.rewind();
  e.decode(k.gen - 1);
  auto toks2 = e.generated();
  if (!toks2) return toks2.error();
  run.repeatable = *toks == *toks2;
  // Isolation entry points run without error.
  e.rewind();
  e.decode((k.gen - 1) / 2);
  for (int ci = 0; ci < kComponentCount; ++ci) e.component(static_cast<Component>(ci), -1, 2);
  e.layer_block(0, 2);
  e.step(2);
  e.synchronize();
  if (auto st = e.status(); !st) return st.error();
  return run;
}

// The engine's logits against the CPU reference: the worst relative L2 error against the fp32
// and the rounding-emulating reference, and the tokens that agree.
struct CaseScore {
  double worst = 0, worst_emul = 0;
  int agree = 0, total = 0, hard_mismatch = 0;
};

// One token of one sequence against the fp32 reference: sampled (the host twin's draw from the
// engine's own logits) or greedy (the reference's argmax, or a near tie).
void score_token(CaseScore& sc, const float* got, const std::vector<float>& ref, int tok, const SamplingOptions& sampling,
                 int V, int b, int i) {
  if (!sampling.greedy()) {
    const TopKDraw d = top_k_draw(got, V, sampling.top_k, sampling.temperature, sample_uniform(sampling.seed, b, i));
    if (tok == d.token || (d.margin < 1e-4 && tok == d.neighbour)) {
      ++sc.agree;
    } else {
      ++sc.hard_mismatch;
    }
    return;
  }
  const int ref_top = argmax(ref.data(), V);
  if (ref_top == tok) {
    ++sc.agree;
    return;
  }
  std::vector<float> sorted(ref.begin(), ref.end());
  std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
  const float margin = sorted[0] - ref[static_cast<size_t>(tok)];
  if (margin > 0.05f * (std::fabs(sorted[0]) + 1.f)) ++sc.hard_mismatch;
}

Result<CaseScore> score_case(const LlmConfig& c, const HostWeights& hw, DType dt, const Case& k, const RunShape& s,
                             const EngineRun& run, const SamplingOptions& sampling) {
  CaseScore sc;
  const CpuOptions exact{false, DType::f32}, emul{true, dt};
  const int B = s.batch, V = c.vocab;
  for (const CpuOptions& co : {exact, emul}) {
    CpuModel cpu(c, hw, co);
    cpu.reset(B, s.max_context() + 1);
    for (int b = 0; b < B; ++b) {
      const auto prompt = random_prompt(c, s.seed, b, k.prompts[static_cast<size_t>(b)]);
      const auto& gen_toks = run.tokens[static_cast<size_t>(b)];
      for (int i = 0; i < k.gen; ++i) {
        auto ref = i == 0 ? cpu.forward(b, prompt, false) : cpu.forward(b, {gen_toks[static_cast<size_t>(i - 1)]}, false);
        if (!ref) return ref.error();
        const float* got = run.steps[static_cast<size_t>(i)].data() + static_cast<size_t>(b) * V;
        const double err = rel_l2(got, ref->data(), static_cast<size_t>(V));
        if (co.round_activations) {
          sc.worst_emul = std::max(sc.worst_emul, err);
          continue;
        }
        sc.worst = std::max(sc.worst, err);
        ++sc.total;
        score_token(sc, got, *ref, gen_toks[static_cast<size_t>(i)], sampling, V, b, i);
      }
    }
  }
  return sc;
}

// The decode plans (and the separate plan's two kinds of matrix products) check must reach, each
// known by how the engine's description begins (each plan's describe() begins so).
constexpr std::pair<const char*, const char*> kCheckedPlans[] = {{"separate kernels: GEMV", "separate+gemv"},
                                                                 {"separate kernels: cuBLAS", "separate+cublas"},
                                                                 {"cluster plan", "cluster"},
                                                                 {"dataflow plan", "dataflow"}};

std::string plan_ran(const std::string& describe) {
  for (const auto& [prefix, plan] : kCheckedPlans) {
    if (describe.rfind(prefix, 0) == 0) return plan;
  }
  return "unknown";
}

// One line per decode plan: the cases that ran it and whether all passed. A plan no case ran
// fails (the check must reach each: after a change to one plan's code the lead reads these lines).
bool print_plan_summary(const std::map<std::string, std::pair<int, int>>& passed_of_cases) {
  bool ok = true;
  for (const auto& [prefix, plan] : kCheckedPlans) {
    const auto it = passed_of_cases.find(plan);
    const auto [passed, n] = it == passed_of_cases.end() ? std::pair<int, int>{0, 0} : it->second;
    const bool plan_ok = n > 0 && passed == n;
    ok = ok && plan_ok;
    std::printf("plan %-16s %2d/%-2d cases %s\n", plan, passed, n, plan_ok ? "PASS" : n == 0 ? "FAIL (no case ran it)" : "FAIL");
  }
  return ok;
}

int run_check(const CheckOptions& o) {
  auto dt = dtype_from_string(o.dtype);
  if (!dt) return fail(dt.error());
  auto cfg = config_for(o.model, o.weights);
  if (!cfg) return fail(cfg.error());
  auto hw = host_weights_for(*cfg, o.weights, o.seed, *dt);
  if (!hw) return fail(hw.error());
  const LlmConfig& c = *cfg;
  nlohmann::json rows = nlohmann::json::array();
  bool ok_all = true;
  std::map<std::string, std::pair<int, int>> by_plan;  // plan -> cases passed, cases
  std::printf("%-22s %12s %12s %10s %s\n", "case", "rel_l2(fp32)", "rel_l2(emul)", "tokens", "result");
  for (const Case& k : check_cases()) {
    auto eo = case_engine_options(o, k, *dt);
    if (!eo) return fail(eo.error());
    auto eng_r = create_cuda_engine(*eo);
    if (!eng_r) return fail(eng_r.error());
    LlmEngine& e = **eng_r;
    RunShape s;
    s.batch = static_cast<int>(k.prompts.size());
    s.prompt_lens = k.prompts;
    s.gen = k.gen;
    s.seed = o.seed + 17;
    if (auto r = e.prepare(s); !r) return fail(r.error());
    auto run = run_case_engine(e, k);
    if (!run) return fail(run.error());
    auto sc = score_case(c, *hw, *dt, k, s, *run, eo->sampling);
    if (!sc) return fail(sc.error());
    const bool repeatable = run->repeatable;
    const bool ok = sc->worst <= o.tol && sc->worst_emul <= o.tol_emulated && sc->hard_mismatch == 0 && repeatable;
    ok_all = ok_all && ok;
    auto& tally = by_plan[plan_ran(e.describe())];
    tally.first += ok ? 1 : 0;
    tally.second += 1;
    std::printf("%-22s %12.3e %12.3e %6d/%-3d %s%s\n", k.name.c_str(), sc->worst, sc->worst_emul, sc->agree, sc->total,
                ok ? "PASS" : "FAIL", repeatable ? "" : " (rewind not repeatable)");
    rows.push_back({{"case", k.name}, {"rel_l2_fp32", sc->worst}, {"rel_l2_emulated", sc->worst_emul}, {"tokens_agree", sc->agree},
                    {"tokens", sc->total}, {"hard_mismatches", sc->hard_mismatch}, {"repeatable", repeatable}, {"pass", ok},
                    {"engine", e.describe()}, {"plan", plan_ran(e.describe())}});
  }
  ok_all = print_plan_summary(by_plan) && ok_all;
  std::printf("model %s dtype %s: %s (tolerances: %.1e vs fp32 reference, %.1e vs rounding-emulating reference)\n",
              c.name.c_str(), o.dtype.c_str(), ok_all ? "ALL PASS" : "FAILED", o.tol, o.tol_emulated);
  if (!o.json.empty()) {
    std::ofstream(o.json) << nlohmann::json{{"model", c.name}, {"dtype", o.dtype}, {"cases", rows}, {"pass", ok_all}}.dump(2) << "\n";
  }
  return ok_all ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// speed: decode tokens/s and bandwidth, prefill TFLOP/s, against measured device ceilings.
struct SpeedOptions {
  std::vector<std::string> models{"llama-3.2-1b", "llama-3.1-8b"};
  std::vector<int> batches{1};
  int prompt = 128, gen = 256;
  std::vector<int> prefill{1024, 2048, 4096, 8192};
  std::vector<std::string> variants{"auto"};
  bool components = false;
  bool timeline = false;
  std::string dtype = "bf16";
  double seconds = 1.0;
  std::string json;
};

// The last decode step's kernels: when their first and last blocks started, when the last block
// had its inputs (the previous kernel done), when the last block ended (us from the step's start).
// Printed for the middle layer, with per-component means over all layers; all go to the JSON.
void print_timeline(const std::vector<KernelSpan>& ks, int layers, const std::string& what, nlohmann::json& spans) {
  if (ks.empty()) {
    std::printf("%s: no timeline (fused decode path only)\n", what.c_str());
    return;
  }
  std::printf("%s timeline of one decode step (us): kernel  blocks  first-start  last-start  last-ready  last-end  "
              "(ready - previous end)\n", what.c_str());
  std::map<std::string, std::array<double, 4>> mean;  // name -> sums of duration, wait gap, start lead, count
  double prev_end = 0;
  for (const KernelSpan& k : ks) {
    if (k.name.rfind("wait-", 0) == 0) {  // the dataflow plan: time per block spent waiting
      std::printf("  %-16s mean %.2f us per block, largest %.2f\n", k.name.c_str(), k.first_start_us, k.last_end_us);
      spans.push_back({{"wait", k.name}, {"mean_us_per_block", k.first_start_us}, {"max_us", k.last_end_us}});
      continue;
    }
    spans.push_back({{"kernel", k.name}, {"blocks", k.blocks}, {"first_start_us", k.first_start_us},
                     {"last_start_us", k.last_start_us}, {"last_ready_us", k.last_ready_us}, {"last_end_us", k.last_end_us},
                     {"marks_us", k.marks_us}});
    const std::string base = k.name.substr(0, k.name.find(' '));
    auto& m = mean[base];
    m[0] += k.last_end_us - std::max(prev_end, k.first_start_us);
    m[1] += k.last_ready_us - prev_end;
    m[2] += prev_end - k.first_start_us;
    m[3] += 1;
    const bool show = k.name.find(' ') == std::string::npos || k.name.substr(k.name.find(' ') + 1) == std::to_string(layers / 2);
    if (show) {
      std::printf("  %-14s %5d %9.2f %9.2f %9.2f %9.2f  (%+.2f)", k.name.c_str(), k.blocks, k.first_start_us, k.last_start_us,
                  k.last_ready_us, k.last_end_us, k.last_ready_us - prev_end);
      if (!k.marks_us.empty()) std::printf("  marks");
      for (double mark : k.marks_us) std::printf(" %.2f", mark);
      std::printf("\n");
    }
    prev_end = k.last_end_us;
  }
  std::printf("  means over layers: ");
  for (const auto& [name, m] : mean) {
    std::printf(" %s: %.2f us after the previous end (ready %+.2f, started %.2f before)", name.c_str(), m[0] / m[3], m[1] / m[3],
                m[2] / m[3]);
  }
  std::printf("\n  step: %.2f us from the first block start to the last block end\n", prev_end);
}

int run_speed(const SpeedOptions& o) {
  auto dt = dtype_from_string(o.dtype);
  if (!dt) return fail(dt.error());
  auto ceil_r = measure_ceilings(0);
  if (!ceil_r) return fail(ceil_r.error());
  const DeviceCeilings dc = *ceil_r;
  std::printf("device %s: %d SMs, L2 %.0f MB; copy %.3f TB/s (read+write), bf16 GEMM %.1f TFLOP/s (8192^3 cuBLAS)\n",
              dc.name.c_str(), dc.sm_count, dc.l2_bytes / 1e6, dc.copy_bytes_per_s / 1e12, dc.gemm_flops / 1e12);
  nlohmann::json out{{"device", dc.name}, {"copy_bytes_per_s", dc.copy_bytes_per_s}, {"gemm_flops", dc.gemm_flops},
                     {"decode", nlohmann::json::array()}, {"prefill", nlohmann::json::array()}};
  for (const auto& model : o.models) {
    for (const auto& variant : o.variants) {
      EngineOptions eo;
      eo.model = model;
      eo.dtype = *dt;
      if (auto v = apply_variant(variant, eo); !v) return fail(v.error());
      eo.timeline = o.timeline;
      auto eng_r = create_cuda_engine(eo);
      if (!eng_r) return fail(eng_r.error());
      LlmEngine& e = **eng_r;
      const LlmConfig& c = e.config();
      for (int B : o.batches) {
        RunShape s;
        s.batch = B;
        s.prompt_lens.assign(static_cast<size_t>(B), o.prompt);
        s.gen = o.gen;
        if (auto r = e.prepare(s); !r) {
          std::printf("%-14s %-10s b%-3d skipped: %s\n", model.c_str(), variant.c_str(), B, r.error().message.c_str());
          continue;
        }
        e.prefill();
        e.decode(o.gen - 1);
        e.synchronize();
        std::vector<double> per_step;
        const double t_end = now_s() + o.seconds;
        while (now_s() < t_end || per_step.size() < 3) {
          e.rewind();
          e.synchronize();
          const double a = now_s();
          e.decode(o.gen - 1);
          e.synchronize();
          per_step.push_back((now_s() - a) / (o.gen - 1));
        }
        if (auto st = e.status(); !st) return fail(st.error());
        std::sort(per_step.begin(), per_step.end());
        const double med = per_step[per_step.size() / 2];
        double bytes = WorkModel::decode_weight_bytes(c, *dt, B);
        for (int b = 0; b < B; ++b) bytes += WorkModel::decode_kv_bytes(c, *dt, o.prompt + (o.gen - 2) / 2);
        const double bw = bytes / med;
        std::printf("%-14s %-10s b%-3d decode %8.1f tok/s  %7.3f ms/step  %6.1f MB/step  %5.3f TB/s = %5.1f%% of copy  "
                    "(min %.3f, max %.3f ms, %zu reps)  [%s]\n",
                    model.c_str(), variant.c_str(), B, B / med, med * 1e3, bytes / 1e6, bw / 1e12,
                    100 * bw / dc.copy_bytes_per_s, per_step.front() * 1e3, per_step.back() * 1e3, per_step.size(),
                    e.describe().c_str());
        nlohmann::json spans = nlohmann::json::array();
        if (o.timeline) print_timeline(e.timeline(), c.layers, model + " " + variant, spans);
        // Each decode component alone (CUDA graphs over all layers), at the middle of the generation.
        nlohmann::json comps = nlohmann::json::object();
        if (o.components) {
          e.rewind();
          e.decode((o.gen - 1) / 2);
          std::string line;
          for (int ci = 0; ci < kComponentCount; ++ci) {
            const auto comp = static_cast<Component>(ci);
            const int per = component_per_layer(comp) ? c.layers : 1;
            e.component(comp, -1, 4);
            e.synchronize();
            const double a = now_s();
            const int n = e.component(comp, -1, std::max(8, 400 / per));
            e.synchronize();
            const double us = 1e6 * (now_s() - a) / (static_cast<double>(n) * per);
            comps[component_name(comp)] = us;
            char buf[64];
            std::snprintf(buf, sizeof buf, " %s %.2f", component_name(comp), us);
            line += buf;
          }
          std::printf("%-14s %-10s b%-3d isolated us/call:%s\n", model.c_str(), variant.c_str(), B, line.c_str());
        }
        out["decode"].push_back({{"model", model}, {"variant", variant}, {"batch", B}, {"prompt", o.prompt}, {"gen", o.gen},
                                 {"components_us_per_call", comps}, {"timeline", spans},
                                 {"ms_per_step", med * 1e3}, {"tokens_per_s", B / med}, {"bytes_per_step", bytes},
                                 {"bandwidth_bytes_per_s", bw}, {"fraction_of_copy", bw / dc.copy_bytes_per_s},
                                 {"min_ms", per_step.front() * 1e3}, {"max_ms", per_step.back() * 1e3},
                                 {"reps", per_step.size()}, {"engine", e.describe()}});
      }
      if (variant != o.variants.front() && variant.find("-pf") == std::string::npos) continue;
      for (int L : o.prefill) {
        RunShape s;
        s.batch = 1;
        s.prompt_lens = {L};
        s.gen = 2;
        if (auto r = e.prepare(s); !r) {
          std::printf("%-14s prefill %d skipped: %s\n", model.c_str(), L, r.error().message.c_str());
          continue;
        }
        e.prefill();
        e.synchronize();
        std::vector<double> ts;
        for (int i = 0; i < 5; ++i) {
          const double a = now_s();
          e.prefill();
          e.synchronize();
          ts.push_back(now_s() - a);
        }
        if (auto st = e.status(); !st) return fail(st.error());
        std::sort(ts.begin(), ts.end());
        const double med = ts[ts.size() / 2];
        const double fl = WorkModel::prefill_flops(c, L);
        std::printf("%-14s %-10s prefill %5d tokens: %8.2f ms  %9.0f tok/s  %6.1f TFLOP/s = %5.1f%% of GEMM ceiling\n", model.c_str(), variant.c_str(),
                    L, med * 1e3, L / med, fl / med / 1e12, 100 * fl / med / dc.gemm_flops);
        out["prefill"].push_back({{"model", model}, {"variant", variant}, {"tokens", L}, {"ms", med * 1e3}, {"tokens_per_s", L / med},
                                  {"flops", fl}, {"tflops", fl / med / 1e12}, {"fraction_of_gemm", fl / med / dc.gemm_flops}});
      }
    }
  }
  if (!o.json.empty()) std::ofstream(o.json) << out.dump(2) << "\n";
  return 0;
}

// ---------------------------------------------------------------------------------------------
// logits: greedy generation from token-id prompts, with every step's logits, as JSON.
struct LogitsOptions {
  std::string model = "tiny", weights, dtype = "bf16", tokens, engine = "cuda", out;
  int gen = 8;
  uint64_t seed = 1234;
};

int run_logits(const LogitsOptions& o) {
  auto dt = dtype_from_string(o.dtype);
  if (!dt) return fail(dt.error());
  auto cfg = config_for(o.model, o.weights);
  if (!cfg) return fail(cfg.error());
  auto prompts = read_token_file(o.tokens, cfg->vocab);
  if (!prompts) return fail(prompts.error());
  const int B = static_cast<int>(prompts->size()), V = cfg->vocab;
  nlohmann::json out{{"model", cfg->name}, {"engine", o.engine}, {"dtype", o.dtype}, {"sequences", nlohmann::json::array()}};
  if (o.engine == "cpu") {
    auto hw = host_weights_for(*cfg, o.weights, o.seed, *dt);
    if (!hw) return fail(hw.error());
    CpuModel cpu(*cfg, *hw, {});
    int maxlen = 0;
    for (const auto& p : *prompts) maxlen = std::max(maxlen, static_cast<int>(p.size()));
    cpu.reset(B, maxlen + o.gen + 1);
    for (int b = 0; b < B; ++b) {
      std::vector<float> lg;
      auto toks = cpu.generate(b, (*prompts)[static_cast<size_t>(b)], o.gen, &lg);
      if (!toks) return fail(toks.error());
      nlohmann::json steps = nlohmann::json::array();
      for (int i = 0; i < o.gen; ++i) steps.push_back(std::vector<float>(lg.begin() + static_cast<long>(i) * V, lg.begin() + static_cast<long>(i + 1) * V));
      out["sequences"].push_back({{"prompt", (*prompts)[static_cast<size_t>(b)]}, {"generated", *toks}, {"logits", steps}});
    }
  } else {
    EngineOptions eo;
    eo.model = o.model;
    eo.weights_dir = o.weights;
    eo.dtype = *dt;
    eo.seed = o.seed;
    auto eng = create_cuda_engine(eo);
    if (!eng) return fail(eng.error());
    RunShape s;
    s.batch = B;
    for (const auto& p : *prompts) s.prompt_lens.push_back(static_cast<int>(p.size()));
    s.prompt_tokens = *prompts;
    s.gen = o.gen;
    if (auto r = (*eng)->prepare(s); !r) return fail(r.error());
    std::vector<std::vector<float>> steps;
    (*eng)->prefill();
    for (int i = 0; i < o.gen; ++i) {
      if (i > 0) (*eng)->decode(1);
      auto lg = (*eng)->last_logits();
      if (!lg) return fail(lg.error());
      steps.push_back(*lg);
    }
    auto toks = (*eng)->generated();
    if (!toks) return fail(toks.error());
    for (int b = 0; b < B; ++b) {
      nlohmann::json st = nlohmann::json::array();
      for (int i = 0; i < o.gen; ++i) {
        const auto& l = steps[static_cast<size_t>(i)];
        st.push_back(std::vector<float>(l.begin() + static_cast<long>(b) * V, l.begin() + static_cast<long>(b + 1) * V));
      }
      out["sequences"].push_back({{"prompt", (*prompts)[static_cast<size_t>(b)]}, {"generated", (*toks)[static_cast<size_t>(b)]}, {"logits", st}});
    }
  }
  std::ofstream f(o.out);
  if (!f) return fail(make_error(Errc::io, "cannot write " + o.out));
  f << out.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"jouleprof-llm — the CUDA Llama-architecture workload of jouleprof"};
  app.require_subcommand(1);
  BenchOptions bo;
  CLI::App* bench = app.add_subcommand("bench", "energy benchmark (what `jouleprof bench llm` runs)");
  add_bench_options(bench, bo);
  CheckOptions co;
  CLI::App* check = app.add_subcommand("check", "CUDA logits against the CPU float32 reference");
  check->add_option("--model", co.model)->capture_default_str();
  check->add_option("--weights", co.weights);
  check->add_option("--dtype", co.dtype)->capture_default_str();
  check->add_option("--seed", co.seed)->capture_default_str();
  check->add_option("--tol", co.tol, "largest relative L2 logit error vs the fp32 reference")->capture_default_str();
  check->add_option("--tol-emulated", co.tol_emulated, "... vs the reference that rounds where the engine does")->capture_default_str();
  check->add_option("--json", co.json);
  SpeedOptions so;
  CLI::App* speed = app.add_subcommand("speed", "decode tokens/s and bandwidth, prefill TFLOP/s");
  speed->add_option("--model", so.models)->delimiter(',')->capture_default_str();
  speed->add_option("--batch", so.batches)->delimiter(',')->capture_default_str();
  speed->add_option("--prompt", so.prompt)->capture_default_str();
  speed->add_option("--gen", so.gen)->check(CLI::Range(2, 1 << 20))->capture_default_str();
  speed->add_option("--prefill", so.prefill, "prefill lengths to time (0: none)")->delimiter(',')->capture_default_str();
  speed->add_option("--variants", so.variants, "engine variants (--variant words, docs/bench-llm.md), e.g. auto, separate+cublas, dataflow+slots2")->delimiter(',')->capture_default_str();
  speed->add_flag("--components", so.components, "also time each decode component alone");
  speed->add_flag("--timeline", so.timeline, "also print when each kernel of the last decode step ran (diagnostic: globaltimer stamps)");
  speed->add_option("--dtype", so.dtype)->capture_default_str();
  speed->add_option("--seconds", so.seconds, "timing per configuration")->capture_default_str();
  speed->add_option("--json", so.json);
  LogitsOptions lo;
  CLI::App* logits = app.add_subcommand("logits", "greedy generation with every step's logits, as JSON");
  logits->add_option("--model", lo.model)->capture_default_str();
  logits->add_option("--weights", lo.weights);
  logits->add_option("--dtype", lo.dtype)->capture_default_str();
  logits->add_option("--tokens", lo.tokens, "token-id file, one prompt per line")->required();
  logits->add_option("--gen", lo.gen)->check(CLI::Range(1, 1 << 16))->capture_default_str();
  logits->add_option("--engine", lo.engine)->check(CLI::IsMember({"cuda", "cpu"}))->capture_default_str();
  logits->add_option("--seed", lo.seed)->capture_default_str();
  logits->add_option("--out", lo.out)->required();
  std::string ex_model = "tiny", ex_dir, ex_dtype = "bf16";
  uint64_t ex_seed = 1234;
  CLI::App* exp = app.add_subcommand("export", "write a model's random weights as a Hugging Face checkpoint");
  exp->add_option("--model", ex_model)->capture_default_str();
  exp->add_option("--out", ex_dir)->required();
  exp->add_option("--dtype", ex_dtype)->capture_default_str();
  exp->add_option("--seed", ex_seed)->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::string msg = e.what();
    for (char& ch : msg) {
      if (ch == '\n') ch = ' ';
    }
    std::fprintf(stderr, "jouleprof: error: %s\n", msg.c_str());
    return 2;
  }
  if (bench->parsed()) {
    return bench_main(bo, [](const EngineOptions& eo, Monitor& m) -> Result<std::unique_ptr<LlmEngine>> {
      if (m.gpus().simulated()) return sim_engine_factory()(eo, m);
      return create_cuda_engine(eo);
    });
  }
  if (check->parsed()) return run_check(co);
  if (speed->parsed()) return run_speed(so);
  if (logits->parsed()) return run_logits(lo);
  if (exp->parsed()) {
    auto dt = dtype_from_string(ex_dtype);
    if (!dt) return fail(dt.error());
    auto cfg = builtin_config(ex_model);
    if (!cfg) return fail(cfg.error());
    const auto w = random_host_weights(*cfg, ex_seed, *dt);
    if (auto r = save_checkpoint(ex_dir, *cfg, w, *dt); !r) return fail(r.error());
    return 0;
  }
  return 2;
}
