// Replay plan and prediction arithmetic (no GPU): engine output written here with known per-call
// figures; the prediction must be Σ count × per-call + gaps × gap power, exactly.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "jouleprof/replay/replay.hpp"
#include "jouleprof/replay/replay_run.hpp"
#include "jouleprof/store/run_source.hpp"

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
  return {{"schema", "jouleprof.replay_measurements"}, {"gpu", "NVIDIA H100 80GB HBM3"},
          {"sensor_gpu_uuid", "GPU-11111111-2222-3333-4444-555555555555"}, {"idle_w", 70.0}, {"gap_w", gap_w},
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

TEST(Replay, LinearLayersWeightsAreReplayedFromMemory) {
  // nn.Linear's B operand is its layer's weight (each layer its own: the engine rotates copies
  // past the L2 cache); bmm/baddbmm multiply activations.
  const KernelTable t = bloom();
  ReplayOptions o;
  o.coverage = 1.0;
  o.max_rows = 1000;
  const json plan = json::parse(replay_plan_json(t, o));
  std::set<std::string> weights, activations;
  for (const json& it : plan["items"]) {
    if (it["tier"] != "gemm") continue;
    const std::string& op = t.rows[it["row"].get<std::size_t>()].op;
    (it["weight_b"].get<bool>() ? weights : activations).insert(op);
  }
  EXPECT_EQ(weights, (std::set<std::string>{"aten::addmm", "aten::mm"}));
  EXPECT_EQ(activations, (std::set<std::string>{"aten::baddbmm", "aten::bmm"}));
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
  // The measuring board, for `trace --replay` to compare with a run's.
  EXPECT_EQ(json::parse(replay_json(t, *p))["replay_gpu_uuid"], "GPU-11111111-2222-3333-4444-555555555555");
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
  w.gpus.resize(1);
  w.gpus[0].uncertainty_j = 0.01 * w.gpu_energy_j;  // the window's own bound travels with the comparison
  m.windows.push_back(w);
  ASSERT_TRUE(compare_with_measurement(*p, m, "run 1", "work"));
  EXPECT_NEAR(*p->energy_error(), -0.1, 1e-9);
  EXPECT_NEAR(p->measured_uncertainty_j, 0.01 * w.gpu_energy_j, 1e-12);
  EXPECT_NE(replay_text(t, *p, 5).find("(measurement ± 1.0%, prediction ± "), std::string::npos);
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
  EXPECT_EQ(plan["context"]["trials"], 8);
  {
    const std::string more = dir + "/replay-plan-ctx.json";
    std::string o2 = sh(cli + " replay " + trace + " --plan " + more + " --context-trials 7", rc);
    ASSERT_EQ(rc, 0) << o2;
    EXPECT_EQ(json::parse(std::ifstream(more))["context"]["trials"], 7);
    o2 = sh(cli + " replay " + trace + " --plan " + more + " --context-trials 1", rc);
    EXPECT_EQ(rc, 2) << o2;
    EXPECT_NE(o2.find("--context-trials"), std::string::npos) << o2;
  }
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

// The pipeline as one library call (replay_run.hpp), as the CLI and the Python package call it:
// the plan alone; the engine (a stand-in copying a prepared output) under the measurement core on
// the simulated GPU, its output kept and the session stored with the result; the same prediction
// from the kept output, nothing stored.
TEST(ReplayCommand, PlanEnginePredictStoreInOneCall) {
  const std::string dir = ::testing::TempDir() + "/replay-command-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  ReplayRequest r;
  r.traces = {std::string(JOULEPROF_REPLAY_DATA) + "/bloom_tiny_forward.json"};
  r.plan_out = dir + "/plan.json";
  r.plan_only = true;
  auto plan_only = replay_command(r);
  ASSERT_TRUE(plan_only) << plan_only.error().message;
  EXPECT_FALSE(plan_only->prediction);
  const json plan = json::parse(std::ifstream(r.plan_out));
  EXPECT_EQ(plan, json::parse(plan_only->plan));
  const std::string prepared = dir + "/prepared.json", engine = dir + "/engine.sh";
  std::ofstream(prepared) << engine_output(plan_only->table, plan, 1.0, 250.0, 95.0).dump();
  std::ofstream(engine) << "#!/bin/sh\ncp '" << prepared << "' \"$2\"\n";
  std::filesystem::permissions(engine, std::filesystem::perms::owner_all);

  r.plan_out.clear();
  r.plan_only = false;
  r.engine = engine;
  r.keep_measurements = dir + "/kept.json";
  r.measure.monitor.gpus.backend = "sim";
  r.measure.idle_s = 0;
  r.db = dir + "/runs.db";
  auto run = replay_command(r);
  ASSERT_TRUE(run) << run.error().message;
  ASSERT_TRUE(run->prediction);
  EXPECT_FALSE(run->store_error);
  ASSERT_TRUE(run->run_id);
  auto stored = load_runs({std::to_string(*run->run_id)}, r.db, false);
  ASSERT_TRUE(stored) << stored.error().message;
  const Measurement& m = stored->front().m;
  EXPECT_EQ(json::parse(m.sections.at("replay")), json::parse(replay_json(run->table, *run->prediction)));
  EXPECT_EQ(m.tags.at("replay"), "true");
  EXPECT_EQ(m.tags.at("replay.trace"), r.traces.front());
  EXPECT_TRUE(m.simulated);
  std::stringstream kept, given;
  kept << std::ifstream(r.keep_measurements).rdbuf();
  given << std::ifstream(prepared).rdbuf();
  EXPECT_EQ(kept.str(), given.str());

  ReplayRequest again;
  again.traces = r.traces;
  again.from = r.keep_measurements;
  again.db = r.db;
  auto from = replay_command(again);
  ASSERT_TRUE(from) << from.error().message;
  EXPECT_FALSE(from->run_id);  // no session to store
  EXPECT_FALSE(from->store_error);
  EXPECT_EQ(replay_json(from->table, *from->prediction), replay_json(run->table, *run->prediction));

  r.store = false;
  auto unstored = replay_command(r);
  ASSERT_TRUE(unstored) << unstored.error().message;
  EXPECT_FALSE(unstored->run_id);
  again.measured = dir + "/nonexistent.json";  // a wrong reference fails before the engine
  EXPECT_EQ(replay_command(again).error().code, Errc::invalid_argument);
  EXPECT_EQ(replay_command(ReplayRequest{}).error().code, Errc::invalid_argument);
  std::filesystem::remove_all(dir);
}

// --- The activity sequence, the context replay and phases ------------------------------------

namespace {

KernelTable table_of(const std::string& path) {
  static const KernelClassifier classes = KernelClassifier::load(std::string(JOULEPROF_SOURCE_DATA) + "/kernel-classes.tsv").value();
  static const KernelClassifier tiers = KernelClassifier::load(std::string(JOULEPROF_SOURCE_DATA) + "/replay-tiers.tsv").value();
  KernelTableOptions o;
  o.classes = &classes;
  o.tiers = &tiers;
  return read_kernel_table({path}, o).value();
}

// The BLOOM test trace with two record_function ranges added: "first" over the first half of its
// GPU activity, "second" over the rest.
std::string bloom_with_phases(int64_t& cut_ns) {
  json d = json::parse(std::ifstream(std::string(JOULEPROF_REPLAY_DATA) + "/bloom_tiny_forward.json"));
  double lo = 1e300, hi = 0;
  for (const json& e : d["traceEvents"]) {
    if (e.value("cat", "") != "kernel") continue;
    lo = std::min(lo, e["ts"].get<double>());
    hi = std::max(hi, e["ts"].get<double>() + e["dur"].get<double>());
  }
  const double mid = std::floor((lo + hi) / 2);
  cut_ns = static_cast<int64_t>(mid * 1000);
  d["traceEvents"].push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "first"}, {"pid", 1}, {"tid", 1}, {"ts", lo - 5}, {"dur", mid - (lo - 5)}});
  d["traceEvents"].push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "second"}, {"pid", 1}, {"tid", 1}, {"ts", mid}, {"dur", hi + 5 - mid}});
  const std::string path = ::testing::TempDir() + "/bloom-phases-" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << d.dump();
  return path;
}

}  // namespace

