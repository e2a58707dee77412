// `jouleprof runs ...` end to end: exit codes, one-line errors, the database left untouched.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_helpers.hpp"
#include "jouleprof/measure/output.hpp"
#include "jouleprof/result/result_io.hpp"
#include "jouleprof/store/store.hpp"
#include "jouleprof/store/synthetic.hpp"

namespace jouleprof {
namespace {

using jp_store_test::Cli;
using jp_store_test::lines;
using jp_store_test::run_cli;
using jp_store_test::slurp;
namespace fs = std::filesystem;

class RunsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jouleprof-runs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    db_ = dir_ + "/runs.db";
    for (uint64_t k = 1; k <= 2; ++k) {
      SyntheticSpec s;
      s.duration_s = 10;
      s.seed = k;
      s.decode_w = 400 + 50 * static_cast<double>(k);
      s.tag_value = "case" + std::to_string(k);
      files_.push_back(dir_ + "/r" + std::to_string(k) + ".json");
      std::ofstream(files_.back()) << result_to_json_with_timelines(make_synthetic_measurement(s));
    }
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Cli jp(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--db", db_});
    return run_cli(dir_, args);
  }
  std::string dir_, db_;
  std::vector<std::string> files_;
};

TEST_F(RunsCli, ImportListShowCompareExportRm) {
  Cli r = jp({"runs", "import", files_[0], files_[1], "--tag", "batch=8"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("as run 2"), std::string::npos);

  r = jp({"runs", "list"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("case=case1"), std::string::npos);
  r = jp({"runs", "list", "--json", "--tag", "case=case2"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto arr = nlohmann::json::parse(r.out);
  ASSERT_EQ(arr.size(), 1u);
  EXPECT_EQ(arr[0]["id"], 2);
  EXPECT_EQ(arr[0]["tags"]["batch"], "8");

  r = jp({"runs", "show", "last"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("run 2"), std::string::npos);
  r = jp({"runs", "show", "1", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  // One shape whatever the count: an array of result documents.
  ASSERT_EQ(nlohmann::json::parse(r.out).size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(r.out)[0]["schema_version"], 1);
  r = jp({"runs", "show", "1", "2", "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).size(), 2u);

  r = jp({"runs", "compare", "1", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("gpu_energy_j"), std::string::npos);
  EXPECT_NE(r.out.find('*'), std::string::npos);  // decode power differs by 50 W
  r = jp({"runs", "compare", "1", "2", "--phase", "decode", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto cmp = nlohmann::json::parse(r.out);
  EXPECT_TRUE(cmp[1]["values"]["phase:decode:gpu_energy_j"]["significant_95"].get<bool>());

  r = jp({"runs", "export", "1", "2", "--json", "both.json"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = jp({"runs", "export", "1", "--csv", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  // For pandas: a column per tag and per count, energy per count its own column.
  EXPECT_EQ(r.out.rfind("run,tag:", 0), 0u) << r.out.substr(0, 200);
  EXPECT_NE(r.out.substr(0, r.out.find('\n')).find(",tag:batch,"), std::string::npos);
  EXPECT_NE(r.out.find(",command,window,"), std::string::npos);
  EXPECT_NE(r.out.find("decode,phase"), std::string::npos);

  // Export then import elsewhere gives the same result and samples back.
  Cli other = run_cli(dir_, {"runs", "--db", dir_ + "/other.db", "import", dir_ + "/both.json"});
  ASSERT_EQ(other.code, 0) << other.err;
  auto a = Store::open(db_, Store::Mode::read);
  auto b = Store::open(dir_ + "/other.db", Store::Mode::read);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int64_t id = 1; id <= 2; ++id) {
    auto x = a->load(id), y = b->load(id);
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_EQ(result_to_json(*x), result_to_json(*y));
    EXPECT_EQ(timeline_sample_count(*x), timeline_sample_count(*y));
  }

  r = jp({"runs", "rm", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = jp({"runs", "show", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
}

// Issue 31: the trace section carries a schema, so `runs show` prints it through the renderer the
// trace registers (before, it had none and was never printed).
TEST_F(RunsCli, ShowPrintsTheTraceSection) {
  SyntheticSpec spec;
  spec.duration_s = 4;
  Measurement m = make_synthetic_measurement(spec);
  m.sections["trace"] = nlohmann::json{
      {"schema", "jouleprof.trace"}, {"schema_version", 1}, {"complete", true}, {"activities", 1234},
      {"dropped_records", 0}, {"unique_kernels", 7}, {"processes", nlohmann::json::array()},
      {"gpus", {{{"gpu", 0}, {"kernels", 1200}, {"busy_s", 2.5}, {"measured_method", "counter"}, {"idle_power_w", 70.0},
                 {"methods", {{{"method", "split"}, {"measured_energy_j", 900.0}, {"idle_static_energy_j", 280.0},
                               {"attributed_energy_j", 600.0}, {"unattributed_energy_j", 20.0}}}}}}},
      {"phases", nlohmann::json::array()}}.dump();
  const std::string file = dir_ + "/traced.json";
  std::ofstream(file) << result_to_json(m);
  Cli r = jp({"runs", "import", file});
  ASSERT_EQ(r.code, 0) << r.err;
  r = jp({"runs", "show", "last"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\ntrace:\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1234 activities"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("split      measured 900.00 J"), std::string::npos) << r.out;
}

TEST_F(RunsCli, BadInputGivesOneLineErrorAndLeavesTheStoreUntouched) {
  Cli r = jp({"runs", "list"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("no run store"), std::string::npos);
  EXPECT_FALSE(fs::exists(db_));

  ASSERT_EQ(jp({"runs", "import", files_[0]}).code, 0);
  // Fold the WAL so that the file alone holds the store, then compare bytes.
  ASSERT_EQ(std::system(("sqlite3 " + jp_store_test::quote(db_) + " 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null 2>&1 || true").c_str()) >= 0, true);
  const std::string before = slurp(db_);

  std::ofstream(dir_ + "/v2.json") << R"({"schema_version": 2, "windows": []})";
  r = jp({"runs", "import", dir_ + "/v2.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("schema_version 2"), std::string::npos);

  std::ofstream(dir_ + "/bad.json") << "{\"schema_version\": 1, \"windows\": [";
  r = jp({"runs", "import", files_[1], dir_ + "/bad.json"});  // the good file is not imported either
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;

  for (const char* id : {"7", "abc", "last~5"}) {
    r = jp({"runs", "show", id});
    EXPECT_NE(r.code, 0) << id;
    EXPECT_EQ(lines(r.err), 1) << r.err;
  }
  r = jp({"runs", "rm", "1", "7"});
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(slurp(db_), before);
  auto s = Store::open(db_, Store::Mode::read);
  ASSERT_TRUE(s.ok());
  auto l = s->list();
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->size(), 1u);

  std::ofstream(dir_ + "/corrupt.db") << std::string(4096, 'x');
  const std::string corrupt = slurp(dir_ + "/corrupt.db");
  r = run_cli(dir_, {"runs", "--db", dir_ + "/corrupt.db", "import", files_[0]});
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_EQ(slurp(dir_ + "/corrupt.db"), corrupt);
}

// Every field `measure --json` writes comes back from the store's parser (catches fields added to
// the result JSON without the parser learning them).
TEST_F(RunsCli, RealResultJsonRoundTripsFieldForField) {
  Cli r = run_cli(dir_, {"measure", "--device", "sim", "--runs", "2", "--idle", "0.5", "--json", "m.json", "--timeline", "m.csv",
                         "--tag", "k=v", "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto original = nlohmann::json::parse(slurp(dir_ + "/m.json"));
  auto m = read_result_file(dir_ + "/m.json");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(nlohmann::json::parse(result_to_json(*m)), original);
  ASSERT_EQ(jp({"runs", "import", "m.json", "--timeline", "m.csv"}).code, 0);
  r = jp({"runs", "show", "last", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)[0], original);
}

TEST_F(RunsCli, KilledImportLeavesOldRunsIntact) {
  ASSERT_EQ(jp({"runs", "import", files_[0]}).code, 0);
  SyntheticSpec big;
  big.gpus = 4;
  big.duration_s = 3000;
  const std::string bigfile = dir_ + "/big.json";
  std::ofstream(bigfile) << result_to_json_with_timelines(make_synthetic_measurement(big));
  // Kill the importer at several moments (parsing, writing, committing).
  for (int delay_ms : {100, 300, 600, 900, 1200}) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      freopen("/dev/null", "w", stdout);
      execl(JOULEPROF_CLI, "jouleprof", "runs", "--db", db_.c_str(), "import", "--allow-duplicate", bigfile.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    auto s = Store::open(db_, Store::Mode::read);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto first = s->load(1);
    ASSERT_TRUE(first.ok()) << first.error().message;
    EXPECT_GT(timeline_sample_count(*first), 0u);
    auto l = s->list();
    ASSERT_TRUE(l.ok());
    for (const auto& run : *l) EXPECT_TRUE(s->load(run.id).ok()) << "run " << run.id << " after kill at " << delay_ms << " ms";
  }
}

}  // namespace
}  // namespace jouleprof
