// The inverse of result_to_json, plus optional embedded timelines (docs/store.md).
#include "jouleprof/store/result_io.hpp"

#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jouleprof/core/units.hpp"
#include "jouleprof/measure/output.hpp"

namespace jouleprof {
namespace {

using nlohmann::json;

template <class T>
std::optional<T> opt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

template <class T>
T get_or(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

Summary summary_from(const json& j) {
  Summary s;
  s.n = get_or<std::size_t>(j, "n", 0);
  s.mean = get_or(j, "mean", 0.0);
  s.median = get_or(j, "median", 0.0);
  s.stdev = get_or(j, "stdev", 0.0);
  s.min = get_or(j, "min", 0.0);
  s.max = get_or(j, "max", 0.0);
  s.ci95_half_width = get_or(j, "ci95_half_width", 0.0);
  return s;
}

std::shared_ptr<GpuTimeline> new_timeline() { return std::make_shared<GpuTimeline>(std::size_t{1} << 21); }

// The timelines of a measurement as mutable objects (the Measurement holds them as const).
std::vector<std::shared_ptr<GpuTimeline>> ensure_timelines(Measurement& m) {
  std::vector<std::shared_ptr<GpuTimeline>> out;
  if (m.timelines.size() != m.gpus.size()) {
    m.timelines.clear();
    for (std::size_t g = 0; g < m.gpus.size(); ++g) {
      auto t = new_timeline();
      m.timelines.push_back(t);
      out.push_back(t);
    }
    return out;
  }
  for (auto& t : m.timelines) out.push_back(std::const_pointer_cast<GpuTimeline>(t));
  return out;
}

void read_timelines(const json& arr, Measurement& m) {
  auto tls = ensure_timelines(m);
  m.cpu_energy.assign(m.cpu_domains.size(), {});
  m.meter_power.clear();
  for (const json& t : arr) {
    const std::string source = t.at("source").get<std::string>();
    const auto device = t.at("device").get<std::size_t>();
    const std::string metric = t.at("metric").get<std::string>();
    const auto& ts = t.at("t_s");
    const auto& vs = t.at("value");
    if (!ts.is_array() || !vs.is_array() || ts.size() != vs.size()) {
      throw std::runtime_error("timeline " + source + " " + metric + ": t_s and value differ in length");
    }
    if (source == "gpu") {
      const auto k = metric_from_name(metric);
      if (!k) continue;  // a metric from a newer jouleprof: skipped
      if (device >= tls.size()) throw std::runtime_error("timeline for GPU " + std::to_string(device) + " of " + std::to_string(tls.size()));
      Series& s = tls[device]->series[static_cast<std::size_t>(*k)];
      for (std::size_t i = 0; i < ts.size(); ++i) s.append(ts[i].get<double>(), vs[i].get<double>());
    } else if (source == "cpu") {
      if (device >= m.cpu_energy.size()) throw std::runtime_error("timeline for CPU domain " + std::to_string(device));
      auto& v = m.cpu_energy[device];
      for (std::size_t i = 0; i < ts.size(); ++i) v.push_back({ts[i].get<double>(), vs[i].get<double>()});
    } else if (source == "meter") {
      for (std::size_t i = 0; i < ts.size(); ++i) m.meter_power.push_back({ts[i].get<double>(), vs[i].get<double>()});
    }
  }
}

Measurement from_json(const json& j) {
  Measurement m;
  m.schema_version = j.at("schema_version").get<int>();
  m.simulated = get_or(j, "simulated", false);
  m.complete = get_or<std::string>(j, "status", "complete") == "complete";
  m.incomplete_reason = get_or<std::string>(j, "incomplete_reason", "");
  m.exit_code = get_or(j, "exit_code", 0);
  m.command = get_or<std::vector<std::string>>(j, "command", {});
  m.builtin_workload = get_or(j, "builtin_workload", false);
  m.tags = get_or<std::map<std::string, std::string>>(j, "tags", {});
  m.origin_realtime_ns = get_or<int64_t>(j, "origin_realtime_ns", 0);
  m.duration_s = get_or(j, "duration_s", 0.0);
  if (auto p = j.find("provenance"); p != j.end() && p->is_object()) {
    m.invocation = get_or<std::vector<std::string>>(*p, "command_line", {});
    m.host = get_or<std::string>(*p, "host", "");
    m.kernel = get_or<std::string>(*p, "kernel", "");
    m.tool_version = get_or<std::string>(*p, "tool_version", "");
    m.git_revision = get_or<std::string>(*p, "git_revision", "");
    m.build_type = get_or<std::string>(*p, "build_type", "");
    m.backend = get_or<std::string>(*p, "backend", "");
    m.device_note = get_or<std::string>(*p, "device_note", "");
    m.sampler_cpu_s = get_or(*p, "sampler_cpu_s", 0.0);
  }
  if (auto tb = j.find("time_base"); tb != j.end() && tb->contains("calibrations")) {
    for (const json& c : tb->at("calibrations")) {
      TimeBase::Calibration cal;
      cal.at_s = get_or(c, "at_s", 0.0);
      cal.offset_ns = get_or<int64_t>(c, "realtime_minus_steady_ns", 0);
      cal.uncertainty_ns = get_or<int64_t>(c, "uncertainty_ns", 0);
      m.time_calibrations.push_back(cal);
    }
  }
  for (const json& x : j.value("gpus", json::array())) {
    GpuInfo i;
    i.index = get_or(x, "index", 0);
    i.name = get_or<std::string>(x, "name", "");
    i.uuid = get_or<std::string>(x, "uuid", "");
    i.pci_bus_id = get_or<std::string>(x, "pci_bus_id", "");
    i.driver_version = get_or<std::string>(x, "driver_version", "");
    i.backend = get_or<std::string>(x, "backend", "");
    i.simulated = get_or(x, "simulated", false);
    i.power_limit_w = opt<double>(x, "power_limit_w");
    i.power_limit_min_w = opt<double>(x, "power_limit_min_w");
    i.power_limit_max_w = opt<double>(x, "power_limit_max_w");
    i.persistence_mode = opt<bool>(x, "persistence_mode");
    i.mig_enabled = opt<bool>(x, "mig_enabled");
    m.gpus.push_back(i);
    GpuRunState s;
    s.idle_power_w = opt<double>(x, "idle_power_w");
    s.idle_source = get_or<std::string>(x, "idle_source", "");
    s.temperature_min_c = opt<double>(x, "temperature_min_c");
    s.temperature_max_c = opt<double>(x, "temperature_max_c");
    s.sm_clock_min_mhz = opt<double>(x, "sm_clock_min_mhz");
    s.sm_clock_max_mhz = opt<double>(x, "sm_clock_max_mhz");
    s.mem_clock_mhz = opt<double>(x, "mem_clock_mhz");
    s.power_limit_w = opt<double>(x, "enforced_power_limit_w");
    s.throttle_reasons_seen = get_or<std::vector<std::string>>(x, "throttle_reasons_seen", {});
    s.unsupported = get_or<std::vector<std::string>>(x, "unsupported_metrics", {});
    s.error_count = get_or<std::size_t>(x, "sensor_error_count", 0);
    for (const json& e : x.value("sensor_errors", json::array())) {
      s.errors.push_back({get_or(e, "t_s", 0.0), get_or<std::string>(e, "message", "")});
    }
    s.lost_at_s = opt<double>(x, "lost_at_s");
    m.gpu_state.push_back(s);
  }
  if (auto c = j.find("cpu"); c != j.end() && c->is_object()) {
    m.cpu_domains = get_or<std::vector<std::string>>(*c, "domains", {});
    m.cpu_unavailable_reason = get_or<std::string>(*c, "unavailable_reason", "");
  }
  m.meter_source = get_or<std::string>(j, "meter", "");
  for (const json& r : j.value("runs", json::array())) {
    RunInfo ri;
    ri.index = get_or(r, "index", 0);
    ri.warmup = get_or(r, "warmup", false);
    ri.window = get_or(r, "window", -1);
    ri.exit_code = get_or(r, "exit_code", 0);
    ri.signal = get_or(r, "signal", 0);
    ri.complete = get_or<std::string>(r, "status", "complete") == "complete";
    ri.reason = get_or<std::string>(r, "reason", "");
    m.runs.push_back(ri);
  }
  for (const json& w : j.value("windows", json::array())) {
    WindowResult wr;
    wr.name = w.at("name").get<std::string>();
    wr.kind = get_or<std::string>(w, "kind", "window");
    wr.run = get_or(w, "run", -1);
    wr.parent = get_or(w, "parent", -1);
    wr.t0_s = w.at("t0_s").get<double>();
    wr.t1_s = w.at("t1_s").get<double>();
    wr.complete = get_or<std::string>(w, "status", "complete") == "complete";
    wr.gpu_energy_j = get_or(w, "gpu_energy_j", 0.0);
    wr.gpu_above_idle_j = opt<double>(w, "gpu_above_idle_energy_j");
    for (const json& g : w.value("gpus", json::array())) {
      GpuEnergy e;
      e.energy_j = get_or(g, "energy_j", 0.0);
      e.method = get_or<std::string>(g, "method", "");
      e.uncertainty_j = get_or(g, "uncertainty_j", 0.0);
      e.counter_j = opt<double>(g, "counter_energy_j");
      e.counter_note = get_or<std::string>(g, "counter_note", "");
      e.timeline_j = opt<double>(g, "timeline_energy_j");
      e.timeline_uncertainty_j = get_or(g, "timeline_uncertainty_j", 0.0);
      e.timeline_samples = get_or<std::size_t>(g, "timeline_samples", 0);
      e.response_j = opt<double>(g, "response_energy_j");
      e.response_uncertainty_j = get_or(g, "response_uncertainty_j", 0.0);
      e.note = get_or<std::string>(g, "note", "");
      e.disagreement = opt<double>(g, "timeline_vs_counter");
      e.idle_power_w = opt<double>(g, "idle_power_w");
      e.above_idle_j = opt<double>(g, "above_idle_energy_j");
      e.mean_power_w = get_or(g, "mean_power_w", 0.0);
      wr.gpus.push_back(e);
    }
    if (auto c = w.find("cpu"); c != w.end() && c->is_object()) {
      for (const auto& [key, val] : c->items()) {
        static constexpr std::string_view kSuffix = "_energy_j";
        std::string domain = key;
        if (domain.size() > kSuffix.size() && domain.compare(domain.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0) {
          domain.resize(domain.size() - kSuffix.size());
        }
        wr.cpu.push_back({domain, val.get<double>()});
      }
    }
    wr.meter_j = opt<double>(w, "meter_energy_j");
    wr.meter_uncertainty_j = get_or(w, "meter_uncertainty_j", 0.0);
    wr.counts = get_or<std::map<std::string, double>>(w, "counts", {});
    m.windows.push_back(wr);
  }
  if (auto st = j.find("statistics"); st != j.end() && st->is_object()) {
    // Runs stored before the per-count keys were made singular read as now (core/units.hpp).
    for (const auto& [what, s] : st->items()) m.stats.push_back({normalize_per_count_key(what), summary_from(s)});
  }
  m.warnings = get_or<std::vector<std::string>>(j, "warnings", {});
  // Every other top-level section (e.g. "llm" from bench llm) is kept verbatim.
  static const std::set<std::string> kFields = {
      "schema_version", "simulated", "status", "incomplete_reason", "exit_code", "command", "builtin_workload", "tags",
      "started_at_utc", "origin_realtime_ns", "duration_s", "provenance", "time_base", "gpus", "cpu", "meter", "runs",
      "windows", "statistics", "warnings", "timelines"};
  for (const auto& [key, val] : j.items()) {
    if (kFields.count(key) == 0) m.sections[key] = val.dump();
  }
  if (auto t = j.find("timelines"); t != j.end() && t->is_array()) read_timelines(*t, m);
  return m;
}

}  // namespace

Result<Measurement> measurement_from_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    std::string what = e.what();
    return make_error(Errc::parse, "not valid JSON (" + what + ")");
  }
  if (!j.is_object() || !j.contains("schema_version")) {
    return make_error(Errc::parse, "not a jouleprof result (no schema_version)");
  }
  if (!j["schema_version"].is_number_integer()) return make_error(Errc::parse, "schema_version is not an integer");
  const int v = j["schema_version"].get<int>();
  if (v != kResultSchemaVersion) {
    return make_error(Errc::invalid_argument, "result schema_version " + std::to_string(v) +
                                                  " is not supported (this jouleprof reads " +
                                                  std::to_string(kResultSchemaVersion) + ")");
  }
  try {
    return from_json(j);
  } catch (const std::exception& e) {
    return make_error(Errc::parse, std::string("malformed result: ") + e.what());
  }
}

Result<Measurement> read_result_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::not_found, "cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  auto m = measurement_from_json(ss.str());
  if (!m) return make_error(m.error().code, path + ": " + m.error().message);
  return m;
}