TEST(ReplaySequence, ActivitiesAreTheTraceInOrderWithRowsRemapped) {
  for (const std::string& f : {std::string("/bloom_tiny_forward.json"), std::string("/llama_tiny_generate.json.gz")}) {
    const KernelTable t = table_of(std::string(JOULEPROF_REPLAY_DATA) + f);
    ASSERT_EQ(t.activities.size(), t.kernels + t.memcpys + t.memsets) << f;
    std::vector<int64_t> total(t.rows.size(), 0);
    std::vector<uint64_t> count(t.rows.size(), 0);
    for (std::size_t i = 0; i < t.activities.size(); ++i) {
      const TraceActivity& a = t.activities[i];
      ASSERT_LT(a.row, t.rows.size());
      total[a.row] += a.dur_ns;
      ++count[a.row];
      if (i > 0 && t.activities[i - 1].device == a.device) {
        EXPECT_LE(t.activities[i - 1].start_ns, a.start_ns);
      }
    }
    for (std::size_t r = 0; r < t.rows.size(); ++r) {  // after the longest-first sort, each activity still names its row
      EXPECT_EQ(total[r], t.rows[r].total_ns) << f << " row " << r;
      EXPECT_EQ(count[r], t.rows[r].count) << f << " row " << r;
    }
  }
}

