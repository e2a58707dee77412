// Replay plan and prediction arithmetic (no GPU): engine output written here with known per-call
// figures; the prediction must be Σ count × per-call + gaps × gap power, exactly.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "jouleprof/replay/replay.hpp"

using namespace jouleprof;
using nlohmann::json;

namespace {

KernelTable bloom() {
  static const KernelClassifier classes = KernelClassifier::load(std::string(JOULEPROF_SOURCE_DATA) + "/kernel-classes.tsv").value();
  static const KernelClassifier tiers = KernelClassifier::load(std::string(JOULEPROF_SOURCE_DATA) + "/replay-tiers.tsv").value();
  KernelTableOptions o;
  o.classes = &classes;
  o.tiers = &tiers;
  return read_kernel_table({std::string(JOULEPROF_REPLAY_DATA) + "/bloom_tiny_forward.json"}, o).value();
}

// What jouleprof-replay would write: every planned item at `scale` × its traced time and `watts`.
json engine_output(const KernelTable& t, const json& plan, double scale, double watts, double gap_w) {
  json items = json::array();
  for (const json& it : plan["items"]) {
    const auto row = it["row"].get<std::size_t>();
    const double ns = t.rows[row].mean_ns() * scale;
    items.push_back({{"row", row}, {"status", "ok"}, {"time_ns", ns}, {"time_ns_half_width", 0.0}, {"power_w", watts},
                     {"energy_j", watts * ns * 1e-9}, {"energy_j_half_width", 0.0}});
  }
  return {{"schema", "jouleprof.replay_measurements"}, {"gpu", "NVIDIA H100 80GB HBM3"}, {"idle_w", 70.0}, {"gap_w", gap_w},
          {"items", items}, {"not_replayed", plan["not_replayed"]}};
}

}  // namespace

TEST(Replay, PlanCoversRowsLongestFirst) {
  const KernelTable t = bloom();
  ReplayOptions o;
  o.coverage = 0.5;
  const json plan = json::parse(replay_plan_json(t, o));
  ASSERT_FALSE(plan["items"].empty());
  double covered = 0;
  for (const json& it : plan["items"]) covered += static_cast<double>(t.rows[it["row"].get<std::size_t>()].total_ns);
  EXPECT_GE(covered / static_cast<double>(t.gpu_ns()), 0.5);
  EXPECT_EQ(plan["items"].size() + plan["not_replayed"].size(), t.rows.size());
  for (const json& it : plan["items"]) {
    const KernelRow& r = t.rows[it["row"].get<std::size_t>()];
    if (r.gemm) {
      EXPECT_EQ(it["tier"], "gemm");
      EXPECT_EQ(it["m"].get<int64_t>(), r.gemm->m);
    }
  }
}

TEST(Replay, PredictionIsCountTimesPerCallPlusGaps) {
  const KernelTable t = bloom();
  ReplayOptions o;
  o.coverage = 1.0;
  o.max_rows = 1000;
  const json plan = json::parse(replay_plan_json(t, o));
  const json out = engine_output(t, plan, 1.0, 300.0, 100.0);
  auto p = predict_from_replay(t, out.dump());
  ASSERT_TRUE(p) << p.error().message;
  const double gpu_s = static_cast<double>(t.gpu_ns()) * 1e-9;
  EXPECT_NEAR(p->predicted_gpu_s, gpu_s, 1e-12);
  EXPECT_NEAR(p->kernel_energy_j, 300.0 * gpu_s, 1e-9);
  EXPECT_NEAR(p->gap_energy_j, 100.0 * static_cast<double>(t.idle_ns()) * 1e-9, 1e-12);
  EXPECT_NEAR(p->predicted_energy_j, p->kernel_energy_j + p->gap_energy_j, 1e-12);
  EXPECT_NEAR(p->predicted_time_s, static_cast<double>(t.span_ns) * 1e-9, 1e-9);
  double tier_j = 0;
  for (const TierPrediction& tp : p->tiers) tier_j += tp.energy_j;
  EXPECT_NEAR(tier_j, p->kernel_energy_j, 1e-12);
  for (const RowPrediction& r : p->rows) EXPECT_FALSE(r.time_off);
}

TEST(Replay, SlowerReplayIsFlaggedAndSkippedRowsAreExtrapolated) {
  const KernelTable t = bloom();
  ReplayOptions o;
  o.coverage = 1.0;
  o.max_rows = 1000;
  const json plan = json::parse(replay_plan_json(t, o));
  json out = engine_output(t, plan, 1.5, 200.0, 90.0);
  out["items"][0]["status"] = "skipped";
  out["items"][0]["reason"] = "out of GPU memory for 99999 MiB";
  auto p = predict_from_replay(t, out.dump());
  ASSERT_TRUE(p) << p.error().message;
  const auto row0 = out["items"][0]["row"].get<std::size_t>();
  EXPECT_EQ(p->rows[row0].status, "extrapolated");
  EXPECT_NE(p->rows[row0].reason.find("out of GPU memory"), std::string::npos);
  EXPECT_DOUBLE_EQ(p->rows[row0].time_ns, t.rows[row0].mean_ns());  // its traced time, still accounted
  EXPECT_NEAR(p->rows[row0].power_w, 200.0, 1e-9);                    // at its tier's replayed power
  const auto row1 = out["items"][1]["row"].get<std::size_t>();
  EXPECT_TRUE(p->rows[row1].time_off);
  EXPECT_FALSE(p->warnings.empty());
}

