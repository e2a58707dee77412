// build_trace_profile in stages: classify → per-GPU input → sensor fit → each registered method →
// tables (attribution_tables.cpp), for each GPU of a placed trace (place_trace: alignment and NVTX
// ranges, done once when the run is traced).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <nlohmann/json.hpp>
#include <re2/re2.h>
#include <unordered_map>

#include "attribution_stages.hpp"
#include "jouleprof/analysis/attribution_replay.hpp"
#include "jouleprof/analysis/trace_profile.hpp"
#include "jouleprof/trace/format.hpp"

namespace jouleprof {
namespace {

const std::vector<std::string>& class_order() {
  static const std::vector<std::string> c = {"gemm",      "attention", "normalization", "elementwise",
                                             "reduction", "copy",      "communication", "other"};
  return c;
}

}  // namespace

// Module paths come from traces and may be any length: RE2 matches in linear time without recursion
// (std::regex recursed per character and overflowed the stack on long paths).
std::string layer_of_path(const std::string& path) {
  static const RE2 re(R"((?:^|[/.])(?:layers?|h|blocks?)\.(\d+)(?:$|[/.]))");
  std::string index;
  if (RE2::PartialMatch(path, re, &index)) return "layers." + index;
  return "";
}

std::string component_of_path(const std::string& path) {
  // The innermost recognisable module name decides (…/self_attn/q_proj → attention).
  static const std::vector<std::pair<std::string, std::unique_ptr<const RE2>>> rules = [] {
    std::vector<std::pair<std::string, std::unique_ptr<const RE2>>> r;
    const std::pair<const char*, const char*> table[] = {
        {"attention", "attn|attention"},         {"mlp", "mlp|feed_?forward|ffn"},
        {"norm", "norm|ln_"},                    {"embedding", "embed|wte|wpe"},
        {"lm_head", "lm_head|output_layer|classifier"},
    };
    for (const auto& [name, pattern] : table) r.emplace_back(name, std::make_unique<const RE2>(std::string("(?i)") + pattern));
    return r;
  }();
  std::string best = "";
  std::size_t best_pos = 0;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const re2::StringPiece seg(path.data() + start, end - start);
    for (const auto& [name, re] : rules) {
      if (RE2::PartialMatch(seg, *re) && (best.empty() || start >= best_pos)) {
        best = name;
        best_pos = start;
        break;
      }
    }
    start = end + 1;
  }
  return best.empty() ? (path.empty() ? "" : "other") : best;
}

void place_trace(const Measurement& m, TraceData& t) {
  align_trace(t, m.origin_realtime_ns, m.time_calibrations);
  assign_ranges(t);
}

int measured_gpu(const Measurement& m, const TraceData& t, const Activity& a) {
  if (!a.on_gpu()) return -1;
  const ProcessTrace& pr = t.processes[static_cast<std::size_t>(a.process)];
  auto u = pr.device_uuids.find(a.device);
  if (u != pr.device_uuids.end()) {
    for (std::size_t g = 0; g < m.gpus.size(); ++g) {
      if (m.gpus[g].uuid == u->second) return static_cast<int>(g);
    }
    return -1;
  }
  return a.device < m.gpus.size() ? static_cast<int>(a.device) : -1;
}

