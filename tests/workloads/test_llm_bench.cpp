// `bench llm` on the simulated GPU: the driver in-process, and the CLI end to end.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tiny_sim_bench.hpp"
#include "host/bench.hpp"

using namespace jouleprof::llm;
namespace fs = std::filesystem;

namespace {
fs::path tmp(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("jp-llmb-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}

struct Run {
  int code = -1;
  std::string out, err;
};
Run run_cli(const std::vector<std::string>& args) {
  const std::string out = tmp("stdout").string(), err = tmp("stderr").string();
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(125);
    // bench llm records into the run store: the test's own, never the user's.
    setenv("JOULEPROF_DB", tmp("default.db").c_str(), 1);
    std::vector<std::string> copy = args;
    std::vector<char*> argv;
    std::string cli = JOULEPROF_CLI;
    argv.push_back(cli.data());
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(cli.c_str(), argv.data());
    _exit(126);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}
}  // namespace

TEST(LlmBench, FlagsRoundTrip) {
  BenchOptions o;
  o.models = {"tiny", "llama-3.2-1b"};
  o.batches = {1, 8};
  o.prompts = {64, 512};
  o.gens = {33, 65};
  o.per_layer = true;
  o.pdl = true;
  o.variant = "fused+u8";
  o.min_seconds = 0.25;
  o.tags = {"a=b"};
  o.json = "x.json";
  o.json_timelines = true;
  o.dtypes = {"bf16", "fp16"};
  o.top_k = 40;
  o.temperature = 0.75f;
  CLI::App app;
  BenchOptions back;
  add_bench_options(&app, back);
  auto args = bench_args(o);
  std::vector<std::string> rev(args.rbegin(), args.rend());
  app.parse(rev);
  EXPECT_EQ(back.models, o.models);
  EXPECT_EQ(back.batches, o.batches);
  EXPECT_EQ(back.prompts, o.prompts);
  EXPECT_EQ(back.gens, o.gens);
  EXPECT_TRUE(back.per_layer);
  EXPECT_TRUE(back.pdl);
  EXPECT_EQ(back.variant, "fused+u8");
  EXPECT_FALSE(back.no_components);
  EXPECT_DOUBLE_EQ(back.min_seconds, 0.25);
  EXPECT_EQ(back.tags, o.tags);
  EXPECT_EQ(back.json, "x.json");
  EXPECT_EQ(back.top_k, 40);
  EXPECT_FLOAT_EQ(back.temperature, 0.75f);
  EXPECT_TRUE(back.json_timelines);
  EXPECT_EQ(back.dtypes, o.dtypes);
}

TEST(LlmBench, EngineVariants) {
  EngineOptions e;
  ASSERT_TRUE(apply_variant("gemm+pdl+bps2+u8+pf512+flash-pf+fused4+nograph", e));
  EXPECT_EQ(e.decode_path, "gemm");
  EXPECT_TRUE(e.pdl);
  EXPECT_FALSE(e.graphs);
  EXPECT_EQ(e.gemv_blocks_per_sm, 2);
  EXPECT_EQ(e.gemv_unroll, 8);
  EXPECT_EQ(e.gemv_prefetch, 512);
  EXPECT_EQ(e.prefill_attention, "flash");
  EXPECT_EQ(e.fused_max_batch, 4);
  ASSERT_TRUE(apply_variant("", e));
  auto bad = apply_variant("fused+turbo", e);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("turbo"), std::string::npos);
}

TEST(LlmBench, FlowVariantWords) {
  EngineOptions e;
  EXPECT_FALSE(e.flow);  // opt-in: measured slower than the default engine (bench-llm.md runs 70-71)
  ASSERT_TRUE(apply_variant("flow", e));
  EXPECT_TRUE(e.flow);
  EXPECT_EQ(e.flow_slots, 0);  // as many as shared memory holds
  EXPECT_EQ(e.flow_chunk_kb, 32);
  ASSERT_TRUE(apply_variant("noflow", e));
  EXPECT_FALSE(e.flow);
  // Each knob implies the variant.
  ASSERT_TRUE(apply_variant("flows3+flowc16+flowa8+flowp100", e));
  EXPECT_TRUE(e.flow);
  EXPECT_EQ(e.flow_slots, 3);
  EXPECT_EQ(e.flow_chunk_kb, 16);
  EXPECT_EQ(e.flow_l2_ahead, 8);
  EXPECT_EQ(e.flow_poll_ns, 100);
  auto bad = apply_variant("flows1", e);  // a ring needs two slots
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("between 2 and 64"), std::string::npos);
  EXPECT_FALSE(apply_variant("flowc0", e));
  EXPECT_FALSE(apply_variant("flowc65", e));
  EXPECT_FALSE(apply_variant("flowx", e));
  // Ring attention: off by default, automatic span, or N positions per split.
  EXPECT_EQ(EngineOptions{}.flow_ring_span, -1);
  EngineOptions r;
  ASSERT_TRUE(apply_variant("flowr", r));
  EXPECT_TRUE(r.flow);
  EXPECT_EQ(r.flow_ring_span, 0);
  ASSERT_TRUE(apply_variant("flowr256", r));
  EXPECT_EQ(r.flow_ring_span, 256);
  EXPECT_FALSE(apply_variant("flowr0", r));
  // K/V asked of L2 at the start: implies ring attention, keeps a span already given.
  EngineOptions k;
  ASSERT_TRUE(apply_variant("flowk2", k));
  EXPECT_TRUE(k.flow);
  EXPECT_EQ(k.flow_ring_span, 0);
  EXPECT_EQ(k.flow_kv_prefetch, 2);
  ASSERT_TRUE(apply_variant("flowr128+flowk1", k));
  EXPECT_EQ(k.flow_ring_span, 128);
  EXPECT_EQ(k.flow_kv_prefetch, 1);
  EXPECT_FALSE(apply_variant("flowk3", k));
  // Bulk-store hand-overs, the last split combining, L2 asked in dependency waits: each implies flow.
  EngineOptions b;
  EXPECT_FALSE(b.flow_bulk_rows);
  EXPECT_EQ(b.flow_l2_idle, 0);
  ASSERT_TRUE(apply_variant("flowb", b));
  EXPECT_TRUE(b.flow);
  EXPECT_TRUE(b.flow_bulk_rows);
  EXPECT_FALSE(b.flow_last_combines);
  ASSERT_TRUE(apply_variant("flowlast+flowi8", b));
  EXPECT_TRUE(b.flow_last_combines);
  EXPECT_EQ(b.flow_l2_idle, 8);
  EXPECT_FALSE(apply_variant("flowi257", b));
  EXPECT_FALSE(apply_variant("flowb2", b));
  // The engine's own choice of decode form stays unless a word names one.
  EngineOptions a;
  EXPECT_TRUE(a.flow_auto);
  ASSERT_TRUE(apply_variant("auto+nograph+flash-pf+topk5", a));
  EXPECT_TRUE(a.flow_auto);
  EXPECT_FALSE(a.flow);
  for (const char* w : {"fused", "nofqa", "u8", "flows4", "noflow", "mega"}) {
    EngineOptions n;
    ASSERT_TRUE(apply_variant(w, n));
    EXPECT_FALSE(n.flow_auto) << w;
  }
  // Parts of the step through the dataflow kernel, the rest through the default kernels.
  EngineOptions d;
  ASSERT_TRUE(apply_variant("flowlm+flowmlp", d));
  EXPECT_FALSE(d.flow);
  EXPECT_TRUE(d.flow_lm);
  EXPECT_TRUE(d.flow_mlp);
}

