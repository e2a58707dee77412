#include "jouleprof/measure/measure.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>

#include "jouleprof/core/integrate.hpp"
#include "jouleprof/core/progress.hpp"
#include "jouleprof/core/text.hpp"
#include "jouleprof/measure/markers.hpp"
#include "jouleprof/measure/output.hpp"
#include "jouleprof/measure/repeat_label.hpp"
#include "jouleprof/measure/process.hpp"
#include "jouleprof/sensors/sim_model.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/core/parse.hpp"

namespace jouleprof {
namespace {

constexpr std::size_t kMaxMarkerWarnings = 20;

// Sleeps in small steps; returns false when interrupted.
bool sleep_for(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (interrupting_signal() != 0) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return interrupting_signal() == 0;
}

std::string temp_root() {
  const char* t = std::getenv("TMPDIR");
  return t != nullptr && *t == '/' ? std::string(t) : std::string("/tmp");
}

// A jouleprof killed with SIGKILL cannot remove its marker folder; the next one does: folders
// named jouleprof-PID-XXXXXX whose PID is gone, owned by us, holding only the FIFO.
void remove_stale_channels(const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("jouleprof-", 0) != 0) continue;
    const std::size_t dash = name.find('-', 10);
    if (dash == std::string::npos || dash == 10 || name.size() != dash + 7) continue;
    const std::string pid_text = name.substr(10, dash - 10);
    if (pid_text.size() > 9 || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
    struct stat st {};
    if (lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) continue;
    const std::string fifo = (it->path() / "markers").string();
    if (lstat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) ::unlink(fifo.c_str());
    ::rmdir(it->path().c_str());  // fails, harmlessly, when anything else is inside
  }
}

// The FIFO the workload writes markers to, and the thread that applies them to the Monitor.
class MarkerChannel {
 public:
  MarkerChannel(Monitor& mon, std::vector<std::string>& warnings) : mon_(mon), warnings_(warnings) {}
  ~MarkerChannel() { close(); }