TEST(ReplaySequence, ContextPlanIsWindowsOfTheTraceWithTheirGaps) {
  const KernelTable t = bloom();
  ReplayOptions o;
  o.context_activities = 40;
  o.context_windows = 4;
  const json plan = json::parse(replay_plan_json(t, o));
  ASSERT_TRUE(plan.contains("context"));
  const json& c = plan["context"];
  EXPECT_EQ(c["windows"].size(), 4u);
  std::size_t n = 0;
  for (const json& w : c["windows"]) n += w[1].get<std::size_t>();
  EXPECT_EQ(n, 40u);
  EXPECT_LE(c["sequence"].size(), 40u);
  EXPECT_GT(c["traced_span_ns"].get<double>(), 0);
  int64_t gaps = 0;
  for (const json& s : c["sequence"]) {
    const auto row = s[0].get<std::size_t>();
    ASSERT_LT(row, t.rows.size());
    EXPECT_GE(s[1].get<int64_t>(), 0);
    gaps += s[1].get<int64_t>();
    ASSERT_TRUE(c["rows"].contains(std::to_string(row)));
    EXPECT_EQ(c["rows"][std::to_string(row)]["row"].get<std::size_t>(), row);
    EXPECT_GT(c["rows"][std::to_string(row)]["traced_ns"].get<double>(), 0);
  }
  EXPECT_LT(gaps, c["traced_span_ns"].get<int64_t>());
  // The whole trace when asked for more than it has; one window per activity at most.
  o.context_activities = 1000000;
  o.context_windows = 1;
  const json all = json::parse(replay_plan_json(t, o));
  std::size_t companions = 0;
  for (const json& s : all["context"]["sequence"]) (void)s, ++companions;
  EXPECT_LE(companions, t.activities.size());
  EXPECT_NEAR(all["context"]["traced_span_ns"].get<double>(), static_cast<double>(t.span_ns), 1.0);
}