TEST(LlmBench, FusedAttentionVariantWords) {
  EngineOptions e;
  EXPECT_EQ(e.fused_attention, -1);  // by default wherever it can run (batch 1, sm_90)
  ASSERT_TRUE(apply_variant("nofqa", e));
  EXPECT_EQ(e.fused_attention, 0);
  ASSERT_TRUE(apply_variant("fqa8+fqs3", e));
  EXPECT_EQ(e.fused_attention, 1);  // asked for: an error where it cannot run
  EXPECT_EQ(e.fused_attention_cluster, 8);
  EXPECT_EQ(e.fused_attention_stages, 3);
  ASSERT_TRUE(apply_variant("nofqa+fqa", e));
  EXPECT_EQ(e.fused_attention, 1);
  ASSERT_TRUE(apply_variant("fqt512", e));
  EXPECT_EQ(e.fused_attention_threads, 512);
  EXPECT_FALSE(apply_variant("fqt300", e));
  EXPECT_EQ(e.fused_attention_pre, -1);  // every ring stage requested before the wait
  ASSERT_TRUE(apply_variant("fqp0", e));
  EXPECT_EQ(e.fused_attention_pre, 0);
  EXPECT_EQ(e.gemv_ksplit_down, 0);
  ASSERT_TRUE(apply_variant("ksd2", e));
  EXPECT_EQ(e.gemv_ksplit_down, 2);
  ASSERT_TRUE(apply_variant("ksd1", e));
  EXPECT_EQ(e.gemv_ksplit_down, 1);
  EXPECT_FALSE(apply_variant("ksd4", e));  // only 1 and 2 are built
  EXPECT_EQ(e.gemv_ksplit_down, 1);
}

