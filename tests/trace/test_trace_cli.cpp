// `jouleprof trace` end to end on the simulated GPU, with a program that writes a trace file as
// the injection library would (CI has no GPU): outputs, conservation, store, bad input.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/run_program.hpp"
#include "jouleprof/analysis/attribution.hpp"
#include "jouleprof/store/activities.hpp"
#include "jouleprof/store/store.hpp"

namespace fs = std::filesystem;

namespace {

struct Env {
  std::string dir;
  Env() {
    dir = (fs::temp_directory_path() / ("jp-trace-cli-" + std::to_string(getpid()))).string();
    fs::create_directories(dir);
    // Any file with an ELF header works as the injection library: the fake program does not need CUDA.
    std::ofstream(dir + "/libfake_inject.so") << "\x7f" "ELF: a stand-in, never loaded";
  }
  ~Env() { fs::remove_all(dir); }
  jp_test::ProgramRun run(std::vector<std::string> args) const {
    std::vector<std::string> a = {"trace", "--device", "sim", "--idle", "0.3", "--db", dir + "/runs.db",
                                  "--inject-lib", dir + "/libfake_inject.so"};
    a.insert(a.end(), args.begin(), args.end());
    return jp_test::run_program(JOULEPROF_CLI, a, {}, "", dir + "/out.txt", dir + "/err.txt", [](pid_t) {});
  }
};

}  // namespace

