// jouleprof-replay PLAN.json OUT.json: replays each item of a plan (written by `jouleprof replay`)
// in isolation and measures its time and energy (docs/replay.md, "Measurement").
// jouleprof-replay --check PLAN.json: builds and runs each item once and says which path ran.
//
// Per item: a CUDA graph of R back-to-back calls (R so a graph takes ~2 ms), launched without
// gaps for a settling period, then for N trials of `trial_s` each (≥ 10 power-sample periods),
// with CUDA events at the trial edges. Time per call = event time / calls. Power per trial = mean
// of the driver's power samples (jouleprof's NVML sensor, ~20 ms apart on H100) inside the trial,
// 20 ms trimmed at both edges; energy per call = power x time. A kernel shorter than the sensor
// can resolve is therefore measured by repetition, never from one window. Kernels of ≥ 10 µs whose
// energy CI misses the target are measured again in longer trials. Before the items: the deep-idle
// power, a warm-up GEMM to a stable temperature and the power around a lone tiny kernel; after
// them, the context replay: the trace's own sequence re-launched at its traced times, whose energy
// beyond the isolated kernels is the gaps' power in context. The energy counter read at the trial
// edges is recorded as a cross-check.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "jouleprof/core/timebase.hpp"
#include "jouleprof/sensors/gpu_sensor.hpp"
#include "plan_item.hpp"
#include "replay_cuda.hpp"
#include "sensor_probe.hpp"
#include "trials.hpp"

using nlohmann::json;
using namespace jouleprof;
using jouleprof::replay::Device;
using jouleprof::replay::Item;
using jouleprof::replay::Round;
using jouleprof::replay::item_of;

namespace {

double t_quantile_975(std::size_t dof) {
  static const double q[] = {0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228};
  return dof < 11 ? q[dof] : 1.96 + 2.5 / static_cast<double>(dof);
}

struct Stat {
  double mean = 0, half_width = 0;
};

Stat stat(const std::vector<double>& v) {
  Stat s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() < 2) return s;
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  const double sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
  s.half_width = t_quantile_975(v.size() - 1) * sd / std::sqrt(static_cast<double>(v.size()));
  return s;
}

// The rounds' probe, with the sensor's other readings (temperature) for the output.
class Meter final : public jouleprof::replay::SensorProbe {
 public:
  using SensorProbe::SensorProbe;
  std::optional<double> read(Metric m) {
    if (!sensor().supports(m)) return std::nullopt;
    auto v = sensor().read(m);
    return v ? std::optional<double>(*v) : std::nullopt;
  }
};