TEST(LlmBench, NumberedVariantWordsOutOfRangeAreOneLineErrors) {
  // Numbers past their range, or too long for an int, are refused with the word named; never a throw.
  for (const char* w : {"fqa17", "fqa1", "fqs9", "fqp9", "fused9", "topk100000", "chunk99999999999999999999", "pf99999999999"}) {
    EngineOptions e;
    const EngineOptions before = e;
    auto r = apply_variant(std::string("fused+") + w, e);
    ASSERT_FALSE(r) << w;
    EXPECT_NE(r.error().message.find(w), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
    EXPECT_EQ(e.fused_attention_cluster, before.fused_attention_cluster) << w;
  }
  EngineOptions e;
  ASSERT_TRUE(apply_variant("chunk0+pf0+fqa16+fqs2+fused8+topk1", e));
  EXPECT_EQ(e.attn_chunk, 0);
  EXPECT_EQ(e.gemv_prefetch, 0);
  EXPECT_EQ(e.fused_attention_cluster, 16);
  EXPECT_EQ(e.fused_max_batch, 8);
  EXPECT_EQ(e.sampling.top_k, 1);
}

TEST(LlmBench, SimulatedSweepFillsEveryFigure) {
  BenchOptions o;
  o.models = {"tiny"};
  o.device = "sim";
  o.batches = {1, 3};
  o.prompts = {16};
  o.gens = {6};
  o.min_seconds = 0.15;
  o.iso_seconds = 0.05;
  o.idle_s = 0.3;
  o.per_layer = true;
  auto r = run_bench(o, sim_engine_factory(), nullptr);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->simulated);
  EXPECT_TRUE(r->measurement.simulated);
  const auto& j = r->llm;
  ASSERT_EQ(j["points"].size(), 2u);
  // The simulated GPU idles at 75 W.
  EXPECT_NEAR(j["idle_power_w"].get<double>(), 75.0, 3.0);
  for (const auto& p : j["points"]) {
    const int B = p["batch"];
    const auto& pf = p["prefill"];
    EXPECT_DOUBLE_EQ(pf["tokens"].get<double>(), pf["passes"].get<double>() * B * 16);
    EXPECT_GE(pf["duration_s"].get<double>(), 0.15);
    const auto& d = p["decode"];
    EXPECT_DOUBLE_EQ(d["tokens"].get<double>(), d["steps"].get<double>() * B);
    EXPECT_NEAR(d["j_per_token"].get<double>() * d["tokens"].get<double>(), d["energy_j"].get<double>(), 1e-9);
    // Energy between idle and the power limit over the window.
    const double pw = d["mean_power_w"];
    EXPECT_GT(pw, 70);
    EXPECT_LT(pw, 705);
    ASSERT_EQ(p["components"].size(), 7u);
    double share = 0;
    for (const auto& c : p["components"]) {
      const bool per_layer = c["name"] != "lm_head" && c["name"] != "embed";
      EXPECT_EQ(c["calls_per_step"].get<double>(), per_layer ? 2.0 : 1.0) << c.dump();
      EXPECT_GT(c["j_per_call"].get<double>(), 0);
      share += c["share"].get<double>();
    }
    EXPECT_NEAR(share, 1.0, 1e-9);
    EXPECT_EQ(p["layers"].size(), 2u);
    const auto& k = p["consistency"];
    EXPECT_GT(k["sum_over_decode"].get<double>(), 0.2);
    EXPECT_LT(k["sum_over_decode"].get<double>(), 5.0);
  }
  // The windows are in the measurement, named by model/batch/prompt.
  bool found = false;
  for (const auto& w : r->measurement.windows) found = found || w.name == "tiny/b3/p16/component/mlp_down";
  EXPECT_TRUE(found);
}

