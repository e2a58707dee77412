// `bench llm` on the simulated GPU: the driver in-process, and the CLI end to end.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tiny_sim_bench.hpp"
#include "jouleprof/workloads/bench_llm.hpp"

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
  o.variant = "dataflow+slots2";
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
  EXPECT_EQ(back.variant, "dataflow+slots2");
  EXPECT_FALSE(back.no_components);
  EXPECT_DOUBLE_EQ(back.min_seconds, 0.25);
  EXPECT_EQ(back.tags, o.tags);
  EXPECT_EQ(back.json, "x.json");
  EXPECT_EQ(back.top_k, 40);
  EXPECT_FLOAT_EQ(back.temperature, 0.75f);
  EXPECT_TRUE(back.json_timelines);
  EXPECT_EQ(back.dtypes, o.dtypes);
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
