// `jouleprof sweep` and `jouleprof restore` end to end against the fake NVML and the simulated
// GPU: restore on SIGINT, SIGTERM, SIGHUP; SIGKILL then `jouleprof restore`; restore at the next
// start; `restore --check`; observe-only; dry-run (plan and SLURM script); bad input; a failing
// point; multi-GPU split (and what its workers record); resume.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "common/run_program.hpp"
#include "control/fake_state.hpp"
#include "jouleprof/control/journal.hpp"
#include "jouleprof/store/store.hpp"

namespace fs = std::filesystem;
using namespace jp_control_test;

namespace {

// The fake folder, announced to a jouleprof child process through its environment.
struct Cli : FakeNvmlFolder {
  explicit Cli(int gpus = 1, const std::string& scenario_lines = "")
      : FakeNvmlFolder(std::string("sweepcli-") + ::testing::UnitTest::GetInstance()->current_test_info()->name(), gpus,
                       "workload_time_scale 0.1\n" + scenario_lines) {}
  std::vector<std::string> env() const {
    std::vector<std::string> out = {"JOULEPROF_CONTROL_DIR=" + journal, "JOULEPROF_DB=" + db,
                                    std::string("JOULEPROF_NVML_LIB=") + JOULEPROF_FAKE_NVML};
    for (const auto& [k, v] : fake_nvml_env()) out.push_back(k + "=" + v);
    return out;
  }
  template <class F>
  jp_test::ProgramRun run(const std::vector<std::string>& args, F after_start) const {
    return jp_test::run_program(JOULEPROF_CLI, args, env(), dir, dir + "/out.txt", dir + "/err.txt", after_start);
  }
  jp_test::ProgramRun run(const std::vector<std::string>& args) const {
    return run(args, [](pid_t) {});
  }
};

// A sweep against the fake NVML whose workload runs long enough to be signalled mid-point.
std::vector<std::string> fake_sweep(const std::string& seconds) {
  return {"sweep", "--device", "nvml", "--clocks", "990,1410", "--power-limits", "300", "--runs", "1", "--warmup", "0",
          "--idle", "0", "--order", "sequential", "--no-cpu", "--", "sleep", seconds};
}

// Waits until the fake GPU has been changed (the sweep is inside its first point): a handshake
// on the fake's state file (inotify on its folder: each set call rewrites it), not a timer. The
// 60-s bound only turns a hang into a failure.
bool wait_changed(const Cli& c) {
  const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) return false;
  inotify_add_watch(fd, c.dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_MODIFY);
  bool changed = false;
  for (;;) {
    auto st = read_fake_state(c.state);
    if (st.count(0) && st.at(0).gpu_locked == 1) {
      changed = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 60000) <= 0) break;
    char buf[4096];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
  }
  close(fd);
  return changed;
}

bool log_has(const Cli& c, const std::string& what) {
  for (const auto& l : read_lines(c.log)) {
    if (l.find(what) != std::string::npos) return true;
  }
  return false;
}

// Every run in the store at `db`, loaded (without timelines).
std::vector<jouleprof::Measurement> stored_runs(const std::string& db) {
  std::vector<jouleprof::Measurement> out;
  auto store = jouleprof::Store::open(db, jouleprof::Store::Mode::read);
  EXPECT_TRUE(store) << store.error().message;
  if (!store) return out;
  auto runs = store->list();
  EXPECT_TRUE(runs);
  if (!runs) return out;
  for (const auto& s : *runs) {
    auto m = store->load(s.id, false);
    EXPECT_TRUE(m) << "run " << s.id;
    if (m) out.push_back(std::move(*m));
  }
  return out;
}

}  // namespace

class SignalRestore : public ::testing::TestWithParam<int> {};

