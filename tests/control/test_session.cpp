// Guaranteed restore against the fake NVML, in process: normal exit, exception, leftovers of a
// dead owner, a running owner, another host, observe-only, no permission, deprecated
// application clocks, `restore --check`; and a sweep on the simulated GPU (store, resume, report).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <memory>
#include <regex>
#include <stdexcept>
#include <tuple>

#include "common/run_program.hpp"
#include "control/fake_state.hpp"
#include "jouleprof/control/session.hpp"
#include "jouleprof/control/slurm.hpp"
#include "jouleprof/core/uuid.hpp"
#include "jouleprof/control/sweep.hpp"
#include "jouleprof/report/sweep_report.hpp"
#include "jouleprof/sensors/sim_model.hpp"
#include "jouleprof/store/store.hpp"
#include "jouleprof/store/synthetic.hpp"

namespace fs = std::filesystem;
namespace ctl = jouleprof::control;
using namespace jp_control_test;

namespace {

// The fake folder, announced to this process's fake NVML through its environment.
struct FakeEnv : FakeNvmlFolder {
  explicit FakeEnv(int gpus = 1)
      : FakeNvmlFolder(std::string("session-") + ::testing::UnitTest::GetInstance()->current_test_info()->name(), gpus) {
    for (const auto& [k, v] : fake_nvml_env()) setenv(k.c_str(), v.c_str(), 1);
    setenv("JOULEPROF_NVML_LIB", JOULEPROF_FAKE_NVML, 1);  // the NVML a restore drives
  }
  ~FakeEnv() {
    for (const auto& [k, v] : fake_nvml_env()) unsetenv(k.c_str());
    unsetenv("JOULEPROF_NVML_LIB");
    for (const char* v : {"JOULEPROF_FAKE_NVML_NO_PERMISSION", "JOULEPROF_FAKE_NVML_NO_APP_CLOCKS"}) unsetenv(v);
  }
};

std::unique_ptr<ctl::ControlBackend> fake_backend() {
  auto b = ctl::open_backend("nvml", JOULEPROF_FAKE_NVML);
  EXPECT_TRUE(b) << (b ? "" : b.error().message);
  return std::move(*b);
}

ctl::Setting slow_and_capped() {
  ctl::Setting s;
  s.gpu_clock_mhz = 990;
  s.power_limit_w = 300;
  return s;
}

bool contains(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines) {
    if (l.find(what) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST(Session, NormalExitRestoresTheOriginalStateNotTheDefault) {
  FakeEnv env;
  auto b = fake_backend();
  auto gpus = b->discover({});
  ASSERT_TRUE(gpus);
  ASSERT_EQ(gpus->size(), 1U);
  EXPECT_EQ(gpus->front().all_gpu_clocks().size(), 110U);  // discovered from the driver
  {
    auto s = ctl::ControlSession::begin(*b, *gpus, {env.journal, false, {}});
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(env.journals(), 1U);  // journaled before any change
    ASSERT_TRUE((*s)->apply(gpus->front().uuid, slow_and_capped()));
    const auto changed = read_fake_state(env.state).at(0);
    EXPECT_EQ(changed.gpu_locked, 1);
    EXPECT_EQ(changed.gpu_max, 990U);
    EXPECT_EQ(changed.power_mw, 300000U);
    ASSERT_TRUE((*s)->restore());
  }
  EXPECT_EQ(read_fake_state(env.state), env.original);
  EXPECT_EQ(env.journals(), 0U);
  const auto log = read_lines(env.log);
  EXPECT_TRUE(contains(log, "SetGpuLockedClocks gpu=0 min=990 max=990 rc=0"));
  EXPECT_TRUE(contains(log, "SetPowerManagementLimit gpu=0 mw=300000 rc=0"));
  EXPECT_TRUE(contains(log, "ResetGpuLockedClocks gpu=0 rc=0"));
  EXPECT_TRUE(contains(log, "SetApplicationsClocks gpu=0 mem=2619 gpu=1410 rc=0"));  // the original, not 1980
  EXPECT_TRUE(contains(log, "SetPowerManagementLimit gpu=0 mw=650000 rc=0"));       // the original, not 700 W
  auto check = ctl::check_journals(env.journal);
  ASSERT_TRUE(check);
  ASSERT_EQ(check->size(), 1U);
  EXPECT_TRUE(check->front().ok) << check->front().message;
  // Someone changes the limit behind jouleprof's back: the epilog check sees it.
  auto st = env.original;
  st[0].power_mw = 400000;
  write_fake_state(env.state, st);
  auto b2 = fake_backend();  // a new NVML session reads the changed state
  b.reset();
  b2.reset();
  check = ctl::check_journals(env.journal);
  ASSERT_TRUE(check);
  EXPECT_FALSE(check->front().ok);
  EXPECT_NE(check->front().message.find("power limit 400 W, originally 650 W"), std::string::npos) << check->front().message;
}

TEST(Session, AnExceptionUnwindsThroughTheRestore) {
  FakeEnv env;
  auto b = fake_backend();
  auto gpus = b->discover({"0"});
  ASSERT_TRUE(gpus);
  try {
    auto s = ctl::ControlSession::begin(*b, *gpus, {env.journal, false, {}});
    ASSERT_TRUE(s);
    ASSERT_TRUE((*s)->apply(gpus->front().uuid, slow_and_capped()));
    throw std::runtime_error("workload driver threw");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(read_fake_state(env.state), env.original);
  EXPECT_EQ(env.journals(), 0U);
}

TEST(Session, LeftoversOfADeadOwnerAreRestoredFirst_ARunningOwnerIsRefused) {
  FakeEnv env;
  auto b = fake_backend();
  auto gpus = b->discover({});
  ASSERT_TRUE(gpus);
  // A journal left by a process that no longer runs, with the GPU still changed.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  ctl::Journal j = ctl::journal_for_this_process();
  j.pid = dead;
  j.backend = "nvml";
  j.library = JOULEPROF_FAKE_NVML;
  j.uuid = gpus->front().uuid;
  j.original.power_limit_mw = 650000;
  j.original.app_gpu_mhz = 1410;
  j.original.app_mem_mhz = 2619;
  ASSERT_TRUE(ctl::write_journal(env.journal, j));
  ASSERT_TRUE(b->apply(j.uuid, slow_and_capped()));
  std::vector<std::string> notes;
  {
    auto s = ctl::ControlSession::begin(*b, *gpus, {env.journal, false, [&](const std::string& n) { notes.push_back(n); }});
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_TRUE(contains(notes, "left changed by jouleprof pid " + std::to_string(dead)));
    EXPECT_EQ(read_fake_state(env.state), env.original);
  }
  // A journal whose owner runs (this process): refused, nothing touched.
  j.pid = getpid();
  j.pid_start_ticks = ctl::journal_for_this_process().pid_start_ticks;
  ASSERT_TRUE(ctl::write_journal(env.journal, j));
  auto s = ctl::ControlSession::begin(*b, *gpus, {env.journal, false, {}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("is being changed by jouleprof pid"), std::string::npos) << s.error().message;
  auto out = ctl::restore_from_journals(env.journal);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 1U);
  EXPECT_EQ(out->front().kind, ctl::RestoreOutcome::Kind::in_use);
}

// A journal of a GPU left at 990 MHz and 300 W by a killed jouleprof, written as it would be.
ctl::Journal dead_owner_journal(const std::string& uuid) {
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  ctl::Journal j = ctl::journal_for_this_process();
  j.pid = dead;
  j.backend = "nvml";
  j.library = JOULEPROF_FAKE_NVML;
  j.uuid = uuid;
  j.original.power_limit_mw = 650000;
  j.original.app_gpu_mhz = 1410;
  j.original.app_mem_mhz = 2619;
  return j;
}

// Every kind of bad file found beside good journals (issue 35): each is reported on its own
// line, and every good journal is restored all the same.
TEST(Session, BadFilesBesideGoodJournalsDoNotStopTheRestore) {
  FakeEnv env(2);
  auto b = fake_backend();
  auto gpus = b->discover({});
  ASSERT_TRUE(gpus);
  for (const auto& g : *gpus) {
    ctl::Journal j = dead_owner_journal(g.uuid);
    j.original = *b->read_state(g.uuid);
    ASSERT_TRUE(ctl::write_journal(env.journal, j));
    ASSERT_TRUE(b->apply(g.uuid, slow_and_capped()));
  }
  const std::string good = jp_test::slurp_file(env.journal + "/" + gpus->front().uuid + ".json");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"garbage", "}{ not json"},
      {"empty", ""},
      {"array", "[1, 2, 3]"},
      {"version2", std::regex_replace(good, std::regex("\"journal_version\": 1"), "\"journal_version\": 2")},
      {"stringpid", std::regex_replace(good, std::regex("\"pid\": [0-9]+"), "\"pid\": \"123\"")},
      {"nouuid", std::regex_replace(good, std::regex("\"uuid\": "), "\"gpu\": ")},
      {"nul", std::string("{\"journal_version\": 1,") + '\0' + " \"x\": 1}"},
  };
  for (const auto& [name, text] : bad) std::ofstream(env.journal + "/" + name + ".json", std::ios::binary) << text;
  auto out = ctl::restore_from_journals(env.journal);
  ASSERT_TRUE(out) << out.error().message;
  int restored = 0, unreadable = 0;
  for (const auto& o : *out) {
    restored += o.kind == ctl::RestoreOutcome::Kind::restored ? 1 : 0;
    unreadable += o.kind == ctl::RestoreOutcome::Kind::unreadable ? 1 : 0;
    EXPECT_EQ(o.message.find('\n'), std::string::npos) << o.message;
    EXPECT_EQ(o.message.find("json.exception"), std::string::npos) << o.message;  // the reader's words
  }
  EXPECT_EQ(restored, 2);
  EXPECT_EQ(unreadable, static_cast<int>(bad.size()));
  EXPECT_EQ(read_fake_state(env.state), env.original);
  EXPECT_EQ(env.journals(), 0U);
  // The start-of-command restore does the same: a line per GPU restored, one line for all bad files.
  for (const auto& g : *gpus) {
    ctl::Journal j = dead_owner_journal(g.uuid);
    j.original = *b->read_state(g.uuid);
    ASSERT_TRUE(ctl::write_journal(env.journal, j));
    ASSERT_TRUE(b->apply(g.uuid, slow_and_capped()));
  }
  setenv(ctl::kJournalDirEnv, env.journal.c_str(), 1);
  std::vector<std::string> notes;
  ctl::restore_leftovers_at_start([&](const std::string& n) { notes.push_back(n); });
  unsetenv(ctl::kJournalDirEnv);
  ASSERT_EQ(notes.size(), 3U);
  EXPECT_NE(notes[0].find("restored"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("restored"), std::string::npos) << notes[1];
  EXPECT_EQ(notes[2], std::to_string(bad.size()) + " unreadable journals in " + env.journal +
                          "; run `jouleprof restore` for details");
  // The next command: nothing left to restore, the bad files (and another host's journal) in one line.
  ctl::Journal other = dead_owner_journal("GPU-fa4e0000-0000-4000-8000-000000000000");
  other.host = "node-17";
  ASSERT_TRUE(ctl::write_journal(env.journal, other));
  notes.clear();
  setenv(ctl::kJournalDirEnv, env.journal.c_str(), 1);
  ctl::restore_leftovers_at_start([&](const std::string& n) { notes.push_back(n); });
  unsetenv(ctl::kJournalDirEnv);
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_EQ(notes[0], std::to_string(bad.size()) + " unreadable journals and 1 journal of another host or boot in " +
                          env.journal + "; run `jouleprof restore` for details");
  std::filesystem::remove(env.journal + "/GPU-fa4e0000-0000-4000-8000-000000000000.json");
  EXPECT_EQ(read_fake_state(env.state), env.original);
  EXPECT_EQ(env.journals(), 0U);
  // A sweep may start on these GPUs: the bad files that name no GPU do not block it.
  std::filesystem::remove(env.journal + "/version2.json");
  std::filesystem::remove(env.journal + "/stringpid.json");
  {
    auto s = ctl::ControlSession::begin(*b, *gpus, {env.journal, false, {}});
    ASSERT_TRUE(s) << s.error().message;
  }
  // A newer jouleprof's journal naming GPU 0: that GPU may still be changed, so no sweep starts on it.
  std::ofstream(env.journal + "/version2.json") << std::regex_replace(good, std::regex("\"journal_version\": 1"),
                                                                      "\"journal_version\": 2");
  auto s = ctl::ControlSession::begin(*b, *gpus, {env.journal, false, {}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("may still be changed"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("journal version 2"), std::string::npos) << s.error().message;
}

// A journal names the library it was written with; the restore never loads it (a user who can
// write the folder root's epilog restores from would otherwise run code as root).
TEST(Session, TheLibraryAJournalNamesIsNeverLoaded) {
  FakeEnv env;
  const std::string marker = env.dir + "/evil-ran";
  const std::string evil = env.dir + "/libevil.so";
  const std::string src = env.dir + "/evil.c";
  std::ofstream(src) << "#include <stdio.h>\n__attribute__((constructor)) static void boom(void) { FILE* f = fopen(\""
                     << marker << "\", \"w\"); if (f) fclose(f); }\n";
  if (std::system(("cc -shared -fPIC -o " + evil + " " + src + " 2>/dev/null").c_str()) != 0) GTEST_SKIP() << "no C compiler";
  auto b = fake_backend();
  auto gpus = b->discover({});
  ASSERT_TRUE(gpus);
  ctl::Journal j = dead_owner_journal(gpus->front().uuid);
  j.library = evil;
  ASSERT_TRUE(ctl::write_journal(env.journal, j));
  ASSERT_TRUE(b->apply(j.uuid, slow_and_capped()));
  auto out = ctl::restore_from_journals(env.journal);
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->size(), 1U);
  EXPECT_EQ(out->front().kind, ctl::RestoreOutcome::Kind::restored) << out->front().message;
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_EQ(read_fake_state(env.state), env.original);  // restored through the configured (fake) NVML
  ASSERT_TRUE(ctl::write_journal(env.journal + "/restored", j));
  auto check = ctl::check_journals(env.journal);
  ASSERT_TRUE(check) << check.error().message;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(Session, AJournalFromAnotherHostIsRefused) {
  FakeEnv env;
  ctl::Journal j = ctl::journal_for_this_process();
  j.host = "node-17";
  j.backend = "nvml";
  j.library = JOULEPROF_FAKE_NVML;
  j.uuid = "GPU-fa4e0000-0000-4000-8000-000000000000";
  ASSERT_TRUE(ctl::write_journal(env.journal, j));
  auto out = ctl::restore_from_journals(env.journal);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 1U);
  EXPECT_EQ(out->front().kind, ctl::RestoreOutcome::Kind::foreign);
  EXPECT_NE(out->front().message.find("written on host 'node-17'"), std::string::npos);
  EXPECT_EQ(env.journals(), 1U);  // left for its host
  EXPECT_TRUE(read_lines(env.log).empty());
}

TEST(Session, ObserveOnlyChangesNothing) {
  FakeEnv env;
  auto b = fake_backend();
  auto gpus = b->discover({});
  ASSERT_TRUE(gpus);
  {
    auto s = ctl::ControlSession::begin(*b, *gpus, {env.journal, true, {}});
    ASSERT_TRUE(s);
    EXPECT_TRUE((*s)->apply(gpus->front().uuid, slow_and_capped()));  // validated only
    ctl::Setting bad;
    bad.gpu_clock_mhz = 1000;
    EXPECT_FALSE((*s)->apply(gpus->front().uuid, bad));
    EXPECT_EQ(env.journals(), 0U);
  }
  EXPECT_TRUE(read_lines(env.log).empty());
  EXPECT_EQ(read_fake_state(env.state), env.original);
}

TEST(Session, WithoutPermissionTheErrorSaysWhyAndNothingStaysChanged) {
  FakeEnv env;
  setenv("JOULEPROF_FAKE_NVML_NO_PERMISSION", "1", 1);
  auto b = fake_backend();
  auto gpus = b->discover({});
  ASSERT_TRUE(gpus);
  auto s = ctl::ControlSession::begin(*b, *gpus, {env.journal, false, {}});
  ASSERT_TRUE(s);  // this test runs as root; the driver still refuses
  auto r = (*s)->apply(gpus->front().uuid, slow_and_capped());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("Insufficient Permissions"), std::string::npos) << r.error().message;
  EXPECT_EQ(read_fake_state(env.state), env.original);
}

TEST(Session, WithoutApplicationClocksOnlyLockedClocksAreUsed) {
  FakeEnv env;
  setenv("JOULEPROF_FAKE_NVML_NO_APP_CLOCKS", "1", 1);
  auto b = fake_backend();
  auto gpus = b->discover({});
  ASSERT_TRUE(gpus);
  EXPECT_FALSE(gpus->front().app_clocks);
  {
    auto s = ctl::ControlSession::begin(*b, *gpus, {env.journal, false, {}});
    ASSERT_TRUE(s);
    EXPECT_FALSE((*s)->original(gpus->front().uuid).app_gpu_mhz);
    ASSERT_TRUE((*s)->apply(gpus->front().uuid, slow_and_capped()));
  }
  EXPECT_EQ(read_fake_state(env.state), env.original);
  EXPECT_FALSE(contains(read_lines(env.log), "SetApplicationsClocks"));
}

TEST(Sweep, SimulatedSweepStoresTaggedPointsResumesAndReports) {
  const std::string dir = (fs::temp_directory_path() / ("jp-simsweep-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/fast.txt") << "workload_time_scale 0.1\n";
  ctl::SweepRunOptions o;
  o.spec.device = "sim";
  o.spec.sim_scenario = dir + "/fast.txt";
  o.spec.clocks = "1980,990";
  o.spec.runs = 2;
  o.spec.warmup = 0;
  o.spec.idle_s = 0;
  o.db = dir + "/runs.db";
  o.journal_dir = dir + "/journal";
  o.spec.read_cpu = false;
  int progress_calls = 0;
  o.progress = [&](const ctl::SweepProgress& p) {
    ++progress_calls;
    EXPECT_LE(p.done, p.total);
  };
  auto sum = ctl::run_sweep(o);
  ASSERT_TRUE(sum) << sum.error().message;
  EXPECT_EQ(sum->count(ctl::UnitOutcome::Kind::measured), 2);
  EXPECT_TRUE(sum->restored);
  EXPECT_EQ(progress_calls, 2);
  // The in-process simulated GPU is back to its original settings.
  EXPECT_FALSE(jouleprof::sim_device_control(0).sm_clock_lock_mhz);
  // Again: everything is in the store, nothing is measured twice.
  auto again = ctl::run_sweep(o);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->count(ctl::UnitOutcome::Kind::skipped), 2);
  EXPECT_EQ(again->count(ctl::UnitOutcome::Kind::measured), 0);

  auto store = jouleprof::Store::open(o.db, jouleprof::Store::Mode::read);
  ASSERT_TRUE(store);
  auto rep = jouleprof::sweep_report(*store, sum->sweep_id);
  ASSERT_TRUE(rep) << rep.error().message;
  ASSERT_EQ(rep->rows.size(), 2U);
  EXPECT_TRUE(rep->simulated);
  EXPECT_EQ(rep->region, "marked phases");
  const auto& slow = rep->rows[0];  // sorted by clock
  const auto& fast = rep->rows[1];
  EXPECT_EQ(*slow.clock_mhz, 990);
  EXPECT_EQ(slow.energy_j.n, 2U);
  // The clock while busy, though each run (0.23-0.3 s) is shorter than the sampler's usual 0.5-s
  // clock poll: it used to be the idle 345 MHz.
  ASSERT_TRUE(slow.observed_clock_mhz);
  ASSERT_TRUE(fast.observed_clock_mhz);
  EXPECT_EQ(*slow.observed_clock_mhz, 990);
  EXPECT_EQ(*fast.observed_clock_mhz, 1980);
  EXPECT_GT(slow.duration_s.mean, fast.duration_s.mean * 1.1);  // the law: slower ...
  EXPECT_LT(slow.energy_j.mean, fast.energy_j.mean * 0.9);      // ... and cheaper
  EXPECT_TRUE(slow.best_energy);
  EXPECT_EQ(slow.phases.count("prefill"), 1U);
  const std::string csv = jouleprof::sweep_report_csv(*rep);
  EXPECT_NE(csv.find("clock_mhz,mem_clock_mhz,power_limit_w"), std::string::npos);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  const auto chart = jouleprof::sweep_chart(*rep, "edp_js", "clock_mhz", {});
  EXPECT_NE(chart.option_json.find("\"lines\""), std::string::npos);  // error bars
  EXPECT_NE(chart.option_json.find("optimum"), std::string::npos);

  // A `bench llm` run tagged with a sweep of its own (its start time, no point) is no clock sweep:
  // neither listed nor `last` nor reported (its configurations were averaged into one row).
  auto bench = store->load(rep->rows[0].run_ids.front(), false);
  ASSERT_TRUE(bench) << bench.error().message;
  bench->tags = {{"sweep", "2026-11-28T03:50:04.819Z"}, {"bench", "llm"}, {"batch", "2"}};
  bench->run_uuid.clear();
  jouleprof::StoreOptions so;
  so.db_path = o.db;
  so.allow_duplicate = true;
  ASSERT_TRUE(jouleprof::record_measurement(*bench, so));
  auto after = jouleprof::Store::open(o.db, jouleprof::Store::Mode::read);
  ASSERT_TRUE(after);
  auto listed = ctl::list_sweeps(*after);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1U);
  EXPECT_EQ(listed->front().sweep_id, sum->sweep_id);
  auto last = ctl::resolve_sweep_id(*after, "last");
  ASSERT_TRUE(last);
  EXPECT_EQ(*last, sum->sweep_id);
  EXPECT_FALSE(jouleprof::sweep_report(*after, "2026-11-28T03:50:04.819Z"));
  fs::remove_all(dir);
}

namespace {
// A measurement of one GPU whose clock and utilization were polled at `t` (s).
jouleprof::Measurement clock_samples(const std::vector<std::tuple<double, double, double>>& t_clock_util) {
  auto tl = std::make_shared<jouleprof::GpuTimeline>(std::size_t{1} << 10);
  for (const auto& [t, clock, util] : t_clock_util) {
    tl->series[static_cast<int>(jouleprof::Metric::sm_clock_mhz)].append(t, clock);
    if (util >= 0) tl->series[static_cast<int>(jouleprof::Metric::gpu_util_pct)].append(t + 1e-4, util);
  }
  jouleprof::Measurement m;
  m.timelines.push_back(tl);
  m.gpu_state.emplace_back();
  auto window = [&](const char* kind, double t0, double t1) {
    jouleprof::WindowResult w;
    w.kind = w.name = kind;
    w.t0_s = t0;
    w.t1_s = t1;
    m.windows.push_back(w);
    return static_cast<int>(m.windows.size()) - 1;
  };
  auto run = [&](bool warmup, double t0, double t1) {
    jouleprof::RunInfo r;
    r.index = static_cast<int>(m.runs.size());
    r.warmup = warmup;
    r.window = window(warmup ? "warmup" : "run", t0, t1);
    m.runs.push_back(r);
  };
  window("idle", 0, 1);
  run(true, 1, 2);
  run(false, 2, 3);
  run(false, 3.5, 4.5);
  return m;
}
}  // namespace

// A point's seen clock is the mean SM clock of the measured runs while the GPU was busy: not the
// idle baseline, the warm-up, the gap between runs, nor a poll in a run where the GPU was idle.
TEST(Sweep, SeenClockIsTheBusyClockOfTheMeasuredRuns) {
  const auto m = clock_samples({{0.5, 345, 0},      // idle baseline
                                {1.5, 1980, 100},   // warm-up at another clock
                                {2.05, 345, 0},     // the workload starting up: GPU idle
                                {2.5, 1410, 100},   // busy
                                {3.2, 345, 0},      // between runs
                                {3.9, 1380, 100},   // busy
                                {4.6, 345, 0}});    // after the last run
  auto clock = ctl::busy_sm_clock_mhz(m, 0);
  ASSERT_TRUE(clock);
  EXPECT_DOUBLE_EQ(*clock, 1395);
  EXPECT_FALSE(ctl::busy_sm_clock_mhz(m, 1));  // no such GPU
  // Never busy in the runs: no figure rather than the idle clock.
  EXPECT_FALSE(ctl::busy_sm_clock_mhz(clock_samples({{0.5, 345, 0}, {2.5, 345, 0}, {3.2, 1980, 100}}), 0));
  // Utilization not read: every clock sample inside a measured run counts.
  auto no_util = ctl::busy_sm_clock_mhz(clock_samples({{0.5, 345, -1}, {2.5, 990, -1}, {3.9, 1020, -1}}), 0);
  ASSERT_TRUE(no_util);
  EXPECT_DOUBLE_EQ(*no_util, 1005);
}

// Two SLURM tasks on one node whose points start in the same nanosecond: `runs merge` keeps both
// (by start time and host the second was counted as "already stored" and silently left out), and
// a second merge of the same task stores copies nothing.
TEST(Merge, TaskRunsThatStartTogetherAreEachMergedOnce) {
  const std::string dir = (fs::temp_directory_path() / ("jp-merge-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<std::string> tasks;
  for (int t = 0; t < 2; ++t) {
    jouleprof::SyntheticSpec spec;
    spec.gpus = 1;
    spec.duration_s = 5;
    jouleprof::Measurement m = jouleprof::make_synthetic_measurement(spec);  // the same start and host
    m.run_uuid = jouleprof::random_uuid();
    m.tags["task"] = std::to_string(t);
    tasks.push_back(dir + "/task-" + std::to_string(t) + ".db");
    auto st = jouleprof::Store::open(tasks.back(), jouleprof::Store::Mode::write);
    ASSERT_TRUE(st);
    ASSERT_TRUE(st->insert(m));
  }
  auto first = ctl::merge_run_stores(dir + "/merged.db", tasks);
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_EQ(first->size(), 2U);
  for (const auto& o : *first) {
    EXPECT_EQ(o.merged, 1) << o.file;
    EXPECT_EQ(o.duplicates, 0) << o.file;
  }
  auto again = ctl::merge_run_stores(dir + "/merged.db", tasks);
  ASSERT_TRUE(again) << again.error().message;
  for (const auto& o : *again) {
    EXPECT_EQ(o.merged, 0) << o.file;
    EXPECT_EQ(o.duplicates, 1) << o.file;
  }
  auto merged = jouleprof::Store::open(dir + "/merged.db", jouleprof::Store::Mode::read);
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->list()->size(), 2U);
  fs::remove_all(dir);
}