TEST(ReplaySequence, GapPowerInContextIsWhatThePassDrewBeyondTheIsolatedKernels) {
  const KernelTable t = bloom();
  ReplayOptions o;
  o.coverage = 1.0;
  o.max_rows = 1000;
  o.context_activities = 60;
  const json plan = json::parse(replay_plan_json(t, o));
  json out = engine_output(t, plan, 1.0, 300.0, 100.0);
  // Every activity of the sequence once: isolated sums from the per-call figures (300 W, traced time).
  json counts = json::object();
  double iso_s = 0, iso_j = 0;
  for (const json& s : plan["context"]["sequence"]) {
    const auto row = s[0].get<std::size_t>();
    const int before = counts.value(std::to_string(row), 0);
    counts[std::to_string(row)] = before + 1;
    iso_s += t.rows[row].mean_ns() * 1e-9;
    iso_j += 300.0 * t.rows[row].mean_ns() * 1e-9;
  }
  const double pass_s = iso_s + 0.004, pass_j = iso_j + 0.004 * 250.0;  // 4 ms of gaps at 250 W
  out["context"] = {{"status", "ok"}, {"row_counts", counts}, {"stand_ins", 0}, {"pass_time_ns", pass_s * 1e9},
                    {"pass_energy_j", pass_j}, {"pass_energy_j_half_width", 0.01}, {"traced_span_ns", pass_s * 1.05e9}, {"temperature_c", 60}};
  auto p = predict_from_replay(t, out.dump());
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_TRUE(p->context.measured) << p->context.reason;
  EXPECT_NEAR(p->context.gap_power_w, 250.0, 1e-6);
  EXPECT_NEAR(p->gap_w, 250.0, 1e-6);
  EXPECT_NEAR(p->isolated_gap_w, 100.0, 1e-12);
  EXPECT_NEAR(p->gap_energy_j, 250.0 * static_cast<double>(t.idle_ns()) * 1e-9, 1e-9);
  // The prediction's own ±: the pass's 0.01 J over its 4 ms of gaps is ±2.5 W on every gap second
  // (the rows here have none).
  EXPECT_NEAR(p->context.gap_power_half_width_w, 2.5, 1e-6);
  EXPECT_NEAR(p->predicted_energy_half_width_j, 2.5 * static_cast<double>(t.idle_ns()) * 1e-9, 1e-6);
  {
    json rows_hw = out;  // rows with ±1% per call, no context: their counts' half-widths in quadrature
    rows_hw.erase("context");
    for (json& it : rows_hw["items"]) it["energy_j_half_width"] = 0.01 * it["energy_j"].get<double>();
    auto q = predict_from_replay(t, rows_hw.dump());
    ASSERT_TRUE(q);
    double var = 0;
    for (std::size_t i = 0; i < q->rows.size(); ++i) {
      if (q->rows[i].status == "replayed") var += std::pow(static_cast<double>(t.rows[i].count) * 0.01 * q->rows[i].energy_j, 2);
    }
    EXPECT_GT(var, 0);
    EXPECT_NEAR(q->predicted_energy_half_width_j, std::sqrt(var), 1e-9 * std::sqrt(var));
  }
  const json j = json::parse(replay_json(t, *p));
  EXPECT_EQ(j["context"]["measured"], true);
  EXPECT_NEAR(j["gap_power_w"].get<double>(), 250.0, 1e-6);
  EXPECT_NEAR(j["isolated_gap_power_w"].get<double>(), 100.0, 1e-12);
  // A pass that drew less than its kernels alone, no gap time left, a skipped or missing context:
  // the isolated gap power, with a warning that says why.
  auto fallback = [&](const json& ctx, const std::string& words) {
    json o2 = out;
    if (ctx.is_null()) {
      o2.erase("context");
    } else {
      o2["context"] = ctx;
    }
    auto q = predict_from_replay(t, o2.dump());
    ASSERT_TRUE(q) << q.error().message;
    EXPECT_FALSE(q->context.measured);
    EXPECT_NE(q->context.reason.find(words), std::string::npos) << q->context.reason;
    EXPECT_NEAR(q->gap_w, 100.0, 1e-12);
    bool warned = false;
    for (const auto& w : q->warnings) warned |= w.find("isolated gap power") != std::string::npos;
    EXPECT_TRUE(warned);
  };
  json less = out["context"];
  less["pass_energy_j"] = iso_j * 0.5;
  fallback(less, "drew less");
  json no_gap = out["context"];
  no_gap["pass_time_ns"] = iso_s * 1e9;
  no_gap["traced_span_ns"] = iso_s * 1e9;
  fallback(no_gap, "no gap time");
  // A pass far off the traced pace (ResNet-50's ran 6.5x slower): its gap power is not used.
  json slow = out["context"];
  slow["traced_span_ns"] = pass_s * 1e9 / 6.5;
  fallback(slow, "more than 10% off the traced pace");
  fallback(json{{"status", "skipped"}, {"reason", "graph instantiation failed"}}, "graph instantiation failed");
  fallback(nullptr, "no context");
  json bad_row = out["context"];
  bad_row["row_counts"] = {{"999999", 1}};
  fallback(bad_row, "not in the kernel table");
}