TEST(Replay, BadEngineOutputIsRefused) {
  const KernelTable t = bloom();
  EXPECT_FALSE(predict_from_replay(t, "not json"));
  EXPECT_FALSE(predict_from_replay(t, R"({"schema": "other"})"));
  EXPECT_FALSE(predict_from_replay(t, R"({"schema": "jouleprof.replay_measurements", "gap_w": 90, "items": [{"row": 100000, "status": "ok"}]})"));
  EXPECT_FALSE(predict_from_replay(t, R"({"schema": "jouleprof.replay_measurements", "gap_w": 90, "items": []})"));
}

TEST(Replay, ComparisonWithAMeasuredWindow) {
  const KernelTable t = bloom();
  ReplayOptions o;
  const json plan = json::parse(replay_plan_json(t, o));
  auto p = predict_from_replay(t, engine_output(t, plan, 1.0, 300.0, 100.0).dump());
  ASSERT_TRUE(p);
  Measurement m;
  WindowResult w;
  w.name = "work";
  w.t0_s = 1.0;
  w.t1_s = 1.0 + p->predicted_time_s * 1.1;
  w.gpu_energy_j = p->predicted_energy_j / 0.9;
  m.windows.push_back(w);
  ASSERT_TRUE(compare_with_measurement(*p, m, "run 1", "work"));
  EXPECT_NEAR(*p->energy_error(), -0.1, 1e-9);
  EXPECT_NEAR(*p->time_error(), 1 / 1.1 - 1, 1e-9);
  const json j = json::parse(replay_json(t, *p));
  EXPECT_EQ(j["schema"], "jouleprof.replay");
  EXPECT_NEAR(j["comparison"]["energy_error"].get<double>(), -0.1, 1e-9);
  auto missing = compare_with_measurement(*p, m, "run 1", "decode");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("work"), std::string::npos);  // names the windows it has
}

namespace {
std::string sh(const std::string& cmd, int& rc) {
  std::FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char b[4096];
  std::size_t n = 0;
  while ((n = std::fread(b, 1, sizeof b, f)) > 0) out.append(b, n);
  const int st = pclose(f);
  rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return out;
}
}  // namespace

TEST(ReplayCli, PlanFromAndErrors) {
  const std::string cli = JOULEPROF_CLI;
  const std::string trace = std::string(JOULEPROF_REPLAY_DATA) + "/bloom_tiny_forward.json";
  const std::string dir = ::testing::TempDir();
  const std::string plan_file = dir + "/replay-plan.json", out_file = dir + "/replay-out.json";
  int rc = 0;
  std::string out = sh(cli + " replay " + trace + " --plan " + plan_file, rc);
  ASSERT_EQ(rc, 0) << out;
  const json plan = json::parse(std::ifstream(plan_file));
  const KernelTable t = bloom();
  std::ofstream(out_file) << engine_output(t, plan, 1.0, 250.0, 95.0).dump();
  out = sh(cli + " replay " + trace + " --from " + out_file + " --no-store -q --json -", rc);
  ASSERT_EQ(rc, 0) << out;
  const json j = json::parse(out);
  EXPECT_EQ(j["schema"], "jouleprof.replay");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_GT(j["prediction"]["predicted_energy_j"].get<double>(), 0);
  EXPECT_EQ(j["kernels"].size(), t.rows.size());
  EXPECT_EQ(out.find("stored as run"), std::string::npos);  // --from: no replay session to store
  // With an engine (a stand-in writing the output above) the session is measured (simulated GPU
  // here) and stored with the replay section; `runs show` prints it.
  const std::string db = dir + "/replay-runs-" + std::to_string(::getpid()) + ".db";
  std::filesystem::remove(db);
  const std::string engine = dir + "/fake-jouleprof-replay.sh";
  std::ofstream(engine) << "#!/bin/sh\ncp '" << out_file << "' \"$2\"\n";
  std::filesystem::permissions(engine, std::filesystem::perms::owner_all);
  out = sh(cli + " replay " + trace + " --engine " + engine + " --device sim --idle 0 --db " + db, rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("stored as run"), std::string::npos) << out;
  EXPECT_NE(out.find("predicted:"), std::string::npos) << out;
  out = sh(cli + " runs show last --db " + db, rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("predicted"), std::string::npos) << out;
  EXPECT_NE(out.find("gemm"), std::string::npos) << out;
  std::filesystem::remove(db);
  // Errors: one line, the contract's exit codes.
  out = sh(cli + " replay " + trace + " --engine /nonexistent/jouleprof-replay --no-store", rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_EQ(out.rfind("jouleprof: error: ", 0), 0u) << out;
  out = sh(cli + " replay " + trace + " --from " + out_file + " --measured /nonexistent.json --no-store", rc);
  EXPECT_EQ(rc, 2) << out;
  out = sh(cli + " replay " + trace + " --from " + out_file + " --trials 1 --no-store", rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("--trials"), std::string::npos) << out;
}
