// Chaos test of guaranteed restore: a sweep against the fake NVML (2 GPUs, clocks and power
// limits changed at every point) is killed at a random step, N times (SIGKILL mostly, also
// SIGTERM, SIGINT, SIGHUP); after each kill the recovery `jouleprof restore` runs
// (restore_from_journals) and both GPUs must be back to their original — not default — state
// with no journal left. Every other recovery finds a bad file beside the journals (garbage,
// empty, an array, journal_version 2, a string pid, no uuid, a NUL byte, a library to load):
// it is reported and every good journal is restored all the same. The kill moment is a
// handshake, not a timer: the child reports each step (a point starting, a point stored) on a
// pipe, and the parent kills it after a random number of steps.
// Usage: jouleprof_control_chaos FAKE_LIB [ITERATIONS] [SEED]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "fake_state.hpp"
#include "jouleprof/control/session.hpp"
#include "jouleprof/control/sweep.hpp"
#include "jouleprof/core/uuid.hpp"

namespace fs = std::filesystem;
using namespace jp_control_test;
namespace ctl = jouleprof::control;

namespace {

// The child: one whole sweep (8 points on 2 GPUs), each point "stored" at once; one byte on
// `steps` when a point starts and one when it is stored.
[[noreturn]] void child(const std::string& lib, const std::string& dir, int iteration, int steps) {
  ctl::SweepRunOptions o;
  o.spec.device = "nvml";
  o.spec.nvml_library = lib;
  o.spec.clocks = "1980,1410,990,510";
  o.spec.power_limits_w = {300, 700};
  o.spec.runs = 1;
  o.spec.warmup = 0;
  o.spec.idle_s = 0;
  o.spec.multi_gpu = "together";
  o.spec.sweep_id = "chaos-" + std::to_string(iteration);
  o.db = dir + "/runs.db";
  o.journal_dir = dir + "/journal";
  auto step = [steps] { (void)!::write(steps, "s", 1); };
  o.run_point = [&step](const jouleprof::MeasureOptions& mo) -> jouleprof::Result<jouleprof::Measurement> {
    step();
    jouleprof::Measurement m;
    m.tags = mo.tags;
    m.host = "chaos";
    m.run_uuid = jouleprof::random_uuid();
    return m;
  };
  o.progress = [&step](const ctl::SweepProgress&) { step(); };
  auto r = ctl::run_sweep(o);
  _exit(r && r->restored ? 0 : 3);
}

// Files that are no readable journal, as mixed jouleprof versions or damage leave them. `good`
// is a journal's text (a bad file made from it names its GPU, or loads a library).
std::vector<std::pair<std::string, std::string>> bad_files(const std::string& good, const std::string& evil) {
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    if (at != std::string::npos) t.replace(at, from.size(), to);
    return t;
  };
  const auto pid_at = good.find("\"pid\": ");
  const auto pid_end = good.find(',', pid_at);
  std::string string_pid = good;
  if (pid_at != std::string::npos) string_pid.replace(pid_at, pid_end - pid_at, "\"pid\": \"123\"");
  const std::string no_uuid = edit("\"uuid\": ", "\"gpu\": ");
  return {{"garbage", "}{ not json"},
          {"empty", ""},
          {"array", "[1, 2]"},
          {"version2", edit("\"journal_version\": 1", "\"journal_version\": 2")},
          {"stringpid", string_pid},
          {"nouuid", no_uuid},
          {"nul", std::string("{\"journal_version\": 1,") + '\0' + "}"},
          {"library", edit("\"backend\": \"nvml\"", "\"backend\": \"" + evil + "\"")}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FAKE_LIB [ITERATIONS] [SEED]\n", argv[0]);
    return 2;
  }
  const std::string lib = argv[1];
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 1000;
  const unsigned seed = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 17;
  // tmpfs when there is one: the test is about kill points, not disk speed.
  const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  const std::string dir = (base / ("jouleprof-chaos-" + std::to_string(getpid()))).string();
  fs::create_directories(dir);
  const std::string state = dir + "/fake-state.txt", log = dir + "/set-log.txt", scenario = dir + "/scenario.txt";
  std::ofstream(scenario) << "gpus 2\n";
  setenv("JOULEPROF_FAKE_NVML_SCENARIO", scenario.c_str(), 1);
  setenv("JOULEPROF_FAKE_NVML_STATE", state.c_str(), 1);
  setenv("JOULEPROF_FAKE_NVML_SET_LOG", log.c_str(), 1);
  const auto original = seeded_original(2);
  write_fake_state(state, original);