namespace {

void describe_processes(const TraceData& t, TraceProfile& p) {
  p.warnings = t.warnings;
  for (const ProcessTrace& pr : t.processes) {
    TraceProfile::Process x;
    x.pid = pr.pid;
    x.ppid = pr.ppid;
    for (const auto& a : pr.command) x.command += (x.command.empty() ? "" : " ") + a;
    x.records = pr.records;
    x.dropped = pr.dropped;
    x.ended = pr.ended;
    x.signal = pr.signal;
    x.damage = pr.damage;
    x.records_stopped = pr.records_stopped;
    x.clock_offset_start_ns = pr.clock_offset_start_ns;
    x.clock_offset_end_ns = pr.clock_offset_end_ns;
    x.clock_drift_ppm = pr.clock_drift_ppm;
    p.processes.push_back(std::move(x));
  }
  p.range_assignment = t.range_assignment;
  const auto& ra = t.range_assignment;
  if (ra.checked > 0 && ra.agreed < ra.checked) {
    p.warnings.push_back("NVTX anchors placed " + std::to_string(ra.checked - ra.agreed) + " of " + std::to_string(ra.checked) +
                         " activities in another range than their launch records did (ranges on another thread than the launches?)");
  }
  p.activities = t.activities.size();
  p.dropped = t.dropped();
  p.complete = t.complete();
}

// Stage 1: classes, cached by name (a regular expression per rule per name is not cheap).
void classify(TraceData& t, const KernelClassifier& classes) {
  std::unordered_map<std::string, std::string> class_cache;
  for (Activity& a : t.activities) {
    if (!a.on_gpu()) continue;
    auto it = class_cache.find(a.name);
    if (it == class_cache.end()) it = class_cache.emplace(a.name, classes.classify(a.name)).first;
    a.kclass = it->second;
  }
}

// Phases from the measurement's marker windows, summed by name.
detail::PhaseIndex collect_phases(const Measurement& m, TraceProfile& p) {
  detail::PhaseIndex ix;
  std::map<std::string, PhaseEnergy> phases;
  for (const WindowResult& w : m.windows) {
    if (w.kind != "phase") continue;
    ix.windows.push_back(&w);
    PhaseEnergy& e = phases[w.name];
    e.name = w.name;
    e.duration_s += w.duration_s();
    e.energy_j += w.gpu_energy_j;
    e.above_idle_j += w.gpu_above_idle_j.value_or(0);
    if (!w.gpus.empty()) e.method = w.gpus.front().method;
    for (const auto& [k, v] : w.counts) e.counts[k] += v;
  }
  for (auto& [name, e] : phases) {
    auto tok = e.counts.find("tokens");
    if (tok != e.counts.end() && tok->second > 0) e.energy_per_token_j = e.energy_j / tok->second;
    p.phases.push_back(e);
  }
  std::sort(ix.windows.begin(), ix.windows.end(), [](auto* a, auto* b) { return a->t0_s < b->t0_s; });
  return ix;
}

std::vector<std::vector<std::size_t>> activities_per_gpu(const Measurement& m, const TraceData& t, TraceProfile& p) {
  std::size_t unmapped = 0;
  std::vector<std::vector<std::size_t>> per_gpu(m.gpus.size());
  for (std::size_t i = 0; i < t.activities.size(); ++i) {
    const Activity& a = t.activities[i];
    if (!a.on_gpu()) continue;
    const int g = measured_gpu(m, t, a);
    if (g < 0) {
      ++unmapped;
      continue;
    }
    per_gpu[static_cast<std::size_t>(g)].push_back(i);
  }
  if (unmapped > 0) p.warnings.push_back(fmt::format("{} activities ran on GPUs that were not measured (not attributed)", unmapped));
  return per_gpu;
}

// Stage 2: one GPU's input to the methods (its activities with their classes, its power samples,
// idle, power limit, replay figures), and its sampling period: the tables' resolution. nullopt
// where the GPU has no power timeline (warned).
struct GpuInput {
  AttributionInput per_activity;
  std::vector<std::size_t> activity_class;
  double period_s = 0.02;
};

std::optional<GpuInput> gpu_input(const Measurement& m, const WindowResult& run, std::size_t g, const TraceData& t,
                                  const std::vector<std::size_t>& idx, const TraceProfileOptions& o, GpuProfile& gp, TraceProfile& p) {
  const auto& cls = class_order();
  for (std::size_t i : idx) {
    const Activity& a = t.activities[i];
    if (std::find(gp.cuda_devices.begin(), gp.cuda_devices.end(), a.device) == gp.cuda_devices.end()) gp.cuda_devices.push_back(a.device);
    (a.kind == Activity::Kind::kernel ? gp.kernels : gp.copies) += 1;
    gp.busy_s += a.duration_s();
  }
  std::vector<Sample> power;
  if (g < m.timelines.size() && m.timelines[g]) {
    power = m.timelines[g]->series[static_cast<std::size_t>(Metric::power_sample_w)].all();
    if (power.empty()) power = m.timelines[g]->series[static_cast<std::size_t>(Metric::power_instant_w)].all();
  }
  if (g >= run.gpus.size() || power.empty()) {
    p.warnings.push_back(fmt::format("GPU {}: no power timeline: nothing attributed", m.gpus[g].index));
    return std::nullopt;
  }
  const GpuEnergy& ge = run.gpus[g];
  gp.measured_method = ge.method;
  std::optional<double> idle = g < m.gpu_state.size() ? m.gpu_state[g].idle_power_w : std::nullopt;
  if (!idle) idle = ge.idle_power_w;
  if (!idle) p.warnings.push_back(fmt::format("GPU {}: no idle baseline (--idle 0?): idle/static energy taken as 0", m.gpus[g].index));
  gp.idle_w = idle.value_or(0);
  gp.power_limit_w = g < m.gpu_state.size() && m.gpu_state[g].power_limit_w ? m.gpu_state[g].power_limit_w : m.gpus[g].power_limit_w;
  GpuInput x;
  if (power.size() > 2) x.period_s = (power.back().t_s - power.front().t_s) / static_cast<double>(power.size() - 1);
  AttributionInput& in = x.per_activity;
  in.power = std::move(power);
  in.t0_s = run.t0_s;
  in.t1_s = run.t1_s;
  in.measured_j = ge.energy_j;
  in.measured_method = ge.method;
  in.idle_w = gp.idle_w;
  in.sensor = o.sensor;
  in.min_interval_s = o.min_interval_s;
  in.power_limit_w = gp.power_limit_w;
  in.items = idx.size();
  in.groups = cls.size();
  in.group_names = cls;
  x.activity_class.resize(idx.size());
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const Activity& a = t.activities[idx[k]];
    const std::string& kc = a.kclass;
    auto c = std::find(cls.begin(), cls.end(), kc);
    x.activity_class[k] = c != cls.end() ? static_cast<std::size_t>(c - cls.begin()) : cls.size() - 1;
    in.busy.push_back({std::max(a.t0_s, run.t0_s), std::min(a.t1_s, run.t1_s), k, x.activity_class[k]});
  }
  return x;
}

