#include "jouleprof/analysis/trace_store.hpp"

#include <nlohmann/json.hpp>
#include <optional>

#include "jouleprof/analysis/trace_profile.hpp"

namespace jouleprof {
namespace {

nlohmann::json attrs(const Activity& a) {
  nlohmann::json j = {{"class", a.kclass}, {"path", a.path}, {"phase", a.phase}, {"cuda_device", a.device}};
  if (a.kind == Activity::Kind::kernel) {
    j["grid"] = {a.grid[0], a.grid[1], a.grid[2]};
    j["block"] = {a.block[0], a.block[1], a.block[2]};
    j["registers_per_thread"] = a.registers;
    j["shared_memory_bytes"] = a.static_shared_bytes + a.dynamic_shared_bytes;
  } else if (a.kind != Activity::Kind::range) {
    j["bytes"] = a.bytes;
  }
  return j;
}

std::optional<Activity::Kind> kind_named(const std::string& name) {
  for (Activity::Kind k : {Activity::Kind::kernel, Activity::Kind::memcpy, Activity::Kind::memset, Activity::Kind::sync,
                           Activity::Kind::range, Activity::Kind::mark}) {
    if (name == activity_kind_name(k)) return k;
  }
  return std::nullopt;
}

}  // namespace

std::string activity_attrs_json(const Activity& a) { return attrs(a).dump(); }

std::vector<StoredActivity> stored_activities(const Measurement& m, const TraceData& t) {
  std::vector<StoredActivity> rows;
  rows.reserve(t.activities.size());
  for (const Activity& a : t.activities) {
    StoredActivity s;
    s.device = measured_gpu(m, t, a);
    s.kind = activity_kind_name(a.kind);
    s.name = a.name;
    s.t0_s = a.t0_s;
    s.t1_s = a.t1_s;
    s.stream = a.on_gpu() ? static_cast<int64_t>(a.stream) : -1;
    s.correlation = a.on_gpu() ? static_cast<int64_t>(a.correlation) : -1;
    nlohmann::json j = attrs(a);
    j["process"] = a.process;
    if (a.thread != 0) j["thread"] = a.thread;
    s.attrs_json = j.dump();
    rows.push_back(std::move(s));
  }
  return rows;
}

Result<TraceData> trace_from_store(const Measurement& m, const std::vector<StoredActivity>& rows) {
  auto sec = m.sections.find("trace");
  if (sec == m.sections.end()) return make_error(Errc::invalid_argument, "it was not traced (no \"trace\" section)");
  const auto j = nlohmann::json::parse(sec->second, nullptr, false);
  if (!j.is_object()) return make_error(Errc::invalid_argument, "its \"trace\" section is not a JSON object");
  TraceData t;
  try {
    for (const auto& w : j.value("warnings", nlohmann::json::array())) t.warnings.push_back(w.get<std::string>());
    if (const auto ra = j.find("range_assignment"); ra != j.end()) {
      t.range_assignment.method = ra->value("method", std::string("none"));
      t.range_assignment.assigned = ra->value("activities", uint64_t{0});
      t.range_assignment.checked = ra->value("anchor_checked", uint64_t{0});
      t.range_assignment.agreed = ra->value("anchor_agreed", uint64_t{0});
    }
    for (const auto& x : j.value("processes", nlohmann::json::array())) {
      ProcessTrace p;
      p.pid = x.value("pid", int64_t{0});
      p.ppid = x.value("ppid", int64_t{0});
      // Kept as one string: the profile joins the arguments with spaces, which gives it back.
      if (const std::string c = x.value("command", std::string()); !c.empty()) p.command = {c};
      p.records = x.value("records", uint64_t{0});
      p.dropped = x.value("dropped_records", uint64_t{0});
      p.ended = x.value("ended", true);
      p.signal = x.value("signal", 0);
      p.damage = x.value("damage", std::string());
      // Stores from before records_stopped was written: an incomplete trace stays incomplete.
      p.records_stopped = x.value("records_stopped", !j.value("complete", true));
      p.clock_offset_start_ns = x.value("clock_offset_start_ns", 0.0);
      p.clock_offset_end_ns = x.value("clock_offset_end_ns", 0.0);
      p.clock_drift_ppm = x.value("clock_drift_ppm", 0.0);
      t.processes.push_back(std::move(p));
    }
    if (const auto sp = j.find("sampling"); sp != j.end() && sp->is_object()) {
      t.sampling.on_s = sp->value("on_s", 0.0);
      t.sampling.period_s = sp->value("period_s", 0.0);
      t.sampling.windows_s = sp->value("windows_s", std::vector<std::pair<double, double>>{});
      t.sampling.pauses_s = sp->value("pauses_s", std::vector<std::pair<double, double>>{});
    }
  } catch (const nlohmann::json::exception& e) {
    return make_error(Errc::invalid_argument, std::string("its \"trace\" section is malformed: ") + e.what());
  }
  t.activities.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const StoredActivity& s = rows[i];
    auto where = [&] { return "activity " + std::to_string(i + 1) + " (" + s.kind + " " + s.name + ")"; };
    const auto kind = kind_named(s.kind);
    if (!kind) return make_error(Errc::invalid_argument, where() + ": unknown kind");
    const auto x = nlohmann::json::parse(s.attrs_json.empty() ? std::string("{}") : s.attrs_json, nullptr, false);
    if (!x.is_object()) return make_error(Errc::invalid_argument, where() + ": attributes are not a JSON object");
    Activity a;
    a.kind = *kind;
    try {
      a.process = x.value("process", 0);
      if (a.process < 0 || (!t.processes.empty() && static_cast<std::size_t>(a.process) >= t.processes.size())) {
        return make_error(Errc::invalid_argument, where() + ": no process " + std::to_string(a.process));
      }
      a.device = x.value("cuda_device", uint32_t{0});
      a.name = s.name;
      a.t0_s = s.t0_s;
      a.t1_s = s.t1_s;
      a.stream = s.stream >= 0 ? static_cast<uint32_t>(s.stream) : 0;
      a.correlation = s.correlation >= 0 ? static_cast<uint32_t>(s.correlation) : 0;
      a.path = x.value("path", std::string());
      a.phase = x.value("phase", std::string());
      a.thread = x.value("thread", uint64_t{0});
      if (const auto g = x.find("grid"); g != x.end() && g->is_array() && g->size() == 3) {
        for (int d = 0; d < 3; ++d) a.grid[d] = (*g)[static_cast<std::size_t>(d)].get<int>();
      }
      if (const auto b = x.find("block"); b != x.end() && b->is_array() && b->size() == 3) {
        for (int d = 0; d < 3; ++d) a.block[d] = (*b)[static_cast<std::size_t>(d)].get<int>();
      }
      a.registers = x.value("registers_per_thread", uint32_t{0});
      a.static_shared_bytes = x.value("shared_memory_bytes", uint32_t{0});  // static + dynamic: only the sum is used
      a.bytes = x.value("bytes", uint64_t{0});
    } catch (const nlohmann::json::exception& e) {
      return make_error(Errc::invalid_argument, where() + ": " + e.what());
    }
    if (a.on_gpu() && !t.processes.empty()) {
      // The GPU it was attributed to when traced: a UUID that measured_gpu maps back to it.
      ProcessTrace& p = t.processes[static_cast<std::size_t>(a.process)];
      if (s.device >= 0 && static_cast<std::size_t>(s.device) < m.gpus.size()) {
        if (static_cast<uint32_t>(s.device) != a.device) p.device_uuids[a.device] = m.gpus[static_cast<std::size_t>(s.device)].uuid;
      } else {
        p.device_uuids[a.device] = "(not measured)";
      }
    }
    t.activities.push_back(std::move(a));
  }
  if (t.processes.empty() && !t.activities.empty()) {
    return make_error(Errc::invalid_argument, "its \"trace\" section lists no process but " + std::to_string(rows.size()) + " activities are stored");
  }
  return t;
}

Result<TraceProfile> analyze_stored_trace(Measurement& m, const std::vector<StoredActivity>& rows, const KernelClassifier& classes,
                                          const TraceProfileOptions& o, TraceData& t) {
  auto traced = trace_from_store(m, rows);
  if (!traced) return traced.error();
  t = std::move(*traced);
  std::erase_if(m.warnings, [](const std::string& w) { return w.rfind("trace: ", 0) == 0; });
  return analyze_placed_trace(m, t, classes, o);
}

}  // namespace jouleprof