  Result<void> open() {
    const std::string tmp = temp_root();
    remove_stale_channels(tmp);
    std::string tmpl = tmp + "/jouleprof-" + std::to_string(getpid()) + "-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      return make_error(Errc::io, "cannot create a temporary directory in " + tmp + ": " + std::strerror(errno) +
                                      " (set TMPDIR to a writable folder)");
    }
    dir_ = tmpl;
    path_ = dir_ + "/markers";
    if (mkfifo(path_.c_str(), 0600) != 0) return make_error(Errc::io, "cannot create marker FIFO " + path_);
    // O_RDWR keeps a writer open, so the FIFO never reports EOF between workload writes.
    fd_ = ::open(path_.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) return make_error(Errc::io, "cannot open marker FIFO " + path_);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, 50) > 0) drain();
      }
    });
    return {};
  }
  const std::string& path() const { return path_; }
  void set_run(int run, Monitor::WindowId window) {
    std::lock_guard<std::mutex> lock(mu_);
    run_ = run;
    run_window_ = window;
  }

  /// Reads and applies every complete line available now.
  void drain() {
    std::lock_guard<std::mutex> lock(mu_);
    char buf[4096];
    while (true) {
      const ssize_t n = ::read(fd_, buf, sizeof(buf));
      if (n <= 0) break;
      const double now = mon_.timebase().now_s();
      pending_.append(buf, static_cast<std::size_t>(n));
      std::size_t nl;
      while ((nl = pending_.find('\n')) != std::string::npos) {
        apply(pending_.substr(0, nl), now);
        pending_.erase(0, nl + 1);
      }
      if (pending_.size() > 65536) pending_.clear();  // a line that never ends
    }
  }

  void close() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!path_.empty()) ::unlink(path_.c_str());
    if (!dir_.empty()) ::rmdir(dir_.c_str());
    path_.clear();
    dir_.clear();
  }

 private:
  void warn(const std::string& w) {
    ++bad_lines_;
    if (bad_lines_ <= kMaxMarkerWarnings) warnings_.push_back(w);
  }
  void apply(const std::string& line, double now) {
    ++line_no_;
    auto parsed = parse_marker_line(line);
    if (!parsed) {
      warn("marker line " + std::to_string(line_no_) + ": " + parsed.error().message);
      return;
    }
    if (!*parsed) return;
    const Marker& m = **parsed;
    const double t = m.unix_s ? mon_.timebase().from_realtime_ns(static_cast<int64_t>(std::llround(*m.unix_s * 1e9)))
                              : now;
    // An explicit time outside the measurement (before its start, or later than now) cannot be
    // a phase edge of this run: a window there would be a wrong figure, not a missing one.
    if (m.unix_s && (t < 0 || t > now + 1.0)) {
      warn("marker line " + std::to_string(line_no_) + ": t=" + fmt::format("{:.3f}", *m.unix_s) + " is " +
           (t < 0 ? fmt::format("{:.3g} s before the measurement began", -t) : fmt::format("{:.3g} s in the future", t - now)) +
           "; line ignored");
      return;
    }
    switch (m.kind) {
      case Marker::Kind::begin:
        begun_at_[mon_.begin_at(m.name, t, "phase", run_)] = t;
        break;
      case Marker::Kind::end: {
        auto id = mon_.find(m.name);
        if (!id) {
          warn("marker line " + std::to_string(line_no_) + ": 'end " + m.name + "' without a matching begin");
        } else {
          if (auto b = begun_at_.find(*id); b != begun_at_.end() && t < b->second) {
            warn("marker line " + std::to_string(line_no_) + ": 'end " + m.name + "' is " +
                 fmt::format("{:.3g}", b->second - t) + " s before its begin; the window is incomplete");
          }
          mon_.end_at(*id, t);
        }
        break;
      }
      case Marker::Kind::count: {
        std::optional<Monitor::WindowId> id = run_window_;
        if (!m.name.empty()) id = mon_.find(m.name, /*include_closed=*/true);
        if (!id) {
          warn("marker line " + std::to_string(line_no_) + ": count for unknown window '" + m.name + "'");
        } else {
          mon_.count(*id, m.key, m.value);
        }
        break;
      }
    }
  }

  Monitor& mon_;
  std::vector<std::string>& warnings_;
  std::mutex mu_;
  std::string dir_, path_, pending_;
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  int run_ = -1;
  std::optional<Monitor::WindowId> run_window_;
  std::unordered_map<Monitor::WindowId, double> begun_at_;
  std::size_t line_no_ = 0, bad_lines_ = 0;
};

// The built-in workload on the simulated GPU: an LLM-like prefill burst (compute-bound) then
// decode (memory-bound). Its power and durations follow the GPU's clock and power-limit settings
// (sim_operating_point); at full clock: 690 W for 0.30 s, then 380 W for 2.0 s.
bool simulated_builtin_run(Monitor& mon, const GpuSet& gpus, int run) {
  struct Phase {
    const char* name;
    double demand_w, seconds, compute_share, tokens;
  };
  constexpr Phase kPhases[] = {{"prefill", 690, 0.30, 0.9, 512}, {"decode", 380, 2.0, 0.2, 128}};
  bool ok = true;
  for (const Phase& ph : kPhases) {
    if (!ok) break;
    const auto id = mon.begin_at(ph.name, std::nullopt, "phase", run);
    double seconds = gpus.sim_models.empty() ? ph.seconds : 0.0;
    const double t = mon.timebase().now_s();
    for (const auto& model : gpus.sim_models) {
      const SimOperatingPoint op = model->start_load(t, ph.demand_w, ph.compute_share);
      // The slowest GPU sets the pace (a multi-GPU workload waits for all).
      seconds = std::max(seconds, ph.seconds * op.time_scale * model->config().workload_time_scale);
    }
    ok = sleep_for(seconds);
    mon.end_at(id, std::nullopt, ok);
    mon.count(id, "tokens", ph.tokens);
  }
  const double t = mon.timebase().now_s();
  for (const auto& model : gpus.sim_models) model->stop_load(t);
  return ok;
}

