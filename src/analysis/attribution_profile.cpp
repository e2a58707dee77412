// build_trace_profile: classes, groupings and the three attribution methods per GPU of a placed
// trace (place_trace: alignment and NVTX ranges, done once when the run is traced).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <unordered_map>

#include "jouleprof/analysis/trace_section.hpp"
#include "jouleprof/analysis/trace_profile.hpp"

namespace jouleprof {
namespace {

const std::vector<std::string>& class_order() {
  static const std::vector<std::string> c = {"gemm",      "attention", "normalization", "elementwise",
                                             "reduction", "copy",      "communication", "other"};
  return c;
}

std::vector<GroupRow> rows_from(const std::unordered_map<std::string, GroupRow>& m, double below_s) {
  std::vector<GroupRow> rows;
  double total = 0;
  for (const auto& [k, r] : m) total += r.energy_j;
  for (const auto& [k, r] : m) {
    GroupRow x = r;
    x.key = k;
    x.share = total != 0 ? x.energy_j / total : 0;
    x.mean_power_w = x.busy_s > 0 ? x.energy_j / x.busy_s : 0;
    x.below_resolution = x.busy_s < below_s;
    rows.push_back(std::move(x));
  }
  std::sort(rows.begin(), rows.end(), [](const GroupRow& a, const GroupRow& b) {
    return a.energy_j != b.energy_j ? a.energy_j > b.energy_j : a.key < b.key;
  });
  return rows;
}

std::string truncate_path(const std::string& p, std::size_t depth) {
  if (depth == 0) return p;
  std::size_t pos = 0;
  for (std::size_t d = 0; d < depth; ++d) {
    pos = p.find('/', pos);
    if (pos == std::string::npos) return p;
    if (d + 1 < depth) ++pos;
  }
  return p.substr(0, pos);
}

}  // namespace

std::string layer_of_path(const std::string& path) {
  static const std::regex re(R"((?:^|[/.])(layers?|h|blocks?)\.(\d+)(?:$|[/.]))");
  std::smatch m;
  if (std::regex_search(path, m, re)) return "layers." + m[2].str();
  return "";
}

std::string component_of_path(const std::string& path) {
  // The innermost recognisable module name decides (…/self_attn/q_proj → attention).
  static const std::vector<std::pair<std::string, std::regex>> rules = {
      {"attention", std::regex("attn|attention", std::regex::icase)},
      {"mlp", std::regex("mlp|feed_?forward|ffn", std::regex::icase)},
      {"norm", std::regex("norm|ln_", std::regex::icase)},
      {"embedding", std::regex("embed|wte|wpe", std::regex::icase)},
      {"lm_head", std::regex("lm_head|output_layer|classifier", std::regex::icase)},
  };
  std::string best = "";
  std::size_t best_pos = 0;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string seg = path.substr(start, end - start);
    for (const auto& [name, re] : rules) {
      if (std::regex_search(seg, re) && (best.empty() || start >= best_pos)) {
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

Result<TraceProfile> build_trace_profile(const Measurement& m, TraceData& t, const KernelClassifier& classes,
                                         const TraceProfileOptions& o) {
  auto table_method = make_attribution_method(o.method);
  if (!table_method) {
    return make_error(Errc::invalid_argument, "unknown attribution method '" + o.method + "' (interval, split or regression)");
  }
  TraceProfile p;
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
  // Classes, cached by name (a regular expression per rule per name is not cheap).
  std::unordered_map<std::string, std::string> class_cache;
  for (Activity& a : t.activities) {
    if (!a.on_gpu()) continue;
    auto it = class_cache.find(a.name);
    if (it == class_cache.end()) it = class_cache.emplace(a.name, classes.classify(a.name)).first;
    a.kclass = it->second;
  }
  std::vector<std::size_t> row_of;
  p.kernels = unique_kernels(t, &row_of);
  std::vector<double> row_energy(p.kernels.size(), 0.0);

  // Phases from the measurement's marker windows.
  std::vector<const WindowResult*> phase_windows;
  std::map<std::string, PhaseEnergy> phases;
  for (const WindowResult& w : m.windows) {
    if (w.kind != "phase") continue;
    phase_windows.push_back(&w);
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
  std::sort(phase_windows.begin(), phase_windows.end(), [](auto* a, auto* b) { return a->t0_s < b->t0_s; });
  auto phase_of = [&](const Activity& a) -> std::string {
    if (!a.phase.empty()) return a.phase;
    if (const std::string_view ph = phase_in_path(a.path); !ph.empty()) return std::string(ph);
    auto it = std::upper_bound(phase_windows.begin(), phase_windows.end(), a.t0_s, [](double at, auto* w) { return at < w->t0_s; });
    for (int k = 0; k < 64 && it != phase_windows.begin(); ++k) {
      --it;
      if ((*it)->t1_s >= a.t0_s) return (*it)->name;
    }
    return "(none)";
  };

  const WindowResult* run = nullptr;
  for (const WindowResult& w : m.windows) {
    if (w.kind == "run") {
      run = &w;
      break;
    }
  }
  if (run == nullptr) return make_error(Errc::invalid_argument, "the measurement has no run window to attribute");

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

  const auto& cls = class_order();
  auto class_index = [&](const std::string& c) {
    auto it = std::find(cls.begin(), cls.end(), c);
    return it != cls.end() ? static_cast<std::size_t>(it - cls.begin()) : cls.size() - 1;
  };
  // Nothing traced, nothing attributed: no per-GPU books (a fit to no kernels gave a negative
  // "unattributed" row; issue 35 item 7). The warning below says why.
  for (std::size_t g = 0; g < m.gpus.size() && !t.activities.empty(); ++g) {
    GpuProfile gp;
    gp.gpu = static_cast<int>(g);
    gp.uuid = m.gpus[g].uuid;
    gp.window_t0_s = run->t0_s;
    gp.window_t1_s = run->t1_s;
    gp.table_method = o.method;
    const auto& idx = per_gpu[g];
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
    if (g >= run->gpus.size() || power.empty()) {
      p.warnings.push_back(fmt::format("GPU {}: no power timeline: nothing attributed", m.gpus[g].index));
      p.gpus.push_back(std::move(gp));
      continue;
    }
    const GpuEnergy& ge = run->gpus[g];
    gp.measured_method = ge.method;
    std::optional<double> idle = g < m.gpu_state.size() ? m.gpu_state[g].idle_power_w : std::nullopt;
    if (!idle) idle = ge.idle_power_w;
    if (!idle) p.warnings.push_back(fmt::format("GPU {}: no idle baseline (--idle 0?): idle/static energy taken as 0", m.gpus[g].index));
    gp.idle_w = idle.value_or(0);
    // Sampling period of this timeline: the resolution limit for the tables.
    double period = 0.02;
    if (power.size() > 2) period = (power.back().t_s - power.front().t_s) / static_cast<double>(power.size() - 1);
    const double below_s = 5 * period;

    AttributionInput per_act;
    per_act.power = power;
    per_act.t0_s = run->t0_s;
    per_act.t1_s = run->t1_s;
    per_act.measured_j = ge.energy_j;
    per_act.measured_method = ge.method;
    per_act.idle_w = gp.idle_w;
    per_act.sensor = o.sensor;
    per_act.min_interval_s = o.min_interval_s;
    per_act.items = idx.size();
    per_act.groups = cls.size();
    per_act.group_names = cls;
    std::vector<std::size_t> act_class(idx.size());
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const Activity& a = t.activities[idx[k]];
      act_class[k] = class_index(a.kclass);
      per_act.busy.push_back({std::max(a.t0_s, run->t0_s), std::min(a.t1_s, run->t1_s), k, act_class[k]});
    }
    // Fitted, or as given with the residuals of it and of the default.
    gp.sensor = o.fit_sensor ? fit_sensor_model(per_act) : evaluate_sensor_model(per_act, SensorModel{});
    per_act.sensor = gp.sensor.model;
    AttributionInput per_class = per_act;
    per_class.items = cls.size();
    for (BusyInterval& b : per_class.busy) b.item = b.group;

    for (const std::string& name : attribution_method_names()) {
      auto method = make_attribution_method(name);
      const bool by_class_items = name == "interval";
      const Attribution at = method->attribute(by_class_items ? per_class : per_act);
      MethodBooks mb;
      mb.method = name;
      mb.measured_j = at.measured_j;
      mb.timeline_j = at.timeline_j;
      mb.idle_j = at.idle_j;
      mb.attributed_j = at.attributed_j;
      mb.unattributed_j = at.unattributed_j;
      mb.intercept_w = at.intercept_w;
      mb.r_squared = at.r_squared;
      mb.notes = at.notes;
      std::unordered_map<std::string, GroupRow> by_class;
      for (std::size_t c = 0; c < cls.size(); ++c) {
        for (std::size_t k = 0; k < idx.size(); ++k) {
          if (act_class[k] != c) continue;
          GroupRow& r = by_class[cls[c]];
          r.busy_s += t.activities[idx[k]].duration_s();
          ++r.count;
          if (!by_class_items) {
            r.energy_j += at.item_j[k];
            r.uncertainty_j += at.item_uncertainty_j[k];
          }
        }
        if (by_class_items && by_class.count(cls[c]) != 0) by_class[cls[c]].energy_j = at.item_j[c];
      }
      mb.by_class = rows_from(by_class, below_s);
      for (std::size_t c = 0; c < at.groups.size() && c < cls.size(); ++c) {
        if (at.groups[c].busy_s > 0) mb.class_fits[cls[c]] = at.groups[c];
      }
      if (name == o.method) {
        std::unordered_map<std::string, GroupRow> k_, p_, l_, c_, ph_;
        // A path's groups, worked out once per distinct path (the regexes per activity dominated
        // long traces).
        struct PathGroups {
          std::string shown, layer, component;
        };
        std::unordered_map<std::string, PathGroups> path_groups;
        for (std::size_t k = 0; k < idx.size(); ++k) {
          const Activity& a = t.activities[idx[k]];
          const double e = by_class_items ? 0.0 : at.item_j[k];
          const double u = by_class_items ? 0.0 : at.item_uncertainty_j[k];
          auto add = [&](std::unordered_map<std::string, GroupRow>& mm, const std::string& key) {
            GroupRow& r = mm[key];
            r.energy_j += e;
            r.uncertainty_j += u;
            r.busy_s += a.duration_s();
            ++r.count;
          };
          add(k_, a.name);
          auto pg = path_groups.find(a.path);
          if (pg == path_groups.end()) {
            PathGroups pgs{a.path.empty() ? "(no range)" : truncate_path(a.path, o.path_depth), "", ""};
            if (!a.path.empty()) {
              pgs.layer = layer_of_path(a.path);
              pgs.component = component_of_path(a.path);
            }
            pg = path_groups.emplace(a.path, std::move(pgs)).first;
          }
          add(p_, pg->second.shown);
          if (!a.path.empty()) {
            if (!pg->second.layer.empty()) add(l_, pg->second.layer);
            add(c_, pg->second.component);
          }
          add(ph_, phase_of(a));
          if (row_of[idx[k]] < row_energy.size()) row_energy[row_of[idx[k]]] += e;
        }
        gp.by_kernel = rows_from(k_, below_s);
        gp.by_path = rows_from(p_, below_s);
        gp.by_layer = rows_from(l_, below_s);
        gp.by_component = rows_from(c_, below_s);
        gp.by_phase = rows_from(ph_, below_s);
        gp.by_class = mb.by_class;
      }
      gp.methods.push_back(std::move(mb));
    }
    p.gpus.push_back(std::move(gp));
  }
  if (o.method != "interval") {
    for (std::size_t r = 0; r < p.kernels.size(); ++r) {
      p.kernels[r].energy_j = row_energy[r];
      p.kernels[r].method = o.method;
    }
  }
  if (p.dropped > 0) p.warnings.push_back(fmt::format("CUPTI dropped {} activity records: kernel energies are incomplete", p.dropped));
  if (t.activities.empty()) p.warnings.push_back("no CUDA activity was recorded (does the program use the GPU?)");
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
  return p;
}

namespace {

nlohmann::json rows_json(const std::vector<GroupRow>& rows) {
  nlohmann::json a = nlohmann::json::array();
  for (const GroupRow& r : rows) {
    a.push_back({{"key", r.key},
                 {"energy_j", r.energy_j},
                 {"uncertainty_j", r.uncertainty_j},
                 {"busy_s", r.busy_s},
                 {"count", r.count},
                 {"share", r.share},
                 {"mean_power_above_idle_w", r.mean_power_w},
                 {"below_resolution", r.below_resolution}});
  }
  return a;
}

}  // namespace

std::string trace_profile_json(const TraceProfile& p) {
  nlohmann::json j;
  j["schema"] = kTraceSectionSchema;
  j["schema_version"] = p.schema_version;
  j["complete"] = p.complete;
  j["activities"] = p.activities;
  j["dropped_records"] = p.dropped;
  j["warnings"] = p.warnings;
  j["range_assignment"] = {{"method", p.range_assignment.method},
                           {"activities", p.range_assignment.assigned},
                           {"anchor_checked", p.range_assignment.checked},
                           {"anchor_agreed", p.range_assignment.agreed}};
  auto& procs = j["processes"] = nlohmann::json::array();
  for (const auto& x : p.processes) {
    procs.push_back({{"pid", x.pid},
                     {"ppid", x.ppid},
                     {"command", x.command},
                     {"records", x.records},
                     {"dropped_records", x.dropped},
                     {"ended", x.ended},
                     {"signal", x.signal},
                     {"damage", x.damage},
                     {"records_stopped", x.records_stopped},
                     {"clock_offset_start_ns", x.clock_offset_start_ns},
                     {"clock_offset_end_ns", x.clock_offset_end_ns},
                     {"clock_drift_ppm", x.clock_drift_ppm}});
  }
  auto& gpus = j["gpus"] = nlohmann::json::array();
  for (const GpuProfile& g : p.gpus) {
    nlohmann::json x;
    x["gpu"] = g.gpu;
    x["uuid"] = g.uuid;
    x["cuda_devices"] = g.cuda_devices;
    x["window_t0_s"] = g.window_t0_s;
    x["window_t1_s"] = g.window_t1_s;
    x["measured_method"] = g.measured_method;
    x["idle_power_w"] = g.idle_w;
    x["sensor_model"] = {{"lag_ms", 1e3 * g.sensor.model.lag_s}, {"window_ms", 1e3 * g.sensor.model.window_s},
                         {"source", g.sensor.source},          {"rms_w", g.sensor.rms_w},
                         {"default_rms_w", g.sensor.default_rms_w}, {"note", g.sensor.note}};
    x["kernels"] = g.kernels;
    x["copies"] = g.copies;
    x["busy_s"] = g.busy_s;
    auto& ms = x["methods"] = nlohmann::json::array();
    for (const MethodBooks& b : g.methods) {
      nlohmann::json mb = {{"method", b.method},
                           {"measured_energy_j", b.measured_j},
                           {"timeline_energy_j", b.timeline_j},
                           {"idle_static_energy_j", b.idle_j},
                           {"attributed_energy_j", b.attributed_j},
                           {"unattributed_energy_j", b.unattributed_j},
                           {"by_class", rows_json(b.by_class)},
                           {"notes", b.notes}};
      if (b.intercept_w) {
        mb["intercept_power_w"] = *b.intercept_w;
        mb["r_squared"] = b.r_squared;
        nlohmann::json fits = nlohmann::json::object();
        for (const auto& [c, f] : b.class_fits) {
          fits[c] = {{"active_power_w", f.active_power_w}, {"stderr_w", f.stderr_w}, {"busy_s", f.busy_s}, {"shared", f.shared}, {"fitted", f.fitted}};
        }
        mb["class_fits"] = fits;
      }
      ms.push_back(std::move(mb));
    }
    x["table_method"] = g.table_method;
    x["by_kernel"] = rows_json(g.by_kernel);
    x["by_class"] = rows_json(g.by_class);
    x["by_path"] = rows_json(g.by_path);
    x["by_layer"] = rows_json(g.by_layer);
    x["by_component"] = rows_json(g.by_component);
    x["by_phase"] = rows_json(g.by_phase);
    gpus.push_back(std::move(x));
  }
  auto& ph = j["phases"] = nlohmann::json::array();
  for (const PhaseEnergy& e : p.phases) {
    nlohmann::json x = {{"name", e.name},        {"duration_s", e.duration_s}, {"energy_j", e.energy_j},
                        {"above_idle_j", e.above_idle_j}, {"method", e.method}, {"counts", e.counts}};
    x["energy_per_token_j"] = e.energy_per_token_j ? nlohmann::json(*e.energy_per_token_j) : nlohmann::json(nullptr);
    ph.push_back(std::move(x));
  }
  j["unique_kernels"] = p.kernels.size();
  return j.dump();
}

std::string trace_profile_text(const TraceProfile& p, std::size_t top) {
  std::string s;
  auto out = std::back_inserter(s);
  fmt::format_to(out, "trace: {} processes, {} activities, {} dropped records{}\n", p.processes.size(), p.activities, p.dropped,
                 p.complete ? "" : " (INCOMPLETE)");
  const auto& ra = p.range_assignment;
  if (ra.method != "none") {
    fmt::format_to(out, "NVTX ranges: {} activities placed by {}{}\n", ra.assigned, ra.method,
                   ra.checked > 0 ? fmt::format(" (anchors agree for {} of {})", ra.agreed, ra.checked) : "");
  }
  auto table = [&](const char* title, const std::vector<GroupRow>& rows) {
    if (rows.empty()) return;
    fmt::format_to(out, "  {}:\n", title);
    fmt::format_to(out, "    {:>10} {:>6} {:>10} {:>8} {:>9}  {}\n", "energy J", "share", "busy ms", "count", "W>idle", "name");
    for (std::size_t i = 0; i < rows.size() && i < top; ++i) {
      const GroupRow& r = rows[i];
      std::string key = r.key.size() > 90 ? r.key.substr(0, 87) + "..." : r.key;
      fmt::format_to(out, "    {:>10.4g} {:>5.1f}% {:>10.2f} {:>8} {:>9.0f}  {}{}\n", r.energy_j, 100 * r.share, r.busy_s * 1e3, r.count,
                     r.mean_power_w, key, r.below_resolution ? "  (below sensor resolution)" : "");
    }
  };
  for (const GpuProfile& g : p.gpus) {
    fmt::format_to(out, "GPU {} ({}): {} kernels, {} copies, busy {:.3f} s of a {:.3f} s run; idle {:.1f} W\n", g.gpu, g.uuid, g.kernels,
                   g.copies, g.busy_s, g.window_t1_s - g.window_t0_s, g.idle_w);
    const SensorFit& sf = g.sensor;
    fmt::format_to(out, "  sensor model: lag {:.0f} ms, window {:.0f} ms ({})\n", 1e3 * sf.model.lag_s, 1e3 * sf.model.window_s,
                   sf.source == "fitted"
                       ? fmt::format("fitted to this run: residual {:.1f} W, {:.1f} W with the default", sf.rms_w, sf.default_rms_w)
                       : sf.source == "given"
                           ? (sf.rms_w > 0 ? fmt::format("as given: residual {:.1f} W, {:.1f} W with the default", sf.rms_w, sf.default_rms_w)
                                           : std::string("as given"))
                           : "default: " + sf.note);
    fmt::format_to(out, "  {:<11} {:>11} {:>11} {:>11} {:>11}\n", "method", "measured J", "idle J", "attrib. J", "unattr. J");
    for (const MethodBooks& b : g.methods) {
      fmt::format_to(out, "  {:<11} {:>11.4g} {:>11.4g} {:>11.4g} {:>11.4g}{}\n", b.method, b.measured_j, b.idle_j, b.attributed_j,
                     b.unattributed_j, b.intercept_w ? fmt::format("  (fit: static {:.0f} W, R² {:.2f})", *b.intercept_w, b.r_squared) : "");
    }
    for (const MethodBooks& b : g.methods) {
      if (b.by_class.empty()) continue;
      std::string line;
      for (const GroupRow& r : b.by_class) {
        if (r.energy_j != 0) line += fmt::format(" {} {:.4g} J", r.key, r.energy_j);
      }
      fmt::format_to(out, "  by class ({}):{}\n", b.method, line.empty() ? " -" : line);
    }
    for (const MethodBooks& b : g.methods) {
      if (b.method != g.table_method) continue;
      for (const std::string& n : b.notes) fmt::format_to(out, "  note ({}): {}\n", b.method, n);
    }
    fmt::format_to(out, "  tables: method {}\n", g.table_method);
    table("top kernels", g.by_kernel);
    table("by NVTX path", g.by_path);
    table("by layer", g.by_layer);
    table("by component", g.by_component);
    table("by phase", g.by_phase);
  }
  for (const PhaseEnergy& e : p.phases) {
    fmt::format_to(out, "phase {}: {:.3f} s, {:.4g} J ({}), {:.4g} J above idle{}\n", e.name, e.duration_s, e.energy_j, e.method, e.above_idle_j,
                   e.energy_per_token_j ? fmt::format(", {:.4g} J/token", *e.energy_per_token_j) : "");
  }
  for (const std::string& w : p.warnings) fmt::format_to(out, "warning: {}\n", w);
  return s;
}

}  // namespace jouleprof
