// The result JSON (schema_version 1, documented in docs/result-schema.md). Units are in the
// field names; an unavailable value is null or absent, never 0.
#include <fstream>
#include <nlohmann/json.hpp>

#include "jouleprof/core/files.hpp"
#include "jouleprof/core/utc.hpp"
#include "jouleprof/result/result_json.hpp"

namespace jouleprof {
namespace {

using nlohmann::json;

template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}


json summary_json(const Summary& s) {
  return {{"n", s.n},           {"mean", s.mean}, {"median", s.median}, {"stdev", s.stdev},
          {"min", s.min},       {"max", s.max},   {"ci95_half_width", s.ci95_half_width},
          {"ci95_relative", s.ci95_relative()}};
}

json samples_json(const std::vector<Sample>& v, const char* source, std::size_t device, const std::string& metric) {
  json ts = json::array(), vs = json::array();
  for (const Sample& s : v) {
    ts.push_back(s.t_s);
    vs.push_back(s.value);
  }
  return {{"source", source}, {"device", device}, {"metric", metric}, {"t_s", std::move(ts)}, {"value", std::move(vs)}};
}

}  // namespace

// One GPU's energy over one window, as the result document has it (also gpu_energy_json).
static json gpu_energy_object(const GpuEnergy& e) {
  return json{{"energy_j", e.energy_j},
              {"method", e.method},
              {"uncertainty_j", e.uncertainty_j},
              {"uncertainty_basis", e.uncertainty_basis.empty() ? json(nullptr) : json(e.uncertainty_basis)},
              {"counter_energy_j", opt(e.counter_j)},
              {"counter_note", e.counter_note},
              {"timeline_energy_j", opt(e.timeline_j)},
              {"timeline_uncertainty_j", e.timeline_uncertainty_j},
              {"timeline_samples", e.timeline_samples},
              {"response_energy_j", opt(e.response_j)},
              {"response_uncertainty_j", e.response_j ? json(e.response_uncertainty_j) : json(nullptr)},
              {"timeline_vs_counter", opt(e.disagreement)},
              {"note", e.note},
              {"idle_power_w", opt(e.idle_power_w)},
              {"above_idle_energy_j", opt(e.above_idle_j)},
              {"mean_power_w", e.mean_power_w}};
}

std::string gpu_energy_json(const GpuEnergy& e) { return gpu_energy_object(e).dump(); }