void wait_for_stable_temperature(Monitor& mon, const MeasureOptions& opt, std::vector<std::string>& warnings,
                                 Progress& progress) {
  const double start = mon.timebase().now_s();
  while (mon.timebase().now_s() - start < opt.cooldown_max_s) {
    if (!sleep_for(1.0)) return;
    const double now = mon.timebase().now_s();
    // The readout: hottest GPU now and the widest range over the last 5 s.
    double hottest = NAN, widest = 0;
    for (std::size_t g = 0; g < mon.sampler().gpu_count(); ++g) {
      const auto s = mon.sampler().slice(g, Metric::temperature_c, now - 5.0, now);
      if (s.empty()) continue;
      double lo = s.front().value, hi = lo;
      for (const auto& x : s) {
        lo = std::min(lo, x.value);
        hi = std::max(hi, x.value);
      }
      hottest = std::isnan(hottest) ? s.back().value : std::max(hottest, s.back().value);
      widest = std::max(widest, hi - lo);
    }
    if (!std::isnan(hottest)) {
      progress.note(fmt::format("cool-down {:.0f}/{:.0f} s: GPU {:.0f} °C, varies {:.1f} °C over 5 s (stable: ≤ {:g} °C)",
                                now - start, opt.cooldown_max_s, hottest, widest, opt.cooldown_tolerance_c));
    }
    if (now - start < 5.0) continue;
    bool stable = true;
    for (std::size_t g = 0; g < mon.sampler().gpu_count(); ++g) {
      const auto s = mon.sampler().slice(g, Metric::temperature_c, now - 5.0, now);
      if (s.size() < 2) continue;  // no temperature: nothing to wait for
      double lo = s.front().value, hi = lo;
      for (const auto& x : s) {
        lo = std::min(lo, x.value);
        hi = std::max(hi, x.value);
      }
      stable &= hi - lo <= opt.cooldown_tolerance_c;
    }
    if (stable) return;
  }
  warnings.push_back("cool-down: temperature not stable after " + std::to_string(opt.cooldown_max_s) + " s");
}

// The energy counter's update period, measured (docs/energy-methods.md "The counter's bound"):
// the first GPU's counter polled every millisecond for `seconds`, the median spacing of its
// changes. nullopt when it changed fewer than three times (an idle GPU drawing ~0 W, a counter
// that does not move) or the figure is outside 1 ms - 2 s.
std::optional<double> measure_counter_update_period(Monitor& mon, double seconds) {
  if (mon.gpus().gpus.empty()) return std::nullopt;
  GpuSensor& gpu = *mon.gpus().gpus.front();
  std::vector<double> changes;
  std::optional<uint64_t> last;
  const double start = mon.timebase().now_s();
  while (mon.timebase().now_s() - start < seconds && interrupting_signal() == 0) {
    auto mj = gpu.read_energy_mj();
    if (!mj) return std::nullopt;
    if (last && *mj != *last) changes.push_back(mon.timebase().now_s());
    last = *mj;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (changes.size() < 3) return std::nullopt;
  std::vector<double> gaps;
  for (std::size_t i = 1; i < changes.size(); ++i) gaps.push_back(changes[i] - changes[i - 1]);
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  const double period = gaps[gaps.size() / 2];
  if (!(period >= 0.001 && period <= 2.0)) return std::nullopt;
  return period;
}

}  // namespace

void warn_short_windows(Measurement& m, const EnergyOptions& energy) {
  for (const WindowResult& w : m.windows) {
    if (w.kind != "phase" && w.kind != "window") continue;
    for (const GpuEnergy& g : w.gpus) {
      if (w.duration_s() < energy.counter_update_s) {
        m.warnings.push_back("window '" + w.name + "' (" + std::to_string(w.duration_s() * 1e3).substr(0, 6) +
                             " ms) is shorter than the energy counter's ~100 ms update: energy from the " +
                             g.method + fmt::format(" ± {:.3g} J", g.uncertainty_j) +
                             (g.note.empty() ? "" : " (" + g.note + ")"));
        break;
      }
    }
  }
}

