// The inverse of result_to_json, plus optional embedded timelines (docs/store.md).
// Type errors name their JSON path ("(/windows/3/t0_s) type must be number"). nlohmann 3.11
// puts this mode in its ABI tag, so this file's json type is distinct from other files'.
#define JSON_DIAGNOSTICS 1
// GCC 12 sees an out-of-bounds read in that mode's parent links (a false positive of its
// -Warray-bounds through inlined std::map code); the ASan run checks the real thing. Set before
// any include: the warning is placed in the standard headers.
#pragma GCC diagnostic ignored "-Warray-bounds"

#include "jouleprof/result/result_io.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <cstring>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jouleprof/core/units.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/core/json_checked.hpp"
#include "jouleprof/core/parse.hpp"
#include "jouleprof/core/text.hpp"
#include "jouleprof/core/uuid.hpp"
#include "jouleprof/result/result_json.hpp"

namespace jouleprof {
namespace {

using nlohmann::json;

[[noreturn]] void refuse(const json& at, const std::string& what) { refuse_json(at, what); }

// Numbers as the schema has them: integers in range of their field (2^80 is not an int64),
// finite reals; anything else is refused with its JSON path (core/json_checked.hpp).
template <class T>
T checked(const json& v) {
  return checked_json<T>(v);
}

template <class T>
std::optional<T> opt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return checked<T>(*it);
}

template <class T>
T get_or(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return checked<T>(*it);
}

// "status": absent means complete (older results); anything but the two words is refused.
bool complete_status(const json& j) {
  auto it = j.find("status");
  if (it == j.end() || it->is_null()) return true;
  if (it->is_string() && *it == "complete") return true;
  if (it->is_string() && *it == "incomplete") return false;
  refuse(*it, "status must be \"complete\" or \"incomplete\", found " + it->dump());
}

const json& array_at(const json& j, const char* key) {
  static const json empty = json::array();
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return empty;
  if (!it->is_array()) refuse(*it, std::string(key) + " must be an array");
  return *it;
}

// Cross-references a reader would follow: every index in range, no window its own ancestor,
// times ordered. The message names the JSON path.
std::optional<std::string> structure_error(const Measurement& m) {
  const auto nw = static_cast<int>(m.windows.size());
  // Only a result that says it is incomplete (e.g. a skipped bench configuration) may lack windows.
  if (nw == 0 && m.complete) return "/windows: no windows (a complete result has at least its run window)";
  for (int i = 0; i < nw; ++i) {
    const WindowResult& w = m.windows[static_cast<std::size_t>(i)];
    const std::string at = "/windows/" + std::to_string(i);
    if (w.parent < -1 || w.parent >= nw) return at + "/parent: " + std::to_string(w.parent) + " is not a window index";
    if (w.parent == i) return at + "/parent: a window cannot be its own parent";
    int up = w.parent, steps = 0;
    while (up >= 0 && steps++ <= nw) up = m.windows[static_cast<std::size_t>(up)].parent;
    if (up >= 0) return at + "/parent: the parent chain is a cycle";
    if (w.t1_s < w.t0_s) return at + ": t1_s is before t0_s";
    if (w.gpus.size() != m.gpus.size()) return at + "/gpus: " + std::to_string(w.gpus.size()) + " entries for " + std::to_string(m.gpus.size()) + " GPUs";
    if (w.run < -1) return at + "/run: " + std::to_string(w.run) + " is not a run index";
    if (w.gpu_energy_j < 0) return at + "/gpu_energy_j: a negative energy";
    for (std::size_t g = 0; g < w.gpus.size(); ++g) {
      if (w.gpus[g].energy_j < 0 || w.gpus[g].uncertainty_j < 0) {
        return at + "/gpus/" + std::to_string(g) + ": a negative energy or uncertainty";
      }
    }
  }
  for (std::size_t r = 0; r < m.runs.size(); ++r) {
    if (m.runs[r].window < -1 || m.runs[r].window >= nw) {
      return "/runs/" + std::to_string(r) + "/window: " + std::to_string(m.runs[r].window) + " is not a window index";
    }
  }
  if (m.duration_s < 0) return "/duration_s: negative";
  return std::nullopt;
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
    if (!t.is_object()) refuse(t, "a timeline must be an object");
    const std::string source = t.at("source").get<std::string>();
    const auto device = checked<std::size_t>(t.at("device"));
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
      for (std::size_t i = 0; i < ts.size(); ++i) s.append(checked<double>(ts[i]), checked<double>(vs[i]));
    } else if (source == "cpu") {
      if (device >= m.cpu_energy.size()) throw std::runtime_error("timeline for CPU domain " + std::to_string(device));
      auto& v = m.cpu_energy[device];
      for (std::size_t i = 0; i < ts.size(); ++i) v.push_back({checked<double>(ts[i]), checked<double>(vs[i])});
    } else if (source == "meter") {
      for (std::size_t i = 0; i < ts.size(); ++i) m.meter_power.push_back({checked<double>(ts[i]), checked<double>(vs[i])});
    }
  }
}

