// `jouleprof trace` end to end on the simulated GPU, with a program that writes a trace file as
// the injection library would (CI has no GPU): outputs, conservation, store, bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/run_program.hpp"
#include "jouleprof/store/activities.hpp"

namespace fs = std::filesystem;

namespace {

struct Env {
  std::string dir;
  Env() {
    dir = (fs::temp_directory_path() / ("jp-trace-cli-" + std::to_string(getpid()))).string();
    fs::create_directories(dir);
    // Any existing file works as the injection library: the fake program does not need CUDA.
    std::ofstream(dir + "/libfake_inject.so") << "not loaded";
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

TEST(TraceCli, ProgramWithoutCudaGivesAWarningNotAFailure) {
  Env e;
  auto r = e.run({"--no-store", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("never initialised CUDA"), std::string::npos) << r.out;
}

// Synchronisation records are requested from the injection library only with --record-sync.
TEST(TraceCli, RecordSyncAndLaunchesArePassedToTheInjectionLibraryOnlyWhenAsked) {
  Env e;
  const std::string probe = "echo \"sync=${JOULEPROF_TRACE_SYNC:-unset} launches=${JOULEPROF_TRACE_LAUNCHES:-unset}\" > " + e.dir +
                            "/env.txt";
  auto off = e.run({"--no-store", "-q", "--", "/bin/sh", "-c", probe});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(jp_test::slurp_file(e.dir + "/env.txt"), "sync=unset launches=unset\n");
  auto on = e.run({"--no-store", "-q", "--record-sync", "--record-launches", "--", "/bin/sh", "-c", probe});
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_EQ(jp_test::slurp_file(e.dir + "/env.txt"), "sync=1 launches=1\n");
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