Result<std::vector<Measurement>> read_result_documents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::not_found, "cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  std::vector<Measurement> out;
  if (first != std::string::npos && text[first] == '[') {
    json arr;
    try {
      arr = json::parse(text);
    } catch (const json::exception& e) {
      return make_error(Errc::parse, path + ": not valid JSON (" + std::string(e.what()) + ")");
    }
    for (std::size_t i = 0; i < arr.size(); ++i) {
      auto m = measurement_from_json(arr[i].dump());
      if (!m) return make_error(m.error().code, path + ": document " + std::to_string(i + 1) + ": " + m.error().message);
      out.push_back(std::move(*m));
    }
    return out;
  }
  auto m = measurement_from_json(text);
  if (!m) return make_error(m.error().code, path + ": " + m.error().message);
  out.push_back(std::move(*m));
  return out;
}

Result<void> read_timeline_csv(const std::string& path, Measurement& m) {
  std::ifstream in(path);
  if (!in) return make_error(Errc::not_found, "cannot read " + path);
  auto tls = ensure_timelines(m);
  m.cpu_energy.assign(m.cpu_domains.size(), {});
  m.meter_power.clear();
  std::string line;
  std::size_t lineno = 0;
  auto bad = [&](const std::string& why) {
    return make_error(Errc::parse, path + ":" + std::to_string(lineno) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lineno == 1 && line.rfind("t_s,", 0) == 0) continue;
    if (line.empty()) continue;
    std::string_view f[4];
    std::size_t start = 0;
    for (int k = 0; k < 4; ++k) {
      const std::size_t comma = k < 3 ? line.find(',', start) : line.size();
      if (comma == std::string::npos) return bad("expected t_s,device,metric,value");
      f[k] = std::string_view(line).substr(start, comma - start);
      start = comma + 1;
    }
    double t = 0, v = 0;
    if (std::from_chars(f[0].data(), f[0].data() + f[0].size(), t).ec != std::errc{} ||
        std::from_chars(f[3].data(), f[3].data() + f[3].size(), v).ec != std::errc{}) {
      return bad("not a number");
    }
    const std::string_view dev = f[1];
    const std::string metric(f[2]);
    if (dev.rfind("gpu", 0) == 0) {
      int idx = -1;
      if (std::from_chars(dev.data() + 3, dev.data() + dev.size(), idx).ec != std::errc{}) return bad("bad device");
      std::size_t g = 0;
      while (g < m.gpus.size() && m.gpus[g].index != idx) ++g;
      if (g == m.gpus.size()) return bad("device " + std::string(dev) + " is not in the result");
      const auto k = metric_from_name(metric);
      if (!k) continue;
      tls[g]->series[static_cast<std::size_t>(*k)].append(t, v);
    } else if (dev == "cpu") {
      std::size_t d = 0;
      while (d < m.cpu_domains.size() && m.cpu_domains[d] + "_energy_j" != metric) ++d;
      if (d == m.cpu_domains.size()) return bad("CPU domain of " + metric + " is not in the result");
      m.cpu_energy[d].push_back({t, v});
    } else if (dev == "meter") {
      m.meter_power.push_back({t, v});
    } else {
      return bad("unknown device " + std::string(dev));
    }
  }
  return {};
}

std::size_t timeline_sample_count(const Measurement& m) {
  std::size_t n = 0;
  for (const auto& t : m.timelines) {
    if (!t) continue;
    for (const Series& s : t->series) n += s.size();
  }
  for (const auto& c : m.cpu_energy) n += c.size();
  return n + m.meter_power.size();
}

}  // namespace jouleprof
