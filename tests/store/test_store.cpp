// The run store: round trips, bad databases left untouched, two writers (a new store created by
// both, runs that start in the same nanosecond), a kill mid-write.
#include <gtest/gtest.h>

#include <optional>
#include <thread>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "jouleprof/measure/output.hpp"
#include "jouleprof/store/compare.hpp"
#include "jouleprof/result/result_io.hpp"
#include "jouleprof/store/run_source.hpp"
#include "jouleprof/store/store.hpp"
#include "jouleprof/store/synthetic.hpp"
#include "jouleprof/core/uuid.hpp"

namespace jouleprof {
namespace {

namespace fs = std::filesystem;

// Waits for the forked processes; each must have exited with status 0.
void expect_all_exit_zero(const std::vector<pid_t>& kids) {
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jouleprof-store-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    db_ = dir_ + "/runs.db";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  Store open_write() {
    auto s = Store::open(db_, Store::Mode::write);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return std::move(*s);
  }
  std::string dir_, db_;
};

StoreOptions db_opts(const std::string& db) {
  StoreOptions o;
  o.db_path = db;
  return o;
}

template <class F>
RunFilter filter(F f) {
  RunFilter r;
  f(r);
  return r;
}

SyntheticSpec small(uint64_t seed = 1) {
  SyntheticSpec s;
  s.gpus = 2;
  s.duration_s = 20;
  s.sample_hz = 50;
  s.seed = seed;
  return s;
}

void expect_same_timelines(const Measurement& a, const Measurement& b) {
  ASSERT_EQ(a.timelines.size(), b.timelines.size());
  for (std::size_t g = 0; g < a.timelines.size(); ++g) {
    for (int k = 0; k < kMetricCount; ++k) {
      const auto x = a.timelines[g]->series[static_cast<std::size_t>(k)].all();
      const auto y = b.timelines[g]->series[static_cast<std::size_t>(k)].all();
      ASSERT_EQ(x.size(), y.size()) << metric_name(static_cast<Metric>(k));
      for (std::size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(x[i].t_s, y[i].t_s);
        ASSERT_EQ(x[i].value, y[i].value);
      }
    }
  }
  EXPECT_EQ(a.meter_power.size(), b.meter_power.size());
}

TEST_F(StoreTest, InsertAndLoadRoundTripsResultAndTimelines) {
  auto m = make_synthetic_measurement(small());
  m.meter_power = {{0, 100}, {1, 110}, {2, 120}};
  m.meter_source = "meter.csv";
  Store s = open_write();
  EXPECT_EQ(s.schema_version(), kStoreSchemaVersion);
  auto id = s.insert(m);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto back = s.load(*id);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(result_to_json(*back), result_to_json(m));
  expect_same_timelines(m, *back);
  auto no_tl = s.load(*id, false);
  ASSERT_TRUE(no_tl.ok());
  EXPECT_TRUE(no_tl->timelines.empty() || no_tl->timelines[0]->series[0].empty());
}

TEST_F(StoreTest, JsonWithTimelinesRoundTrips) {
  const auto m = make_synthetic_measurement(small());
  auto back = measurement_from_json(result_to_json_with_timelines(m));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(result_to_json(*back), result_to_json(m));
  expect_same_timelines(m, *back);
  EXPECT_EQ(timeline_sample_count(*back), timeline_sample_count(m));
}

TEST_F(StoreTest, ExtraSectionsAreKeptVerbatim) {
  // Sections of other producers (bench llm's "llm") survive JSON, the store and export.
  auto m = make_synthetic_measurement(small());
  m.sections["llm"] = R"({"schema":"jouleprof.bench-llm/1","points":[{"batch":8,"decode":{"j_per_token":0.0123456789012345}}]})";
  m.sections["status"] = R"("never over a field of the schema")";
  const std::string text = result_to_json(m);
  EXPECT_NE(text.find("0.0123456789012345"), std::string::npos);
  auto back = measurement_from_json(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->sections.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(back->sections.at("llm")), nlohmann::json::parse(m.sections.at("llm")));
  EXPECT_TRUE(back->complete);
  Store s = open_write();
  auto id = s.insert(m);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto loaded = s.load(*id, false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->sections.at("llm"), back->sections.at("llm"));
  EXPECT_EQ(result_to_json(*loaded), text);
}

TEST_F(StoreTest, TimelineCsvIsRead) {
  const auto m = make_synthetic_measurement(small());
  const std::string csv = dir_ + "/t.csv", json = dir_ + "/r.json";
  ASSERT_TRUE(write_timeline_csv(m, csv).ok());
  ASSERT_TRUE(write_result_json(m, json).ok());
  auto back = read_result_file(json);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(read_timeline_csv(csv, *back).ok());
  EXPECT_EQ(timeline_sample_count(*back), timeline_sample_count(m));
  // CSV times are written with 6 decimals.
  const auto a = m.timelines[1]->series[0].all(), b = back->timelines[1]->series[0].all();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_NEAR(a[100].t_s, b[100].t_s, 1e-6);
  EXPECT_NEAR(a[100].value, b[100].value, 1e-9 * std::abs(a[100].value));
}

TEST_F(StoreTest, WrongResultSchemaVersionIsRefused) {
  auto r = measurement_from_json(R"({"schema_version": 99, "windows": []})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_NE(r.error().message.find("schema_version 99"), std::string::npos);
  EXPECT_FALSE(measurement_from_json("{\"hello\": 1}").ok());
  EXPECT_FALSE(measurement_from_json("not json").ok());
  EXPECT_FALSE(measurement_from_json(R"({"schema_version": 1, "windows": [{"name": 3}]})").ok());
}

TEST_F(StoreTest, MissingDatabaseIsNotCreatedByReaders) {
  auto s = Store::open(db_, Store::Mode::read);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Errc::not_found);
  EXPECT_FALSE(fs::exists(db_));
}

TEST_F(StoreTest, NewerSchemaIsRefusedAndLeftUntouched) {
  {
    Store s = open_write();
    ASSERT_TRUE(s.insert(make_synthetic_measurement(small())).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=DELETE; PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const std::string before = slurp(db_);
  for (auto mode : {Store::Mode::read, Store::Mode::write}) {
    auto s = Store::open(db_, mode);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("newer"), std::string::npos) << s.error().message;
  }
  auto r = record_measurement(make_synthetic_measurement(small(2)), db_opts(db_));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(slurp(db_), before);
  EXPECT_FALSE(fs::exists(db_ + "-wal"));
}

TEST_F(StoreTest, CorruptAndForeignFilesAreRefusedAndLeftUntouched) {
  {
    std::ofstream(db_) << "this is not a database, just some text that is long enough to look like a header........";
  }
  std::string before = slurp(db_);
  for (auto mode : {Store::Mode::read, Store::Mode::write}) {
    auto s = Store::open(db_, mode);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().message.find('\n'), std::string::npos);
  }
  EXPECT_EQ(slurp(db_), before);

  fs::remove(db_);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE other(x); INSERT INTO other VALUES(1)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  before = slurp(db_);
  auto s = Store::open(db_, Store::Mode::write);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("not a jouleprof run store"), std::string::npos);
  EXPECT_EQ(slurp(db_), before);
}

TEST_F(StoreTest, TruncatedDatabaseFailsWithOneLineErrors) {
  {
    Store s = open_write();
    for (uint64_t k = 1; k <= 3; ++k) ASSERT_TRUE(s.insert(make_synthetic_measurement(small(k))).ok());
  }
  sqlite3* db = nullptr;  // fold the WAL into the main file, then cut it
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  fs::resize_file(db_, fs::file_size(db_) / 2);
  auto s = Store::open(db_, Store::Mode::read);
  if (!s.ok()) {
    EXPECT_EQ(s.error().message.find('\n'), std::string::npos);
    return;
  }
  bool failed = false;
  for (int64_t id = 1; id <= 3; ++id) {
    auto m = s->load(id);
    if (!m.ok()) {
      failed = true;
      EXPECT_EQ(m.error().message.find('\n'), std::string::npos);
    }
  }
  EXPECT_TRUE(failed);
}

TEST_F(StoreTest, UnknownRunIdIsNotFound) {
  Store s = open_write();
  ASSERT_TRUE(s.insert(make_synthetic_measurement(small())).ok());
  auto m = s.load(42);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, Errc::not_found);
  EXPECT_FALSE(resolve_run_ref(s, "42").ok());
  EXPECT_FALSE(resolve_run_ref(s, "abc").ok());
  EXPECT_FALSE(resolve_run_ref(s, "last~1").ok());
  auto last = resolve_run_ref(s, "last");
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, 1);
}

