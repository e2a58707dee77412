#include "jouleprof/workloads/bench_record.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "jouleprof/workloads/bench_llm.hpp"
#include "jouleprof/analysis/energy.hpp"
#include "jouleprof/core/utc.hpp"
#include "jouleprof/core/uuid.hpp"

namespace jouleprof::llm {
namespace {

using nlohmann::json;

constexpr double kPadS = 0.25;  // samples kept on each side of a configuration's run window


std::optional<json> llm_section(const Measurement& m) {
  auto it = m.sections.find("llm");
  if (it == m.sections.end()) return std::nullopt;
  json j = json::parse(it->second, nullptr, false);
  if (!j.is_object() || j.value("schema", "") != kBenchSchema || !j.contains("points") || !j["points"].is_array()) {
    return std::nullopt;
  }
  return j;
}

std::string tag_value(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {  // per-sequence prompt lengths from --tokens
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x.dump();
    return s;
  }
  return v.dump();
}

// The sweep's command with this configuration's values (rerunning it measures just this one).
std::vector<std::string> config_command(const std::vector<std::string>& sweep, const json& p) {
  std::vector<std::string> c;
  for (std::size_t i = 0; i < sweep.size(); ++i) {  // the sweep's output files are not this run's
    if (sweep[i] == "--json-timelines") continue;
    if (sweep[i] == "--json" && i + 1 < sweep.size()) {
      ++i;
      continue;
    }
    c.push_back(sweep[i]);
  }
  const bool weights = std::find(c.begin(), c.end(), "--weights") != c.end();
  const bool tokens = std::find(c.begin(), c.end(), "--tokens") != c.end();
  for (std::size_t i = 0; i + 1 < c.size(); ++i) {
    const std::string& f = c[i];
    if (f == "--model" && !weights) c[i + 1] = p.value("model", c[i + 1]);
    if (f == "--dtype") c[i + 1] = p.value("dtype", c[i + 1]);
    if (f == "--batch" && !tokens) c[i + 1] = tag_value(p["batch"]);
    if (f == "--prompt" && !tokens) c[i + 1] = tag_value(p["prompt"]);
    if (f == "--gen") c[i + 1] = tag_value(p["gen"]);
  }
  return c;
}

std::vector<Sample> cut(const std::vector<Sample>& v, double t0, double t1) {
  std::vector<Sample> out;
  for (const Sample& s : v) {
    if (s.t_s >= t0 && s.t_s <= t1) out.push_back({s.t_s - t0, s.value});
  }
  return out;
}

// Renumbers the "window" fields of a point (and of its parts) through `map` (-1: not kept).
void renumber(json& p, const std::vector<int>& map) {
  auto fix = [&](json& o, const char* key) {
    if (!o.is_object() || !o.contains(key) || !o[key].is_number_integer()) return;
    const int old = o[key].get<int>();
    o[key] = old >= 0 && static_cast<std::size_t>(old) < map.size() ? map[static_cast<std::size_t>(old)] : -1;
  };
  fix(p, "run_window");
  for (const char* phase : {"prefill", "decode"}) {
    if (p.contains(phase)) fix(p[phase], "window");
  }
  for (const char* list : {"components", "layers"}) {
    if (p.contains(list) && p[list].is_array()) {
      for (auto& x : p[list]) fix(x, "window");
    }
  }
  if (p.contains("consistency")) fix(p["consistency"], "step_window");
}

}  // namespace

bool is_bench_sweep(const Measurement& m) {
  auto j = llm_section(m);
  if (!j || j->contains("configuration")) return false;
  for (const auto& p : (*j)["points"]) {
    if (!p.contains("run_window")) return false;  // written before configurations had run windows
  }
  return true;
}

Result<std::vector<Measurement>> split_bench_sweep(const Measurement& sweep) {
  auto llm = llm_section(sweep);
  if (!llm || !is_bench_sweep(sweep)) {
    return make_error(Errc::invalid_argument, "not a bench llm sweep (no \"llm\" section with run windows)");
  }
  const json& points = (*llm)["points"];
  json shared = *llm;
  shared.erase("points");
  shared.erase("configurations");
  const std::string sweep_id = iso_utc_ms(sweep.origin_realtime_ns);
  std::vector<Measurement> out;
  for (std::size_t k = 0; k < points.size(); ++k) {
    const json& p = points[k];
    const int rw = p["run_window"].get<int>();
    if (rw < 0 || static_cast<std::size_t>(rw) >= sweep.windows.size() || sweep.windows[static_cast<std::size_t>(rw)].kind != "run") {
      return make_error(Errc::parse, "bench llm point " + std::to_string(k) + " names no run window");
    }
    const WindowResult& run = sweep.windows[static_cast<std::size_t>(rw)];
    const double t0 = std::max(0.0, run.t0_s - kPadS);
    const double t1 = std::min(std::max(sweep.duration_s, run.t1_s), run.t1_s + kPadS);

    Measurement m;
    m.schema_version = sweep.schema_version;
    m.tool_version = sweep.tool_version;
    m.git_revision = sweep.git_revision;
    m.build_type = sweep.build_type;
    m.command = config_command(sweep.command, p);
    m.invocation = sweep.invocation;
    m.builtin_workload = sweep.builtin_workload;
    m.host = sweep.host;
    m.kernel = sweep.kernel;
    m.origin_realtime_ns = sweep.origin_realtime_ns + std::llround(t0 * 1e9);
    // Its own identity, the same each time this sweep is split (a re-import is recognised).
    if (!sweep.run_uuid.empty()) m.run_uuid = derived_uuid(sweep.run_uuid, "configuration " + std::to_string(k));
    m.backend = sweep.backend;
    m.simulated = sweep.simulated;
    m.device_note = sweep.device_note;
    m.gpus = sweep.gpus;
    m.warnings = sweep.warnings;
    m.cpu_domains = sweep.cpu_domains;
    m.cpu_unavailable_reason = sweep.cpu_unavailable_reason;
    m.meter_source = sweep.meter_source;
    m.duration_s = t1 - t0;
    for (TimeBase::Calibration c : sweep.time_calibrations) {
      c.at_s -= t0;
      m.time_calibrations.push_back(c);
    }

    // The run window and every window inside it, in order.
    std::vector<int> map(sweep.windows.size(), -1);
    auto inside = [&](std::size_t i) {
      for (int q = static_cast<int>(i); q >= 0; q = sweep.windows[static_cast<std::size_t>(q)].parent) {
        if (q == rw) return true;
      }
      return false;
    };
    const std::string prefix = run.name + "/";
    for (std::size_t i = 0; i < sweep.windows.size(); ++i) {
      if (!inside(i)) continue;
      WindowResult w = sweep.windows[i];
      map[i] = static_cast<int>(m.windows.size());
      w.parent = w.parent >= 0 ? map[static_cast<std::size_t>(w.parent)] : -1;
      if (static_cast<int>(i) == rw) {
        w.name = "run";
        w.parent = -1;
      } else if (w.name.rfind(prefix, 0) == 0) {
        w.name = w.name.substr(prefix.size());
      }
      w.run = 0;
      w.t0_s -= t0;
      w.t1_s -= t0;
      m.windows.push_back(std::move(w));
    }
    const std::string status = p.value("status", "complete");
    RunInfo r;
    r.index = 0;
    r.window = m.windows.empty() ? -1 : 0;  // a skipped configuration measured no window
    r.complete = status == "complete" && run.complete;
    if (status == "skipped") {
      r.reason = "skipped: " + p.value("skipped", std::string("?"));
    } else if (!r.complete) {
      r.reason = p.value("incomplete_reason", sweep.incomplete_reason);
    }
    m.runs.push_back(r);
    m.complete = r.complete;
    m.incomplete_reason = r.reason;
    m.exit_code = r.complete || status == "skipped" ? 0 : sweep.exit_code;
    summarize_repeats(m, 1.0);

    // The samples of the configuration, on its own time base; GPU state over that span.
    m.gpu_state = sweep.gpu_state;
    for (std::size_t g = 0; g < sweep.timelines.size(); ++g) {
      if (!sweep.timelines[g]) {
        m.timelines.push_back(nullptr);
        continue;
      }
      auto tl = std::make_shared<GpuTimeline>(std::size_t{1} << 21);
      for (int s = 0; s < kMetricCount; ++s) {
        for (const Sample& x : cut(sweep.timelines[g]->series[static_cast<std::size_t>(s)].slice(t0, t1), t0, t1)) {
          tl->series[static_cast<std::size_t>(s)].append(x.t_s, x.value);
        }
      }
      if (g < m.gpu_state.size()) {
        GpuRunState& st = m.gpu_state[g];
        auto range = [&](Metric metric, std::optional<double>& lo, std::optional<double>& hi) {
          const Series& s = tl->series[static_cast<std::size_t>(metric)];
          if (s.empty()) return;
          lo.reset();
          hi.reset();
          s.for_each([&](const Sample& x) {
            lo = lo ? std::min(*lo, x.value) : x.value;
            hi = hi ? std::max(*hi, x.value) : x.value;
          });
        };
        range(Metric::temperature_c, st.temperature_min_c, st.temperature_max_c);
        range(Metric::sm_clock_mhz, st.sm_clock_min_mhz, st.sm_clock_max_mhz);
        std::vector<SensorError> errs;
        for (SensorError e : st.errors) {
          if (e.t_s < t0 || e.t_s > t1) continue;
          e.t_s -= t0;
          errs.push_back(e);
        }
        st.errors = std::move(errs);
        if (st.lost_at_s) st.lost_at_s = *st.lost_at_s > t1 ? std::nullopt : std::optional<double>(std::max(0.0, *st.lost_at_s - t0));
      }
      m.timelines.push_back(std::move(tl));
    }
    for (const auto& c : sweep.cpu_energy) m.cpu_energy.push_back(cut(c, t0, t1));
    m.meter_power = cut(sweep.meter_power, t0, t1);

    m.tags = sweep.tags;
    m.tags["bench"] = "llm";
    for (const char* key : {"model", "dtype", "batch", "prompt", "gen", "variant"}) {
      if (p.contains(key)) m.tags[key] = tag_value(p[key]);
    }
    m.tags["device"] = llm->value("simulated", false) ? "sim" : llm->value("device", std::string("?"));
    m.tags["sweep"] = sweep_id;

    json section = shared;
    json point = p;
    renumber(point, map);
    section["points"] = json::array({point});
    section["configuration"] = {{"index", k}, {"of", points.size()}, {"sweep", sweep_id}, {"sweep_command", sweep.command}};
    m.sections["llm"] = section.dump();
    out.push_back(std::move(m));
  }
  return out;
}

Result<std::vector<int64_t>> record_bench_sweep(const Measurement& sweep, const StoreOptions& o) {
  auto runs = split_bench_sweep(sweep);
  if (!runs) return runs.error();
  std::vector<int64_t> ids;
  if (runs->empty()) return ids;
  auto store = Store::open(resolve_db_path(o.db_path), Store::Mode::write, o.busy_timeout_ms);
  if (!store) return store.error();
  for (const Measurement& m : *runs) {
    auto id = store->insert(m, o);
    if (!id) return id.error();
    ids.push_back(*id);
  }
  return ids;
}

}  // namespace jouleprof::llm