TEST(TraceCli, AttributesASimulatedRunAndBalancesTheBooks) {
  Env e;
  auto r = e.run({"--json", e.dir + "/r.json", "--kernels", e.dir + "/k.jsonl", "--csv", e.dir + "/k.csv", "--perfetto",
                  e.dir + "/t.json", "--", JOULEPROF_FAKE_TRACED, "1.2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("top kernels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gemm_kernel(float*, float*, int)"), std::string::npos) << r.out;
  nlohmann::json j = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/r.json"));
  ASSERT_TRUE(j.contains("trace")) << j.dump().substr(0, 400);
  const auto& t = j["trace"];
  EXPECT_EQ(t["schema_version"], 1);
  EXPECT_EQ(t["dropped_records"], 0);
  EXPECT_TRUE(t["complete"].get<bool>());
  ASSERT_EQ(t["gpus"].size(), 1u);
  const auto& g = t["gpus"][0];
  EXPECT_GE(g["kernels"].get<int>(), 10);
  ASSERT_EQ(g["methods"].size(), 3u);
  for (const auto& m : g["methods"]) {
    const double sum = m["attributed_energy_j"].get<double>() + m["idle_static_energy_j"].get<double>() +
                       m["unattributed_energy_j"].get<double>();
    EXPECT_NEAR(sum, m["measured_energy_j"].get<double>(), 1e-6 * m["measured_energy_j"].get<double>()) << m["method"];
  }
  // The simulated GPU runs at 450 W while the command runs: the split method gives the busy
  // kernels most of the energy above idle.
  EXPECT_GT(g["methods"][1]["attributed_energy_j"].get<double>(), 0);
  bool path = false;
  for (const auto& row : g["by_path"]) path |= row["key"] == "layer.0";
  EXPECT_TRUE(path) << g["by_path"].dump();
  // Unique-kernel table: two kernels, counts add up.
  const std::string jsonl = jp_test::slurp_file(e.dir + "/k.jsonl");
  EXPECT_EQ(std::count(jsonl.begin(), jsonl.end(), '\n'), 2);
  EXPECT_NE(jsonl.find("\"class\":\"copy\""), std::string::npos);
  EXPECT_EQ(jp_test::slurp_file(e.dir + "/k.csv").rfind("name,kind,class,device", 0), 0u);
  // Perfetto: kernel slices on a stream track.
  const std::string trace = jp_test::slurp_file(e.dir + "/t.json");
  EXPECT_NE(trace.find("stream 7"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::accept(trace));
  // The store has the run's activities.
  auto acts = jouleprof::load_activities(e.dir + "/runs.db", 1);
  ASSERT_TRUE(acts) << acts.error().message;
  EXPECT_GE(acts->size(), 10u);
}

TEST(TraceCli, CutOffTraceKeepsRecordsAndMarksTheRunIncomplete) {
  Env e;
  auto r = e.run({"--json", e.dir + "/r.json", "--no-store", "--", JOULEPROF_FAKE_TRACED, "0.5", "--corrupt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/r.json"));
  EXPECT_FALSE(j["trace"]["complete"].get<bool>());
  EXPECT_GT(j["trace"]["activities"].get<int>(), 0);
  EXPECT_NE(j["trace"]["processes"][0]["damage"].get<std::string>().find("at offset"), std::string::npos);
  EXPECT_NE(r.out.find("INCOMPLETE"), std::string::npos);
}

// The injection library's exit probe found that another CUPTI client (torch.profiler) took the
// records: the run is incomplete and says why.
TEST(TraceCli, RecordsTakenByAnotherCuptiClientMarkTheRunIncomplete) {
  Env e;
  auto r = e.run({"--json", e.dir + "/r.json", "--no-store", "--", JOULEPROF_FAKE_TRACED, "0.5", "--records-stopped"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/r.json"));
  EXPECT_FALSE(j["trace"]["complete"].get<bool>());
  EXPECT_GT(j["trace"]["activities"].get<int>(), 0);
  EXPECT_NE((r.out + r.err).find("another CUPTI client"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("INCOMPLETE"), std::string::npos) << r.out;
}

// Issue 35 item 7: a trace that recorded nothing is a failed trace, stored or not (it exited 0 with
// --no-store): the summary and its warning, then one error line and exit 3.
TEST(TraceCli, ProgramWithoutCudaIsAFailedTraceStoredOrNot) {
  Env e;
  for (const bool stored : {false, true}) {
    std::vector<std::string> args = {"--", "/bin/true"};
    if (!stored) args.insert(args.begin(), "--no-store");
    auto r = e.run(args);
    EXPECT_EQ(r.exit_code, 3) << stored << ": " << r.err;
    EXPECT_NE(r.out.find("never initialised CUDA"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("jouleprof: error: nothing was traced: the command recorded no CUDA activity"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("the measurement itself was stored") != std::string::npos, stored) << r.err;
  }
}

// Synchronisation records are requested from the injection library only with --record-sync;
// CUDA graphs node by node only with --cuda-graph-trace node.
TEST(TraceCli, RecordSyncAndLaunchesArePassedToTheInjectionLibraryOnlyWhenAsked) {
  Env e;
  const std::string probe = "echo \"sync=${JOULEPROF_TRACE_SYNC:-unset} launches=${JOULEPROF_TRACE_LAUNCHES:-unset} "
                            "graphs=${JOULEPROF_TRACE_CUDA_GRAPHS:-unset}\" > " + e.dir + "/env.txt";
  // The probe uses no CUDA, so each trace is a failed one (exit 3); the environment is what is checked.
  auto off = e.run({"--no-store", "-q", "--", "/bin/sh", "-c", probe});
  ASSERT_EQ(off.exit_code, 3) << off.err;
  EXPECT_EQ(jp_test::slurp_file(e.dir + "/env.txt"), "sync=unset launches=unset graphs=unset\n");
  auto on = e.run({"--no-store", "-q", "--record-sync", "--record-launches", "--cuda-graph-trace", "node", "--", "/bin/sh", "-c", probe});
  ASSERT_EQ(on.exit_code, 3) << on.err;
  EXPECT_EQ(jp_test::slurp_file(e.dir + "/env.txt"), "sync=1 launches=1 graphs=node\n");
  auto bad = e.run({"--no-store", "-q", "--cuda-graph-trace", "kernels", "--", "/bin/sh", "-c", probe});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--cuda-graph-trace"), std::string::npos) << bad.err;
}

TEST(TraceCli, BadInputIsOneLineAndExitTwo) {
  Env e;
  auto none = e.run({"--no-store"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("jouleprof: error: give the command to trace after --"), std::string::npos) << none.err;
  auto method = e.run({"--method", "psychic", "--", "/bin/true"});
  EXPECT_EQ(method.exit_code, 2);
  EXPECT_NE(method.err.find("--method must be"), std::string::npos);
  auto lib = jp_test::run_program(JOULEPROF_CLI, {"trace", "--device", "sim", "--inject-lib", "/nonexistent/lib.so", "--", "/bin/true"},
                                  {}, "", e.dir + "/o", e.dir + "/e", [](pid_t) {});
  EXPECT_EQ(lib.exit_code, 2);
  EXPECT_NE(lib.err.find("/nonexistent/lib.so"), std::string::npos) << lib.err;
  std::ofstream(e.dir + "/bad.tsv") << "gemm no-tab\n";
  auto rules = e.run({"--classes", e.dir + "/bad.tsv", "--", "/bin/true"});
  EXPECT_EQ(rules.exit_code, 2);
  EXPECT_NE(rules.err.find("bad.tsv:1"), std::string::npos) << rules.err;
}

// `trace --from RUN`: a stored traced run attributed again without running it.
namespace {

jp_test::ProgramRun from(const Env& e, std::vector<std::string> args) {
  std::vector<std::string> a = {"trace", "--db", e.dir + "/runs.db"};
  a.insert(a.end(), args.begin(), args.end());
  return jp_test::run_program(JOULEPROF_CLI, a, {}, "", e.dir + "/out.txt", e.dir + "/err.txt", [](pid_t) {});
}

std::size_t stored_runs(const Env& e) {
  auto s = jouleprof::Store::open(e.dir + "/runs.db", jouleprof::Store::Mode::read);
  EXPECT_TRUE(s) << s.error().message;
  auto l = s->list();
  return l ? l->size() : 0;
}

void expect_books_balance(const nlohmann::json& gpu) {
  for (const auto& m : gpu["methods"]) {
    const double sum = m["attributed_energy_j"].get<double>() + m["idle_static_energy_j"].get<double>() +
                       m["unattributed_energy_j"].get<double>();
    EXPECT_NEAR(sum, m["measured_energy_j"].get<double>(), 1e-9 * m["measured_energy_j"].get<double>()) << m["method"];
  }
}

}  // namespace

// Two traced processes (NVTX layers in one): with the same options, --from gives back exactly
// what the live run printed and wrote, and stores nothing.
TEST(TraceCli, FromStoredRunGivesTheLiveOutputsAgain) {
  Env e;
  const std::string fake = JOULEPROF_FAKE_TRACED;
  const std::vector<std::string> outs = {"--json", e.dir + "/r.json", "--kernels", e.dir + "/k.jsonl", "--perfetto", e.dir + "/t.json"};
  std::vector<std::string> live_args = outs;
  for (const char* w : {"--", "/bin/sh", "-c"}) live_args.emplace_back(w);
  live_args.push_back(fake + " 1.0 --layers 2 & " + fake + " 0.8; wait");
  auto live = e.run(live_args);
  ASSERT_EQ(live.exit_code, 0) << live.err;
  const nlohmann::json lj = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/r.json"));
  ASSERT_EQ(lj["trace"]["processes"].size(), 2u);
  const std::string kernels = jp_test::slurp_file(e.dir + "/k.jsonl"), perfetto = jp_test::slurp_file(e.dir + "/t.json");
  fs::remove(e.dir + "/r.json");
  // export-trace of the stored run gives the same kernel and range slices as the live --perfetto.
  auto exported = jp_test::run_program(JOULEPROF_CLI, {"export-trace", "last", "--db", e.dir + "/runs.db", "-o", e.dir + "/x.json"}, {}, "",
                                       e.dir + "/out.txt", e.dir + "/err.txt", [](pid_t) {});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const std::string xt = jp_test::slurp_file(e.dir + "/x.json");
  EXPECT_TRUE(nlohmann::json::accept(xt));
  for (const char* track : {"stream 7", "gemm_kernel(float*, float*, int)", "model.layers.1.mlp"}) {
    EXPECT_NE(xt.find(track), std::string::npos) << track;
  }
  auto again = from(e, {"--from", "last", "--json", e.dir + "/r.json", "--kernels", e.dir + "/k.jsonl", "--perfetto", e.dir + "/t.json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("run 1 attributed again"), std::string::npos) << again.err;
  const nlohmann::json fj = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/r.json"));
  EXPECT_EQ(fj["trace"], lj["trace"]);  // exact: books, class tables, processes, warnings
  EXPECT_EQ(fj, lj);
  EXPECT_EQ(jp_test::slurp_file(e.dir + "/k.jsonl"), kernels);
  EXPECT_EQ(jp_test::slurp_file(e.dir + "/t.json"), perfetto);  // per-process tracks kept
  EXPECT_EQ(again.out, live.out);
  EXPECT_EQ(stored_runs(e), 1u);
}

// Other options: other figures, the books still balance, the store is left as it was.
TEST(TraceCli, FromStoredRunWithOtherOptionsChangesTheFiguresAndBalancesTheBooks) {
  Env e;
  auto live = e.run({"--json", e.dir + "/r.json", "-q", "--", JOULEPROF_FAKE_TRACED, "1.2", "--layers", "2"});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  const nlohmann::json lg = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/r.json"))["trace"]["gpus"][0];
  auto stored = jouleprof::load_activities(e.dir + "/runs.db", 1);
  ASSERT_TRUE(stored);
  auto again = from(e, {"--from", "1", "--method", "regression", "--lag-ms", "30", "--json", e.dir + "/f.json", "--top", "1",
                        "--path-depth", "1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("tables: method regression"), std::string::npos) << again.out;
  const nlohmann::json fg = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/f.json"))["trace"]["gpus"][0];
  EXPECT_EQ(fg["table_method"], "regression");
  // A lag given is used as given (the window stays the default), not fitted.
  EXPECT_EQ(fg["sensor_model"]["source"], "given");
  EXPECT_DOUBLE_EQ(fg["sensor_model"]["lag_ms"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(fg["sensor_model"]["window_ms"].get<double>(), 1e3 * jouleprof::SensorModel{}.window_s);
  EXPECT_NE(lg["sensor_model"]["source"], "given");
  EXPECT_NE(again.out.find("sensor model: lag 30 ms"), std::string::npos) << again.out;
  expect_books_balance(lg);
  expect_books_balance(fg);
  // The sensor lag moves the methods' figures (which ones depends on where the kernels fall
  // between the samples); the measured energy is the same.
  ASSERT_EQ(fg["methods"].size(), lg["methods"].size());
  for (std::size_t k = 0; k < fg["methods"].size(); ++k) {
    EXPECT_EQ(fg["methods"][k]["measured_energy_j"], lg["methods"][k]["measured_energy_j"]);
  }
  EXPECT_NE(fg["methods"], lg["methods"]);
  EXPECT_NE(fg["by_kernel"], lg["by_kernel"]);
  for (const auto& row : fg["by_path"]) EXPECT_EQ(row["key"].get<std::string>().find('/'), std::string::npos) << row["key"];
  // Other class rules: the kernels are classified again from their names.
  std::ofstream(e.dir + "/classes.tsv") << "attention\tgemm_kernel\n";
  auto classes = from(e, {"--from", "1", "--classes", e.dir + "/classes.tsv", "--json", e.dir + "/c.json", "-q"});
  ASSERT_EQ(classes.exit_code, 0) << classes.err;
  bool attention = false;
  const nlohmann::json cj = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/c.json"));
  for (const auto& row : cj["trace"]["gpus"][0]["by_class"]) {
    attention |= row["key"] == "attention";
  }
  EXPECT_TRUE(attention) << cj["trace"]["gpus"][0]["by_class"].dump();
  EXPECT_EQ(stored_runs(e), 1u);
  auto after = jouleprof::load_activities(e.dir + "/runs.db", 1);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->size(), stored->size());
}

TEST(TraceCli, FromRefusesCommandsRunOptionsAndRunsThatWereNotTraced) {
  Env e;
  auto live = e.run({"-q", "--", JOULEPROF_FAKE_TRACED, "0.5"});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  auto measured = jp_test::run_program(JOULEPROF_CLI, {"measure", "--device", "sim", "--idle", "0", "-q", "--db", e.dir + "/runs.db", "--", "/bin/true"},
                                       {}, "", e.dir + "/o", e.dir + "/e", [](pid_t) {});
  ASSERT_EQ(measured.exit_code, 0) << measured.err;
  auto one_line = [](const jp_test::ProgramRun& r, const std::string& what) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("jouleprof: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
  };
  one_line(from(e, {"--from", "42"}), "no run 42");
  one_line(from(e, {"--from", "2"}), "run 2");
  one_line(from(e, {"--from", "last"}), "not traced");
  one_line(from(e, {"--from", "1", "--", "/bin/true"}), "give no command after --");
  one_line(from(e, {"--from", "1", "--idle", "1"}), "--idle is an option of running a command");
  one_line(from(e, {"--from", "1", "--record-sync"}), "--record-sync");
  one_line(from(e, {"--from", "1", "--inject-lib", e.dir + "/libfake_inject.so"}), "--inject-lib");
  one_line(from(e, {"--from", "1", "--method", "psychic"}), "--method must be");
  EXPECT_EQ(stored_runs(e), 2u);
}

// A damaged trace and one whose records another CUPTI client took stay incomplete, with their
// warnings, when attributed again.
TEST(TraceCli, FromKeepsAnIncompleteTraceIncomplete) {
  Env e;
  for (const char* fault : {"--corrupt", "--records-stopped"}) {
    auto live = e.run({"--json", e.dir + "/r.json", "-q", "--", JOULEPROF_FAKE_TRACED, "0.5", fault});
    ASSERT_EQ(live.exit_code, 0) << live.err;
    const nlohmann::json lj = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/r.json"));
    ASSERT_FALSE(lj["trace"]["complete"].get<bool>()) << fault;
    auto again = from(e, {"--from", "last", "--json", e.dir + "/f.json", "-q"});
    ASSERT_EQ(again.exit_code, 0) << again.err;
    const nlohmann::json fj = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/f.json"));
    EXPECT_EQ(fj["trace"], lj["trace"]) << fault;
    EXPECT_EQ(fj["status"], lj["status"]) << fault;
  }
}

// A store written before the activities carried their process and thread (and before NVTX marks
// were kept): a one-process run is attributed again with the same books and tables.
TEST(TraceCli, FromReadsActivitiesStoredWithoutProcessOrThread) {
  Env e;
  auto live = e.run({"--json", e.dir + "/r.json", "-q", "--", JOULEPROF_FAKE_TRACED, "0.8", "--layers", "2"});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(std::string(e.dir + "/runs.db").c_str(), &db), SQLITE_OK);
    char* msg = nullptr;
    const int rc = sqlite3_exec(db,
                                "UPDATE activities SET attrs_json = json_remove(attrs_json, '$.process', '$.thread');"
                                "DELETE FROM activities WHERE kind = 'mark';",
                                nullptr, nullptr, &msg);
    EXPECT_EQ(rc, SQLITE_OK) << (msg != nullptr ? msg : "");
    sqlite3_free(msg);
    sqlite3_close(db);
  }
  auto again = from(e, {"--from", "1", "--json", e.dir + "/f.json", "-q"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const nlohmann::json lg = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/r.json"))["trace"]["gpus"];
  const nlohmann::json fg = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/f.json"))["trace"]["gpus"];
  EXPECT_EQ(fg, lg);
}

// --replay: replay-informed tables for a stored run (the replay's rows matched by name and launch
// configuration), and bad replay data refused with its reason.
TEST(TraceCli, FromStoredRunWithReplayGivesReplayInformedTables) {
  Env e;
  auto live = e.run({"-q", "--", JOULEPROF_FAKE_TRACED, "1.2"});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  const std::string gpu = "NVIDIA H100 80GB HBM3 (simulated)";
  auto write_replay = [&](const std::string& path, const std::string& on, const std::string& kernel) {
    nlohmann::json k = {{"name", kernel}, {"status", "replayed"}, {"count", 10}, {"replayed_energy_per_call_j", 0.02},
                        {"replayed_mean_s", 1e-4}, {"energy_per_call_half_width_j", 0.001}};
    nlohmann::json r = {{"replay", {{"schema", "jouleprof.replay"}, {"replay_gpu", on}, {"idle_power_w", 60}, {"kernels", {k}}}}};
    std::ofstream(path) << r.dump();
  };
  write_replay(e.dir + "/replay.json", gpu, "gemm_kernel(float*, float*, int)");
  auto r = from(e, {"--from", "1", "--replay", e.dir + "/replay.json", "--json", e.dir + "/r.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tables: method replay"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replay: " + e.dir + "/replay.json, energies scaled by"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("determined: "), std::string::npos) << r.out;
  const nlohmann::json g = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/r.json"))["trace"]["gpus"][0];
  EXPECT_EQ(g["table_method"], "replay");
  ASSERT_EQ(g["methods"].size(), 4u);
  EXPECT_EQ(g["methods"][3]["method"], "replay");
  EXPECT_GT(g["replay"]["scale"].get<double>(), 0);
  EXPECT_GT(g["replay"]["unmatched_busy_share"].get<double>(), 0);  // the copies were not replayed
  expect_books_balance(g);
  for (const auto& row : g["by_class"]) {
    EXPECT_LE(row["low_j"].get<double>(), row["energy_j"].get<double>());
    EXPECT_GE(row["high_j"].get<double>(), row["energy_j"].get<double>());
  }
  write_replay(e.dir + "/a100.json", "NVIDIA A100-SXM4-80GB", "gemm_kernel(float*, float*, int)");
  auto other = from(e, {"--from", "1", "--replay", e.dir + "/a100.json"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("jouleprof: error: the replay " + e.dir + "/a100.json ran on NVIDIA A100-SXM4-80GB"), std::string::npos) << other.err;
  write_replay(e.dir + "/model.json", gpu, "another_models_kernel");
  auto model = from(e, {"--from", "1", "--replay", e.dir + "/model.json"});
  EXPECT_EQ(model.exit_code, 2);
  EXPECT_NE(model.err.find("no measured row for any kernel of this run"), std::string::npos) << model.err;
  std::ofstream(e.dir + "/junk.json") << "{\"schema\": \"jouleprof.result\"}";
  auto junk = from(e, {"--from", "1", "--replay", e.dir + "/junk.json"});
  EXPECT_EQ(junk.exit_code, 2);
  EXPECT_NE(junk.err.find("not `jouleprof replay` or exact-replay output"), std::string::npos) << junk.err;
  auto none = from(e, {"--from", "1", "--method", "replay"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--method replay needs the run's kernels replayed"), std::string::npos) << none.err;
  EXPECT_EQ(stored_runs(e), 1u);
}

// `trace --sample P%`: the fake program keeps kernels only in the duty cycle's on-windows and logs
// the switches as the injection library does; the analysis says it is sampled, how much was
// traced, balances the books against the whole run, and `--from` gives the same again.
TEST(TraceCli, SampledModeTracesItsWindowsAndSaysSo) {
  Env e;
  auto full = e.run({"-q", "--no-store", "--json", e.dir + "/full.json", "--", JOULEPROF_FAKE_TRACED, "3", "--period-us", "2000", "--layers", "2"});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  auto r = e.run({"--sample", "20%", "--sample-period", "0.5", "--json", e.dir + "/r.json", "--", JOULEPROF_FAKE_TRACED, "3", "--period-us",
                  "2000", "--layers", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("sampled: kernels traced 20% of every 0.5 s"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/r.json"));
  const auto& s = j["trace"]["sampling"];
  // 100 ms of every 500 ms, over a run of ~3 s: ~20% traced in ~6 windows.
  EXPECT_NEAR(s["traced_fraction"].get<double>(), 0.2, 0.06) << s.dump();
  EXPECT_GE(s["windows_s"].size(), 5u);
  const auto& g = j["trace"]["gpus"][0];
  const auto jf = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/full.json"));
  const auto& gf = jf["trace"]["gpus"][0];
  const double kept = g["kernels"].get<double>() / gf["kernels"].get<double>();
  EXPECT_NEAR(kept, 0.2, 0.06) << g["kernels"] << " of " << gf["kernels"];
  EXPECT_GT(g["sampling_scale"].get<double>(), 0);
  expect_books_balance(g);
  // The books are the whole run's: its measured energy, not the traced windows'.
  double run_j = 0;
  for (const auto& w : j["windows"]) {
    if (w["kind"] == "run") run_j = w["gpu_energy_j"].get<double>();
  }
  EXPECT_NEAR(g["methods"][1]["measured_energy_j"].get<double>(), run_j, 1e-9 * run_j);
  auto again = from(e, {"--from", "last", "--json", e.dir + "/again.json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto ja = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/again.json"));
  EXPECT_EQ(ja["trace"]["sampling"], s);
  EXPECT_EQ(ja["trace"]["gpus"][0]["by_layer"], g["by_layer"]);
}

TEST(TraceCli, SampledRunShorterThanOnePeriodIsSaid) {
  Env e;
  auto r = e.run({"--no-store", "--sample", "50%", "--sample-period", "4", "--", JOULEPROF_FAKE_TRACED, "0.5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("less than one sampling period (4 s)"), std::string::npos) << r.out;
}

TEST(TraceCli, SampledModeBadInputIsOneLine) {
  Env e;
  auto one_line = [](const jp_test::ProgramRun& r, const std::string& what) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
  };
  one_line(e.run({"--sample", "0%", "--", "/bin/true"}), "above 0% and below 100%");
  one_line(e.run({"--sample", "100", "--", "/bin/true"}), "above 0% and below 100%");
  one_line(e.run({"--sample", "ten", "--", "/bin/true"}), "--sample takes a percentage");
  one_line(e.run({"--sample", "1%", "--", "/bin/true"}), "less than the power sensor's 20 ms samples");
  one_line(from(e, {"--from", "1", "--sample", "10%"}), "--sample is an option of running a command");
}

// A program that paused its own trace (jouleprof_trace_pause) for its first second: the pause is read
// from its switch log, the summary says it, the kernels are those recorded, the books are the whole
// run's, and `--from` gives the same again.
TEST(TraceCli, ThePausedTimeIsSaidAndLeftOut) {
  Env e;
  auto full = e.run({"-q", "--no-store", "--json", e.dir + "/full.json", "--", JOULEPROF_FAKE_TRACED, "3", "--period-us", "2000", "--layers", "2"});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  auto r = e.run({"--json", e.dir + "/r.json", "--", JOULEPROF_FAKE_TRACED, "3", "--period-us", "2000", "--layers", "2", "--paused-first", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("paused 1 s by the program (1 pauses"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("sampled: kernels traced"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/r.json"));
  const auto& s = j["trace"]["sampling"];
  EXPECT_NEAR(s["paused_s"].get<double>(), 1.0, 1e-3) << s.dump();
  EXPECT_LT(s["traced_fraction"].get<double>(), 0.8) << s.dump();
  EXPECT_EQ(s["period_s"].get<double>(), 0);
  const auto jf = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/full.json"));
  const double kept = j["trace"]["gpus"][0]["kernels"].get<double>() / jf["trace"]["gpus"][0]["kernels"].get<double>();
  EXPECT_NEAR(kept, 2.0 / 3, 0.02);
  const auto& g = j["trace"]["gpus"][0];
  EXPECT_GT(g["sampling_scale"].get<double>(), 0);
  expect_books_balance(g);
  auto again = from(e, {"--from", "last", "--json", e.dir + "/again.json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto ja = nlohmann::json::parse(jp_test::slurp_file(e.dir + "/again.json"));
  EXPECT_EQ(ja["trace"]["sampling"], s);
  EXPECT_EQ(ja["trace"]["gpus"][0]["by_layer"], g["by_layer"]);
}