TEST_P(SignalRestore, TheSweepRestoresTheGpuAndSaysHowToResume) {
  const int sig = GetParam();
  Cli c;
  bool changed = false;
  auto r = c.run(fake_sweep("20"), [&](pid_t pid) {
    changed = wait_changed(c);
    kill(pid, sig);
  });
  ASSERT_TRUE(changed) << r.err;
  EXPECT_EQ(r.exit_code, 128 + sig) << r.err;
  EXPECT_NE(r.err.find("interrupted by signal"), std::string::npos) << r.err;
  EXPECT_EQ(read_fake_state(c.state), c.original);
  EXPECT_EQ(c.journals(), 0U);
  EXPECT_TRUE(log_has(c, "SetGpuLockedClocks gpu=0 min=990 max=990 rc=0"));
  EXPECT_TRUE(log_has(c, "ResetGpuLockedClocks gpu=0 rc=0"));
  EXPECT_TRUE(log_has(c, "SetPowerManagementLimit gpu=0 mw=650000 rc=0"));
}

INSTANTIATE_TEST_SUITE_P(Signals, SignalRestore, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const auto& p) { return std::string(sigabbrev_np(p.param)); });

TEST(RestoreCli, AfterSigkillRestoreAndCheck) {
  Cli c;
  auto r = c.run(fake_sweep("2"), [&](pid_t pid) {
    ASSERT_TRUE(wait_changed(c));
    kill(pid, SIGKILL);
  });
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(read_fake_state(c.state).at(0).gpu_locked, 1);  // left changed
  EXPECT_EQ(c.journals(), 1U);
  auto check = c.run({"restore", "--check"});
  EXPECT_EQ(check.exit_code, 1) << check.err;  // a journal is left
  EXPECT_NE(check.err.find("run `jouleprof restore`"), std::string::npos) << check.err;
  auto rs = c.run({"restore", "--json", "-"});
  EXPECT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_NE(rs.out.find("\"outcome\": \"restored\""), std::string::npos) << rs.out;
  EXPECT_EQ(read_fake_state(c.state), c.original);
  EXPECT_EQ(c.journals(), 0U);
  check = c.run({"restore", "--check"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.err.find("matches its state before jouleprof"), std::string::npos) << check.err;
}

TEST(RestoreCli, AtTheNextStartOfJouleprof) {
  Cli c;
  c.run(fake_sweep("2"), [&](pid_t pid) {
    ASSERT_TRUE(wait_changed(c));
    kill(pid, SIGKILL);
  });
  ASSERT_EQ(c.journals(), 1U);
  auto r = c.run({"runs", "list"});  // any command
  EXPECT_NE(r.err.find("left by a jouleprof that was killed"), std::string::npos) << r.err;
  EXPECT_EQ(read_fake_state(c.state), c.original);
  EXPECT_EQ(c.journals(), 0U);
}

TEST(RestoreCli, AJournalFromAnotherHostIsRefusedWithAClearMessage) {
  Cli c;
  jouleprof::control::Journal j = jouleprof::control::journal_for_this_process();
  j.host = "gpu-node-03";
  j.backend = "nvml";
  j.library = JOULEPROF_FAKE_NVML;
  j.uuid = "GPU-fa4e0000-0000-4000-8000-000000000000";
  ASSERT_TRUE(jouleprof::control::write_journal(c.journal, j));
  auto r = c.run({"restore"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("jouleprof: error: journal"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("written on host 'gpu-node-03'"), std::string::npos) << r.err;
  EXPECT_TRUE(read_lines(c.log).empty());
}

TEST(SweepCli, ObserveOnlyRunsTheScheduleAndChangesNothing) {
  Cli c(1, "at 0 constant 400\n");  // the fake GPU busy at 400 W throughout: 1980 MHz
  auto r = c.run({"sweep", "--device", "nvml", "--observe-only", "--clocks", "990,1410", "--runs", "1", "--warmup", "0",
                  "--idle", "0", "--no-cpu", "-q", "--", "sleep", "0.6"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(read_lines(c.log).empty());
  EXPECT_EQ(c.journals(), 0U);
  auto store = jouleprof::Store::open(c.db, jouleprof::Store::Mode::read);
  ASSERT_TRUE(store);
  jouleprof::RunFilter f;
  f.tags.push_back({"control", "observe-only"});
  auto runs = store->list(f);
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->size(), 2U);
  ASSERT_EQ(runs->front().tags.count("observed_clock_mhz"), 1U);
  EXPECT_EQ(runs->front().tags.at("observed_clock_mhz"), "1980");
}

TEST(SweepCli, DryRunPrintsThePlanAndTheSlurmScript) {
  Cli c;
  auto r = c.run({"sweep", "--device", "sim", "--clocks", "1980,990", "--param", "batch=1,8", "--dry-run", "--", "echo", "{batch}"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("4 units of work"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("clock=990 mem=- pl=- batch=8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("echo 8"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(c.db));
  auto s = c.run({"sweep", "--device", "sim", "--clocks", "1980,990", "--param", "batch=1,8", "--slurm", "--dry-run",
                  "--partition", "gpu", "--time", "00:10:00", "--array-max", "2", "--slurm-dir", "out", "--", "echo", "{batch}"});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("#SBATCH --array=0-3%2"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("#SBATCH --partition=gpu"), std::string::npos);
  EXPECT_NE(s.out.find("#SBATCH --time=00:10:00"), std::string::npos);
  EXPECT_NE(s.out.find("#SBATCH --gpus-per-task=1"), std::string::npos);
  EXPECT_NE(s.out.find("--shard \"${SLURM_ARRAY_TASK_ID}/4\""), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("/out'/task-\"${SLURM_ARRAY_TASK_ID}\".db"), std::string::npos) << s.out;
  EXPECT_FALSE(fs::exists(c.dir + "/out"));  // dry run: nothing written
}

TEST(SweepCli, BadInputIsOneLineAndExitTwo) {
  Cli c;
  auto r = c.run({"sweep", "--device", "nvml", "--clocks", "1000", "--", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("jouleprof: error: clock 1000 MHz is not supported by GPU 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nearest: 990 or 1005 MHz"), std::string::npos) << r.err;
  r = c.run({"sweep", "--device", "nvml", "--power-limits", "150", "--", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("power limit 150 W is outside GPU 0"), std::string::npos) << r.err;
  r = c.run({"sweep", "--device", "sim", "--", "echo", "{batch}"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no --param batch"), std::string::npos) << r.err;
  EXPECT_TRUE(read_lines(c.log).empty());
  EXPECT_EQ(read_fake_state(c.state), c.original);
}

TEST(SweepCli, AFailingPointIsRecordedAndTheSweepGoesOn) {
  Cli c;
  auto r = c.run({"sweep", "--device", "nvml", "--clocks", "1410", "--param", "code=0,3", "--order", "sequential",
                  "--runs", "1", "--warmup", "0", "--idle", "0", "--no-cpu", "--", "sh", "-c", "exit {code}"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("1 measured, 0 already stored, 1 failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("failed: clock=1410 mem=- pl=- code=3"), std::string::npos) << r.err;
  EXPECT_EQ(read_fake_state(c.state), c.original);
  // Run again: the complete point is kept, the failed one is measured again.
  r = c.run({"sweep", "--device", "nvml", "--clocks", "1410", "--param", "code=0,3", "--order", "sequential",
             "--runs", "1", "--warmup", "0", "--idle", "0", "--no-cpu", "--", "sh", "-c", "exit {code}"});
  EXPECT_NE(r.err.find("0 measured, 1 already stored, 1 failed"), std::string::npos) << r.err;
}

TEST(SweepCli, TwoGpusSplitThePointsInParallelAndReport) {
  Cli c(2);
  auto r = c.run({"sweep", "--device", "sim", "--sim-scenario", c.scenario, "--gpus", "all", "--clocks", "1980,990",
                  "--power-limits", "700,300", "--runs", "2", "--warmup", "0", "--idle", "0", "--no-cpu", "--csv",
                  c.dir + "/sweep.csv"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("worker pid"), std::string::npos) << r.err;
  const auto runs = stored_runs(c.db);
  ASSERT_EQ(runs.size(), 4U);
  std::set<std::string> gpus;
  for (const auto& m : runs) {
    ASSERT_EQ(m.gpus.size(), 1U);
    gpus.insert(m.gpus.front().uuid);
  }
  EXPECT_EQ(gpus.size(), 2U);  // both GPUs worked
  EXPECT_NE(r.out.find("[simulated]"), std::string::npos) << r.out;
  const std::string csv = jp_test::slurp_file(c.dir + "/sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
}

// The workers of a split sweep read the plan file, not the command line: every option that
// changes what a point records must reach them through it (--metrics, --metrics-source, --tag,
// --sim-power, --no-cpu), and their runs record the user's command line, not theirs.
TEST(SweepCli, TwoGpuWorkersRecordWhatTheSweepAsksFor) {
  Cli c(2);
  auto r = c.run({"sweep", "--device", "sim", "--sim-scenario", c.scenario, "--gpus", "all", "--clocks", "1980", "--param",
                  "k=a,b", "--runs", "1", "--warmup", "0", "--idle", "0", "--no-cpu", "--metrics", "--metrics-source",
                  "utilization", "--tag", "team=infer", "--sim-power", "200", "--", "sleep", "0.4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(r.err.find("worker pid"), std::string::npos) << r.err;
  const auto runs = stored_runs(c.db);
  ASSERT_EQ(runs.size(), 2U);
  std::set<std::string> gpus;
  for (const auto& m : runs) {
    ASSERT_EQ(m.gpus.size(), 1U);
    gpus.insert(m.gpus.front().uuid);
    ASSERT_EQ(m.sections.count("activity"), 1U) << "run " << m.run_uuid << ": no activity metrics";
    // Asked for by name: no note on why GPM was not used (what `auto` writes on the simulated GPU).
    const auto act = nlohmann::json::parse(m.sections.at("activity"));
    EXPECT_EQ(act["gpus"][0]["source"], "sim-utilization") << act;
    EXPECT_EQ(act["gpus"][0]["note"], "") << act;
    EXPECT_EQ(m.tags.count("team") ? m.tags.at("team") : "", "infer");
    EXPECT_EQ(m.cpu_unavailable_reason, "CPU energy not requested");
    // 200 W asked of the simulated GPU at full clock (the default is 450 W).
    for (const auto& w : m.windows) {
      if (w.kind == "run") {
        EXPECT_LT(w.gpus.at(0).mean_power_w, 300) << "run " << m.run_uuid;
      }
    }
    const std::string cmdline = [&] {
      std::string t;
      for (const auto& a : m.invocation) t += a + " ";
      return t;
    }();
    EXPECT_NE(cmdline.find("--metrics"), std::string::npos) << cmdline;
    EXPECT_EQ(cmdline.find("--plan"), std::string::npos) << cmdline;
  }
  EXPECT_EQ(gpus.size(), 2U);  // both GPUs worked
  // The same sweep again with -q: every point is stored already, and the workers are quiet too.
  r = c.run({"sweep", "--device", "sim", "--sim-scenario", c.scenario, "--gpus", "all", "--clocks", "1980", "--param",
             "k=a,b", "--runs", "1", "--warmup", "0", "--idle", "0", "--no-cpu", "--metrics", "--metrics-source",
             "utilization", "--tag", "team=infer", "--sim-power", "200", "-q", "--", "sleep", "0.4"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(stored_runs(c.db).size(), 2U);
}

TEST(SweepCli, DiscoverReportsWhatTheDriverSupports) {
  Cli c;
  auto r = c.run({"sweep", "--device", "nvml", "--discover", "--json", c.dir + "/d.json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("graphics clocks: 110 (345–1980 MHz)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("power limit: 650 W now, 200–700 W"), std::string::npos) << r.out;
  const std::string j = jp_test::slurp_file(c.dir + "/d.json");
  EXPECT_NE(j.find("\"may_change_settings\": true"), std::string::npos) << j;
  EXPECT_TRUE(read_lines(c.log).empty());  // nothing set
}

// Issue 35: a SLURM login node has no GPU and no NVML. The plan is made without them and the
// tasks check the settings on the node; without --slurm the error says how to go on (--device sim).
TEST(SweepCli, SlurmFromALoginNodeWithoutNvml) {
  Cli c;
  auto env = c.env();
  for (auto& e : env) {
    if (e.rfind("JOULEPROF_NVML_LIB=", 0) == 0) e = "JOULEPROF_NVML_LIB=" + c.dir + "/no-such-libnvidia-ml.so.1";
  }
  for (const bool observe : {false, true}) {
    std::vector<std::string> args = {"sweep", "--slurm", "--dry-run", "--partition", "gpu", "--time", "02:00:00",
                                     "--clocks", "1980,1410"};
    if (observe) args.push_back("--observe-only");
    for (const char* a : {"--", "python", "infer.py"}) args.push_back(a);
    auto r = jp_test::run_program(JOULEPROF_CLI, args, env, c.dir, c.dir + "/out.txt", c.dir + "/err.txt", [](pid_t) {});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("#SBATCH --array=0-1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("#SBATCH --time=02:00:00"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("each task checks the clocks and power limits"), std::string::npos) << r.err;
  }
  // all / step:N need the GPU's clock list: a clear error, not "cannot load NVML".
  auto r = jp_test::run_program(JOULEPROF_CLI, {"sweep", "--slurm", "--dry-run", "--clocks", "all", "--", "true"}, env, c.dir,
                                c.dir + "/out.txt", c.dir + "/err.txt", [](pid_t) {});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("give the clocks as a list"), std::string::npos) << r.err;
  // Not SLURM: the GPU is needed here, and the error says how to do without one.
  r = jp_test::run_program(JOULEPROF_CLI, {"sweep", "--dry-run", "--clocks", "1980", "--", "true"}, env, c.dir,
                           c.dir + "/out.txt", c.dir + "/err.txt", [](pid_t) {});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--device sim"), std::string::npos) << r.err;
}

// Issue 35: everything written into the batch script is checked; a sweep id names a folder.
TEST(SweepCli, NothingCanBeInjectedIntoTheBatchScript) {
  Cli c;
  const std::vector<std::vector<std::string>> bad = {
      {"--time", "01:00:00\ntouch X"},
      {"--account", "a\n#SBATCH --uid=0"},
      {"--partition", "gpu\necho hi"},
      {"--sweep-id", "../../../escape"},
      {"--sweep-id", "a\nb"},
      {"--slurm-dir", "out\n#SBATCH --uid=0"},
  };
  for (const auto& extra : bad) {
    std::vector<std::string> args = {"sweep", "--device", "sim", "--clocks", "1980", "--slurm", "--dry-run"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    args.push_back("true");
    auto r = c.run(args);
    EXPECT_EQ(r.exit_code, 2) << extra[0] << ": " << r.out << r.err;
    EXPECT_EQ(r.out.find("#SBATCH"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("jouleprof: error: " + extra[0]), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(fs::exists(c.dir + "/X"));
}

// Issue 35: sweep --help's example, pasted with --param after `--`, says what happened.
TEST(SweepCli, AParamAfterTheDashesSaysItWentToTheCommand) {
  Cli c;
  auto r = c.run({"sweep", "--device", "sim", "--dry-run", "--clocks", "1980,1410", "--", "python", "infer.py", "--batch",
                  "{batch}", "--param", "batch=1,8"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("comes after `--`, so it was passed to the command"), std::string::npos) << r.err;
  auto help = c.run({"sweep", "--help"});
  // The help's example has its --param before `--`, and runs as pasted.
  EXPECT_NE(help.out.find("--param batch=1,8 -- python infer.py --batch {batch}"), std::string::npos) << help.out;
  r = c.run({"sweep", "--device", "sim", "--dry-run", "--clocks", "1980,1410,990", "--power-limits", "700,400", "--param",
             "batch=1,8", "--", "python", "infer.py", "--batch", "{batch}"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("python infer.py --batch 8"), std::string::npos) << r.out;
}

// Issue 35: sweeps are found by `--list`, `last`, a unique prefix; an unknown id lists the known ones.
TEST(SweepCli, SweepIdsAreListedAndFoundByPrefixOrLast) {
  Cli c;
  for (const char* id : {"alpha-1", "beta-2"}) {
    auto r = c.run({"sweep", "--device", "sim", "--sim-scenario", c.scenario, "--clocks", "1980", "--runs", "1", "--warmup",
                    "0", "--idle", "0", "--no-cpu", "-q", "--sweep-id", id});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto r = c.run({"sweep", "--list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto a = r.out.find("alpha-1"), b = r.out.find("beta-2");
  ASSERT_NE(a, std::string::npos) << r.out;
  ASSERT_NE(b, std::string::npos) << r.out;
  EXPECT_LT(b, a) << "newest first: " << r.out;
  r = c.run({"sweep", "--report", "last", "--json", "-"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("beta-2"), std::string::npos) << r.out;
  r = c.run({"sweep", "--report", "alp", "--json", "-"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("alpha-1"), std::string::npos) << r.out;
  r = c.run({"sweep", "--report", "2044"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("known sweep ids, newest first: beta-2, alpha-1"), std::string::npos) << r.err;
  r = c.run({"sweep", "--report", ""});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--report needs a sweep id"), std::string::npos) << r.err;
  EXPECT_EQ(stored_runs(c.db).size(), 2U);  // nothing was measured
  // `runs list` shows the sweep id in its own column.
  r = c.run({"runs", "list"});
  EXPECT_NE(r.out.find("sweep "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("sweep=alpha-1"), std::string::npos) << r.out;
}

// Issue 35: under -q a failed point is an error, and an error has its line.
TEST(SweepCli, QuietFailedPointPrintsOneErrorLine) {
  Cli c;
  auto r = c.run({"sweep", "--device", "nvml", "--clocks", "1410", "--param", "code=3", "--runs", "1", "--warmup", "0",
                  "--idle", "0", "--no-cpu", "-q", "--", "sh", "-c", "exit {code}"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("jouleprof: error: sweep "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("point clock=1410 mem=- pl=- code=3 failed"), std::string::npos) << r.err;
  EXPECT_EQ(read_fake_state(c.state), c.original);
}

// Issue 35: a plan file is read with a size limit, and only a regular file.
TEST(SweepCli, APlanFileIsReadWithALimit) {
  Cli c;
  auto r = c.run({"sweep", "--plan", "/dev/zero"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot read the sweep plan"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

// Issue 35: a bad file beside a good journal. `restore` restores the good one and reports the
// bad one; the restore at the start of any command restores it too and counts the bad file in one
// line pointing at `restore`; a sweep then starts.
TEST(RestoreCli, ABadFileBesideAGoodJournalStopsNothing) {
  Cli c;
  for (const char* cmd : {"restore", "runs"}) {
    c.run(fake_sweep("2"), [&](pid_t pid) {
      ASSERT_TRUE(wait_changed(c));
      kill(pid, SIGKILL);
    });
    ASSERT_EQ(c.journals(), 1U);
    std::ofstream(c.journal + "/garbage.json") << "}{";
    auto r = std::string(cmd) == "restore" ? c.run({"restore"}) : c.run({"runs", "list"});
    EXPECT_EQ(read_fake_state(c.state), c.original) << cmd << ": " << r.err;
    EXPECT_EQ(c.journals(), 0U);
    if (std::string(cmd) == "restore") {
      EXPECT_NE(r.err.find("garbage.json: not a jouleprof restore journal"), std::string::npos) << r.err;
      EXPECT_EQ(r.exit_code, 1) << r.err;
    } else {
      EXPECT_NE(r.err.find("jouleprof: 1 unreadable journal in " + c.journal + "; run `jouleprof restore` for details\n"),
                std::string::npos)
          << r.err;
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
  }
  auto r = c.run({"sweep", "--device", "nvml", "--clocks", "1410", "--runs", "1", "--warmup", "0", "--idle", "0", "--no-cpu",
                  "--", "true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_fake_state(c.state), c.original);
}
