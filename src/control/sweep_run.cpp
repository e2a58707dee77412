// Running a sweep: apply a point's settings, measure, store the tagged run, restore always.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "jouleprof/control/session.hpp"
#include "jouleprof/control/sweep.hpp"
#include "jouleprof/measure/process.hpp"
#include "jouleprof/sensors/gpu_sensor.hpp"
#include "jouleprof/sensors/sim_model.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof::control {
namespace {

// Activity windows of 0.2 s: several per point even for short workloads.
constexpr double kActivityPeriodS = 0.2;
// Clocks (and the other slow fields) polled every 0.1 s, not the sampler's 0.5 s: a run of
// 0.3 s then still has clock samples while it is busy (busy_sm_clock_mhz).
constexpr double kClockPeriodS = 0.1;

std::optional<double> stat_mean(const Measurement& m, const std::string& what) {
  for (const auto& s : m.stats) {
    if (s.what == what && s.summary.n > 0) return s.summary.mean;
  }
  return std::nullopt;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// A split multi-GPU sweep: one worker process per GPU, each running its shard of the same plan
// on its GPU only (CUDA_VISIBLE_DEVICES), signals forwarded to all; each worker restores its GPU.
Result<SweepSummary> run_workers(const SweepRunOptions& o, const SweepPlan& plan, const std::vector<GpuCapabilities>& gpus) {
  char tmpl[] = "/tmp/jouleprof-sweep-plan-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) return make_error(Errc::io, "cannot write the sweep plan to /tmp");
  const std::string text = plan_to_json(plan);
  const bool wrote = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!wrote) return make_error(Errc::io, std::string("cannot write the sweep plan ") + tmpl);
  const std::string db = resolve_db_path(o.db);
  std::vector<pid_t> pids;
  const int n = static_cast<int>(gpus.size());
  for (int k = 0; k < n; ++k) {
    std::vector<std::string> argv = {o.self_exe, "sweep", "--plan", tmpl, "--gpus", gpus[k].uuid,
                                     "--shard", fmt::format("{}/{}", k, n), "--db", db, "--progress-off"};
    if (!o.journal_dir.empty()) {
      argv.push_back("--journal-dir");
      argv.push_back(o.journal_dir);
    }
    if (o.quiet) argv.push_back("-q");
    auto child = ChildProcess::spawn(argv, {"CUDA_VISIBLE_DEVICES=" + gpus[k].uuid});
    if (!child) {
      for (pid_t p : pids) kill(p, SIGTERM);
      return child.error();
    }
    pids.push_back(child->pid());
    if (o.note) o.note(fmt::format("GPU {} ({}): worker pid {} runs shard {}/{}", gpus[k].index, gpus[k].uuid, child->pid(), k, n));
  }
  SweepSummary sum;
  sum.sweep_id = plan.sweep_id;
  std::set<pid_t> running(pids.begin(), pids.end());
  int forwarded = 0;
  while (!running.empty()) {
    for (auto it = running.begin(); it != running.end();) {
      int st = 0;
      if (waitpid(*it, &st, WNOHANG) == *it) {
        const int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (rc != 0) {
          UnitOutcome u;
          u.kind = UnitOutcome::Kind::failed;
          u.message = fmt::format("worker pid {} exited with status {}", *it, rc);
          sum.units.push_back(u);
        }
        it = running.erase(it);
      } else {
        ++it;
      }
    }
    if (const int sig = interrupting_signal(); sig != 0 && forwarded == 0) {
      forwarded = sig;
      sum.interrupted_by = sig;
      for (pid_t p : running) kill(p, sig);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::remove(tmpl);
  // What the workers measured, from the store.
  if (auto store = Store::open(db, Store::Mode::read); store) {
    RunFilter f;
    f.tags.push_back({"sweep", plan.sweep_id});
    if (auto runs = store->list(f); runs) {
      for (const auto& r : *runs) {
        UnitOutcome u;
        u.unit.key = r.tags.count("point") ? r.tags.at("point") : "";
        u.kind = r.status == "complete" ? UnitOutcome::Kind::measured : UnitOutcome::Kind::failed;
        u.run_id = r.id;
        u.energy_j = r.gpu_energy_j;
        u.duration_s = r.run_duration_s;
        sum.units.push_back(u);
      }
    }
  }
  return sum;
}

}  // namespace

std::optional<double> busy_sm_clock_mhz(const Measurement& m, std::size_t gpu) {
  if (gpu >= m.timelines.size() || !m.timelines[gpu]) return std::nullopt;
  const GpuTimeline& tl = *m.timelines[gpu];
  const std::vector<Sample> util = tl.series[static_cast<int>(Metric::gpu_util_pct)].all();
  // The utilization read nearest in time to a clock sample is the one of the same poll.
  auto busy = [&](double t) {
    if (util.empty()) return true;
    auto it = std::lower_bound(util.begin(), util.end(), t, [](const Sample& s, double x) { return s.t_s < x; });
    if (it == util.end() || (it != util.begin() && t - std::prev(it)->t_s < it->t_s - t)) --it;
    return it->value > 0;
  };
  double sum = 0;
  std::size_t n = 0;
  for (const RunInfo& r : m.runs) {
    if (r.warmup || r.window < 0 || static_cast<std::size_t>(r.window) >= m.windows.size()) continue;
    const WindowResult& w = m.windows[static_cast<std::size_t>(r.window)];
    for (const Sample& s : tl.series[static_cast<int>(Metric::sm_clock_mhz)].slice(w.t0_s, w.t1_s)) {
      if (s.t_s < w.t0_s || s.t_s > w.t1_s || !busy(s.t_s)) continue;  // slice adds a neighbour each side
      sum += s.value;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

int SweepSummary::count(UnitOutcome::Kind k) const {
  int n = 0;
  for (const auto& u : units) n += u.kind == k ? 1 : 0;
  return n;
}

namespace {

// Resumable: the units (point#pass) whose complete run is in the store are not measured again.
Result<std::set<std::string>> units_done(Store& store, const std::string& sweep_id) {
  std::set<std::string> done;
  RunFilter f;
  f.tags.push_back({"sweep", sweep_id});
  auto runs = store.list(f);
  if (!runs) return runs.error();
  for (const auto& r : *runs) {
    if (r.status == "complete" && r.tags.count("point") && r.tags.count("pass")) {
      done.insert(r.tags.at("point") + "#" + r.tags.at("pass"));
    }
  }
  return done;
}

// What this process measures: every unit, or those of its shard.
std::vector<std::size_t> my_units(const SweepRunOptions& o, const SweepPlan& plan) {
  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < plan.units.size(); ++i) {
    if (!o.shard || static_cast<int>(i % static_cast<std::size_t>(o.shard->second)) == o.shard->first) mine.push_back(i);
  }
  return mine;
}

// One point's measurement: the sweep's command with the point's parameters, on the sweep's GPUs.
MeasureOptions point_options(const SweepRunOptions& o, const SweepPlan& plan, const SweepPoint& u,
                             const std::vector<GpuCapabilities>& gpus, const std::string& backend_name,
                             bool cooldown_first) {
  const SweepSpec& spec = o.spec;
  MeasureOptions mo = o.measure;
  mo.command = *substitute(spec.command, u.params);  // validated by the plan
  mo.runs = u.runs;
  mo.warmup = u.warmup;
  mo.idle_s = spec.idle_s;
  mo.cooldown = spec.cooldown;
  mo.cooldown_first = spec.cooldown && cooldown_first;
  mo.invocation = spec.invocation;
  mo.monitor.gpus.backend = backend_name;
  mo.monitor.gpus.ids.clear();
  for (const auto& g : gpus) mo.monitor.gpus.ids.push_back(g.uuid);
  mo.monitor.gpus.nvml_library = spec.nvml_library;
  mo.monitor.gpus.sim_scenario = spec.sim_scenario;
  mo.monitor.sampler.read_cpu = spec.read_cpu;
  mo.monitor.sampler.slow_period_s = std::min(mo.monitor.sampler.slow_period_s, kClockPeriodS);
  mo.sim_active_w = spec.sim_power_w;
  if (spec.metrics) mo.activity = ActivityOptions{spec.metrics_source, kActivityPeriodS, spec.nvml_library};
  for (const auto& [k, v] : u.params) mo.env.push_back("JOULEPROF_PARAM_" + upper(k) + "=" + v);
  mo.tags = point_tags(plan, u);
  for (const auto& [k, v] : spec.tags) mo.tags.emplace(k, v);
  return mo;
}

// The clocks and limit actually seen, next to the ones asked for; the SM clock while the
// workload was busy (the highest over the whole timeline was the idle clock for runs
// shorter than the clock poll).
void tag_observed_settings(Measurement& m) {
  for (std::size_t g = 0; g < m.gpu_state.size(); ++g) {
    const auto& st = m.gpu_state[g];
    const std::string sfx = m.gpu_state.size() > 1 ? fmt::format("_gpu{}", g) : "";
    if (auto busy = busy_sm_clock_mhz(m, g)) m.tags["observed_clock_mhz" + sfx] = fmt::format("{:.0f}", *busy);
    if (st.mem_clock_mhz) m.tags["observed_mem_clock_mhz" + sfx] = fmt::format("{:.0f}", *st.mem_clock_mhz);
    if (st.power_limit_w) m.tags["observed_power_limit_w" + sfx] = fmt::format("{:.0f}", *st.power_limit_w);
  }
}

// Measures one point and stores its run; the outcome says what happened. True when measured.
bool measure_point(const SweepRunOptions& o, const MeasureOptions& mo, const std::string& backend_name, Store& store,
                   UnitOutcome& out) {
  // The simulated GPU behaves as the scenario says this point's application does
  // (`application` lines keyed by --param values and tags; docs/simulated-gpu.md).
  if (backend_name == "sim") set_sim_workload_labels(mo.tags);
  auto m = o.run_point(mo);
  if (backend_name == "sim") set_sim_workload_labels({});
  if (!m) {
    out.kind = UnitOutcome::Kind::failed;
    out.message = m.error().message;
    return false;
  }
  tag_observed_settings(*m);
  StoreOptions so;
  so.source = "sweep";
  auto id = store.insert(*m, so);
  if (!id) {
    out.kind = UnitOutcome::Kind::failed;
    out.message = "not stored: " + id.error().message;
  } else {
    out.run_id = *id;
  }
  out.energy_j = stat_mean(*m, "gpu_energy_j");
  out.duration_s = stat_mean(*m, "duration_s");
  if (!m->complete && out.kind == UnitOutcome::Kind::measured) {
    out.kind = UnitOutcome::Kind::failed;
    out.message = m->incomplete_reason;
  }
  return true;
}

// Applies a point's setting on every GPU of the session. Fatal: the GPU is gone or cannot be set.
bool apply_setting(ControlSession& session, const SweepPoint& u, UnitOutcome& out) {
  for (const auto& g : session.gpus()) {
    if (auto r = session.apply(g.uuid, u.setting); !r) {
      out.kind = UnitOutcome::Kind::failed;
      out.message = r.error().message;
      return r.error().code == Errc::unavailable || r.error().code == Errc::lost;
    }
  }
  return false;
}

SweepProgress progress_after(const SweepPoint& u, const UnitOutcome& out, std::size_t n, std::size_t total,
                             std::chrono::steady_clock::time_point t0) {
  SweepProgress p;
  p.done = static_cast<int>(n + 1);
  p.total = static_cast<int>(total);
  p.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.eta_s = p.elapsed_s / p.done * (p.total - p.done);
  if (out.energy_j && out.duration_s && *out.duration_s > 0) {
    p.last = fmt::format("{}: {:.1f} J, {:.2f} s, {:.0f} W", u.key, *out.energy_j, *out.duration_s, *out.energy_j / *out.duration_s);
  } else {
    p.last = u.key + ": " + (out.message.empty() ? "no figure" : out.message);
  }
  return p;
}

}  // namespace

Result<SweepSummary> run_sweep(const SweepRunOptions& o) {
  // Signals are collected synchronously from here on: a Ctrl-C, SIGTERM or SIGHUP ends the
  // current point and the session restores the GPUs before jouleprof exits.
  install_signal_forwarding();
  const SweepSpec& spec = o.spec;
  const std::string backend_name = spec.device == "auto" ? "nvml" : spec.device;
  auto backend = open_backend(backend_name, spec.nvml_library, spec.sim_scenario);
  if (!backend) {
    return make_error(backend.error().code, backend.error().message + (backend_name == "nvml" ? " (use --device sim for the simulated GPU)" : ""));
  }
  // Which GPUs: --gpus, else those CUDA_VISIBLE_DEVICES names (what SLURM gives a task), else all.
  std::vector<std::string> ids = spec.gpus;
  if (ids.empty()) {
    if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES"); cvd != nullptr && cvd[0] != '\0') {
      ids = split_gpu_list(cvd);
    }
  }
  auto gpus = (*backend)->discover(ids);
  if (!gpus) return gpus.error();
  auto plan = plan_sweep(spec, *gpus);
  if (!plan) return plan.error();

  if (spec.multi_gpu == "split" && gpus->size() > 1 && !o.shard && !o.self_exe.empty()) {
    // The store is created here, once, before the workers write into it concurrently.
    if (auto st = Store::open(resolve_db_path(o.db), Store::Mode::write); !st) return st.error();
    return run_workers(o, *plan, *gpus);
  }
  std::string visible;
  for (const auto& g : *gpus) visible += (visible.empty() ? "" : ",") + g.uuid;
  if (backend_name == "nvml") setenv("CUDA_VISIBLE_DEVICES", visible.c_str(), 1);  // before any thread starts

  auto store = Store::open(resolve_db_path(o.db), Store::Mode::write);
  if (!store) return store.error();
  auto done = units_done(*store, plan->sweep_id);
  if (!done) return done.error();

  SessionOptions so;
  so.journal_dir = o.journal_dir;
  so.observe_only = spec.observe_only;
  so.note = o.note;
  auto session = ControlSession::begin(**backend, *gpus, so);
  if (!session) return session.error();

  SweepSummary sum;
  sum.sweep_id = plan->sweep_id;
  const std::vector<std::size_t> mine = my_units(o, *plan);
  const auto t0 = std::chrono::steady_clock::now();
  int measured_here = 0;
  for (std::size_t n = 0; n < mine.size(); ++n) {
    if (const int sig = interrupting_signal(); sig != 0) {
      sum.interrupted_by = sig;
      break;
    }
    const SweepPoint& u = plan->units[mine[n]];
    UnitOutcome out;
    out.unit = u;
    out.gpu_uuid = visible;
    if (done->count(u.key + "#" + std::to_string(u.pass)) != 0) {
      out.kind = UnitOutcome::Kind::skipped;
      out.message = "already in the store";
      sum.units.push_back(out);
      continue;
    }
    const bool fatal = apply_setting(**session, u, out);
    if (out.kind == UnitOutcome::Kind::measured) {
      const MeasureOptions mo = point_options(o, *plan, u, *gpus, backend_name, measured_here > 0);
      if (measure_point(o, mo, backend_name, *store, out)) ++measured_here;
    }
    sum.units.push_back(out);
    if (o.progress) o.progress(progress_after(u, out, n, mine.size(), t0));
    if (fatal) break;
  }
  if (auto r = (*session)->restore(); !r) {
    sum.restored = false;
    sum.restore_error = r.error().message;
  }
  if (sum.interrupted_by == 0) sum.interrupted_by = interrupting_signal();
  return sum;
}

}  // namespace jouleprof::control
