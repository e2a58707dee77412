// `jouleprof measure --metrics --metrics-source cupti-pm|dcgm|auto` end to end: the real loaders
// and sources against the fake libcupti (PM sampling) and the fake libdcgm (a host engine),
// main paths and error paths, and the store keeping each timeline's source.
#include <gtest/gtest.h>

#include "helpers.hpp"

using jp_test::fake_env;
using jp_test::load_json;
using jp_test::run_cli;

namespace {

std::string out(const std::string& name) {
  return (jp_test::temp_dir() / name).string();
}

const char* kScenario = "idle_w 100\ntdp_w 700\nat 0.2 constant 600\n";

// The fake NVML GPU with GPM, plus the fake CUPTI/CUDA and DCGM; `extra` adds or overrides.
std::vector<std::string> env(std::vector<std::string> extra = {}) {
  auto e = fake_env(kScenario);
  e.push_back("JOULEPROF_CUPTI_LIB=" JOULEPROF_FAKE_CUPTI);
  e.push_back("JOULEPROF_CUDA_LIB=" JOULEPROF_FAKE_CUPTI);
  e.push_back("JOULEPROF_DCGM_LIB=" JOULEPROF_FAKE_DCGM);
  e.insert(e.end(), extra.begin(), extra.end());
  return e;
}

nlohmann::json measure_gpu0(const std::string& source, const std::vector<std::string>& e,
                            const std::string& name, const char* seconds = "0.6") {
  const std::string json = out(name);
  auto r = run_cli(
      {"measure", "--idle", "0", "--metrics", "--metrics-source", source, "--metrics-period-ms",
       "100", "--no-store", "-q", "--json", json, "--", "sleep", seconds},
      e);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return {};
  return load_json(json)["activity"]["gpus"][0];
}

double run_mean(const nlohmann::json& g, const std::string& metric) {
  for (const auto& w : g["window_means"])
    if (w["kind"] == "run")
      return w["mean"].value(metric, nlohmann::json(-1.0)).is_null()
                 ? -2.0
                 : w["mean"][metric].get<double>();
  return -3.0;
}

// --- cupti-pm --------------------------------------------------------------------------------

TEST(CuptiPmSource, SamplesDecodeIntoWindowsOnTheRunTimeBase) {
  const auto g = measure_gpu0("cupti-pm", env({"JOULEPROF_FAKE_CUPTI_MULTIPASS=fp64"}), "pm.json");
  ASSERT_FALSE(g.is_null());
  EXPECT_EQ(g["source"], "cupti-pm");
  EXPECT_EQ(g["metrics"], nlohmann::json({"sm_active", "tensor_active", "dram_active",
                                          "sm_occupancy", "fp32_active", "fp16_active"}));
  EXPECT_EQ(g["note"], "not PM-sampled in one pass on FAKE100: fp64_active (2 passes)");
  // The fake chip has no pct form of sm__cycles_active: the counter ratio is used.
  EXPECT_EQ(g["definitions"][0], "sm__cycles_active.avg / sm__cycles_elapsed.avg");
  EXPECT_TRUE(g["errors"].empty()) << g["errors"];
  EXPECT_GE(g["windows"].get<int>(), 4);
  // Windows follow each other on the run time base, inside the run.
  for (std::size_t i = 0; i < g["t0_s"].size(); ++i) {
    EXPECT_LT(g["t0_s"][i].get<double>(), g["t1_s"][i].get<double>());
    EXPECT_GE(g["t0_s"][i].get<double>(), -0.05);
    if (i > 0) {
      EXPECT_NEAR(g["t0_s"][i].get<double>(), g["t1_s"][i - 1].get<double>(), 1e-6);
    }
  }
  // The fake's fixed values: 720/900 cycles, 60 %, 30 %, 12 %, 5 %, 2 %.
  EXPECT_NEAR(run_mean(g, "sm_active"), 0.8, 1e-9);
  EXPECT_NEAR(run_mean(g, "tensor_active"), 0.6, 1e-9);
  EXPECT_NEAR(run_mean(g, "dram_active"), 0.3, 1e-9);
  EXPECT_NEAR(run_mean(g, "sm_occupancy"), 0.12, 1e-9);
  EXPECT_NEAR(run_mean(g, "fp16_active"), 0.02, 1e-9);
}

TEST(CuptiPmSource, EachGpuHasItsOwnSampling) {
  const std::string json = out("pm-2gpu.json");
  auto e = env();
  e[1] = "JOULEPROF_FAKE_NVML_SCENARIO=" +
         jp_test::write_file("scenario2.txt", std::string(kScenario) + "gpus 2\n");
  auto r = run_cli(
      {"measure", "--idle", "0", "--metrics", "--metrics-source", "cupti-pm", "--metrics-period-ms",
       "100", "--no-store", "-q", "--json", json, "--", "sleep", "0.3"},
      e);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto gpus = load_json(json)["activity"]["gpus"];
  ASSERT_EQ(gpus.size(), 2u);
  for (const auto& g : gpus) {
    EXPECT_EQ(g["source"], "cupti-pm");
    EXPECT_TRUE(g["errors"].empty()) << g["errors"];
    EXPECT_NEAR(run_mean(g, "tensor_active"), 0.6, 1e-9);
  }
}

TEST(CuptiPmSource, AutoNeverChoosesIt) {
  const auto g = measure_gpu0("auto", env({"JOULEPROF_FAKE_DCGM_MODE=no-hostengine"}),
                              "auto-nopm.json", "0.3");
  ASSERT_FALSE(g.is_null());
  EXPECT_EQ(g["source"], "nvml-gpm");
}

TEST(CuptiPmSource, ACounterDataImageFilledBetweenPollsIsDrainedAndReset) {
  // The fake's image holds 5 samples, a 300 ms window has 30: each poll decodes, drains and
  // re-initializes the image six times, and no sample is lost.
  const std::string json = out("pm-full.json");
  auto r = run_cli(
      {"measure", "--idle", "0", "--metrics", "--metrics-source", "cupti-pm", "--metrics-period-ms",
       "300", "--no-store", "-q", "--json", json, "--", "sleep", "1.0"},
      env({"JOULEPROF_FAKE_CUPTI_IMAGE_SAMPLES=5"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto g = load_json(json)["activity"]["gpus"][0];
  EXPECT_TRUE(g["errors"].empty()) << g["errors"];
  double covered = 0;
  for (std::size_t i = 0; i < g["t0_s"].size(); ++i)
    covered += g["t1_s"][i].get<double>() - g["t0_s"][i].get<double>();
  EXPECT_GT(covered, 0.95);
  EXPECT_NEAR(run_mean(g, "tensor_active"), 0.6, 1e-9);
}

TEST(CuptiPmSource, WithoutAContextThereIsNoPmSampling) {
  // The fake answers device-side calls only on a thread with a context current: the main path
  // above (polls on the recorder's thread) shows the source sets it; here it cannot be had.
  auto r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", "cupti-pm",
                    "--no-store", "--", "true"},
                   env({"JOULEPROF_FAKE_CUPTI_FAIL=cuDevicePrimaryCtxRetain:2"}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cuDevicePrimaryCtxRetain failed: out of memory (2)"), std::string::npos)
      << r.err;
}

TEST(CuptiPmSource, TracingNamesEachCall) {
  auto r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", "cupti-pm",
                    "--no-store", "-q", "--", "sleep", "0.2"},
                   env({"JOULEPROF_CUPTI_PM_TRACE=1"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* c : {"cupti-pm: cuInit\n", "cupti-pm: cuptiPmSamplingEnable\n",
                        "cupti-pm: cuptiPmSamplingDecodeData\n", "cupti-pm: cuptiPmSamplingStop\n",
                        "cupti-pm: cuptiPmSamplingDisable\n"})
    EXPECT_NE(r.err.find(c), std::string::npos) << c << r.err;
}

TEST(CuptiPmSource, CountersRefusedIsOneLineAndExit3) {
  for (const char* fail : {"cuptiPmSamplingEnable:35", "cuptiPmSamplingSetConfig:27",
                           "cuptiPmSamplingGetCounterAvailability:27"}) {
    auto r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", "cupti-pm",
                      "--no-store", "--", "true"},
                     env({std::string("JOULEPROF_FAKE_CUPTI_FAIL=") + fail}));
    EXPECT_EQ(r.exit_code, 3) << fail << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("jouleprof: error: GPU 0: --metrics-source cupti-pm: cuptiPmSampling", 0),
              0u)
        << r.err;
  }
  auto r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", "cupti-pm",
                    "--no-store", "--", "true"},
                   env({"JOULEPROF_FAKE_CUPTI_FAIL=cuptiPmSamplingEnable:35"}));
  EXPECT_NE(
      r.err.find("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35) — GPU performance counters need root"),
      std::string::npos)
      << r.err;
  r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", "cupti-pm", "--no-store",
               "--", "true"},
              env({"JOULEPROF_FAKE_CUPTI_FAIL=cuptiPmSamplingSetConfig:27"}));
  EXPECT_NE(r.err.find("held by another profiler"), std::string::npos) << r.err;
  // What a second client got on the H100 while a cupti-pm measurement held the counters.
  r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", "cupti-pm", "--no-store",
               "--", "true"},
              env({"JOULEPROF_FAKE_CUPTI_FAIL=cuptiPmSamplingGetCounterAvailability:26"}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cuptiPmSamplingGetCounterAvailability failed: CUPTI_ERROR_HARDWARE_BUSY "
                       "(26) — the GPU's performance "
                       "counters are held by another client"),
            std::string::npos)
      << r.err;
}