TEST_F(StoreTest, DuplicatesAreRefusedUnlessAllowed) {
  Store s = open_write();
  const auto m = make_synthetic_measurement(small());
  ASSERT_TRUE(m.run_uuid.empty());  // as results from before run_uuid: recognised by start time and host
  ASSERT_TRUE(s.insert(m).ok());
  auto again = s.insert(m);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("already stored as run 1"), std::string::npos);
  StoreOptions o;
  o.allow_duplicate = true;
  EXPECT_TRUE(s.insert(m, o).ok());
  auto l = s.list();
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->size(), 2u);
}

// Two sweep workers (or SLURM tasks on one node) whose runs start in the same nanosecond on one
// host: two runs, both stored. The start time and host alone refused the second ("already
// stored as run 1"). The same run coming back (re-import of its file, a second merge) is still
// recognised by its run_uuid, which its result file carries.
Measurement worker_run(int gpu) {
  SyntheticSpec one = small(1);  // the same origin_realtime_ns and host for both
  one.gpus = 1;                  // each worker sees its own GPU as GPU 0 (CUDA_VISIBLE_DEVICES)
  Measurement m = make_synthetic_measurement(one);
  m.gpus[0].uuid = "GPU-worker-" + std::to_string(gpu);
  m.run_uuid = random_uuid();  // as Monitor::finish mints it
  return m;
}