std::string result_to_json(const Measurement& m, int indent) {
  json j;
  j["schema_version"] = m.schema_version;
  j["simulated"] = m.simulated;
  j["status"] = m.complete ? "complete" : "incomplete";
  if (!m.complete) j["incomplete_reason"] = m.incomplete_reason;
  j["exit_code"] = m.exit_code;
  j["command"] = m.command;
  j["builtin_workload"] = m.builtin_workload;
  j["tags"] = m.tags;
  j["started_at_utc"] = iso_utc_ms(m.origin_realtime_ns);
  j["origin_realtime_ns"] = m.origin_realtime_ns;
  if (!m.run_uuid.empty()) j["run_uuid"] = m.run_uuid;
  j["duration_s"] = m.duration_s;
  j["provenance"] = {{"command_line", m.invocation},
                     {"host", m.host},
                     {"kernel", m.kernel},
                     {"tool", "jouleprof"},
                     {"tool_version", m.tool_version},
                     {"git_revision", m.git_revision},
                     {"build_type", m.build_type},
                     {"backend", m.backend},
                     {"device_note", m.device_note},
                     {"sampler_cpu_s", m.sampler_cpu_s}};
  json cal = json::array();
  for (const auto& c : m.time_calibrations) {
    cal.push_back({{"at_s", c.at_s}, {"realtime_minus_steady_ns", c.offset_ns}, {"uncertainty_ns", c.uncertainty_ns}});
  }
  j["time_base"] = {{"clock", "steady (CLOCK_MONOTONIC) seconds since origin"},
                    {"calibrations", cal}};
  json gpus = json::array();
  for (std::size_t g = 0; g < m.gpus.size(); ++g) {
    const GpuInfo& i = m.gpus[g];
    json x = {{"index", i.index},
              {"name", i.name},
              {"uuid", i.uuid},
              {"pci_bus_id", i.pci_bus_id},
              {"driver_version", i.driver_version},
              {"backend", i.backend},
              {"simulated", i.simulated},
              {"power_limit_w", opt(i.power_limit_w)},
              {"power_limit_min_w", opt(i.power_limit_min_w)},
              {"power_limit_max_w", opt(i.power_limit_max_w)},
              {"persistence_mode", opt(i.persistence_mode)},
              {"mig_enabled", opt(i.mig_enabled)}};
    if (g < m.gpu_state.size()) {
      const GpuRunState& s = m.gpu_state[g];
      x["idle_power_w"] = opt(s.idle_power_w);
      x["idle_source"] = s.idle_source;
      x["temperature_min_c"] = opt(s.temperature_min_c);
      x["temperature_max_c"] = opt(s.temperature_max_c);
      x["sm_clock_min_mhz"] = opt(s.sm_clock_min_mhz);
      x["sm_clock_max_mhz"] = opt(s.sm_clock_max_mhz);
      x["mem_clock_mhz"] = opt(s.mem_clock_mhz);
      x["enforced_power_limit_w"] = opt(s.power_limit_w);
      x["throttle_reasons_seen"] = s.throttle_reasons_seen;
      x["unsupported_metrics"] = s.unsupported;
      x["sensor_error_count"] = s.error_count;
      json errs = json::array();
      for (const auto& e : s.errors) errs.push_back({{"t_s", e.t_s}, {"message", e.message}});
      x["sensor_errors"] = errs;
      x["lost_at_s"] = opt(s.lost_at_s);
    }
    gpus.push_back(x);
  }
  j["gpus"] = gpus;
  j["cpu"] = {{"domains", m.cpu_domains},
              {"unavailable_reason", m.cpu_domains.empty() ? json(m.cpu_unavailable_reason) : json(nullptr)}};
  j["meter"] = m.meter_source.empty() ? json(nullptr) : json(m.meter_source);
  json runs = json::array();
  for (const RunInfo& r : m.runs) {
    runs.push_back({{"index", r.index},
                    {"warmup", r.warmup},
                    {"window", r.window},
                    {"exit_code", r.exit_code},
                    {"signal", r.signal},
                    {"status", r.complete ? "complete" : "incomplete"},
                    {"reason", r.reason}});
  }
  j["runs"] = runs;
  json wins = json::array();
  for (const WindowResult& w : m.windows) {
    json gs = json::array();
    for (const GpuEnergy& e : w.gpus) {
      gs.push_back(gpu_energy_object(e));
    }
    json cpu = json::object();
    for (const CpuEnergy& c : w.cpu) cpu[c.domain + "_energy_j"] = c.energy_j;
    wins.push_back({{"name", w.name},
                    {"kind", w.kind},
                    {"run", w.run},
                    {"parent", w.parent},
                    {"t0_s", w.t0_s},
                    {"t1_s", w.t1_s},
                    {"duration_s", w.duration_s()},
                    {"status", w.complete ? "complete" : "incomplete"},
                    {"gpu_energy_j", w.gpu_energy_j},
                    {"gpu_above_idle_energy_j", opt(w.gpu_above_idle_j)},
                    {"gpus", gs},
                    {"cpu", cpu},
                    {"meter_energy_j", opt(w.meter_j)},
                    {"meter_uncertainty_j", w.meter_j ? json(w.meter_uncertainty_j) : json(nullptr)},
                    {"counts", w.counts}});
  }
  j["windows"] = wins;
  json stats = json::object();
  for (const RepeatStat& s : m.stats) stats[s.what] = summary_json(s.summary);
  j["statistics"] = stats;
  j["warnings"] = m.warnings;
  // Sections of other producers (e.g. "llm" from bench llm), never overriding a field above.
  for (const auto& [key, text] : m.sections) {
    if (j.contains(key) || key == "timelines") continue;
    j[key] = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j[key].is_discarded()) j.erase(key);
  }
  // Text entered through the text layer (core/text.hpp) is valid UTF-8; replace, never throw.
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string result_to_json_with_timelines(const Measurement& m, int indent) {
  json j = json::parse(result_to_json(m, -1));
  json arr = json::array();
  for (std::size_t g = 0; g < m.timelines.size(); ++g) {
    if (!m.timelines[g]) continue;
    for (int k = 0; k < kMetricCount; ++k) {
      const Series& s = m.timelines[g]->series[static_cast<std::size_t>(k)];
      if (s.empty()) continue;
      arr.push_back(samples_json(s.all(), "gpu", g, metric_name(static_cast<Metric>(k))));
    }
  }
  for (std::size_t d = 0; d < m.cpu_energy.size() && d < m.cpu_domains.size(); ++d) {
    if (!m.cpu_energy[d].empty()) arr.push_back(samples_json(m.cpu_energy[d], "cpu", d, m.cpu_domains[d] + "_energy_j"));
  }
  if (!m.meter_power.empty()) arr.push_back(samples_json(m.meter_power, "meter", 0, "power_w"));
  j["timelines"] = std::move(arr);
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<void> write_result_json(const Measurement& m, const std::string& path) {
  return write_file_atomic(path, result_to_json(m) + "\n");
}

}  // namespace jouleprof