Measurement from_json(const json& j) {
  Measurement m;
  m.schema_version = j.at("schema_version").get<int>();
  m.simulated = get_or(j, "simulated", false);
  m.complete = complete_status(j);
  m.incomplete_reason = get_or<std::string>(j, "incomplete_reason", "");
  m.exit_code = get_or(j, "exit_code", 0);
  m.command = get_or<std::vector<std::string>>(j, "command", {});
  m.builtin_workload = get_or(j, "builtin_workload", false);
  for (const auto& [k, v] : get_or<std::map<std::string, std::string>>(j, "tags", {})) m.tags[clean_label(k)] = clean_label(v);
  m.origin_realtime_ns = get_or<int64_t>(j, "origin_realtime_ns", 0);
  if (auto u = j.find("run_uuid"); u != j.end() && !u->is_null()) {
    // The run's identity (the store's duplicate check): only the form jouleprof writes.
    if (!u->is_string() || !is_uuid(u->get<std::string>())) refuse(*u, "run_uuid must be a lowercase UUID, found " + u->dump());
    m.run_uuid = u->get<std::string>();
  }
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
  for (const json& x : array_at(j, "gpus")) {
    GpuInfo i;
    i.index = get_or(x, "index", 0);
    i.name = clean_label(get_or<std::string>(x, "name", ""));
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
    for (const json& e : array_at(x, "sensor_errors")) {
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
  for (const json& r : array_at(j, "runs")) {
    RunInfo ri;
    ri.index = get_or(r, "index", 0);
    ri.warmup = get_or(r, "warmup", false);
    ri.window = get_or(r, "window", -1);
    ri.exit_code = get_or(r, "exit_code", 0);
    ri.signal = get_or(r, "signal", 0);
    ri.complete = complete_status(r);
    ri.reason = get_or<std::string>(r, "reason", "");
    m.runs.push_back(ri);
  }
  for (const json& w : array_at(j, "windows")) {
    WindowResult wr;
    wr.name = clean_label(w.at("name").get<std::string>());  // printed in tables: one line, no controls
    wr.kind = get_or<std::string>(w, "kind", "window");
    wr.run = get_or(w, "run", -1);
    wr.parent = get_or(w, "parent", -1);
    wr.t0_s = checked<double>(w.at("t0_s"));
    wr.t1_s = checked<double>(w.at("t1_s"));
    wr.complete = complete_status(w);
    wr.gpu_energy_j = get_or(w, "gpu_energy_j", 0.0);
    wr.gpu_above_idle_j = opt<double>(w, "gpu_above_idle_energy_j");
    for (const json& g : array_at(w, "gpus")) {
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
      if (g.contains("uncertainty_basis") && g["uncertainty_basis"].is_string()) e.uncertainty_basis = g["uncertainty_basis"].get<std::string>();
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
        wr.cpu.push_back({domain, checked<double>(val)});
      }
    }
    wr.meter_j = opt<double>(w, "meter_energy_j");
    wr.meter_uncertainty_j = get_or(w, "meter_uncertainty_j", 0.0);
    for (const auto& [k, v] : get_or<std::map<std::string, double>>(w, "counts", {})) wr.counts[clean_label(k)] = v;
    m.windows.push_back(wr);
  }
  if (auto st = j.find("statistics"); st != j.end() && st->is_object()) {
    // Runs stored before the per-count keys were made singular read as now (core/units.hpp).
    for (const auto& [what, s] : st->items()) m.stats.push_back({normalize_per_count_key(what), summary_from(s)});
  }
  for (const std::string& w : get_or<std::vector<std::string>>(j, "warnings", {})) m.warnings.push_back(clean_label(w));
  // Every other top-level section (e.g. "llm" from bench llm) is kept verbatim.
  static const std::set<std::string> kFields = {
      "schema_version", "simulated", "status", "incomplete_reason", "exit_code", "command", "builtin_workload", "tags",
      "started_at_utc", "origin_realtime_ns", "run_uuid", "duration_s", "provenance", "time_base", "gpus", "cpu", "meter", "runs",
      "windows", "statistics", "warnings", "timelines"};
  for (const auto& [key, val] : j.items()) {
    if (kFields.count(key) == 0) m.sections[key] = val.dump();
  }
  if (auto t = j.find("timelines"); t != j.end() && t->is_array()) read_timelines(*t, m);
  return m;
}

}  // namespace

Result<Measurement> measurement_from_json(const std::string& text) {
  if (auto at = json_too_deep(text)) {
    return make_error(Errc::parse, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " +
                                       std::to_string(*at) + "); not a jouleprof result");
  }
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
  Measurement m;
  try {
    m = from_json(j);
  } catch (const std::exception& e) {
    return make_error(Errc::parse, std::string("malformed result: ") + e.what());
  }
  if (auto why = structure_error(m)) return make_error(Errc::parse, "malformed result: " + *why);
  return m;
}

Result<Measurement> read_result_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  auto m = measurement_from_json(*text);
  if (!m) return make_error(m.error().code, path + ": " + m.error().message);
  return m;
}

Result<std::vector<Measurement>> read_result_documents(const std::string& path) {
  auto read = read_text_file(path);
  if (!read) return read.error();
  const std::string& text = *read;
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  std::vector<Measurement> out;
  if (first != std::string::npos && text[first] == '[') {
    if (auto at = json_too_deep(text)) {
      return make_error(Errc::parse, path + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " +
                                         std::to_string(*at) + ")");
    }
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
  auto text = read_text_file(path);
  if (!text) return text.error();
  std::istringstream in(*text);
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
        std::from_chars(f[3].data(), f[3].data() + f[3].size(), v).ec != std::errc{} || !std::isfinite(t) ||
        !std::isfinite(v)) {
      return bad("not a finite number");
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