Result<std::vector<std::optional<double>>> idle_power_from_result(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  if (json_too_deep(*text)) return make_error(Errc::parse, path + ": not a JSON result (nested too deep)");
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error(Errc::parse, path + ": not a JSON result");
  if (!j.contains("schema_version") || j["schema_version"] != kResultSchemaVersion) {
    return make_error(Errc::parse, path + ": not a jouleprof result of schema version " +
                                       std::to_string(kResultSchemaVersion));
  }
  std::vector<std::optional<double>> out;
  for (const auto& g : j.value("gpus", nlohmann::json::array())) {
    if (g.contains("idle_power_w") && g["idle_power_w"].is_number()) {
      out.emplace_back(g["idle_power_w"].get<double>());
    } else {
      out.emplace_back(std::nullopt);
    }
  }
  if (out.empty()) return make_error(Errc::parse, path + ": no GPU idle power in this result");
  return out;
}

namespace {

void say(const MeasureOptions& opt, const std::string& s) {
  if (opt.progress) opt.progress(s);
}

// The library checks what it computes with (NaN compares false, so each test is "not in range").
Result<void> check_measure_options(const MeasureOptions& opt) {
  if (opt.runs < 1) return make_error(Errc::invalid_argument, "--runs must be at least 1");
  if (opt.warmup < 0) return make_error(Errc::invalid_argument, "--warmup must be >= 0");
  if (!(opt.idle_s >= 0 && opt.idle_s <= 86400)) return make_error(Errc::invalid_argument, "--idle must be 0 to 86400 seconds");
  if (!(opt.sim_active_w >= 0 && opt.sim_active_w <= 10000)) {
    return make_error(Errc::invalid_argument, "--sim-power must be 0 to 10000 W");
  }
  if (opt.cooldown && !(opt.cooldown_max_s >= 0 && opt.cooldown_max_s <= 86400 && opt.cooldown_tolerance_c > 0 &&
                        opt.cooldown_tolerance_c <= 100)) {
    return make_error(Errc::invalid_argument, "--cooldown-max must be 0 to 86400 s and --cooldown-tolerance above 0 and at most 100 °C");
  }
  if (!(opt.ci_warn_relative >= 0 && opt.ci_warn_relative <= 100)) {
    return make_error(Errc::invalid_argument, "--ci-warn must be 0 to 10000 %");
  }
  return {};
}

// Idle baseline: measured now, or taken from an earlier result. Gives the energy counter's
// update period when it was measured during the baseline.
Result<std::optional<double>> take_idle_baseline(Monitor& mon, const MeasureOptions& opt,
                                                 std::vector<std::string>& warnings) {
  const std::size_t n_gpu = mon.gpus().gpus.size();
  std::optional<double> counter_period;
  if (!opt.idle_w.empty()) {
    if (opt.idle_w.size() != n_gpu) {
      return make_error(Errc::invalid_argument, "the idle baseline file has " + std::to_string(opt.idle_w.size()) +
                                                    " GPUs, this measurement " + std::to_string(n_gpu));
    }
    mon.set_idle_power(opt.idle_w, opt.idle_source);
  } else if (opt.idle_s > 0) {
    say(opt, "measuring the idle baseline for " + std::to_string(opt.idle_s).substr(0, 4) + " s");
    const auto id = mon.begin_at("idle", std::nullopt, "idle", -1);
    const double polled_s = std::min(0.6, opt.idle_s);
    counter_period = measure_counter_update_period(mon, polled_s);
    const bool ok = sleep_for(opt.idle_s - polled_s);
    mon.end_at(id, std::nullopt, ok);
    if (ok) set_idle_baseline(mon, id, warnings);
  }
  return counter_period;
}

// What one repeat needs besides its index.
struct RepeatContext {
  Monitor& mon;
  const MeasureOptions& opt;
  MarkerChannel& markers;
  std::vector<std::string>& warnings;
  const std::vector<std::string>& argv;
  bool builtin = false, sim = false;
};

// Runs the workload of repeat i once: in process on the simulated GPU, else as a child process.
// An error only when the child could not be started.
Result<void> execute_workload(const RepeatContext& c, int i, RunInfo& run, int& exit_code) {
  if (c.builtin && c.sim) {
    run.complete = simulated_builtin_run(c.mon, c.mon.gpus(), i);
    if (!run.complete) run.reason = "interrupted";
    return {};
  }
  if (c.sim) {
    for (const auto& m : c.mon.gpus().sim_models) m->start_load(c.mon.timebase().now_s(), c.opt.sim_active_w, 0.5);
  }
  std::vector<std::string> env = c.opt.env;
  env.push_back(std::string(kMarkerEnv) + "=" + c.markers.path());
  env.push_back("JOULEPROF_RUN_INDEX=" + std::to_string(i));
  auto child = ChildProcess::spawn(c.argv, env);
  if (!child) return child.error();
  const ChildStatus st = child->wait();
  if (c.sim) {
    for (const auto& m : c.mon.gpus().sim_models) m->stop_load(c.mon.timebase().now_s());
  }
  run.exit_code = st.exit_code;
  run.signal = st.signal;
  if (st.signal != 0) {
    run.complete = false;
    run.reason = std::string("workload killed by signal ") + std::to_string(st.signal) + " (" + strsignal(st.signal) + ")";
  } else if (st.exit_code != 0) {
    run.complete = false;
    run.reason = "workload exited with status " + std::to_string(st.exit_code);
  }
  if (st.exit_code != 0) exit_code = st.exit_code;
  return {};
}

// Phases the workload left open when its repeat ended are closed as incomplete.
void close_open_phases(const RepeatContext& c, Monitor::WindowId run_window, int i, bool warm) {
  for (auto open : c.mon.open_windows()) {
    if (open == run_window) continue;
    c.mon.end_at(open, std::nullopt, false);
    c.warnings.push_back("a phase was still open when " +
                         (warm ? "warm-up " + std::to_string(i + 1) : "repeat " + std::to_string(i - c.opt.warmup + 1)) +
                         " ended; closed as incomplete");
  }
}

// The progress line's last point: the run's GPU energy so far (the final figures come at the end).
std::string repeat_done_line(Monitor& mon, Monitor::WindowId id, int i, bool warm, int warmup) {
  std::string last = warm ? "warm-up " + std::to_string(i + 1) + " done" : "";
  if (auto e = mon.energy(id); e && !warm) {
    double j = 0;
    for (const auto& g : e->gpus) j += g.energy_j;
    last = fmt::format("repeat {}: {:.1f} J in {:.2f} s", i - warmup + 1, j, e->t1_s - e->t0_s);
  }
  return last;
}

// The warm-ups and repeats, each in its own window, stopping at the first incomplete one.
// An error only when not even the first workload could be started (the monitor is finished then).
Result<std::vector<RunInfo>> run_repeats(const RepeatContext& c, int& exit_code) {
  const MeasureOptions& opt = c.opt;
  std::vector<RunInfo> runs;
  // Repeats are numbered from 1, warm-ups apart (README "Words").
  Progress progress(opt.warmup > 0 ? "warm-ups and repeats" : "repeat", opt.warmup + opt.runs, opt.show_progress);
  for (int i = 0; i < opt.warmup + opt.runs && interrupting_signal() == 0; ++i) {
    const bool warm = i < opt.warmup;
    if (opt.cooldown && (i > 0 || opt.cooldown_first)) {
      if (!opt.show_progress) say(opt, "cool-down: waiting for a stable GPU temperature");
      wait_for_stable_temperature(c.mon, opt, c.warnings, progress);
      if (interrupting_signal() != 0) break;
    }
    RunInfo run;
    run.index = i;
    run.warmup = warm;
    if (!opt.show_progress) {
      say(opt, std::string(warm ? "warm-up " : "repeat ") + std::to_string(warm ? i + 1 : i - opt.warmup + 1) + "/" +
                   std::to_string(warm ? opt.warmup : opt.runs));
    }
    const auto id = c.mon.begin_at(warm ? "warmup" : "run", std::nullopt, warm ? "warmup" : "run", i);
    run.window = static_cast<int>(id);
    c.markers.set_run(i, id);
    if (auto started = execute_workload(c, i, run, exit_code); !started) {
      c.mon.end_at(id, std::nullopt, false);
      if (runs.empty()) {
        c.mon.finish();
        return started.error();  // nothing was measured: report the error
      }
      run.complete = false;
      run.reason = started.error().message;
      runs.push_back(run);
      exit_code = 127;
      break;
    }
    c.markers.drain();
    close_open_phases(c, id, i, warm);
    c.mon.end_at(id, std::nullopt, run.complete);
    runs.push_back(run);
    if (opt.show_progress) progress.step(repeat_done_line(c.mon, id, i, warm, opt.warmup));
    if (!run.complete) break;
  }
  progress.done();
  return runs;
}

// Text from the command line enters the result through the text layer: the workload ran with
// its exact bytes, the result keeps valid UTF-8 and says when something was replaced.
void record_command_text(Measurement& m, const MeasureOptions& opt, bool builtin, bool sim,
                         std::vector<std::string>& warnings) {
  m.command = opt.command;
  m.builtin_workload = builtin;
  if (builtin) m.command = sim ? std::vector<std::string>{"(built-in simulated LLM-like workload)"} : opt.builtin_command;
  bool replaced = false;
  m.tags.clear();
  for (const auto& [k, v] : opt.tags) {
    bool ck = false, cv = false;
    m.tags[clean_label(k, &ck)] = clean_label(v, &cv);
    if (ck || cv) warnings.push_back("tag '" + clean_label(k) + "': not valid UTF-8 or holding control characters; "
                                     "stored with U+FFFD / \\xNN in their place");
  }
  for (std::string& a : m.command) {
    bool r = false;
    a = to_valid_utf8(a, &r);
    replaced |= r;
  }
  m.invocation.clear();
  for (const std::string& a : opt.invocation) {
    bool r = false;
    m.invocation.push_back(to_valid_utf8(a, &r));
    replaced |= r;
  }
  if (replaced) warnings.push_back("the command line holds bytes that are not valid UTF-8; stored with U+FFFD in their place");
}

// The first reason the measurement is incomplete: a signal, a failed repeat, repeats not done.
void mark_incomplete(Measurement& m, const MeasureOptions& opt) {
  if (const int sig = interrupting_signal(); sig != 0) {
    m.complete = false;
    m.incomplete_reason = std::string("interrupted by signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")";
    if (m.exit_code == 0) m.exit_code = 128 + sig;
  }
  for (const RunInfo& r : m.runs) {
    if (!r.complete && m.complete) {
      m.complete = false;
      m.incomplete_reason = repeat_label(m, r.index) + ": " + r.reason;
    }
  }
  if (static_cast<int>(m.runs.size()) < opt.warmup + opt.runs && m.complete) {
    m.complete = false;
    m.incomplete_reason = "only " + std::to_string(m.runs.size()) + " of " + std::to_string(opt.warmup + opt.runs) +
                          (opt.warmup > 0 ? " warm-ups and repeats done" : " repeats done");
  }
}

// A GPU that stopped answering: the windows reaching past its loss lack its energy.
void mark_lost_gpus(Measurement& m) {
  for (std::size_t g = 0; g < m.gpu_state.size(); ++g) {
    const auto& lost = m.gpu_state[g].lost_at_s;
    if (!lost) continue;
    if (m.complete) {
      m.complete = false;
      m.incomplete_reason = "GPU " + std::to_string(m.gpus[g].index) + " stopped answering " +
                            fmt::format("{:.3f}", *lost) + " s into the measurement";
    }
    // A window that reaches past the loss lacks that GPU's energy: it is not a complete figure.
    for (WindowResult& w : m.windows) {
      if (w.t1_s >= *lost) w.complete = false;
    }
    for (RunInfo& r : m.runs) {
      if (r.window >= 0 && static_cast<std::size_t>(r.window) < m.windows.size() &&
          !m.windows[static_cast<std::size_t>(r.window)].complete && r.complete) {
        r.complete = false;
        r.reason = "a GPU stopped answering";
      }
    }
    if (m.exit_code == 0) m.exit_code = 3;  // README "Exit codes": GPU/driver unavailable
  }
}

// External meter: aligned by wall-clock time onto the run time base.
void add_meter(Measurement& m, const MeasureOptions& opt, TimeBase& tb) {
  if (!opt.meter_csv) return;
  auto log = load_meter_csv(*opt.meter_csv, opt.meter);
  if (!log) {
    m.warnings.push_back("meter log not used: " + log.error().message);
    m.meter_source = "error: " + log.error().message;
    return;
  }
  m.meter_source = *opt.meter_csv + " (column " + log->column + ")";
  for (const Sample& s : log->samples) {
    m.meter_power.push_back({tb.from_realtime_ns(static_cast<int64_t>(std::llround(s.t_s * 1e9))), s.value});
  }
  for (WindowResult& w : m.windows) {
    const Integral in = integrate_trapezoid(m.meter_power, w.t0_s, w.t1_s);
    if (in.covered) {
      w.meter_j = in.energy_j;
      w.meter_uncertainty_j = in.edge_uncertainty_j;
    }
  }
}

// The counter's staleness bound with its measured update period, before the repeats tighten it.
void add_counter_section(Measurement& m, const MeasureOptions& opt, std::optional<double> counter_period) {
  if (counter_period) apply_counter_update_period(m, *counter_period);
  m.sections["energy_counter"] =
      nlohmann::json{{"update_period_s", counter_period.value_or(opt.monitor.energy.counter_update_s)},
                     {"update_period_source", counter_period ? "measured: the counter polled every millisecond during the idle baseline"
                                                             : "nominal (H100/H200 measurement; no idle baseline polled here)"}}
          .dump();
}

}  // namespace