  std::mt19937 rng(seed);
  int by_signal[65] = {0};
  int recovered_by_journal = 0, self_restored = 0, failures = 0, completed = 0, bad_reported = 0, bad_placed = 0;
  const std::string journal = dir + "/journal";
  for (int i = 0; i < iterations; ++i) {
    const int roll = static_cast<int>(rng() % 10);
    const int sig = roll < 7 ? SIGKILL : roll == 7 ? SIGTERM : roll == 8 ? SIGINT : SIGHUP;
    // 8 points: 16 steps; 0 kills during the start (journals being written), 16 during the final restore.
    const int after_steps = static_cast<int>(rng() % 17);
    int steps[2];
    if (pipe(steps) != 0) return 2;
    const pid_t pid = fork();
    if (pid == 0) {
      close(steps[0]);
      signal(SIGPIPE, SIG_IGN);  // the parent's pipe end may be gone: no death by SIGPIPE
      child(lib, dir, i, steps[1]);
    }
    close(steps[1]);
    char c = 0;
    int seen = 0;
    while (seen < after_steps && ::read(steps[0], &c, 1) == 1) ++seen;
    kill(pid, sig);
    int st = 0;
    waitpid(pid, &st, 0);
    close(steps[0]);  // after the child ended: its steps never meet a closed pipe
    if (WIFEXITED(st)) {
      ++completed;  // finished before the signal, or caught it and restored
    } else {
      ++by_signal[WTERMSIG(st)];
      if (WTERMSIG(st) != sig) std::fprintf(stderr, "iteration %d: the child died of signal %d, not %d\n", i, WTERMSIG(st), sig);
    }
    auto journals = ctl::read_journals(journal);
    const bool left = journals && !journals->empty();
    // Every other recovery: a bad file beside the good journals.
    std::vector<std::string> placed;
    if (left && i % 2 == 0) {
      std::ifstream in(journals->front().path);
      const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const auto bad = bad_files(good, dir + "/libevil.so");
      const auto& [name, text] = bad[static_cast<std::size_t>(i / 2) % bad.size()];
      placed.push_back(journal + "/" + name + ".json");
      std::ofstream(placed.back(), std::ios::binary) << text;
      ++bad_placed;
    }
    if (left) {
      auto out = ctl::restore_from_journals(journal, false, lib);
      bool ok = static_cast<bool>(out);
      int unreadable = 0;
      if (out) {
        for (const auto& o : *out) {
          if (o.kind == ctl::RestoreOutcome::Kind::unreadable) {
            ++unreadable;
          } else {
            ok = ok && o.kind == ctl::RestoreOutcome::Kind::restored;
          }
        }
      }
      if (unreadable != static_cast<int>(placed.size())) {
        ok = false;
        std::fprintf(stderr, "iteration %d: %d bad files reported, %zu placed\n", i, unreadable, placed.size());
      }
      bad_reported += unreadable;
      if (!ok) {
        std::fprintf(stderr, "iteration %d: recovery failed: %s\n", i, out ? (out->empty() ? "?" : out->front().message.c_str()) : out.error().message.c_str());
      }
      ++recovered_by_journal;
    } else {
      ++self_restored;
    }
    for (const auto& p : placed) std::remove(p.c_str());
    const auto now = read_fake_state(state);
    auto after = ctl::read_journals(journal);
    if (now != original || !after || !after->empty()) {
      ++failures;
      std::fprintf(stderr, "iteration %d (signal %d after %d steps): GPUs not back to the original state\n", i, sig,
                   after_steps);
      write_fake_state(state, original);  // go on with a clean slate
      for (const auto& j : after ? *after : std::vector<ctl::Journal>{}) std::remove(j.path.c_str());
    }
  }
  const auto lines = read_lines(log);
  std::printf("chaos: %d sweeps killed at random steps: SIGKILL %d, SIGTERM %d, SIGINT %d, SIGHUP %d "
              "killed; %d exited (finished or restored on the signal)\n",
              iterations, by_signal[SIGKILL], by_signal[SIGTERM], by_signal[SIGINT], by_signal[SIGHUP], completed);
  std::printf("chaos: recovered from the journal %d, nothing left to recover %d; set calls logged %zu; failures %d "
              "(%.1f%% recovered)\n",
              recovered_by_journal, self_restored, lines.size(), failures, 100.0 * (iterations - failures) / iterations);
  std::printf("chaos: %d bad files placed beside good journals, %d reported; every good journal restored: %s\n", bad_placed,
              bad_reported, failures == 0 ? "yes" : "no");
  fs::remove_all(dir);
  return failures == 0 && by_signal[SIGKILL] > 0 && bad_placed > 0 && bad_reported == bad_placed ? 0 : 1;
}