/// The counter's cross-check of a row or the context (trials.hpp says when a trial counts).
void put_counter(json& r, const std::vector<double>& trial_power_w, double time_ns, std::size_t late_reads, double max_late_s,
                 const std::string& dropped_because) {
  std::vector<double> ok;
  for (double w : trial_power_w) {
    if (std::isfinite(w)) ok.push_back(w);
  }
  const Stat s = stat(ok);
  r["counter_trials"] = ok.size();
  r["counter_late_reads"] = late_reads;
  r["counter_max_late_ms"] = max_late_s * 1e3;
  if (!ok.empty() && time_ns > 0) {
    r["counter_mean_power_w"] = s.mean;
    r["counter_mean_power_w_half_width"] = s.half_width;
    r["counter_energy_j"] = s.mean * time_ns * 1e-9;
  }
  if (!dropped_because.empty()) r["counter_note"] = dropped_because;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// The plan's measurement settings (`jouleprof replay` writes them; these defaults otherwise).
struct Settings {
  int trials = 5, max_trials = 8;
  double trial_s = 0.2, settle_s = 0.15, warmup_s = 3.0, gap_s = 1.0, gap_us = 200.0;
  double ci_target = 0.02, ci_min_ns = 10e3, long_trial_s = 1.0, row_cap_s = 10.0;
  static Settings of(const json& plan) {
    Settings s;
    s.trials = plan.value("trials", s.trials);
    s.trial_s = plan.value("trial_s", s.trial_s);
    s.settle_s = plan.value("settle_s", s.settle_s);
    s.warmup_s = plan.value("warmup_s", s.warmup_s);
    s.gap_s = plan.value("gap_s", s.gap_s);
    s.gap_us = plan.value("gap_us", s.gap_us);
    s.ci_target = plan.value("ci_target", s.ci_target);
    s.ci_min_ns = plan.value("ci_min_ns", s.ci_min_ns);
    s.long_trial_s = plan.value("long_trial_s", s.long_trial_s);
    s.row_cap_s = plan.value("row_cap_s", s.row_cap_s);
    s.max_trials = plan.value("max_trials", s.max_trials);
    return s;
  }
};

constexpr double kSkipS = 0.02;  // power samples this soon after a trial edge still reflect the previous state

// The context replay's program: one unit per traced row, the trace's launches as steps.
struct ContextProgram {
  std::vector<Item> units;
  std::map<int, int> unit_of_row;
  std::vector<jouleprof::replay::Step> steps;
};

ContextProgram context_program(const json& cp) {
  ContextProgram c;
  for (const auto& [key, spec] : cp["rows"].items()) {
    c.unit_of_row[std::stoi(key)] = static_cast<int>(c.units.size());
    Item it = item_of(spec);
    if (it.target_ns <= 0) it.target_ns = spec.value("traced_ns", 0.0);
    c.units.push_back(it);
  }
  for (const json& st : cp["sequence"]) c.steps.push_back({c.unit_of_row.at(st[0].get<int>()), st[2].get<int64_t>()});
  return c;
}

// Launches per row in one pass, and the units that could not be prepared (stand-ins: waits).
void context_counts(json& cx, const ContextProgram& c, const std::vector<std::string>& why) {
  json failed = json::array(), row_counts = json::object();
  std::vector<int> row_of_unit(c.units.size(), -1);
  std::vector<bool> is_wait(c.units.size(), false);
  for (const auto& [row, u] : c.unit_of_row) {
    const auto ui = static_cast<std::size_t>(u);
    row_of_unit[ui] = row;
    is_wait[ui] = c.units[ui].tier == "wait" || !why[ui].empty();
    if (!why[ui].empty()) failed.push_back({{"row", row}, {"reason", why[ui]}});
  }
  std::size_t stand_ins = 0;
  for (const auto& stp : c.steps) {
    const auto ui = static_cast<std::size_t>(stp.unit);
    if (is_wait[ui]) {
      ++stand_ins;
      continue;
    }
    const std::string k = std::to_string(row_of_unit[ui]);
    const int before = row_counts.value(k, 0);
    row_counts[k] = before + 1;
  }
  cx["row_counts"] = row_counts;
  cx["stand_ins"] = stand_ins;
  cx["stand_in_rows"] = failed;
}

// The measurement run: what its steps share (device, sensor, settings, the counter's rules).
struct Engine {
  Device& dev;
  Meter& meter;
  const Settings& s;
  jouleprof::replay::CounterRules rules;

  static void progress(const std::string& line) { std::fprintf(stderr, "jouleprof-replay: %s\n", line.c_str()); }

  // Deep idle, while the energy counter's update period is measured.
  double measure_idle(json& out) {
    meter.drain();
    const double t0 = meter.now();
    rules.update_s = jouleprof::replay::counter_update_period(meter, 1.0);
    meter.drain();
    const double idle_w = meter.mean_power(t0 + 0.3, meter.now()).first;
    out["idle_w"] = idle_w;
    out["counter_update_s"] = rules.update_s;
    out["counter_max_late_s"] = rules.max_late_s;
    return idle_w;
  }

  // A GEMM for at least warmup_s, then until the temperature rose ≤ 1 °C over the last 2 s (at
  // most 30 s): the items are measured at a steady temperature.
  void warm_up(json& out) {
    Item warm;
    warm.tier = "warmup";
    if (auto w = dev.prepare(warm, 4); !w.empty()) {
      out["warmup_error"] = w;
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<double> temps;
    double done_s = 0;
    for (;;) {
      const auto t_end = std::chrono::steady_clock::now() + std::chrono::duration<double>(0.5);
      while (std::chrono::steady_clock::now() < t_end) {
        dev.launch(2);
        dev.synchronize();
      }
      meter.drain();
      done_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const auto temp = meter.read(Metric::temperature_c);
      if (!temp) {
        if (done_s >= s.warmup_s) break;
        continue;
      }
      temps.push_back(*temp);
      if (done_s >= 30) break;
      if (done_s >= s.warmup_s && temps.size() >= 5 && temps.back() - temps[temps.size() - 5] <= 1.0) break;
    }
    out["warmup_s"] = done_s;
    out["warmup_temperature_c"] = temps;
  }

  // The clocked-up idle power around a lone tiny kernel: the power of the gaps.
  double measure_gaps(json& out) {
    meter.drain();
    const double t0 = meter.now();
    for (double done_s = 0; done_s < s.gap_s; done_s += 0.1) {
      dev.gap_pattern(0.1, s.gap_us);
      meter.drain();
    }
    const auto [w, n] = meter.mean_power(t0 + 0.25, meter.now());
    out["gap_w"] = w;
    out["gap_us"] = s.gap_us;
    out["gap_samples"] = n;
    return w;
  }

  // One round on the prepared item: a settling period then `n` trials of `seconds` (trials.hpp).
  Round round(double graph_ms, int reps, int n, double seconds) {
    jouleprof::replay::RoundPlan rp;
    rp.graph_s = graph_ms / 1e3;
    rp.settle_graphs = std::max(1, static_cast<int>(std::ceil(s.settle_s * 1e3 / graph_ms)));
    rp.trial_graphs = std::max(1, static_cast<int>(std::ceil(seconds * 1e3 / graph_ms)));
    rp.trials = n;
    rp.calls_per_graph = reps;
    rp.skip_s = kSkipS;
    Round rd = jouleprof::replay::run_round(dev, meter, rp, rules);
    rd.seconds = seconds;
    return rd;
  }

  // Repeatability: kernels ≥ ci_min_ns whose CI misses the target are measured again in longer
  // trials (the power controller's swings near the limit average out), in rounds of 4, until the
  // target is met or max_trials / row_cap_s is reached.
  void refine(json& r, Round& rd, double graph_ms, int reps) {
    auto rel_ci = [](const Round& x) {
      const Stat e = stat(x.energy_j);
      return e.mean > 0 ? e.half_width / e.mean : 1.0;
    };
    const double first_ci = rel_ci(rd);
    const double time_ns0 = stat(rd.time_ns).mean;
    if (!(rd.energy_j.size() >= 2 && time_ns0 >= s.ci_min_ns && first_ci > s.ci_target)) return;
    Round lng;
    lng.seconds = s.long_trial_s;
    double spent = 0;
    while (static_cast<int>(lng.energy_j.size()) < s.max_trials && spent + 4 * s.long_trial_s <= s.row_cap_s) {
      const int n = std::min(4, s.max_trials - static_cast<int>(lng.energy_j.size()));
      lng.append(round(graph_ms, reps, n, s.long_trial_s));
      spent += n * s.long_trial_s + s.settle_s;
      if (lng.energy_j.size() >= 3 && rel_ci(lng) <= s.ci_target) break;
    }
    r["short_trials_ci"] = first_ci;
    if (lng.energy_j.size() >= 2) rd = lng;
  }

  // One plan item in isolation: its time, power and energy per call, with their 95% CIs.
  json measure_item(const json& pj, std::size_t done, std::size_t total) {
    json r = {{"row", pj.value("row", -1)}, {"tier", pj.value("tier", "")}};
    const Item item = item_of(pj);
    const std::string why = dev.prepare(item, 0);
    if (!why.empty()) {
      r["status"] = "skipped";
      r["reason"] = why;
      progress(fmt::format("{}/{} row {}: skipped: {}", done, total, r["row"].get<int>(), why));
      return r;
    }
    if (const std::string f = dev.fallback(); !f.empty()) {  // measured as the stand-in: its tier says so
      r["tier"] = item.tier == "attention" ? "attention_unfused" : "other";
      r["fallback"] = f;
      r["fallback_of"] = item.tier;  // conv, batchnorm, attention
      progress(fmt::format("{}/{} row {}: {}", done, total, r["row"].get<int>(), f));
    }
    if (item.tier == "attention") {  // which path ran: cuDNN's fused SDPA or the unfused GEMMs
      r["path"] = dev.sdpa_engine().empty() ? "unfused" : "cudnn_sdpa";
      if (!dev.sdpa_engine().empty()) {
        r["engine_config"] = dev.sdpa_engine();
        progress(fmt::format("{}/{} row {}: attention through cuDNN SDPA ({})", done, total, r["row"].get<int>(), dev.sdpa_engine()));
      }
    }
    const int reps = dev.reps();
    dev.mark(0);
    dev.launch(2);
    dev.mark(1);
    dev.synchronize();
    const double graph_ms = std::max(dev.elapsed_ms(0, 1) / 2.0, 1e-3);
    const auto temp = meter.read(Metric::temperature_c);
    const auto clock = meter.read(Metric::sm_clock_mhz);
    Round rd = round(graph_ms, reps, s.trials, s.trial_s);
    if (auto e = dev.error(); !e.empty()) {
      r["status"] = "skipped";
      r["reason"] = "CUDA error: " + e;
      return r;
    }
    refine(r, rd, graph_ms, reps);
    const Stat st = stat(rd.time_ns), sp = stat(rd.power_w), se = stat(rd.energy_j);
    r["status"] = rd.energy_j.size() >= 2 ? "ok" : "skipped";
    if (rd.energy_j.size() < 2) r["reason"] = "fewer than two trials had power samples";
    r["reps_per_graph"] = reps;
    r["trial_s"] = rd.seconds;
    r["time_ns"] = st.mean;
    r["time_ns_half_width"] = st.half_width;
    r["power_w"] = sp.mean;
    r["power_w_half_width"] = sp.half_width;
    r["energy_j"] = se.mean;
    r["energy_j_half_width"] = se.half_width;
    r["trial_time_ns"] = rd.time_ns;
    r["trial_power_w"] = rd.power_w;
    r["samples"] = rd.samples;
    put_counter(r, rd.counter_power_w, st.mean, rd.late_reads, rd.max_late_s, rd.counter_dropped_because);
    if (temp) r["temperature_c"] = *temp;
    if (clock) r["sm_clock_mhz"] = *clock;
    progress(fmt::format("{}/{} row {} {}: {:.2f} us, {:.1f} W (±{:.1f}%)", done, total, r["row"].get<int>(), item.tier, st.mean / 1e3, sp.mean,
                         se.mean > 0 ? 100 * se.half_width / se.mean : 0.0));
    return r;
  }

  json measure_items(const json& plan_items) {
    json items = json::array();
    std::size_t done = 0;
    for (const json& pj : plan_items) items.push_back(measure_item(pj, ++done, plan_items.size()));
    return items;
  }

  // The context trials: passes of the program back to back, the trial edges marked on the stream
  // and the energy counter read as each edge passes; then the figures per pass into `cx`.
  void context_trials(json& cx, const json& cp, const ContextProgram& c) {
    using clk = std::chrono::steady_clock;
    jouleprof::replay::EdgePoller edges(dev, meter);  // the counter at the trial edges, the sample ring
    double last_poll = meter.now();
    // One pass: each step launched delta after the previous launch (the host spins), at once
    // when the host is behind.
    auto pass = [&] {
      auto prev = clk::now();
      for (const auto& stp : c.steps) {
        const auto at = prev + std::chrono::nanoseconds(stp.delta_ns);
        auto now = clk::now();
        while (now < at) now = clk::now();
        dev.call_unit(stp.unit);
        prev = now;
        if (meter.now() - last_poll > 0.001) {
          edges.poll();
          last_poll = meter.now();
        }
      }
    };
    auto run_for = [&](double seconds) {
      int n = 0;
      const auto end = clk::now() + std::chrono::duration<double>(seconds);
      while (n == 0 || clk::now() < end) {
        pass();
        ++n;
      }
      return n;
    };
    const int ctrials = cp.value("trials", 3);
    const double ctrial_s = cp.value("trial_s", 1.0);
    run_for(s.settle_s);
    dev.synchronize();
    meter.drain();
    const auto temp = meter.read(Metric::temperature_c);
    const double t_host0 = meter.now();
    dev.mark(0);
    edges.marked(0);
    std::vector<int> passes;
    for (int k = 0; k < ctrials; ++k) {
      passes.push_back(run_for(ctrial_s));
      dev.mark(k + 1);
      edges.marked(k + 1);
    }
    run_for(0.05);  // a tail, so the last edge's counter read falls inside the same work
    while (!edges.all_read()) {
      edges.poll();
      sleep_s(0.0002);
    }
    dev.synchronize();
    sleep_s(0.06);
    meter.drain();
    context_figures(cx, cp, passes, edges.reads(0, t_host0), temp);
  }

  // Time and energy per pass from the trials that had power samples (the counter as a cross-check).
  void context_figures(json& cx, const json& cp, const std::vector<int>& passes, const std::vector<jouleprof::replay::EdgeRead>& reads,
                       std::optional<double> temp) {
    const auto counter = jouleprof::replay::counter_trials(reads, rules);
    std::vector<double> pass_ns, pass_j, power, counter_w;
    for (std::size_t k = 0; k < passes.size(); ++k) {
      const double a = reads[k].edge_s, b = reads[k + 1].edge_s;
      const double t = dev.elapsed_ms(static_cast<int>(k), static_cast<int>(k) + 1) * 1e6 / passes[k];
      const auto [pw, ns] = meter.mean_power(a + kSkipS, b - kSkipS);
      if (ns == 0) continue;
      pass_ns.push_back(t);
      power.push_back(pw);
      pass_j.push_back(pw * t * 1e-9);
      counter_w.push_back(counter.power_w[k]);
    }
    if (auto cuda_err = dev.error(); !cuda_err.empty() || pass_j.size() < 2) {
      cx["status"] = "skipped";
      cx["reason"] = !cuda_err.empty() ? "CUDA error: " + cuda_err : "fewer than two trials had power samples";
      return;
    }
    const Stat t = stat(pass_ns), e = stat(pass_j), pw = stat(power);
    cx.update({{"status", "ok"}, {"passes", passes}, {"pass_time_ns", t.mean}, {"pass_time_ns_half_width", t.half_width},
               {"pass_energy_j", e.mean}, {"pass_energy_j_half_width", e.half_width}, {"power_w", pw.mean}, {"trial_power_w", power},
               {"trial_pass_energy_j", pass_j}});
    if (temp) cx["temperature_c"] = *temp;
    put_counter(cx, counter_w, t.mean, counter.late_reads, counter.max_late_s, counter.dropped_because);
    progress(fmt::format("context: pass {:.2f} ms (traced {:.2f} ms), {:.3f} J, {:.1f} W", t.mean / 1e6, cp.value("traced_span_ns", 0.0) / 1e6,
                         e.mean, pw.mean));
  }

  // The context replay: the trace's own sequence re-launched from the host at the traced
  // start-to-start times (so the gaps, the launch traffic and the host-bound stretches are as in
  // the traced program), repeated for trials of ≥ context trial_s; energy per pass from the power
  // samples, as for the items.
  json context(const json& cp) {
    json cx = {{"traced_span_ns", cp.value("traced_span_ns", 0.0)}};
    ContextProgram c = context_program(cp);
    std::vector<std::string> why;
    progress(fmt::format("context: {} activities of {} rows", c.steps.size(), c.units.size()));
    const std::string seq_err = dev.prepare_units(c.units, why);
    context_counts(cx, c, why);
    if (!seq_err.empty()) {
      cx["status"] = "skipped";
      cx["reason"] = seq_err;
    } else {
      context_trials(cx, cp, c);
    }
    return cx;
  }
};

// The plan, or exit code 2 with the reason.
std::optional<json> read_plan(const char* path) {
  try {
    std::ifstream in(path);
    return json::parse(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jouleprof-replay: error: cannot read the plan %s: %s\n", path, e.what());
    return std::nullopt;
  }
}

}  // namespace

// --check PLAN.json: each item built and run once (no sensor, no measurement), one line per item
// saying which path ran (cuDNN's SDPA and its engine config, a stand-in and why, or why it was
// skipped) and its time per call. Exit 1 when an item was skipped or stood in for its tier.
int check(const json& plan) {
  std::string err;
  auto dev = Device::open(err);
  if (!dev) {
    std::fprintf(stderr, "jouleprof-replay: error: %s\n", err.c_str());
    return 3;
  }
  const char* lib = std::getenv("JOULEPROF_CUDNN_LIB");
  std::printf("check on %s, cuDNN %s\n", dev->name().c_str(), lib != nullptr ? lib : "libcudnn.so.9 (JOULEPROF_CUDNN_LIB unset)");
  int bad = 0;
  for (const json& pj : plan.value("items", json::array())) {
    const Item item = item_of(pj);
    const std::string why = dev->prepare(item, 20);
    std::string path = !why.empty() ? "skipped: " + why : !dev->fallback().empty() ? dev->fallback() : item.tier;
    if (why.empty() && item.tier == "attention" && dev->fallback().empty()) path = "cuDNN SDPA, " + dev->sdpa_engine();
    double ms = 0;
    if (why.empty()) {
      dev->mark(0);
      dev->launch(2);
      dev->mark(1);
      dev->synchronize();
      ms = dev->elapsed_ms(0, 1) / 2.0 / dev->reps();
    }
    const std::string cuda = dev->error();
    bad += !why.empty() || !dev->fallback().empty() || !cuda.empty();
    std::printf("row %d %s: %s; %.4f ms per call%s\n", pj.value("row", -1), item.tier.c_str(), path.c_str(), ms,
                cuda.empty() ? "" : ("; CUDA error: " + cuda).c_str());
    std::fflush(stdout);
  }
  std::printf("cuDNN version %s\n", dev->cudnn_version().empty() ? "unknown (not opened)" : dev->cudnn_version().c_str());
  dev->release();
  return bad == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--check") {
    std::optional<json> plan = read_plan(argv[2]);
    return plan ? check(*plan) : 2;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: jouleprof-replay PLAN.json OUT.json | jouleprof-replay --check PLAN.json\n");
    return 2;
  }
  std::optional<json> plan_read = read_plan(argv[1]);
  if (!plan_read) return 2;
  json& plan = *plan_read;  // not const: a missing "items" reads as an empty list
  const Settings settings = Settings::of(plan);

  std::string err;
  auto dev = Device::open(err);
  if (!dev) {
    std::fprintf(stderr, "jouleprof-replay: error: %s\n", err.c_str());
    return 3;
  }
  TimeBase tb;
  GpuSelection sel;
  sel.backend = plan.value("sensor", "nvml");
  if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES")) sel.cuda_visible_devices = cvd;
  auto gpus = open_gpus(sel, tb);
  if (!gpus || gpus->gpus.empty()) {
    std::fprintf(stderr, "jouleprof-replay: error: no GPU sensor: %s\n", gpus ? "no GPU" : gpus.error().message.c_str());
    return 3;
  }
  // The sensor of the CUDA device replayed on (its UUID), not the first listed: on a node of
  // several GPUs the two orders can differ.
  std::string sensor_warning;
  GpuSensor& sensor = *gpus->gpus[sensor_of_cuda_device(*gpus, 0, dev->uuid(), sensor_warning)];
  if (!sensor_warning.empty()) std::fprintf(stderr, "jouleprof-replay: warning: %s\n", sensor_warning.c_str());
  if (!sensor.supports(Metric::power_sample_w)) {
    std::fprintf(stderr, "jouleprof-replay: error: the GPU's driver gives no power samples\n");
    return 3;
  }
  Meter meter(sensor, tb);
  json out = {{"schema", "jouleprof.replay_measurements"}, {"schema_version", 1}, {"gpu", dev->name()}, {"sensor_gpu", sensor.info().name},
              {"sensor_gpu_uuid", sensor.info().uuid},
              {"trials", settings.trials}, {"trial_s", settings.trial_s}, {"settle_s", settings.settle_s}};
  Engine engine{*dev, meter, settings, {}};

  // 1. Deep idle, warm-up, then the clocked-up idle power of the gaps.
  const double idle_w = engine.measure_idle(out);
  engine.warm_up(out);
  out["temperature_after_warmup_c"] = meter.read(Metric::temperature_c).value_or(std::nan(""));
  const double gap_w = engine.measure_gaps(out);
  Engine::progress(fmt::format("idle {:.1f} W, gaps {:.1f} W, {} items", idle_w, gap_w, plan["items"].size()));
  // 2. The items.
  out["items"] = engine.measure_items(plan["items"]);
  // 3. The context replay.
  if (plan.contains("context")) out["context"] = engine.context(plan["context"]);
  dev->release();
  if (plan.contains("not_replayed")) out["not_replayed"] = plan["not_replayed"];
  out["temperature_end_c"] = meter.read(Metric::temperature_c).value_or(std::nan(""));
  std::ofstream o(argv[2]);
  o << out.dump(1) << "\n";
  if (!o) {
    std::fprintf(stderr, "jouleprof-replay: error: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