TEST_F(StoreTest, RunsStartingInTheSameNanosecondOnOneHostAreBothKept) {
  Store s = open_write();
  const Measurement a = worker_run(0), b = worker_run(1);
  ASSERT_EQ(a.origin_realtime_ns, b.origin_realtime_ns);
  ASSERT_EQ(a.host, b.host);
  auto ia = s.insert(a);
  ASSERT_TRUE(ia.ok()) << ia.error().message;
  auto ib = s.insert(b);
  ASSERT_TRUE(ib.ok()) << ib.error().message;
  EXPECT_NE(*ia, *ib);
  // The same run again, directly or through its result file, is a duplicate.
  auto again = s.insert(a);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("already stored as run 1"), std::string::npos) << again.error().message;
  auto file = measurement_from_json(result_to_json(b, 2));
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->run_uuid, b.run_uuid);
  auto reimport = s.insert(*file);
  ASSERT_FALSE(reimport.ok());
  EXPECT_NE(reimport.error().message.find("already stored as run 2"), std::string::npos) << reimport.error().message;
  // As stored, the run keeps its identity (what runs export and runs merge copy).
  auto loaded = s.load(*ib);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->run_uuid, b.run_uuid);
  EXPECT_EQ(s.list()->size(), 2u);
}

TEST_F(StoreTest, TwoProcessesStoreRunsOfTheSameStartTime) {
  std::vector<pid_t> kids;
  for (int w = 0; w < 2; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto r = record_measurement(worker_run(w), db_opts(db_));
      if (!r.ok()) std::fprintf(stderr, "worker %d: %s\n", w, r.error().message.c_str());
      _exit(r.ok() ? 0 : 1);
    }
    kids.push_back(pid);
  }
  expect_all_exit_zero(kids);
  auto s = Store::open(db_, Store::Mode::read);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->list()->size(), 2u);
}

// A store not in WAL mode (a new one, or one switched to rollback journaling to be copied) is
// switched on open; that switch upgrades a read transaction to a write one, and SQLite fails such
// an upgrade at once when another process holds the write lock, whatever the busy timeout. Two
// processes creating one store together failed there ("cannot switch to WAL: database is
// locked", StoreTest.TwoProcessesWriteAtOnce under load); the switch now waits like any write.
TEST_F(StoreTest, OpeningWaitsForAnotherWriterBeforeSwitchingToWal) {
  {
    Store s = open_write();
    ASSERT_TRUE(s.insert(make_synthetic_measurement(small())).ok());
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA journal_mode = DELETE", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  int locked[2], go[2];
  ASSERT_EQ(pipe(locked), 0);
  ASSERT_EQ(pipe(go), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // another writer: holds the write lock until told, twice (handshakes, no timer)
    sqlite3* other = nullptr;
    if (sqlite3_open(db_.c_str(), &other) != SQLITE_OK) _exit(2);
    char c = 0;
    if (sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) _exit(3);
    if (write(locked[1], "L", 1) != 1 || read(go[0], &c, 1) != 1) _exit(4);
    sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
    if (sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) _exit(5);
    if (write(locked[1], "L", 1) != 1 || read(go[0], &c, 1) != 1) _exit(6);
    sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(other);
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(locked[0], &c, 1), 1);
  // The lock is not given back: after the busy timeout the open says why it failed.
  auto refused = Store::open(db_, Store::Mode::write, 100);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("cannot switch to WAL: database is locked"), std::string::npos)
      << refused.error().message;
  ASSERT_EQ(write(go[1], "g", 1), 1);
  ASSERT_EQ(read(locked[0], &c, 1), 1);
  // The lock is given back within the busy timeout: the open waits for it. The open starts while
  // the other writer holds the lock; the writer is told to let go as the open runs (a handshake:
  // no timer decides who goes first, and the open succeeds in either order).
  std::optional<Result<Store>> opened;
  std::thread opener([&] { opened.emplace(Store::open(db_, Store::Mode::write)); });
  ASSERT_EQ(write(go[1], "g", 1), 1);
  opener.join();
  ASSERT_TRUE(opened.has_value());
  auto& s = *opened;
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(s->insert(make_synthetic_measurement(small(2))).ok());
  EXPECT_EQ(s->list()->size(), 2u);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  for (int fd : {locked[0], locked[1], go[0], go[1]}) close(fd);
}