TEST(CuptiPmSource, NoCuptiOrNoDriverIsOneLineAndExit3) {
  auto r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", "cupti-pm",
                    "--no-store", "--", "true"},
                   env({"JOULEPROF_CUPTI_LIB=/nonexistent/libcupti.so"}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(
      r.err.rfind("jouleprof: error: GPU 0: --metrics-source cupti-pm: cannot load CUPTI (", 0), 0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", "cupti-pm", "--no-store",
               "--", "true"},
              env({"JOULEPROF_FAKE_CUPTI_FAIL=cuInit:100"}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cuInit failed: no CUDA-capable device is detected (100)"),
            std::string::npos)
      << r.err;
  // A CUPTI without PM sampling (older than CUDA 12.6): the fake NVML is no CUPTI at all.
  r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", "cupti-pm", "--no-store",
               "--", "true"},
              env({"JOULEPROF_CUPTI_LIB=" JOULEPROF_FAKE_NVML}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(
      r.err.find("has no PM sampling (CUDA 12.6 or later is needed): missing cuptiGetResultString"),
      std::string::npos)
      << r.err;
}

TEST(CuptiPmSource, TheSimulatedGpuHasNoCounters) {
  auto r = run_cli({"measure", "--device", "sim", "--idle", "0", "--metrics", "--metrics-source",
                    "cupti-pm", "--no-store", "--", "true"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("the simulated GPU has no performance counters"), std::string::npos)
      << r.err;
}

TEST(CuptiPmSource, SamplesOffTheHostClockAreErrorsNotMisplacedWindows) {
  const auto g = measure_gpu0("cupti-pm", env({"JOULEPROF_FAKE_CUPTI_CLOCK_OFFSET_S=30"}),
                              "pm-off.json", "0.3");
  ASSERT_FALSE(g.is_null());
  EXPECT_EQ(g["windows"], 0);
  ASSERT_FALSE(g["errors"].empty());
  EXPECT_NE(g["errors"][0].get<std::string>().find("off the host clock"), std::string::npos)
      << g["errors"];
}

// --- dcgm ------------------------------------------------------------------------------------

TEST(DcgmSource, AutoPrefersARunningHostEngine) {
  const auto g = measure_gpu0("auto", env(), "dcgm-auto.json");
  ASSERT_FALSE(g.is_null());
  EXPECT_EQ(g["source"], "dcgm");
  EXPECT_EQ(g["note"], "");
  EXPECT_EQ(g["metrics"],
            nlohmann::json({"sm_active", "sm_occupancy", "tensor_active", "dram_active",
                            "fp64_active", "fp32_active", "fp16_active"}));
  EXPECT_EQ(g["definitions"][0], "DCGM field 1002");
  EXPECT_GE(g["windows"].get<int>(), 3);
  EXPECT_NEAR(run_mean(g, "sm_active"), 0.7, 1e-9);
  EXPECT_NEAR(run_mean(g, "tensor_active"), 0.5, 1e-9);
  EXPECT_NEAR(run_mean(g, "dram_active"), 0.4, 1e-9);
  EXPECT_NEAR(run_mean(g, "fp16_active"), 0.05, 1e-9);
}

TEST(DcgmSource, WithoutAHostEngineAutoFallsBackToGpmAndSaysWhy) {
  const auto g = measure_gpu0("auto", env({"JOULEPROF_FAKE_DCGM_MODE=no-hostengine"}),
                              "dcgm-none.json", "0.3");
  ASSERT_FALSE(g.is_null());
  EXPECT_EQ(g["source"], "nvml-gpm");
  EXPECT_EQ(g["note"],
            "DCGM: no DCGM host engine at 127.0.0.1 (dcgmConnect failed: Connection to the host "
            "engine is not valid "
            "any longer (-21); start nv-hostengine)");
}

TEST(DcgmSource, WithoutTheLibraryAutoSaysSoBriefly) {
  const auto g = measure_gpu0("auto", env({"JOULEPROF_DCGM_LIB=/nonexistent/libdcgm.so.4"}),
                              "dcgm-nolib.json", "0.3");
  ASSERT_FALSE(g.is_null());
  EXPECT_EQ(g["source"], "nvml-gpm");
  EXPECT_EQ(g["note"], "DCGM: no DCGM library (/nonexistent/libdcgm.so.4)");
}

TEST(DcgmSource, NamedWithoutAHostEngineItRunsEmbedded) {
  const auto g =
      measure_gpu0("dcgm", env({"JOULEPROF_FAKE_DCGM_MODE=no-hostengine"}), "dcgm-embedded.json");
  ASSERT_FALSE(g.is_null());
  EXPECT_EQ(g["source"], "dcgm");
  EXPECT_EQ(g["note"],
            "DCGM embedded in jouleprof: no DCGM host engine at 127.0.0.1 (dcgmConnect failed: "
            "Connection to the host engine is not valid any longer (-21))");
  EXPECT_NEAR(run_mean(g, "sm_active"), 0.7, 1e-9);
}

TEST(DcgmSource, AFieldTheGpuLacksIsNull) {
  const auto g =
      measure_gpu0("dcgm", env({"JOULEPROF_FAKE_DCGM_MODE=no-fp64"}), "dcgm-nofp64.json");
  ASSERT_FALSE(g.is_null());
  EXPECT_EQ(run_mean(g, "fp64_active"), -2.0);  // null in every window mean
  EXPECT_NEAR(run_mean(g, "sm_active"), 0.7, 1e-9);
  for (const auto& v : g["values"]) EXPECT_TRUE(v[4].is_null());
}

TEST(DcgmSource, NamedButMissingIsOneLineAndExit3) {
  struct Case {
    std::string mode, lib, expect;
  };
  for (const Case& c :
       {Case{"no-engine", JOULEPROF_FAKE_DCGM,
             "no DCGM host engine at 127.0.0.1 (dcgmConnect failed: Connection to the host engine "
             "is not valid any longer (-21); dcgmStartEmbedded failed: DCGM initialization error "
             "(-7); start nv-hostengine)"},
        Case{"ok", "/nonexistent/libdcgm.so.4", "no DCGM library (/nonexistent/libdcgm.so.4)"},
        Case{"counters-busy", JOULEPROF_FAKE_DCGM,
             "(-34) — the profiling counters are held by another client"},
        Case{"no-profiling", JOULEPROF_FAKE_DCGM,
             "(-36) — this GPU has no DCGM profiling fields"}}) {
    auto r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", "dcgm",
                      "--no-store", "--", "true"},
                     env({"JOULEPROF_FAKE_DCGM_MODE=" + c.mode, "JOULEPROF_DCGM_LIB=" + c.lib}));
    EXPECT_EQ(r.exit_code, 3) << c.mode << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("jouleprof: error: GPU 0: --metrics-source dcgm: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.mode << ": " << r.err;
  }
}