// The replay's figure per activity (its kernel's energy per call above idle); refused where the
// replay ran on another GPU model or matches none of the run's kernels, marked where its board,
// driver or clock differ from the run's.
Result<void> add_replay_figures(const ReplayReference& r, const Measurement& m, std::size_t g, const TraceData& t,
                                const std::vector<std::size_t>& idx, AttributionInput& in, GpuProfile& gp) {
  const GpuInfo& info = m.gpus[g];
  if (!r.gpu.empty() && !info.name.empty() && r.gpu != info.name) {
    return make_error(Errc::invalid_argument, fmt::format("the replay {} ran on {}, the run on {}: replay the run's kernels on its GPU", r.source, r.gpu, info.name));
  }
  if (!r.gpu_uuid.empty() && !info.uuid.empty() && r.gpu_uuid != info.uuid) {
    gp.replay_marks.push_back(fmt::format("the replay ran on another board of this model ({}, the run on {}): boards can differ by several "
                                          "percent, more on memory-bound kernels (docs/validation/replay.md)", r.gpu_uuid, info.uuid));
  }
  if (!r.driver.empty() && !info.driver_version.empty() && r.driver != info.driver_version) {
    gp.replay_marks.push_back(fmt::format("the replay ran under driver {}, the run under {}", r.driver, info.driver_version));
  }
  const auto clock = g < m.gpu_state.size() ? m.gpu_state[g].sm_clock_max_mhz : std::nullopt;
  if (r.sm_clock_mhz && clock && std::fabs(*r.sm_clock_mhz - *clock) > 0.05 * *clock) {
    gp.replay_marks.push_back(fmt::format("the replay ran at {:.0f} MHz, the run at up to {:.0f} MHz", *r.sm_clock_mhz, *clock));
  }
  in.reference_j.assign(idx.size(), NAN);
  in.reference_half_width_j.assign(idx.size(), 0.0);
  std::size_t matched = 0;
  double busy = 0, busy_matched = 0;
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const Activity& a = t.activities[idx[k]];
    busy += a.duration_s();
    if (const auto x = match_replay(r, a.name, a.grid, a.block)) {
      in.reference_j[k] = x->above_idle_j;
      in.reference_half_width_j[k] = x->half_width_j;
      busy_matched += a.duration_s();
      ++matched;
    }
  }
  if (matched == 0 && !idx.empty()) {
    return make_error(Errc::invalid_argument, "the replay " + r.source + " has no measured row for any kernel of this run (another model or run?)");
  }
  gp.replay_source = r.source;
  gp.replay_unmatched_share = busy > 0 ? 1 - busy_matched / busy : 0;
  if (busy > 0 && busy_matched < 0.5 * busy) {
    gp.replay_marks.push_back(fmt::format("the replay covers only {:.0f}% of the run's busy time (another model or run?)", 100 * busy_matched / busy));
  }
  return {};
}