TEST(ReplayPhases, PhasesSplitTheActivitiesAndCompareWithTheirWindows) {
  int64_t cut_ns = 0;
  const std::string path = bloom_with_phases(cut_ns);
  const KernelTable t = table_of(path);
  ASSERT_EQ(t.annotations.size(), 2u);
  ReplayOptions o;
  o.coverage = 1.0;
  o.max_rows = 1000;
  const json plan = json::parse(replay_plan_json(t, o));
  auto p = predict_from_replay(t, engine_output(t, plan, 1.0, 300.0, 100.0).dump());
  ASSERT_TRUE(p);
  std::vector<std::string> missing;
  predict_phases(t, *p, {"first", "second", "nowhere"}, missing);
  ASSERT_EQ(p->phases.size(), 2u);
  EXPECT_EQ(missing, std::vector<std::string>{"nowhere"});
  uint64_t first = 0;
  for (const TraceActivity& a : t.activities) first += a.start_ns < cut_ns ? 1 : 0;
  EXPECT_EQ(p->phases[0].activities, first);
  EXPECT_EQ(p->phases[0].activities + p->phases[1].activities, t.activities.size());
  // Kernels at their traced time and 300 W: each phase's kernel energy is 300 W × its GPU time,
  // its time is its span; energy = kernels + gaps at the gap power.
  // Per-call figures are row means: the phases' kernel energies add up to the whole prediction's.
  EXPECT_NEAR(p->phases[0].kernel_energy_j + p->phases[1].kernel_energy_j, p->kernel_energy_j, 1e-12);
  for (const PhasePrediction& ph : p->phases) {
    EXPECT_NEAR(ph.kernel_energy_j, 300.0 * ph.traced_gpu_s, 0.01 * ph.kernel_energy_j);
    EXPECT_NEAR(ph.predicted_time_s, ph.traced_time_s, 0.01 * ph.traced_time_s);
    EXPECT_NEAR(ph.predicted_energy_j, ph.kernel_energy_j + ph.gap_time_s * p->gap_w, 1e-12);
    EXPECT_GT(ph.gap_time_s, 0);
  }
  EXPECT_NEAR(p->phases[0].traced_gpu_s + p->phases[1].traced_gpu_s, static_cast<double>(t.gpu_ns()) * 1e-9, 1e-9);
  // The measured run's windows of the same names (two "second" windows: summed).
  Measurement m;
  for (auto [name, t0, t1, e] : {std::tuple<const char*, double, double, double>{"work", 0, 3, 30}, {"first", 0, 1, 10},
                                 {"second", 1, 2, 8}, {"second", 2, 2.5, 4}}) {
    WindowResult w;
    w.name = name;
    w.t0_s = t0;
    w.t1_s = t1;
    w.gpu_energy_j = e;
    w.gpus.resize(1);
    w.gpus[0].uncertainty_j = e / 10;
    m.windows.push_back(w);
  }
  EXPECT_EQ(common_phase_names(t, m, "work"), (std::vector<std::string>{"first", "second"}));
  compare_phases(*p, m);
  ASSERT_TRUE(p->phases[1].measured_energy_j);
  EXPECT_NEAR(*p->phases[1].measured_energy_j, 12.0, 1e-12);
  EXPECT_NEAR(*p->phases[1].measured_time_s, 1.5, 1e-12);
  EXPECT_NEAR(p->phases[1].measured_uncertainty_j, 1.2, 1e-12);  // the windows' bounds summed
  const json j = json::parse(replay_json(t, *p));
  ASSERT_EQ(j["phases"].size(), 2u);
  EXPECT_NEAR(j["phases"][0]["energy_error"].get<double>(), p->phases[0].predicted_energy_j / 10.0 - 1, 1e-12);
  EXPECT_NE(replay_text(t, *p, 5).find("second"), std::string::npos);
  std::filesystem::remove(path);
}