TEST(DcgmSource, AGpuDcgmDoesNotKnowIsAnError) {
  auto r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", "dcgm", "--no-store",
                    "--", "true"},
                   env({"JOULEPROF_FAKE_DCGM_GPUS=0"}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("dcgmGroupAddDevice(GPU 0) failed: Bad parameter"), std::string::npos)
      << r.err;
}

// --- names and the store ----------------------------------------------------------------------

TEST(ActivitySources, AnUnknownNameSuggestsTheClosest) {
  auto r = run_cli(
      {"measure", "--device", "sim", "--metrics", "--metrics-source", "dcmg", "--", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("(did you mean dcgm?)"), std::string::npos) << r.err;
}

TEST(ActivitySources, TheStoreKeepsEachTimelinesSource) {
  const std::string db = out("sources.db");
  for (const char* source : {"cupti-pm", "dcgm"}) {
    auto r = run_cli({"measure", "--idle", "0", "--metrics", "--metrics-source", source,
                      "--metrics-period-ms", "100", "--db", db, "-q", "--", "sleep", "0.3"},
                     env());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto show = run_cli({"runs", "show", "last", "--db", db});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    EXPECT_NE(show.out.find(std::string("GPU 0: ") + source + ", "), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("sm_active"), std::string::npos) << show.out;
  }
}

TEST(ActivitySources, ModelFitReadsASweepsPmSampledActivity) {
  // sweep --metrics --metrics-source cupti-pm on the fake GPU (its clocks set in the fake), then
  // model fit --sweep: the seven PM-sampled metrics are read (and left out as constant: the fake's
  // values do not vary between applications).
  const std::string db = out("pm-sweep.db"), model = out("pm-sweep.model.json");
  auto r = run_cli({"sweep",
                    "--gpus",
                    "0",
                    "--clocks",
                    "1980,1410,990",
                    "--runs",
                    "1",
                    "--warmup",
                    "0",
                    "--idle",
                    "0",
                    "--metrics",
                    "--metrics-source",
                    "cupti-pm",
                    "--sweep-id",
                    "pm",
                    "--param",
                    "app=a,b,c",
                    "--db",
                    db,
                    "-q",
                    "--",
                    "sleep",
                    "0.2"},
                   env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto show = run_cli({"runs", "show", "last", "--db", db});
  EXPECT_NE(show.out.find("GPU 0: cupti-pm, "), std::string::npos) << show.out;
  auto fit = run_cli(
      {"model", "fit", "--sweep", "pm", "--db", db, "--form", "knn", "--no-outliers", "-o", model});
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto m = load_json(model);
  EXPECT_EQ(
      m["dropped_activity"],
      nlohmann::json({"dram_active (constant)", "fp16_active (constant)", "fp32_active (constant)",
                      "fp64_active (constant)", "sm_active (constant)", "sm_occupancy (constant)",
                      "tensor_active (constant)"}));
}

}  // namespace