// Stage 3 and 4: the sensor model, then every registered method that applies.
std::vector<Attribution> attribute_gpu(AttributionInput& per_act, const TraceProfileOptions& o, GpuProfile& gp) {
  // Fitted, or as given with the residuals of it and of the default.
  gp.sensor = o.fit_sensor ? fit_sensor_model(per_act) : evaluate_sensor_model(per_act, SensorModel{});
  per_act.sensor = gp.sensor.model;
  AttributionInput per_class = per_act;
  per_class.items = per_act.groups;
  for (BusyInterval& b : per_class.busy) b.item = b.group;
  per_class.reference_j.clear();
  per_class.reference_half_width_j.clear();
  return run_attribution_methods(per_act, per_class);
}

void finish_warnings(const TraceData& t, TraceProfile& p) {
  if (p.dropped > 0) p.warnings.push_back(fmt::format("CUPTI dropped {} activity records: kernel energies are incomplete", p.dropped));
  if (t.activities.empty()) p.warnings.push_back("no CUDA activity was recorded (does the program use the GPU?)");
  std::size_t graph_launches = 0;
  std::set<uint32_t> graphs;
  for (const Activity& a : t.activities) {
    if (a.kind != Activity::Kind::kernel || a.graph_id == 0 || a.name.str().rfind(trace_format::kGraphRecordPrefix, 0) != 0) continue;
    ++graph_launches;
    graphs.insert(a.graph_id);
  }
  if (graph_launches > 0) {
    const bool replayed = std::any_of(p.gpus.begin(), p.gpus.end(), [](const GpuProfile& g) { return !g.replay_source.empty(); });
    p.warnings.push_back(fmt::format("{} launches of {} CUDA graph{} recorded whole, one record each: their kernels are not listed "
                                     "one by one{} (`--cuda-graph-trace node` lists them, at ~0.3 us more per node and launch)",
                                     graph_launches, graphs.size(), graphs.size() == 1 ? "" : "s",
                                     replayed ? ", and the replay's rows cannot split them" : ""));
  }
  if (t.processes.empty()) {
    p.warnings.push_back("no traced process: the command never initialised CUDA (or CUDA_INJECTION64_PATH was not honoured)");
    p.complete = false;
  }
  // Each warning once: a trace read back from the store carries the warnings of its first
  // analysis, and this analysis gives its own again (none depends on the options).
  std::vector<std::string> once;
  for (std::string& w : p.warnings) {
    if (std::find(once.begin(), once.end(), w) == once.end()) once.push_back(std::move(w));
  }
  p.warnings = std::move(once);
}

}  // namespace

std::string detail::PhaseIndex::of(const Activity& a) const {
  if (!a.phase.empty()) return a.phase;
  if (const std::string_view ph = phase_in_path(a.path); !ph.empty()) return std::string(ph);
  auto it = std::upper_bound(windows.begin(), windows.end(), a.t0_s, [](double at, auto* w) { return at < w->t0_s; });
  for (int k = 0; k < 64 && it != windows.begin(); ++k) {
    --it;
    if ((*it)->t1_s >= a.t0_s) return (*it)->name;
  }
  return "(none)";
}

