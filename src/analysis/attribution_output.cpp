// The trace profile's outputs: the "trace" section's JSON and the terminal summary.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "jouleprof/analysis/trace_profile.hpp"
#include "jouleprof/analysis/trace_section.hpp"

namespace jouleprof {

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
                 {"below_resolution", r.below_resolution},
                 {"low_j", r.low_j},
                 {"high_j", r.high_j}});
    if (!r.by_method.empty()) a.back()["by_method"] = r.by_method;
    if (r.merged > 0) {
      a.back()["merged_rows"] = r.merged;
      nlohmann::json m = nlohmann::json::object();
      for (const auto& [key, e] : r.members) m[key] = e;
      a.back()["members_j"] = m;
    }
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
  if (p.sampling) {
    const TraceSamplingInfo& sp = *p.sampling;
    j["sampling"] = {{"on_s", sp.on_s},         {"period_s", sp.period_s}, {"traced_s", sp.traced_s},
                     {"run_s", sp.run_s},       {"traced_fraction", sp.fraction()}, {"windows_s", sp.windows_s},
                     {"paused_s", sp.paused_s}, {"pauses_s", sp.pauses_s}};
  }
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
    x["power_limit_w"] = g.power_limit_w ? nlohmann::json(*g.power_limit_w) : nlohmann::json(nullptr);
    x["resolved_share"] = g.resolved_share;
    x["class_interval_share"] = g.class_interval_share;
    if (!g.replay_source.empty()) {
      x["replay"] = {{"source", g.replay_source},
                     {"scale", g.replay_scale ? nlohmann::json(*g.replay_scale) : nlohmann::json(nullptr)},
                     {"unmatched_busy_share", g.replay_unmatched_share},
                     {"marks", g.replay_marks}};
    }
    if (g.sampling_scale) x["sampling_scale"] = *g.sampling_scale;
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
  if (p.sampling && !p.sampling->pauses_s.empty()) {
    fmt::format_to(out, "paused {:.3g} s by the program ({} pauses: no kernel records, no NVTX ranges); recorded {:.3g} s, {:.1f}% "
                        "of the run; the tables give the recorded time's shares of the whole run's energy\n",
                   p.sampling->paused_s, p.sampling->pauses_s.size(), p.sampling->traced_s, 100 * p.sampling->fraction());
  }
  if (p.sampling && p.sampling->period_s > 0) {
    fmt::format_to(out, "sampled: kernels traced {:.0f}% of every {:.3g} s; {} windows, {:.1f}% of the run; the tables give the traced "
                        "windows' shares of the whole run's energy, intervals widened by the windows' spread\n",
                   100 * p.sampling->on_s / p.sampling->period_s, p.sampling->period_s, p.sampling->windows_s.size(),
                   100 * p.sampling->fraction());
  }
  const auto& ra = p.range_assignment;
  if (ra.method != "none") {
    fmt::format_to(out, "NVTX ranges: {} activities placed by {}{}\n", ra.assigned, ra.method,
                   ra.checked > 0 ? fmt::format(" (anchors agree for {} of {})", ra.agreed, ra.checked) : "");
  }
  auto table = [&](const char* title, const std::vector<GroupRow>& rows) {
    if (rows.empty()) return;
    fmt::format_to(out, "  {}:\n", title);
    fmt::format_to(out, "    {:>10} {:>21} {:>6} {:>10} {:>8} {:>9}  {}\n", "energy J", "interval J", "share", "busy ms", "count", "W>idle", "name");
    for (std::size_t i = 0; i < rows.size() && i < top; ++i) {
      const GroupRow& r = rows[i];
      std::string key = r.key.size() > 90 ? r.key.substr(0, 87) + "..." : r.key;
      fmt::format_to(out, "    {:>10.4g} {:>21} {:>5.1f}% {:>10.2f} {:>8} {:>9.0f}  {}{}\n", r.energy_j,
                     fmt::format("[{:.4g}, {:.4g}]", r.low_j, r.high_j), 100 * r.share, r.busy_s * 1e3, r.count, r.mean_power_w, key,
                     r.below_resolution ? "  (below sensor resolution)" : "");
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
    if (g.sampling_scale) {
      fmt::format_to(out, "  sampled: traced windows' energy above idle/static × {:.3f} = the run's\n", *g.sampling_scale);
    }
    if (!g.replay_source.empty()) {
      fmt::format_to(out, "  replay: {}{}{}\n", g.replay_source,
                     g.replay_scale ? fmt::format(", energies scaled by {:.3f}", *g.replay_scale) : std::string(),
                     g.replay_unmatched_share > 0 ? fmt::format(", {:.1f}% of the busy time not replayed (split figures)", 100 * g.replay_unmatched_share)
                                                  : std::string());
    }
    fmt::format_to(out, "  determined: {:.0f}% of the kernels' energy in kernels the sensor resolves; class figures within ±{:.0f}% (intervals: "
                        "the methods' spread, their uncertainty, the sensor's limits)\n",
                   100 * g.resolved_share, 100 * g.class_interval_share);
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