TEST_F(StoreTest, RemoveIsAllOrNone) {
  Store s = open_write();
  ASSERT_TRUE(s.insert(make_synthetic_measurement(small(1))).ok());
  ASSERT_TRUE(s.insert(make_synthetic_measurement(small(2))).ok());
  auto r = s.remove({1, 99});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(s.load(1).ok());
  ASSERT_TRUE(s.remove({1}).ok());
  EXPECT_FALSE(s.load(1).ok());
  EXPECT_TRUE(s.load(2).ok());
  sqlite3* db = nullptr;  // cascades removed every row of run 1
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM timelines WHERE run_id = 1", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST_F(StoreTest, ListFilters) {
  Store s = open_write();
  auto a = make_synthetic_measurement(small(1));
  a.tags["batch"] = "1";
  a.command = {"python", "infer.py", "--batch", "1"};
  auto b = make_synthetic_measurement(small(2));
  b.tags["batch"] = "8";
  b.gpus[0].name = "NVIDIA A100-SXM4-80GB";
  b.origin_realtime_ns += int64_t{86400} * 1000000000 * 3;
  ASSERT_TRUE(s.insert(a).ok());
  ASSERT_TRUE(s.insert(b).ok());
  auto count = [&](const RunFilter& f) {
    auto l = s.list(f);
    EXPECT_TRUE(l.ok());
    return l.ok() ? l->size() : 999u;
  };
  EXPECT_EQ(count({}), 2u);
  EXPECT_EQ(count(filter([](RunFilter& f) { f.tags = {{"batch", "8"}}; })), 1u);
  EXPECT_EQ(count(filter([](RunFilter& f) { f.tags = {{"batch", "*"}}; })), 2u);
  EXPECT_EQ(count(filter([](RunFilter& f) { f.tags = {{"batch", "8"}, {"case", "nope"}}; })), 0u);
  EXPECT_EQ(count(filter([](RunFilter& f) { f.command_contains = "infer.py"; })), 1u);
  EXPECT_EQ(count(filter([](RunFilter& f) { f.gpu_contains = "a100"; })), 1u);
  EXPECT_EQ(count(filter([&](RunFilter& f) { f.since_ns = a.origin_realtime_ns + 1; })), 1u);
  EXPECT_EQ(count(filter([&](RunFilter& f) { f.until_ns = a.origin_realtime_ns + 1; })), 1u);
  EXPECT_EQ(count(filter([](RunFilter& f) { f.limit = 1; })), 1u);
  auto l = s.list(filter([](RunFilter& f) { f.limit = 1; }));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->front().id, 2);
  EXPECT_EQ(l->front().tags.at("batch"), "8");
  ASSERT_TRUE(l->front().gpu_energy_j.has_value());
}

TEST_F(StoreTest, TwoProcessesWriteAtOnce) {
  constexpr int kPerWriter = 6;
  std::vector<pid_t> kids;
  for (int w = 0; w < 2; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int bad = 0;
      for (int k = 0; k < kPerWriter; ++k) {
        auto r = record_measurement(make_synthetic_measurement(small(static_cast<uint64_t>(100 * w + k + 1))), db_opts(db_));
        if (!r.ok()) {
          std::fprintf(stderr, "writer %d: %s\n", w, r.error().message.c_str());
          ++bad;
        }
      }
      _exit(bad);
    }
    kids.push_back(pid);
  }
  expect_all_exit_zero(kids);
  auto s = Store::open(db_, Store::Mode::read);
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto l = s->list();
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->size(), 2u * kPerWriter);
  for (const auto& r : *l) EXPECT_TRUE(s->load(r.id).ok());
}

