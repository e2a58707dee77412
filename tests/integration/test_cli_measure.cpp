// `jouleprof measure` end to end: the CLI against the fake NVML and the simulated GPU.
#include <gtest/gtest.h>

#include "helpers.hpp"

using jp_test::fake_env;
using jp_test::load_json;
using jp_test::run_cli;

namespace {
std::string out(const std::string& name) { return (jp_test::temp_dir() / name).string(); }
}  // namespace

TEST(CliMeasure, MeasuresACommandWithPhasesFromMarkers) {
  const std::string json = out("phases.json"), csv = out("phases.csv");
  const std::string script =
      "echo 'begin prefill' > $JOULEPROF_MARKERS; sleep 0.3; echo 'end prefill' > $JOULEPROF_MARKERS;"
      "echo 'begin decode' > $JOULEPROF_MARKERS; sleep 0.5;"
      "printf 'end decode\\ncount tokens 64 decode\\n' > $JOULEPROF_MARKERS";
  auto r = run_cli({"measure", "--idle", "0.5", "--runs", "2", "--tag", "model=test", "--json", json, "--timeline",
                    csv, "--", "sh", "-c", script},
                   fake_env("idle_w 250\n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = load_json(json);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["status"], "complete");
  EXPECT_EQ(j["tags"]["model"], "test");
  EXPECT_EQ(j["gpus"][0]["driver_version"], "580.159-fake");
  EXPECT_NEAR(j["gpus"][0]["idle_power_w"].get<double>(), 250, 2);
  int phases = 0;
  for (const auto& w : j["windows"]) {
    if (w["kind"] != "phase") continue;
    ++phases;
    const double d = w["duration_s"];
    EXPECT_NEAR(w["gpu_energy_j"].get<double>(), 250 * d, 0.05 * 250 * d + 2) << w.dump();
    if (w["name"] == "decode") {
      EXPECT_EQ(w["counts"]["tokens"], 64);
    }
    EXPECT_GE(w["run"].get<int>(), 0);
  }
  EXPECT_EQ(phases, 4);
  EXPECT_TRUE(j["statistics"].contains("phase:decode:gpu_energy_per_token_j"));
  EXPECT_EQ(j["statistics"]["gpu_energy_j"]["n"], 2);
  EXPECT_NE(r.out.find("prefill"), std::string::npos);
  const std::string timeline = jp_test::read_file(csv);
  EXPECT_EQ(timeline.rfind("t_s,device,metric,value\n", 0), 0u);
  EXPECT_NE(timeline.find(",gpu0,power_sample_w,"), std::string::npos);
  EXPECT_NE(timeline.find(",gpu0,energy_j,"), std::string::npos);
}

TEST(CliMeasure, WorkloadFlagsAfterDashesAreNotJouleprofs) {
  auto r = run_cli({"measure", "--idle", "0", "-q", "--tag", "a=b", "--tag", "c=d", "--", "sh", "-c", "exit 0",
                    "--runs", "-x"},
                   fake_env("idle_w 100\n"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CliMeasure, PropagatesTheExitStatusAndMarksTheResultIncomplete) {
  const std::string json = out("fail.json");
  auto r = run_cli({"measure", "--idle", "0", "-q", "--runs", "3", "--json", json, "--", "sh", "-c", "exit 7"},
                   fake_env("idle_w 100\n"));
  EXPECT_EQ(r.exit_code, 7);
  const auto j = load_json(json);
  EXPECT_EQ(j["status"], "incomplete");
  EXPECT_EQ(j["runs"].size(), 1u);  // no further runs after a failure
  EXPECT_NE(j["incomplete_reason"].get<std::string>().find("status 7"), std::string::npos);
}

TEST(CliMeasure, ACrashingWorkloadStillYieldsAResult) {
  const std::string json = out("crash.json");
  auto r = run_cli({"measure", "--idle", "0", "-q", "--json", json, "--", "sh", "-c", "sleep 0.3; kill -SEGV $$"},
                   fake_env("idle_w 100\n"));
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV);
  const auto j = load_json(json);
  EXPECT_EQ(j["status"], "incomplete");
  EXPECT_EQ(j["runs"][0]["signal"], SIGSEGV);
  EXPECT_GT(j["windows"][0]["gpu_energy_j"].get<double>(), 0);
}

TEST(CliMeasure, InterruptedMeasurementKeepsWhatWasMeasured) {
  const std::string json = out("int.json");
  // The first run says it started (a FIFO handshake), then is interrupted: no timer decides when.
  const jp_test::ReadyFifo ready("int.ready");
  auto r = jp_test::run_cli_with({"measure", "--idle", "0", "-q", "--runs", "5", "--json", json, "--", "sh", "-c",
                                  "echo ready > " + ready.path() + "; exec sleep 5"},
                                 fake_env("idle_w 120\n"), [&ready](pid_t pid) {
                                   EXPECT_TRUE(ready.wait());
                                   kill(pid, SIGINT);  // like Ctrl-C, but to jouleprof alone
                                 });
  EXPECT_EQ(r.exit_code, 128 + SIGINT) << r.err;
  const auto j = load_json(json);
  EXPECT_EQ(j["status"], "incomplete");
  EXPECT_NE(j["incomplete_reason"].get<std::string>().find("interrupted"), std::string::npos);
  ASSERT_EQ(j["runs"].size(), 1u);
  EXPECT_GT(j["windows"][0]["duration_s"].get<double>(), 0.0);
  EXPECT_LT(j["windows"][0]["duration_s"].get<double>(), 3.0);  // the child got the signal (else 5 s)
}

TEST(CliMeasure, SignalsAreForwardedToTheWorkload) {
  const jp_test::ReadyFifo ready("term.ready");  // the workload runs before jouleprof is signalled
  auto r = jp_test::run_cli_with({"measure", "--idle", "0", "-q", "--", "sh", "-c", "echo ready > " + ready.path() + "; exec sleep 30"},
                                 fake_env("idle_w 120\n"), [&ready](pid_t pid) {
                                   EXPECT_TRUE(ready.wait());
                                   kill(pid, SIGTERM);
                                 });
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
}

TEST(CliMeasure, ErrorsAreOneLineWithDistinctExitCodes) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> env;
    int code;
    std::string says;
  };
  const std::string bad_csv = jp_test::write_file("bad.csv", "time,sum\n2026-01-01 00:00:00,5\nnot-a-time,3\n");
  const std::vector<Case> cases = {
      {{"measure", "--idle", "0", "--", "no-such-command-xyz"}, fake_env("idle_w 90\n"), 127, "command not found: no-such-command-xyz"},
      {{"measure", "--gpus", "5", "--", "true"}, fake_env("idle_w 90\n"), 3, "GPU '5' not found"},
      {{"measure", "--", "true"}, {"JOULEPROF_NVML_LIB=/nonexistent/libnvidia-ml.so.1"}, 3, "cannot load NVML"},
      {{"measure", "--", "true"}, [] { auto e = fake_env("idle_w 90\n"); e.push_back("JOULEPROF_FAKE_NVML_INIT_ERROR=9"); return e; }(), 3, "Driver Not Loaded"},
      {{"measure", "--frobnicate"}, {}, 2, "--frobnicate"},
      {{"measure", "--runs", "0", "--", "true"}, {}, 2, "--runs"},
      {{"measure", "--tag", "novalue", "--", "true"}, fake_env("idle_w 90\n"), 2, "KEY=VALUE"},
      {{"measure", "--idle-from", "/nonexistent.json", "--", "true"}, {}, 2, "cannot read"},  // a missing input file is bad input
      {{"measure", "--idle", "0", "-q", "--meter-csv", bad_csv, "--", "true"}, fake_env("idle_w 90\n"), 2, "line 3: bad time"},
      {{"measure", "--device", "sim", "--sim-scenario", jp_test::write_file("bad-sc.txt", "gpus x\n"), "--", "true"}, {}, 2, "line 1"},
  };
  for (const Case& c : cases) {
    auto r = run_cli(c.args, c.env);
    EXPECT_EQ(r.exit_code, c.code) << c.args[1] << " " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("jouleprof: error: "), std::string::npos) << r.err;
    // One line of error (progress lines start with "jouleprof: " too, but not "error").
    std::size_t errors = 0;
    for (std::size_t p = 0; (p = r.err.find("error: ", p)) != std::string::npos; ++p) ++errors;
    EXPECT_EQ(errors, 1u) << r.err;
  }
}