TEST(LlmBench, RejectsBadInput) {
  BenchOptions o;
  o.device = "sim";
  o.models = {"tiny"};
  o.batches = {0};
  auto r = run_bench(o, sim_engine_factory(), nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, jouleprof::Errc::invalid_argument);
  o.batches = {1};
  o.models = {"gpt-2"};
  r = run_bench(o, sim_engine_factory(), nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("unknown model"), std::string::npos);
  o.models = {"tiny"};
  o.tokens_file = tmp("toks.txt").string();
  std::ofstream(o.tokens_file) << "1 2 3\n4 x 6\n";
  r = run_bench(o, sim_engine_factory(), nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(":2:"), std::string::npos);
}

TEST(LlmBenchCli, SimulatedRunEndToEnd) {
  const std::string json = tmp("bench.json").string();
  const std::string toks = tmp("prompts.txt").string();
  std::ofstream(toks) << "5 6 7 8\n9, 10, 11\n";
  auto r = run_cli({"bench", "llm", "--device", "sim", "--model", "tiny", "--tokens", toks, "--gen", "4", "--min-seconds",
                    "0.1", "--iso-seconds", "0.03", "--idle", "0.2", "--tag", "who=ci", "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("SIMULATED"), std::string::npos);
  EXPECT_NE(r.out.find("mlp_gate_up"), std::string::npos);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["tags"]["who"], "ci");
  EXPECT_EQ(j["tags"]["workload"], "bench-llm");
  EXPECT_TRUE(j["llm"]["simulated"].get<bool>());
  ASSERT_EQ(j["llm"]["points"].size(), 1u);
  EXPECT_EQ(j["llm"]["points"][0]["batch"], 2);
  EXPECT_EQ(j["llm"]["points"][0]["prompt"], nlohmann::json({4, 3}));
}

TEST(LlmBenchCli, WithoutTheCudaBinaryItSaysSoOnOneLine) {
  auto r = run_cli({"bench", "llm", "--device", "nvml", "--model", "tiny"});
  if (fs::exists(fs::path(JOULEPROF_CLI).parent_path() / "jouleprof-llm")) GTEST_SKIP() << "CUDA build";
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("JOULEPROF_WITH_CUDA"), std::string::npos);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  auto bad = run_cli({"bench", "llm", "--device", "sim", "--dtype", "int4"});
  EXPECT_EQ(bad.code, 2);
}

TEST(LlmBench, WithoutIdleBaselineTheAboveIdleFiguresReadNotAvailable) {
  BenchOptions o = tiny_sim_bench();
  auto r = run_bench(o, sim_engine_factory(), nullptr);
  ASSERT_TRUE(r) << r.error().message;
  std::ostringstream out;
  print_bench(*r, out);
  EXPECT_NE(out.str().find("(above idle: n/a)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("idle share n/a"), std::string::npos);
  EXPECT_EQ(out.str().find("nan"), std::string::npos) << out.str();
}