// A real two-layer Llama generate traced on the GPU machine with its prefill/decode ranges, and
// the measured run of it with the windows of the same names: the CLI finds the phases itself.
TEST(ReplayCli, PhasesFromARealTraceAndItsMeasuredRun) {
  const std::string cli = JOULEPROF_CLI;
  const std::string data = JOULEPROF_REPLAY_DATA;
  const std::string trace = data + "/llama_tiny_phases.json.gz", measured = data + "/llama_tiny_phases.measured.json";
  const std::string dir = ::testing::TempDir();
  const std::string plan_file = dir + "/phases-plan.json", out_file = dir + "/phases-out.json";
  int rc = 0;
  std::string out = sh(cli + " replay " + trace + " --plan " + plan_file, rc);
  ASSERT_EQ(rc, 0) << out;
  const json plan = json::parse(std::ifstream(plan_file));
  ASSERT_TRUE(plan.contains("context"));
  EXPECT_EQ(plan["context"]["sequence"][0].size(), 3u);  // row, gap, start-to-start time
  const KernelTable t = table_of(trace);
  ASSERT_EQ(t.annotations.size(), 2u);
  std::ofstream(out_file) << engine_output(t, plan, 1.0, 200.0, 90.0).dump();
  out = sh(cli + " replay " + trace + " --from " + out_file + " --measured " + measured + " --no-store -q --json -", rc);
  ASSERT_EQ(rc, 0) << out;
  const json j = json::parse(out);
  ASSERT_EQ(j["phases"].size(), 2u);
  EXPECT_EQ(j["phases"][0]["phase"], "prefill");
  EXPECT_EQ(j["phases"][1]["phase"], "decode");
  const json m = json::parse(std::ifstream(measured));
  for (const json& ph : j["phases"]) {
    double e = 0;
    for (const json& w : m["windows"]) e += w["name"] == ph["phase"] ? w["gpu_energy_j"].get<double>() : 0.0;
    EXPECT_NEAR(ph["measured_energy_j"].get<double>(), e, 1e-9);
    EXPECT_NEAR(ph["energy_error"].get<double>(), ph["predicted_energy_j"].get<double>() / e - 1, 1e-9);
    EXPECT_GT(ph["activities"].get<int>(), 0);
  }
  // The decode range holds most activities; prefill + decode ≤ all (generate's set-up is outside both).
  EXPECT_GT(j["phases"][1]["activities"].get<int>(), j["phases"][0]["activities"].get<int>());
  EXPECT_LE(j["phases"][0]["activities"].get<uint64_t>() + j["phases"][1]["activities"].get<uint64_t>(), t.activities.size());
  EXPECT_EQ(j["context"]["measured"], false);  // no context replay in this engine output: said so
  // A named phase the trace lacks: a warning, the others still predicted.
  out = sh(cli + " replay " + trace + " --from " + out_file + " --phase decode --phase verify --no-store -q --json -", rc);
  ASSERT_EQ(rc, 0) << out;
  const json k = json::parse(out);
  ASSERT_EQ(k["phases"].size(), 1u);
  bool warned = false;
  for (const json& w : k["warnings"]) warned |= w.get<std::string>().find("'verify'") != std::string::npos;
  EXPECT_TRUE(warned) << k["warnings"].dump();
  // Range errors in words.
  out = sh(cli + " replay " + trace + " --from " + out_file + " --context-activities 0 --no-store", rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("--context-activities"), std::string::npos) << out;
}

// Every replayed row counts with its replayed time and energy (issue 32: "the predicted time is the
// replayed time, row by row"); stand-ins are still checked against the trace.
TEST(Replay, StandInsCountWithTheirReplayedTime) {
  const KernelTable t = bloom();
  ReplayOptions o;
  o.coverage = 1.0;
  o.max_rows = 1000;
  const json plan = json::parse(replay_plan_json(t, o));
  auto p = predict_from_replay(t, engine_output(t, plan, 0.5, 400.0, 100.0).dump());
  ASSERT_TRUE(p) << p.error().message;
  std::size_t faithful = 0, proxies = 0;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const RowPrediction& r = p->rows[i];
    if (r.status != "replayed") continue;
    const KernelRow& k = t.rows[i];
    EXPECT_NEAR(r.replayed_time_ns, 0.5 * k.mean_ns(), 1e-9);
    EXPECT_NEAR(r.time_ns, 0.5 * k.mean_ns(), 1e-9);
    EXPECT_NEAR(r.energy_j, 400.0 * 0.5 * k.mean_ns() * 1e-9, 1e-15);
    EXPECT_TRUE(r.time_off);
    ((k.tier == "gemm" && k.gemm) || k.tier == "copy" ? faithful : proxies) += 1;
    EXPECT_EQ(r.proxy, !((k.tier == "gemm" && k.gemm) || k.tier == "copy"));
  }
  EXPECT_GT(faithful, 0u);
  EXPECT_GT(proxies, 0u);
  const json j = json::parse(replay_json(t, *p));
  double replayed = 0, predicted = 0;
  for (const json& tier : j["tiers"]) {
    replayed += tier["replayed_duration_s"].get<double>();
    predicted += tier["predicted_duration_s"].get<double>();
  }
  EXPECT_NEAR(replayed, predicted, 1e-12);
  EXPECT_NEAR(predicted, p->predicted_gpu_s, 1e-12);
  // The parts add up to the prediction.
  double parts = 0;
  for (const char* k : {"faithful", "stand_in", "time_matched", "extrapolated", "gaps"}) parts += j["prediction_parts"][k]["energy_j"].get<double>();
  EXPECT_NEAR(parts, p->predicted_energy_j, 1e-9);
  EXPECT_GT(j["prediction_parts"]["stand_in"]["rows"].get<int>(), 0);
}

