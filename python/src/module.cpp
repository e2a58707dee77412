// The `jouleprof._jouleprof` extension: a thin pybind11 binding of the C++ library (Monitor,
// Measurement, run store). Logic lives in the library; the Python package (jouleprof/) adds
// the Zeus-style surface, lazy window results and DataFrames.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "jouleprof/analysis/energy.hpp"
#include "jouleprof/measure/footprint.hpp"
#include "jouleprof/measure/measure.hpp"
#include "jouleprof/measure/output.hpp"
#include "jouleprof/result/result_json.hpp"
#include "jouleprof/replay/graph_replay.hpp"
#include "jouleprof/replay/replay_run.hpp"
#include "jouleprof/sampler/monitor.hpp"
#include "jouleprof/sensors/sim_model.hpp"
#include "jouleprof/store/store.hpp"
#include "jouleprof/version.hpp"
// trace analysis (helper "trace")
#include "jouleprof/analysis/attribution_replay.hpp"
#include "jouleprof/analysis/trace_profile.hpp"
#include "jouleprof/analysis/trace_store.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/store/activities.hpp"
#include "jouleprof/store/run_source.hpp"

namespace py = pybind11;
using namespace jouleprof;

namespace {

// A library error on its way to Python; translated into the typed exceptions of jouleprof/errors.py.
struct LibraryError {
  std::string kind;  // an Errc name, or "window" for misuse of the window API
  std::string message;
};

[[noreturn]] void raise(const Error& e) { throw LibraryError{to_string(e.code), e.message}; }
[[noreturn]] void raise_window(const std::string& message) { throw LibraryError{"window", message}; }

template <class T>
T value_or_raise(Result<T> r) {
  if (!r) raise(r.error());
  return std::move(*r);
}

py::object opt(const std::optional<double>& v) { return v ? py::object(py::float_(*v)) : py::object(py::none()); }

// An option of a dict of options: `v` set when `key` is given (left at its default otherwise).
template <class T>
void set_option(const py::dict& opts, const char* key, T& v) {
  if (opts.contains(key)) v = opts[key].cast<T>();
}

// One GPU's energy over one window: the result document's object (result/result_json.hpp, the one
// writer, so a figure absent there is None here too) under the Python API's names.
py::dict gpu_energy_dict(const GpuEnergy& e, const GpuInfo& info) {
  static const char* const kRenamed[][2] = {{"counter_energy_j", "counter_j"},   {"timeline_energy_j", "timeline_j"},
                                            {"response_energy_j", "response_j"}, {"timeline_vs_counter", "disagreement"},
                                            {"above_idle_energy_j", "above_idle_j"}};
  py::dict doc = py::module_::import("json").attr("loads")(gpu_energy_json(e));
  for (const auto& r : kRenamed) doc[r[1]] = doc.attr("pop")(r[0]);
  py::dict d;
  d["gpu"] = info.index;
  for (auto item : doc) d[item.first] = item.second;
  return d;
}

py::object json_loads(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

// footprint: the window's carbon and cost (the result's "footprint" section entry), or None.
py::dict window_dict(const WindowResult& w, const std::vector<GpuInfo>& gpus, py::object footprint = py::none()) {
  py::dict d;
  d["name"] = w.name;
  d["kind"] = w.kind;
  d["run"] = w.run;
  d["parent"] = w.parent;
  d["t0_s"] = w.t0_s;
  d["t1_s"] = w.t1_s;
  d["duration_s"] = w.duration_s();
  d["complete"] = w.complete;
  d["energy_j"] = w.gpu_energy_j;
  d["above_idle_j"] = opt(w.gpu_above_idle_j);
  py::list per_gpu;
  for (std::size_t g = 0; g < w.gpus.size(); ++g) {
    per_gpu.append(gpu_energy_dict(w.gpus[g], g < gpus.size() ? gpus[g] : GpuInfo{}));
  }
  d["gpus"] = per_gpu;
  py::dict cpu;
  for (const CpuEnergy& c : w.cpu) cpu[py::str(c.domain)] = c.energy_j;
  d["cpu_energy_j"] = cpu;
  d["meter_j"] = opt(w.meter_j);
  d["counts"] = w.counts;
  d["footprint"] = std::move(footprint);
  return d;
}

// The GPUs of a measurement or a live monitor, one dict each.
py::list gpu_info_list(const std::vector<GpuInfo>& gpus) {
  py::list out;
  for (const GpuInfo& g : gpus) {
    py::dict d;
    d["index"] = g.index;
    d["name"] = g.name;
    d["uuid"] = g.uuid;
    d["pci_bus_id"] = g.pci_bus_id;
    d["driver_version"] = g.driver_version;
    d["backend"] = g.backend;
    d["simulated"] = g.simulated;
    d["power_limit_w"] = opt(g.power_limit_w);
    out.append(d);
  }
  return out;
}

std::vector<GpuInfo> infos_of(const GpuSet& set) {
  std::vector<GpuInfo> out;
  for (const auto& g : set.gpus) out.push_back(g->info());
  return out;
}

// A measurement in Python: windows as dicts, JSON, storing; timelines stay in C++.
struct PyMeasurement {
  std::shared_ptr<Measurement> m;

  py::list windows() const {
    py::list out;
    py::object fp = footprint();
    py::list fp_windows = fp.is_none() ? py::list() : py::list(fp.attr("get")("windows", py::list()));
    for (std::size_t i = 0; i < m->windows.size(); ++i) {
      out.append(window_dict(m->windows[i], m->gpus, i < fp_windows.size() ? py::object(fp_windows[i]) : py::none()));
    }
    return out;
  }
  /// The result's "footprint" section (carbon and cost) as in `measure --json`, or None.
  py::object footprint() const {
    auto it = m->sections.find(kFootprintSection);
    return it == m->sections.end() ? py::object(py::none()) : json_loads(it->second);
  }
  py::list gpus() const { return gpu_info_list(m->gpus); }
  int64_t store(const std::string& path, const std::string& source) const {
    StoreOptions o;
    o.db_path = resolve_db_path(path);
    o.source = source;
    return value_or_raise(record_measurement(*m, o));
  }
};

class PyMonitor {
 public:
  PyMonitor(const std::string& device, const std::vector<std::string>& gpus, double period_ms,
            const std::string& sim_scenario, double counter_min_window_s, bool cpu, std::optional<double> carbon_intensity,
            std::optional<double> price, const std::string& carbon_source) {
    if (device != "auto" && device != "nvml" && device != "sim") {
      raise(make_error(Errc::invalid_argument, "device must be \"auto\", \"nvml\" or \"sim\", not \"" + device + "\""));
    }
    if (!(period_ms >= 1 && period_ms <= 10000)) {
      raise(make_error(Errc::invalid_argument, "period_ms must be between 1 and 10000"));
    }
    if (!(counter_min_window_s >= 0)) raise(make_error(Errc::invalid_argument, "counter_min_window_s must be >= 0"));
    MonitorOptions o;
    o.gpus.backend = device;
    o.gpus.ids = gpus;
    apply_gpu_environment(o.gpus);  // CUDA_VISIBLE_DEVICES (used when no gpus are given), $JOULEPROF_NVML_LIB
    o.gpus.sim_scenario = sim_scenario;
    o.sampler.fast_period_s = period_ms / 1000.0;
    o.sampler.read_cpu = cpu;
    o.energy.counter_min_window_s = counter_min_window_s;
    energy_ = o.energy;
    // Carbon and cost as the CLI resolves them (argument, else $JOULEPROF_CARBON_INTENSITY /
    // $JOULEPROF_PRICE, else the config file), named as Monitor's arguments.
    footprint_ = value_or_raise(resolve_footprint(carbon_intensity, price, carbon_source,
                                                  {"carbon_intensity", "price", "carbon_source"}));
    mon_ = value_or_raise(Monitor::create(o));
  }

  /// Opens the window of the one run a Monitor session is (after the idle baseline, if any), so
  /// that the store, `runs compare --phase` and reports treat it like a `measure` run.
  void start_run() {
    live();
    if (!run_window_) run_window_ = mon_->begin_at("run", std::nullopt, "run", 0);
  }

  std::size_t begin(const std::string& name) {
    live();
    start_run();
    if (name.empty()) raise(make_error(Errc::invalid_argument, "a window needs a name"));
    const auto id = mon_->begin_at(name, std::nullopt, "phase", 0);
    open_[name].push_back(id);
    return id;
  }

  std::size_t end(const std::string& name, bool complete) {
    live();
    auto it = open_.find(name);
    if (it == open_.end() || it->second.empty()) {
      std::string open;
      for (const auto& [n, ids] : open_) {
        if (!ids.empty()) open += (open.empty() ? "'" : ", '") + n + "'";
      }
      raise_window("end_window('" + name + "'): no window of that name is open" +
                   (open.empty() ? std::string(" (none is)") : " (open: " + open + ")"));
    }
    const auto id = it->second.back();
    it->second.pop_back();
    mon_->end_at(id, std::nullopt, complete);
    return id;
  }

  void count(std::size_t id, const std::string& key, double value) {
    if (!std::isfinite(value)) raise(make_error(Errc::invalid_argument, "count " + key + " must be a finite number"));
    if (measurement_) {
      measurement_->windows.at(id).counts[key] += value;
      return;
    }
    mon_->count(id, key, value);
  }

  bool is_final(std::size_t id) const { return measurement_ || mon_->is_final(id); }
  std::optional<double> final_in_s(std::size_t id) const {
    if (measurement_) return 0.0;
    const auto at = mon_->final_at_s(id);
    if (!at) return std::nullopt;
    return std::max(0.0, *at - mon_->timebase().now_s());
  }

  py::dict window(std::size_t id) const {
    if (measurement_) return window_dict(measurement_->windows.at(id), measurement_->gpus, footprint_of(measurement_->windows.at(id)));
    WindowResult r;
    {
      py::gil_scoped_release release;
      auto e = mon_->energy(id);
      if (!e) raise(e.error());
      r = std::move(*e);
    }
    return window_dict(r, infos_of(mon_->gpus()), footprint_of(r));
  }

  py::object footprint_of(const WindowResult& w) const {
    return footprint_.any() ? json_loads(window_footprint_json(w, footprint_)) : py::object(py::none());
  }

  std::vector<std::string> open_windows() const {
    std::vector<std::string> out;
    for (const auto& [n, ids] : open_) {
      for (std::size_t i = 0; i < ids.size(); ++i) out.push_back(n);
    }
    return out;
  }

  /// The idle baseline: begin_idle(), the caller waits (interruptibly, in Python), end_idle().
  std::size_t begin_idle() {
    live();
    if (run_window_) raise_window("the idle baseline must come before the first window");
    return mon_->begin_at("idle", std::nullopt, "idle", -1);
  }
  void end_idle(std::size_t id, bool complete) {
    live();
    mon_->end_at(id, std::nullopt, complete);
    if (!complete) return;
    py::gil_scoped_release release;
    set_idle_baseline(*mon_, id, warnings_);
  }

  void set_sim_power(double watts) {
    live();
    if (mon_->gpus().sim_models.empty()) {
      raise(make_error(Errc::invalid_argument, "set_sim_power() needs device=\"sim\""));
    }
    if (!(watts >= 0 && watts < 5000)) raise(make_error(Errc::invalid_argument, "sim power must be 0-5000 W"));
    const double t = mon_->timebase().now_s();
    for (const auto& m : mon_->gpus().sim_models) m->schedule().set_constant(t, watts);
  }

  PyMeasurement finish(bool interrupted, const std::map<std::string, std::string>& tags,
                       const std::vector<std::string>& command) {
    live();
    // Open windows become incomplete (Python decides first whether that is an error).
    for (auto& [n, ids] : open_) {
      for (auto id : ids) mon_->end_at(id, std::nullopt, false);
      ids.clear();
    }
    start_run();
    mon_->end_at(*run_window_, std::nullopt, !interrupted);
    Measurement m;
    {
      py::gil_scoped_release release;
      mon_->sync_counters();
      m = mon_->finish();
    }
    m.command = command;
    m.tags = tags;
    m.warnings.insert(m.warnings.begin(), warnings_.begin(), warnings_.end());
    RunInfo run;
    run.index = 0;
    const std::size_t rw = *run_window_;
    run.window = static_cast<int>(rw);
    run.complete = !interrupted && m.windows[rw].complete;
    if (interrupted) run.reason = "interrupted (KeyboardInterrupt)";
    m.runs.push_back(run);
    for (const WindowResult& w : m.windows) {
      if (w.kind == "phase" && !w.complete && run.complete) {
        m.windows[rw].complete = false;
        m.runs[0].complete = false;
        m.runs[0].reason = "window '" + w.name + "' was incomplete";
        break;
      }
    }
    if (!m.runs[0].complete) {
      m.complete = false;
      m.incomplete_reason = "run 0: " + m.runs[0].reason;
    }
    warn_short_windows(m, energy_);
    summarize_repeats(m, 0.05);
    fill_provenance(m);
    add_footprint(m, footprint_);
    if (m.simulated) m.tags.emplace("simulated", "true");
    measurement_ = std::make_shared<Measurement>(std::move(m));
    return PyMeasurement{measurement_};
  }

  bool finished() const { return measurement_ != nullptr; }
  bool simulated() const { return mon_->gpus().simulated(); }
  std::string backend() const { return mon_->gpus().backend; }
  std::string note() const { return mon_->gpus().note; }
  py::list gpus() const { return gpu_info_list(infos_of(mon_->gpus())); }
  double now_s() const { return mon_->timebase().now_s(); }

 private:
  void live() const {
    if (measurement_) raise_window("the monitor has finished; create a new Monitor to measure again");
  }

  std::unique_ptr<Monitor> mon_;
  EnergyOptions energy_;
  FootprintSettings footprint_;
  std::optional<Monitor::WindowId> run_window_;
  std::unordered_map<std::string, std::vector<Monitor::WindowId>> open_;
  std::vector<std::string> warnings_;
  std::shared_ptr<Measurement> measurement_;
};

// The run store, read-only: runs, windows and timelines as rows (lists of dicts).
class PyStore {
 public:
  explicit PyStore(const std::string& path) : store_(value_or_raise(Store::open(resolve_db_path(path), Store::Mode::read))) {}

  py::list runs() {
    py::list out;
    for (const RunSummary& r : value_or_raise(store_.list())) {
      py::dict d;
      d["id"] = r.id;
      d["recorded_at_utc"] = r.recorded_at_utc;
      d["started_at_utc"] = r.started_at_utc;
      d["command"] = r.command;
      d["tags"] = r.tags;
      d["host"] = r.host;
      d["status"] = r.status;
      d["source"] = r.source;
      d["gpu_names"] = r.gpu_names;
      d["simulated"] = r.simulated;
      d["duration_s"] = r.duration_s;
      d["measured_runs"] = r.measured_runs;
      d["gpu_energy_j"] = opt(r.gpu_energy_j);
      d["gpu_energy_ci95_j"] = opt(r.gpu_energy_ci95_j);
      d["run_duration_s"] = opt(r.run_duration_s);
      out.append(d);
    }
    return out;
  }

  int64_t resolve(const std::string& ref) { return value_or_raise(resolve_run_ref(store_, ref)); }

  PyMeasurement load(int64_t id, bool with_timelines) {
    return PyMeasurement{std::make_shared<Measurement>(value_or_raise(store_.load(id, with_timelines)))};
  }

  std::string path() const { return store_.path(); }

 private:
  Store store_;
};

// Timeline rows of a loaded measurement: (gpu index, metric, t_s, value), as columns.
py::dict timeline_columns(const PyMeasurement& pm) {
  std::vector<int> gpu;
  std::vector<std::string> metric;
  std::vector<double> t, v;
  const Measurement& m = *pm.m;
  for (std::size_t g = 0; g < m.timelines.size(); ++g) {
    if (!m.timelines[g]) continue;
    const int index = g < m.gpus.size() ? m.gpus[g].index : static_cast<int>(g);
    for (int k = 0; k < kMetricCount; ++k) {
      const char* name = metric_name(static_cast<Metric>(k));
      m.timelines[g]->series[static_cast<std::size_t>(k)].for_each([&](const Sample& s) {
        gpu.push_back(index);
        metric.emplace_back(name);
        t.push_back(s.t_s);
        v.push_back(s.value);
      });
    }
  }
  py::dict d;
  d["gpu"] = gpu;
  d["metric"] = metric;
  d["t_s"] = t;
  d["value"] = v;
  return d;
}

// ---- trace analysis of a stored run (helper "trace"; keep replay bindings in their own block) ----
// A traced run of the store analysed again as `jouleprof trace --from RUN` does (other method,
// replay data): its "trace" section as JSON text.
std::string trace_analysis(const std::string& run, const std::string& db, const std::string& method, const std::string& replay) {
  auto runs = value_or_raise(load_runs({run}, db, true));
  LoadedRun& r = runs.front();
  if (r.id == 0) raise(Error{Errc::invalid_argument, run + ": a result file keeps no activities; give a run of the store"});
  auto rows = value_or_raise(load_activities(resolve_db_path(db), r.id));
  auto classes = value_or_raise(KernelClassifier::load_default());
  TraceProfileOptions o;
  o.method = method;
  std::optional<ReplayReference> rep;
  if (!replay.empty()) {
    auto text = value_or_raise(read_text_file(replay));
    rep = value_or_raise(parse_replay_reference(text, replay));
    o.replay = &*rep;
  }
  TraceData t;
  const TraceProfile p = value_or_raise(analyze_stored_trace(r.m, rows, classes, o, t));
  return trace_profile_json(p);
}
// ---- end of trace analysis ----

// ---- the tier replay's prediction (replay_run.hpp: `jouleprof replay` as one call) ----
// A traced run predicted from its kernels replayed in isolation: the engine run now (measured,
// stored) or its earlier output (`measurements`). Returns the result document ("jouleprof.replay",
// as `jouleprof replay --json`), the printed summary, where the session was stored and why not.
py::dict replay_trace(const std::vector<std::string>& traces, const py::dict& opts) {
  ReplayRequest r;
  r.traces = traces;
  auto get = [&](const char* k, auto& v) { set_option(opts, k, v); };
  get("measurements", r.from);
  get("measured", r.measured);
  get("window", r.window);
  get("phases", r.phases);
  get("classes", r.classes);
  get("tiers", r.tiers);
  get("engine", r.engine);
  get("keep_measurements", r.keep_measurements);
  get("store", r.store);
  get("db", r.db);
  get("device", r.measure.monitor.gpus.backend);
  r.measure.idle_s = 1.0;  // as `jouleprof replay --idle`
  get("idle_s", r.measure.idle_s);
  apply_gpu_environment(r.measure.monitor.gpus);  // CUDA_VISIBLE_DEVICES, $JOULEPROF_NVML_LIB
  bool quiet = false;
  get("quiet", quiet);
  if (!quiet) r.measure.progress = [](const std::string& line) { std::fprintf(stderr, "jouleprof: %s\n", line.c_str()); };
  Result<ReplayOutcome> out = make_error(Errc::internal, "not run");
  {
    py::gil_scoped_release release;  // the engine runs for minutes
    out = replay_command(r);
  }
  const ReplayOutcome o = value_or_raise(std::move(out));
  py::dict d;
  d["json"] = replay_json(o.table, *o.prediction);
  d["text"] = replay_text(o.table, *o.prediction, 15);
  d["run_id"] = o.run_id ? py::object(py::int_(*o.run_id)) : py::object(py::none());
  d["store_error"] = o.store_error ? py::object(py::str(o.store_error->message)) : py::object(py::none());
  return d;
}
// ---- end of the tier replay ----

}  // namespace

PYBIND11_MODULE(_jouleprof, mod) {
  mod.doc() = "jouleprof C++ library binding (use the jouleprof package, not this module)";
  mod.attr("__version__") = kVersion;

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const LibraryError& e) {
      py::object errors = py::module_::import("jouleprof.errors");
      py::object cls = errors.attr("exception_for")(e.kind);
      PyErr_SetObject(cls.ptr(), py::str(e.message).ptr());
    }
  });

  py::class_<PyMeasurement>(mod, "Measurement")
      .def_property_readonly("windows", &PyMeasurement::windows)
      .def_property_readonly("gpus", &PyMeasurement::gpus)
      .def_property_readonly("warnings", [](const PyMeasurement& s) { return s.m->warnings; })
      .def_property_readonly("complete", [](const PyMeasurement& s) { return s.m->complete; })
      .def_property_readonly("incomplete_reason", [](const PyMeasurement& s) { return s.m->incomplete_reason; })
      .def_property_readonly("simulated", [](const PyMeasurement& s) { return s.m->simulated; })
      .def_property_readonly("backend", [](const PyMeasurement& s) { return s.m->backend; })
      .def_property_readonly("tags", [](const PyMeasurement& s) { return s.m->tags; })
      .def_property_readonly("command", [](const PyMeasurement& s) { return s.m->command; })
      .def_property_readonly("duration_s", [](const PyMeasurement& s) { return s.m->duration_s; })
      .def_property_readonly("sampler_cpu_s", [](const PyMeasurement& s) { return s.m->sampler_cpu_s; })
      .def_property_readonly("footprint", &PyMeasurement::footprint)
      .def_property_readonly("origin_realtime_ns", [](const PyMeasurement& s) { return s.m->origin_realtime_ns; })
      .def("to_json", [](const PyMeasurement& s, int indent) { return result_to_json(*s.m, indent); },
           py::arg("indent") = 2)
      .def("store", &PyMeasurement::store, py::arg("path"), py::arg("source"))
      .def("timeline_columns", &timeline_columns);

  py::class_<PyMonitor>(mod, "Monitor")
      .def(py::init<const std::string&, const std::vector<std::string>&, double, const std::string&, double, bool,
                    std::optional<double>, std::optional<double>, const std::string&>(),
           py::arg("device"), py::arg("gpus"), py::arg("period_ms"), py::arg("sim_scenario"),
           py::arg("counter_min_window_s"), py::arg("cpu"), py::arg("carbon_intensity") = py::none(),
           py::arg("price") = py::none(), py::arg("carbon_source") = "")
      .def("begin", &PyMonitor::begin)
      .def("end", &PyMonitor::end, py::arg("name"), py::arg("complete") = true)
      .def("count", &PyMonitor::count)
      .def("is_final", &PyMonitor::is_final)
      .def("final_in_s", &PyMonitor::final_in_s)
      .def("window", &PyMonitor::window)
      .def("open_windows", &PyMonitor::open_windows)
      .def("start_run", &PyMonitor::start_run)
      .def("begin_idle", &PyMonitor::begin_idle)
      .def("end_idle", &PyMonitor::end_idle)
      .def("set_sim_power", &PyMonitor::set_sim_power)
      .def("finish", &PyMonitor::finish)
      .def_property_readonly("finished", &PyMonitor::finished)
      .def_property_readonly("simulated", &PyMonitor::simulated)
      .def_property_readonly("backend", &PyMonitor::backend)
      .def_property_readonly("note", &PyMonitor::note)
      .def_property_readonly("gpus", &PyMonitor::gpus)
      .def("now_s", &PyMonitor::now_s);

  py::class_<PyStore>(mod, "Store")
      .def(py::init<const std::string&>())
      .def("runs", &PyStore::runs)
      .def("resolve", &PyStore::resolve)
      .def("load", &PyStore::load, py::arg("id"), py::arg("with_timelines") = true)
      .def_property_readonly("path", &PyStore::path);

  mod.def("default_db_path", [] { return resolve_db_path(""); });
  // The exact replay of a captured CUDA graph (jouleprof.torch.replay_step): the options and the
  // result as JSON (graph_replay.hpp); the GIL is released while the GPU runs.
  mod.attr("CONTEXT_LOST_WARNING") = kContextLostWarning;  // how an in-process replay's lost-context warning starts
  mod.def("list_cuda_graph", [](std::uintptr_t graph, const std::string& cuda_library) {
    GraphListing l = value_or_raise(list_cuda_graph(graph, cuda_library));
    std::vector<std::tuple<std::string, std::string, std::size_t>> out;
    for (const GraphGroup& g : l.groups) out.emplace_back(g.kind, g.name, g.count);
    return std::make_pair(out, l.warnings);
  }, py::arg("graph"), py::arg("cuda_library") = "");
  mod.def("replay_cuda_graph", [](std::uintptr_t graph, const py::dict& opts) {
    GraphReplayOptions o;
    auto get = [&](const char* k, auto& v) { set_option(opts, k, v); };
    get("cuda_library", o.cuda_library);
    get("sensor", o.sensor);
    get("trials", o.trials);
    get("trial_s", o.trial_s);
    get("settle_s", o.settle_s);
    get("warmup_s", o.warmup_s);
    get("ci_target", o.ci_target);
    get("long_trial_s", o.long_trial_s);
    get("row_cap_s", o.row_cap_s);
    get("max_trials", o.max_trials);
    get("coverage", o.coverage);
    get("max_rows", o.max_rows);
    get("graph_ms", o.graph_ms);
    get("measure_step", o.measure_step);
    get("rows", o.rows);
    // The restart past a faulting row (jouleprof.replay.replay_step_isolated): this process's
    // progress, the rows and the step an earlier one finished (read from `prior_progress`), and the
    // rows that faulted there.
    get("progress_path", o.progress_path);
    get("faulted", o.faulted);
    std::string prior;
    get("prior_progress", prior);
    if (!prior.empty()) {
      ReplayProgress p = value_or_raise(read_replay_progress(prior));
      o.prior = std::move(p.rows);
      o.prior_step = p.step;
    }
    Result<GraphReplay> r = make_error(Errc::internal, "not run");
    {
      py::gil_scoped_release release;
      r = replay_cuda_graph(graph, o);
    }
    return graph_replay_json(value_or_raise(std::move(r)));
  }, py::arg("graph"), py::arg("options"));
  // A progress file read back (the parent of replay_step_isolated): the row started last and not
  // finished, the rows that faulted with the process alive, the ids of the finished rows.
  mod.def("read_replay_progress", [](const std::string& path) {
    ReplayProgress p = value_or_raise(read_replay_progress(path));
    std::vector<std::string> finished;
    for (const auto& [id, row] : p.rows) finished.push_back(id);
    std::map<std::string, std::string> names;
    if (p.listing) {
      for (const ExactRow& x : p.listing->rows) names[x.group.id] = x.group.kind + " " + x.group.name;
    }
    py::dict d;
    d["started"] = p.started;
    d["faulted"] = p.faulted;
    d["finished"] = finished;
    d["names"] = names;
    d["listed"] = p.listing.has_value();
    return d;
  }, py::arg("path"));
  mod.def("replay_progress_document", [](const std::string& path, const std::map<std::string, std::string>& faulted, const std::string& reason) {
    ReplayProgress p = value_or_raise(read_replay_progress(path));
    return graph_replay_json(value_or_raise(graph_replay_from_progress(p, faulted, reason)));
  }, py::arg("path"), py::arg("faulted"), py::arg("reason"));
  mod.def("replay_trace", &replay_trace, py::arg("traces"), py::arg("options"));
  // trace analysis (helper "trace")
  mod.def("trace_analysis", &trace_analysis, py::arg("run"), py::arg("db") = "", py::arg("method") = "", py::arg("replay") = "");
}