TEST(CliMeasure, MeterLogIsAlignedByWallClock) {
  // A meter log at 1 Hz covering the next minute, 500 W constant.
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const long t0 = std::chrono::duration_cast<std::chrono::seconds>(now).count() - 5;
  std::string csv = "time,id,pm1,pm2,sum\n";
  for (int i = 0; i < 70; ++i) csv += std::to_string(t0 + i) + "," + std::to_string(i) + ",250,250,500\n";
  const std::string json = out("meter.json");
  auto r = run_cli({"measure", "--idle", "0", "-q", "--meter-csv", jp_test::write_file("m.csv", csv), "--json", json,
                    "--", "sleep", "1"},
                   fake_env("idle_w 90\n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = load_json(json);
  const auto& w = j["windows"][0];
  EXPECT_NEAR(w["meter_energy_j"].get<double>(), 500 * w["duration_s"].get<double>(), 1.0);
}

TEST(CliMeasure, IdleBaselineFromAnEarlierResult) {
  const std::string first = out("idle1.json"), second = out("idle2.json");
  ASSERT_EQ(run_cli({"measure", "--idle", "0.5", "-q", "--json", first, "--", "true"}, fake_env("idle_w 77\n")).exit_code, 0);
  auto r = run_cli({"measure", "-q", "--idle-from", first, "--json", second, "--", "sleep", "0.5"}, fake_env("idle_w 177\n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = load_json(second);
  EXPECT_NEAR(j["gpus"][0]["idle_power_w"].get<double>(), 77, 1);
  EXPECT_NE(j["gpus"][0]["idle_source"].get<std::string>().find("idle1.json"), std::string::npos);
  EXPECT_NEAR(j["windows"][0]["gpu_above_idle_energy_j"].get<double>(), 100 * j["windows"][0]["duration_s"].get<double>(), 6);
}

TEST(CliMeasure, BuiltInWorkloadRunsOnTheSimulatedGpuAndSaysSo) {
  const std::string json = out("sim.json");
  auto r = run_cli({"measure", "--device", "sim", "--idle", "0.3", "--json", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[simulated]"), std::string::npos);
  const auto j = load_json(json);
  EXPECT_EQ(j["simulated"], true);
  EXPECT_EQ(j["tags"]["simulated"], "true");
  EXPECT_EQ(j["gpus"][0]["simulated"], true);
  EXPECT_NE(j["gpus"][0]["name"].get<std::string>().find("simulated"), std::string::npos);
}

TEST(CliMeasure, ShortWindowGetsTimelineEnergyAndAWarning) {
  const std::string json = out("short.json");
  // A load file lets the workload set the fake GPU's power at exact wall-clock times.
  const std::string load = jp_test::write_file("load.txt", "");
  const std::string script =
      // The burst is scheduled 100 ms ahead, so the fake never has to change samples it already gave.
      "sleep 0.3; now=$(( $(date +%s%N) + 100000000 )); echo \"$now 700\" >> " + load +
      "; echo \"begin burst t=$(echo $now | sed 's/.........$/.&/')\" > $JOULEPROF_MARKERS;"
      "end=$((now + 16000000)); echo \"$end 80\" >> " + load +
      "; echo \"end burst t=$(echo $end | sed 's/.........$/.&/')\" > $JOULEPROF_MARKERS; sleep 0.4";
  auto r = run_cli({"measure", "--idle", "0", "--json", json, "--", "sh", "-c", script},
                   fake_env("idle_w 80\nload_file " + load + "\n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = load_json(json);
  bool found = false;
  for (const auto& w : j["windows"]) {
    if (w["name"] != "burst") continue;
    found = true;
    EXPECT_NEAR(w["duration_s"].get<double>(), 0.016, 1e-3);
    const auto& g = w["gpus"][0];
    EXPECT_EQ(g["method"], "timeline(response)");
    EXPECT_GT(g["uncertainty_j"].get<double>(), 0);
    // True energy 700 W × 16 ms = 11.2 J (the fake's samples average 20 ms: no lag).
    EXPECT_NEAR(g["energy_j"].get<double>(), 11.2, 0.6) << g.dump();
    EXPECT_LE(std::abs(g["energy_j"].get<double>() - 11.2), g["uncertainty_j"].get<double>() + 0.3) << g.dump();
  }
  EXPECT_TRUE(found);
  EXPECT_NE(r.out.find("shorter than the energy counter"), std::string::npos) << r.out;
}

TEST(CliMeasure, CooldownWaitsBetweenRunsAndGivesUp) {
  const std::string json = out("cool.json");
  // The simulated GPU's temperature follows a 20 s average of its power: after a run it is
  // still moving, so a 2-s cool-down limit is reached and said.
  auto r = run_cli({"measure", "--device", "sim", "--idle", "0", "-q", "--runs", "2", "--cooldown", "--cooldown-max",
                    "2", "--cooldown-tolerance", "0.01", "--json", json, "--", "sleep", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = load_json(json);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_GE(j["windows"][1]["t0_s"].get<double>() - j["windows"][0]["t1_s"].get<double>(), 1.9);
  bool warned = false;
  for (const auto& w : j["warnings"]) warned |= w.get<std::string>().find("cool-down") != std::string::npos;
  EXPECT_TRUE(warned);
  EXPECT_EQ(j["provenance"]["command_line"][1], "measure");
}

TEST(CliMeasure, RecordsIntoTheRunStoreUnlessAskedNot) {
  const std::string db = out("own.db");
  auto r = run_cli({"measure", "--idle", "0", "--db", db, "--tag", "k=v", "--", "true"}, fake_env("idle_w 90\n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("recorded as run 1 in " + db), std::string::npos) << r.err;
  auto list = run_cli({"runs", "--db", db, "list", "--tag", "k=v"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("true"), std::string::npos) << list.out;
  const std::string none = out("none.db");
  ASSERT_EQ(run_cli({"measure", "--idle", "0", "-q", "--no-store", "--db", none, "--", "true"}, fake_env("idle_w 90\n")).exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(none));
}

TEST(CliMeasure, IdleBaselineIsTheSettledLevelAndAnUnsettledGpuIsReported) {
  // The GPU comes out of earlier work at 130 W and settles at 70 W after 0.5 s.
  const std::string json = out("settle.json");
  auto r = run_cli({"measure", "--idle", "2", "-q", "--json", json, "--", "true"},
                   fake_env("idle_w 130\nat 0.5 constant 70\n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = load_json(json);
  EXPECT_NEAR(j["gpus"][0]["idle_power_w"].get<double>(), 70, 2);
  bool warned = false;
  for (const auto& w : j["warnings"]) warned |= w.get<std::string>().find("not settled") != std::string::npos;
  EXPECT_TRUE(warned);
}