TEST_F(StoreTest, KillDuringWriteLeavesOldRunsIntact) {
  const auto old1 = make_synthetic_measurement(small(1));
  const auto old2 = make_synthetic_measurement(small(2));
  {
    Store s = open_write();
    ASSERT_TRUE(s.insert(old1).ok());
    ASSERT_TRUE(s.insert(old2).ok());
  }
  SyntheticSpec big = small(3);
  big.gpus = 4;
  big.duration_s = 4000;  // 200k samples a GPU: several chunks each
  const auto m = make_synthetic_measurement(big);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    StoreOptions o;
    o.db_path = db_;
    o.on_chunk = [](std::size_t n) {
      if (n == 5) kill(getpid(), SIGKILL);
    };
    (void)record_measurement(m, o);
    _exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  auto s = Store::open(db_, Store::Mode::write);
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto l = s->list();
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->size(), 2u);
  auto a = s->load(1), b = s->load(2);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(result_to_json(*a), result_to_json(old1));
  expect_same_timelines(*b, old2);
  // No orphan rows from the killed transaction, and the store still takes runs.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
  sqlite3_finalize(st);
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM timeline_chunks WHERE timeline_id NOT IN (SELECT id FROM timelines)", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_TRUE(s->insert(make_synthetic_measurement(small(4))).ok());
}

TEST_F(StoreTest, LoadRunsTakesIdsAndFiles) {
  Store s = open_write();
  ASSERT_TRUE(s.insert(make_synthetic_measurement(small(1))).ok());
  const std::string file = dir_ + "/r.json";
  std::ofstream(file) << result_to_json_with_timelines(make_synthetic_measurement(small(2)));
  auto runs = load_runs({"1", "last", file}, db_);
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[2].id, 0);
  EXPECT_EQ((*runs)[2].label, "r.json");
  EXPECT_GT(timeline_sample_count((*runs)[2].m), 0u);
  EXPECT_FALSE(load_runs({"7"}, db_).ok());
}

TEST(StoreCompare, WelchTestAndValues) {
  Summary a = summarize({100, 101, 99, 100});
  Summary b = summarize({110, 111, 109, 110});
  Summary c = summarize({100.5, 99.5, 101, 100});
  EXPECT_EQ(differs_95(a, b), std::optional<bool>(true));
  EXPECT_EQ(differs_95(a, c), std::optional<bool>(false));
  EXPECT_FALSE(differs_95(summarize({1}), a).has_value());

  SyntheticSpec s1 = small(1), s2 = small(2);
  s2.decode_w = 500;
  const auto m1 = make_synthetic_measurement(s1), m2 = make_synthetic_measurement(s2);
  const auto cmp = compare_runs({&m1, &m2});
  ASSERT_FALSE(cmp.keys.empty());
  EXPECT_EQ(cmp.keys[0], "gpu_energy_j");
  ASSERT_TRUE(cmp.cells[1][0].diff_rel.has_value());
  EXPECT_GT(*cmp.cells[1][0].diff_rel, 0.1);
  const auto ph = compare_runs({&m1, &m2}, "decode");
  EXPECT_NE(std::find(ph.keys.begin(), ph.keys.end(), "phase:decode:gpu_energy_per_token_j"), ph.keys.end());
}

TEST(StoreTimeFilter, Forms) {
  const int64_t now = int64_t{1795300000} * 1000000000;
  auto d = parse_time_filter("2026-11-22", now);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, int64_t{1795305600} * 1000000000);
  auto h = parse_time_filter("2026-11-22T05:30", now);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h - *d, int64_t{5 * 3600 + 1800} * 1000000000);
  auto age = parse_time_filter("7d", now);
  ASSERT_TRUE(age.ok());
  EXPECT_EQ(now - *age, int64_t{7 * 86400} * 1000000000);
  EXPECT_FALSE(parse_time_filter("yesterday", now).ok());
  EXPECT_FALSE(parse_time_filter("2026-13-01", now).ok());
}

TEST(StorePath, Resolution) {
  EXPECT_EQ(resolve_db_path("/x/y.db"), "/x/y.db");
  setenv("JOULEPROF_DB", "/env/runs.db", 1);
  EXPECT_EQ(resolve_db_path(), "/env/runs.db");
  unsetenv("JOULEPROF_DB");
  setenv("XDG_DATA_HOME", "/xdg", 1);
  EXPECT_EQ(resolve_db_path(), "/xdg/jouleprof/runs.db");
  unsetenv("XDG_DATA_HOME");
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(resolve_db_path(), "/home/u/.local/share/jouleprof/runs.db");
}

}  // namespace
}  // namespace jouleprof
