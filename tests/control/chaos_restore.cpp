// Chaos test of guaranteed restore: a sweep against the fake NVML (2 GPUs, clocks and power
// limits changed at every point) is killed at a random moment, N times (SIGKILL mostly, also
// SIGTERM, SIGINT, SIGHUP); after each kill the recovery `jouleprof restore` runs
// (restore_from_journals) and both GPUs must be back to their original — not default — state
// with no journal left. Usage: jouleprof_control_chaos FAKE_LIB [ITERATIONS] [SEED]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "fake_state.hpp"
#include "jouleprof/control/session.hpp"
#include "jouleprof/control/sweep.hpp"

namespace fs = std::filesystem;
using namespace jp_control_test;
namespace ctl = jouleprof::control;

namespace {

// The child: one whole sweep (8 points on 2 GPUs), each point "measured" in 0-2 ms and stored.
[[noreturn]] void child(const std::string& lib, const std::string& dir, int iteration, unsigned seed) {
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
  std::mt19937 rng(seed);
  o.run_point = [&rng](const jouleprof::MeasureOptions& mo) -> jouleprof::Result<jouleprof::Measurement> {
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
    jouleprof::Measurement m;
    m.tags = mo.tags;
    m.host = "chaos";
    m.origin_realtime_ns = std::chrono::system_clock::now().time_since_epoch().count() + static_cast<int64_t>(rng() % 1000);
    return m;
  };
  auto r = ctl::run_sweep(o);
  _exit(r && r->restored ? 0 : 3);
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
  int recovered_by_journal = 0, self_restored = 0, failures = 0, completed = 0;
  double max_delay_ms = 60;  // adapted so that kills fall across the whole sweep
  for (int i = 0; i < iterations; ++i) {
    const int roll = static_cast<int>(rng() % 10);
    const int sig = roll < 7 ? SIGKILL : roll == 7 ? SIGTERM : roll == 8 ? SIGINT : SIGHUP;
    const auto delay = std::chrono::microseconds(static_cast<long>(std::uniform_real_distribution<double>(0, max_delay_ms)(rng) * 1000));
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) child(lib, dir, i, rng());
    std::this_thread::sleep_for(delay);
    kill(pid, sig);
    int st = 0;
    waitpid(pid, &st, 0);
    const double took_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (WIFEXITED(st)) {
      ++completed;  // finished before the signal, or caught it and restored
      // Keep most kills inside the sweep: a child that ran to its end tells how long one takes.
      if (WEXITSTATUS(st) == 0 && took_ms > delay.count() / 1000.0 + 5) max_delay_ms = std::max(5.0, 0.9 * took_ms);
    } else {
      ++by_signal[WTERMSIG(st)];
    }
    auto journals = ctl::read_journals(dir + "/journal");
    const bool left = journals && !journals->empty();
    if (left) {
      auto out = ctl::restore_from_journals(dir + "/journal");
      bool ok = static_cast<bool>(out);
      if (out) {
        for (const auto& o : *out) ok = ok && o.kind == ctl::RestoreOutcome::Kind::restored;
      }
      if (!ok) {
        std::fprintf(stderr, "iteration %d: recovery failed: %s\n", i, out ? (out->empty() ? "?" : out->front().message.c_str()) : out.error().message.c_str());
      }
      ++recovered_by_journal;
    } else {
      ++self_restored;
    }
    const auto now = read_fake_state(state);
    auto after = ctl::read_journals(dir + "/journal");
    if (now != original || !after || !after->empty()) {
      ++failures;
      std::fprintf(stderr, "iteration %d (signal %d after %.1f ms): GPUs not back to the original state\n", i, sig,
                   delay.count() / 1000.0);
      write_fake_state(state, original);  // go on with a clean slate
      for (const auto& j : after ? *after : std::vector<ctl::Journal>{}) std::remove(j.path.c_str());
    }
  }
  const auto lines = read_lines(log);
  std::printf("chaos: %d sweeps killed at random moments (max delay %.0f ms): SIGKILL %d, SIGTERM %d, SIGINT %d, SIGHUP %d "
              "killed; %d exited (finished or restored on the signal)\n",
              iterations, max_delay_ms, by_signal[SIGKILL], by_signal[SIGTERM], by_signal[SIGINT], by_signal[SIGHUP], completed);
  std::printf("chaos: recovered from the journal %d, nothing left to recover %d; set calls logged %zu; failures %d "
              "(%.1f%% recovered)\n",
              recovered_by_journal, self_restored, lines.size(), failures, 100.0 * (iterations - failures) / iterations);
  fs::remove_all(dir);
  return failures == 0 && by_signal[SIGKILL] > 0 ? 0 : 1;
}
