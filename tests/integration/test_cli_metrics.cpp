// `jouleprof measure --metrics` (issue 19): activity timelines with their source, through the
// real NVML loader against the fake libnvidia-ml (GPM, and the utilization fallback).
#include <gtest/gtest.h>

#include "helpers.hpp"

using jp_test::fake_env;
using jp_test::load_json;
using jp_test::run_cli;

namespace {

std::string out(const std::string& name) { return (jp_test::temp_dir() / name).string(); }

// The fake's GPU draws 600 W from 0.5 s on (idle 100, TDP 700): GPM load 5/6.
const char* kLoaded = "idle_w 100\ntdp_w 700\nat 0.5 constant 600\n";

TEST(CliMetrics, GpmTimelinesWithTheirSourceAndPerRunMeans) {
  const std::string json = out("metrics-gpm.json");
  auto e = fake_env(kLoaded);
  e.push_back("JOULEPROF_DCGM_LIB=/nonexistent/libdcgm.so.4");  // no DCGM: auto's first choice is missing
  auto r = run_cli({"measure", "--idle", "0.6", "--metrics", "--metrics-period-ms", "100", "--no-store", "-q", "--json", json,
                    "--", "sleep", "0.8"},
                   e);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = load_json(json);
  ASSERT_TRUE(j.contains("activity")) << j.dump().substr(0, 400);
  const auto& g = j["activity"]["gpus"][0];
  EXPECT_EQ(g["source"], "nvml-gpm");
  EXPECT_EQ(g["note"], "DCGM: no DCGM library (/nonexistent/libdcgm.so.4)");
  EXPECT_EQ(g["metrics"][0], "sm_active");
  EXPECT_GE(g["windows"].get<int>(), 8);
  EXPECT_EQ(g["values"].size(), g["t0_s"].size());
  bool run_seen = false;
  for (const auto& w : g["window_means"]) {
    if (w["kind"] != "run") continue;
    run_seen = true;
    // The fake's SM activity is its load, (600 - 100) / (700 - 100) after the step at 0.5 s.
    EXPECT_NEAR(w["mean"]["sm_active"].get<double>(), 5.0 / 6.0, 0.05) << w.dump();
    EXPECT_NEAR(w["mean"]["tensor_active"].get<double>(), 0.6 * 5.0 / 6.0, 0.05);
  }
  EXPECT_TRUE(run_seen);
}

TEST(CliMetrics, WithoutGpmTheUtilizationFallbackSaysWhy) {
  const std::string json = out("metrics-util.json");
  auto r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-period-ms", "100", "--no-store", "-q", "--json", json,
                    "--", "sleep", "0.4"},
                   fake_env(std::string(kLoaded) + "unsupported gpm\n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = load_json(json);
  const auto& g = j["activity"]["gpus"][0];
  EXPECT_EQ(g["source"], "nvml-utilization");
  EXPECT_NE(g["note"].get<std::string>().find("GPM is not supported"), std::string::npos) << g["note"];
  EXPECT_EQ(g["metrics"], nlohmann::json({"gpu_util", "mem_util"}));
}

TEST(CliMetrics, AskingForGpmWhereThereIsNoneIsAnError) {
  auto r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", "gpm", "--no-store", "--", "true"},
                   fake_env(std::string(kLoaded) + "unsupported gpm\n"));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("jouleprof: error: GPU 0: --metrics-source gpm: GPM is not supported"), std::string::npos) << r.err;
}

TEST(CliMetrics, WithoutMetricsThereIsNoActivitySection) {
  const std::string json = out("metrics-none.json");
  auto r = run_cli({"measure", "--idle", "0", "--no-store", "-q", "--json", json, "--", "true"}, fake_env(kLoaded));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(load_json(json).contains("activity"));
}

}  // namespace