Result<Measurement> run_measure(const MeasureOptions& opt) {
  if (auto ok = check_measure_options(opt); !ok) return ok.error();
  install_signal_forwarding();
  auto created = Monitor::create(opt.monitor);
  if (!created) return created.error();
  Monitor& mon = **created;
  const bool sim = mon.gpus().simulated();
  const bool builtin = opt.command.empty();
  if (builtin && !sim && opt.builtin_command.empty()) {
    return make_error(Errc::unavailable,
                      "the built-in GPU workload needs a CUDA build (configure with JOULEPROF_WITH_CUDA=ON); "
                      "give a command after --, or use --device sim");
  }
  std::unique_ptr<ActivityRecorder> activity;
  if (opt.activity) {
    auto rec = ActivityRecorder::start(mon.gpus(), mon.timebase(), *opt.activity);
    if (!rec) return rec.error();
    activity = std::move(*rec);
  }
  std::vector<std::string> warnings;
  auto counter_period = take_idle_baseline(mon, opt, warnings);
  if (!counter_period) return counter_period.error();

  MarkerChannel markers(mon, warnings);
  if (auto r = markers.open(); !r) return r.error();
  int exit_code = 0;
  const RepeatContext ctx{mon, opt, markers, warnings, builtin ? opt.builtin_command : opt.command, builtin, sim};
  auto runs = run_repeats(ctx, exit_code);
  if (!runs) return runs.error();
  markers.close();
  mon.sync_counters();
  // Let the driver's buffer fill past the last edge before the final drain.
  std::this_thread::sleep_for(std::chrono::milliseconds(150));

  std::vector<ActivityTimeline> activity_timelines;
  if (activity) activity_timelines = activity->stop();
  Measurement m = mon.finish();
  if (activity) m.sections["activity"] = activity_section_json(activity_timelines, m);
  record_command_text(m, opt, builtin, sim, warnings);
  m.runs = *runs;
  m.warnings.insert(m.warnings.begin(), warnings.begin(), warnings.end());  // after the text checks above
  m.exit_code = exit_code;
  mark_incomplete(m, opt);
  mark_lost_gpus(m);
  add_meter(m, opt, mon.timebase());
  add_counter_section(m, opt, *counter_period);
  warn_short_windows(m, opt.monitor.energy);
  summarize_repeats(m, opt.ci_warn_relative);
  fill_provenance(m);
  if (m.simulated) m.tags.emplace("simulated", "true");
  return m;
}

}  // namespace jouleprof