// Rows at the traced time (time-matched proxies, extrapolated rows) are counted apart and the
// output says their share.
TEST(Replay, TimeMatchedRowsAreCountedApart) {
  const KernelTable t = bloom();
  ReplayOptions o;
  o.coverage = 1.0;
  o.max_rows = 1000;
  const json plan = json::parse(replay_plan_json(t, o));
  json out = engine_output(t, plan, 1.0, 300.0, 100.0);
  out["items"][1]["tier"] = "proxy_memory";
  auto p = predict_from_replay(t, out.dump());
  ASSERT_TRUE(p) << p.error().message;
  const auto row = out["items"][1]["row"].get<std::size_t>();
  EXPECT_TRUE(p->rows[row].time_matched);
  EXPECT_EQ(p->parts.time_matched.rows, 1u);
  EXPECT_NEAR(p->parts.time_matched.energy_j, static_cast<double>(t.rows[row].count) * 300.0 * t.rows[row].mean_ns() * 1e-9, 1e-12);
  bool said = false;
  for (const auto& w : p->warnings) said |= w.find("time-matched proxies") != std::string::npos && w.find("not a prediction") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_NE(replay_text(t, *p, 5).find("time-matched proxies"), std::string::npos);
}

// --from a damaged or hand-edited engine output: one line naming the row, never an internal error.
TEST(Replay, EngineOutputTypesAndRangesAreChecked) {
  const KernelTable t = bloom();
  const json plan = json::parse(replay_plan_json(t, ReplayOptions{}));
  const json good = engine_output(t, plan, 1.0, 300.0, 100.0);
  ASSERT_TRUE(predict_from_replay(t, good.dump()));
  auto refused = [&](const std::function<void(json&)>& edit, const std::string& words) {
    json m = good;
    edit(m);
    auto p = predict_from_replay(t, m.dump());
    ASSERT_FALSE(p) << words;
    EXPECT_NE(p.error().message.find(words), std::string::npos) << p.error().message;
    EXPECT_EQ(p.error().message.find('\n'), std::string::npos);
    EXPECT_EQ(p.error().message.find("json.exception"), std::string::npos) << p.error().message;
    EXPECT_EQ(p.error().code, Errc::parse);
  };
  const std::string row0 = std::to_string(good["items"][0]["row"].get<std::size_t>());
  refused([](json& m) { m["items"][0]["time_ns"] = "fast"; }, "row " + row0 + ": time_ns is not a number");
  refused([](json& m) { m["items"][0]["energy_j"] = -0.5; }, "row " + row0 + ": energy_j = -0.5 is outside");
  refused([](json& m) { m["items"][0]["power_w"] = 1e6; }, "power_w = 1e+06 is outside");
  refused([](json& m) { m["gap_w"] = -2244.0; }, "gap_w = -2244 is outside");
  refused([](json& m) { m["items"].push_back(m["items"][0]); }, "row " + row0 + " appears twice");
  refused([](json& m) { m["items"][0]["row"] = "3"; }, "an item has no row number");
  refused([](json& m) { m["items"] = 5; }, "items is not an array");
  refused([](json& m) { m["items"][0]["trial_power_w"] = "x"; }, "a value of the wrong type: type must be array");
  refused([](json& m) { m["context"] = {{"status", "ok"}, {"pass_time_ns", -1.0}, {"pass_energy_j", 1.0}, {"traced_span_ns", 1.0}}; },
          "context: pass_time_ns = -1 is outside");
}