Result<TraceProfile> build_trace_profile(const Measurement& m, TraceData& t, const KernelClassifier& classes,
                                         const TraceProfileOptions& o) {
  const std::string table_name = !o.method.empty() ? o.method : o.replay != nullptr ? "replay" : "split";
  if (!make_attribution_method(table_name)) {
    return make_error(Errc::invalid_argument, "unknown attribution method '" + table_name + "' (" + attribution_method_choices() + ")");
  }
  if (table_name == "replay" && o.replay == nullptr) {
    return make_error(Errc::invalid_argument, "the replay method needs the run's kernels replayed (--replay FILE)");
  }
  const WindowResult* run = nullptr;
  for (const WindowResult& w : m.windows) {
    if (w.kind == "run") {
      run = &w;
      break;
    }
  }
  if (run == nullptr) return make_error(Errc::invalid_argument, "the measurement has no run window to attribute");
  TraceProfile p;
  describe_processes(t, p);
  classify(t, classes);
  std::vector<std::size_t> row_of;
  p.kernels = unique_kernels(t, &row_of);
  std::vector<double> row_energy(p.kernels.size(), 0.0);
  const detail::PhaseIndex phases = collect_phases(m, p);
  const auto per_gpu = activities_per_gpu(m, t, p);
  bool table_per_activity = true;
  // Nothing traced, nothing attributed: no per-GPU books (a fit to no kernels gave a negative
  // "unattributed" row; issue 35 item 7). The warning says why.
  for (std::size_t g = 0; g < m.gpus.size() && !t.activities.empty(); ++g) {
    GpuProfile gp;
    gp.gpu = static_cast<int>(g);
    gp.uuid = m.gpus[g].uuid;
    gp.window_t0_s = run->t0_s;
    gp.window_t1_s = run->t1_s;
    gp.table_method = table_name;
    auto in = gpu_input(m, *run, g, t, per_gpu[g], o, gp, p);
    if (!in) {
      p.gpus.push_back(std::move(gp));
      continue;
    }
    if (o.replay != nullptr) {
      if (auto r = add_replay_figures(*o.replay, m, g, t, per_gpu[g], in->per_activity, gp); !r) return r.error();
      for (const std::string& mark : gp.replay_marks) p.warnings.push_back(fmt::format("GPU {}: {}", m.gpus[g].index, mark));
    }
    const std::vector<Attribution> results = attribute_gpu(in->per_activity, o, gp);
    std::size_t table = 0;
    while (table < results.size() && results[table].method != table_name) ++table;
    if (table == results.size()) return make_error(Errc::invalid_argument, "the " + table_name + " method does not apply to this run");
    table_per_activity = results[table].granularity == Granularity::activity;
    if (results[table].scale) gp.replay_scale = results[table].scale;
    detail::TableInput ti;
    ti.trace = &t;
    ti.activities = &per_gpu[g];
    ti.activity_class = &in->activity_class;
    ti.classes = &class_order();
    ti.phases = &phases;
    ti.path_depth = o.path_depth;
    ti.below_s = 5 * in->period_s;
    ti.cap_w = gp.power_limit_w ? std::max(0.0, *gp.power_limit_w - gp.idle_w) : 0;
    detail::build_tables(gp, results, table, ti, row_of, row_energy);
    p.gpus.push_back(std::move(gp));
  }
  if (table_per_activity) {
    for (std::size_t r = 0; r < p.kernels.size(); ++r) {
      p.kernels[r].energy_j = row_energy[r];
      p.kernels[r].method = table_name;
    }
  }
  finish_warnings(t, p);
  return p;
}

void detail::write_profile(Measurement& m, const TraceData& t, const TraceProfile& p) {
  if (!p.complete && m.complete) {
    m.complete = false;
    m.incomplete_reason = t.processes.empty()
                              ? "nothing was traced (the command never initialised CUDA)"
                              : "trace incomplete (a process was killed, its file damaged, or records dropped)";
  }
  m.sections["trace"] = trace_profile_json(p);
  for (const std::string& w : p.warnings) m.warnings.push_back("trace: " + w);
}

Result<TraceProfile> analyze_trace(Measurement& m, TraceData& t, const KernelClassifier& classes, const TraceProfileOptions& o) {
  auto profile = build_trace_profile(m, t, classes, o);
  if (!profile) return profile;
  detail::write_profile(m, t, *profile);
  return profile;
}

}  // namespace jouleprof
