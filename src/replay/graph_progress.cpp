// The exact replay's progress file, read back, and the Σ rows prediction (graph_progress.hpp).
#include "graph_progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

namespace jouleprof {
namespace detail {

using nlohmann::json;

std::string short_name(const std::string& n) { return n.size() > 90 ? n.substr(0, 87) + "..." : n; }

json exact_row_json(const ExactRow& x) {
  json j = {{"id", x.group.id},
            {"kind", x.group.kind},
            {"name", x.group.name},
            {"grid", x.group.grid},
            {"block", x.group.block},
            {"shared_bytes", x.group.shared_bytes},
            {"count", x.group.count},
            {"status", x.status},
            {"exact", true}};
  if (x.group.bytes > 0) j["bytes"] = x.group.bytes;
  if (!x.reason.empty()) j["reason"] = x.reason;
  if (x.status == "measured" || x.status == "timed") {
    j.update({{"copies", x.copies}, {"time_s", x.time_ns * 1e-9}, {"time_half_width_s", x.time_half_width_ns * 1e-9}, {"power_w", x.power_w},
              {"energy_per_call_j", x.energy_j}, {"energy_per_call_half_width_j", x.energy_half_width_j},
              {"energy_j", x.energy_j * static_cast<double>(x.group.count)}});
  }
  if (x.status == "measured") {
    j.update({{"power_half_width_w", x.power_half_width_w}, {"trial_s", x.trial_s}, {"trial_power_w", x.trial_power_w},
              {"trial_time_ns", x.trial_time_ns}, {"short_trials_ci", x.short_trials_ci}});
    if (x.temperature_c >= 0) j["temperature_c"] = x.temperature_c;
  }
  return j;
}

ExactRow exact_row_from_json(const json& j) {
  ExactRow x;
  GraphGroup& g = x.group;
  g.id = j.value("id", "");
  g.kind = j.value("kind", "");
  g.name = j.value("name", "");
  g.grid = j.value("grid", g.grid);
  g.block = j.value("block", g.block);
  g.shared_bytes = j.value("shared_bytes", 0U);
  g.count = j.value("count", std::size_t{0});
  g.bytes = j.value("bytes", uint64_t{0});
  x.status = j.value("status", "");
  x.reason = j.value("reason", "");
  x.copies = j.value("copies", std::size_t{0});
  x.time_ns = j.value("time_s", 0.0) * 1e9;
  x.time_half_width_ns = j.value("time_half_width_s", 0.0) * 1e9;
  x.power_w = j.value("power_w", 0.0);
  x.power_half_width_w = j.value("power_half_width_w", 0.0);
  x.energy_j = j.value("energy_per_call_j", 0.0);
  x.energy_half_width_j = j.value("energy_per_call_half_width_j", 0.0);
  x.short_trials_ci = j.value("short_trials_ci", -1.0);
  x.trial_s = j.value("trial_s", 0.0);
  x.temperature_c = j.value("temperature_c", -1.0);
  x.trial_power_w = j.value("trial_power_w", std::vector<double>{});
  x.trial_time_ns = j.value("trial_time_ns", std::vector<double>{});
  return x;
}

json step_json(const StepFigures& s) {
  json step = {{"measured", s.measured}};
  if (s.measured) {
    step.update({{"time_s", s.time_ns * 1e-9}, {"time_half_width_s", s.time_half_width_ns * 1e-9}, {"power_w", s.power_w},
                 {"energy_j", s.energy_j}, {"energy_half_width_j", s.energy_half_width_j}});
  } else if (!s.reason.empty()) {
    step["reason"] = s.reason;
  }
  return step;
}

namespace {

StepFigures step_from_json(const json& j) {
  StepFigures s;
  s.measured = j.value("measured", false);
  s.reason = j.value("reason", "");
  s.time_ns = j.value("time_s", 0.0) * 1e9;
  s.time_half_width_ns = j.value("time_half_width_s", 0.0) * 1e9;
  s.power_w = j.value("power_w", 0.0);
  s.energy_j = j.value("energy_j", 0.0);
  s.energy_half_width_j = j.value("energy_half_width_j", 0.0);
  return s;
}

GraphReplay listing_from_json(const json& j) {
  GraphReplay r;
  r.gpu = j.value("gpu", "");
  r.gpu_uuid = j.value("gpu_uuid", "");
  r.idle_w = j.value("idle_power_w", 0.0);
  r.nodes = j.value("nodes", std::size_t{0});
  r.not_replayed = j.value("not_replayed", std::map<std::string, std::size_t>{});
  r.mem_alloc_nodes = j.value("mem_alloc_nodes", std::size_t{0});
  r.mem_free_nodes = j.value("mem_free_nodes", std::size_t{0});
  r.mem_alloc_backed = j.value("mem_alloc_backed", std::size_t{0});
  r.mem_alloc_bytes = j.value("mem_alloc_bytes", uint64_t{0});
  r.warnings = j.value("warnings", std::vector<std::string>{});
  for (const json& g : j.value("groups", json::array())) r.rows.push_back(exact_row_from_json(g));
  return r;
}

}  // namespace

ProgressLog::~ProgressLog() {
  if (f_ != nullptr) std::fclose(f_);
}

std::string ProgressLog::open(const std::string& path) {
  if (path.empty()) return "";
  f_ = std::fopen(path.c_str(), "a");
  return f_ == nullptr ? fmt::format("cannot open the progress file {}: {}", path, std::strerror(errno)) : "";
}

void ProgressLog::event(const std::string& name, json body) {
  if (f_ == nullptr) return;
  body["event"] = name;
  const std::string line = body.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);  // before the launch it announces: the process may not live past it
}

void ProgressLog::listing(const GraphReplay& r, const std::vector<ExactRow>& rows) {
  if (f_ == nullptr) return;
  json groups = json::array();
  for (const ExactRow& x : rows) groups.push_back(exact_row_json(x));
  event("listing", {{"gpu", r.gpu}, {"gpu_uuid", r.gpu_uuid}, {"idle_power_w", r.idle_w}, {"nodes", r.nodes}, {"not_replayed", r.not_replayed},
                    {"mem_alloc_nodes", r.mem_alloc_nodes}, {"mem_free_nodes", r.mem_free_nodes}, {"mem_alloc_backed", r.mem_alloc_backed},
                    {"mem_alloc_bytes", r.mem_alloc_bytes}, {"warnings", r.warnings}, {"groups", groups}});
}

void assemble_prediction(std::vector<ExactRow> rows, GraphReplay& R) {
  double mt = 0, me = 0;
  for (const ExactRow& r : rows) {
    if (r.status != "measured") continue;
    mt += r.time_ns * static_cast<double>(r.group.count);
    me += r.energy_j * static_cast<double>(r.group.count);
  }
  const double mean_w = mt > 0 ? me / (mt * 1e-9) : 0;
  double var = 0, e_measured = 0, e_timed = 0;
  std::size_t lacking = 0;
  for (ExactRow& r : rows) {
    const double c = static_cast<double>(r.group.count);
    if (r.status == "timed") {
      r.power_w = mean_w;
      r.energy_j = mean_w * r.time_ns * 1e-9;
      if (r.reason.empty()) r.reason = "beyond the coverage: its time measured, its power the measured rows' mean";
      e_timed += c * r.energy_j;
    } else if (r.status == "measured") {
      e_measured += c * r.energy_j;
      var += std::pow(c * r.energy_half_width_j, 2);
    } else if (r.status == "failed" || r.status == "faulted" || r.status == "not_measured") {
      lacking += r.group.count;
    }
    if (r.status == "failed") R.warnings.push_back(r.reason);
    if (r.status == "faulted" && r.reason.rfind("not replayed:", 0) == 0) {  // another row of its kernel faulted
      R.warnings.push_back(fmt::format("{} {}: {}", r.group.kind, short_name(r.group.name), r.reason));
    } else if (r.status == "faulted") {
      R.warnings.push_back(fmt::format("{} {} faulted when replayed alone ({}); isolated in its own process, the other rows were replayed without it",
                                       r.group.kind, short_name(r.group.name), r.reason));
    }
    if (r.status == "measured" || r.status == "timed") R.predicted_time_s += c * r.time_ns * 1e-9;
  }
  R.rows = std::move(rows);
  R.predicted_energy_j = e_measured + e_timed;
  R.predicted_energy_half_width_j = std::sqrt(var);
  if (R.predicted_energy_j > 0) {
    R.measured_share = e_measured / R.predicted_energy_j;
    R.timed_share = e_timed / R.predicted_energy_j;
  }
  if (lacking > 0) {
    R.warnings.push_back(fmt::format("{} of {} replayable nodes not in the prediction (failed, faulted or not measured)", lacking, R.nodes));
  }
  R.failed_share = R.nodes > 0 ? static_cast<double>(lacking) / static_cast<double>(R.nodes) : 0;
}

}  // namespace detail

Result<ReplayProgress> read_replay_progress(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(Errc::io, fmt::format("cannot read the progress file {}: {}", path, std::strerror(errno)));
  ReplayProgress p;
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      if (in.peek() == std::char_traits<char>::eof()) break;  // the last line, torn: the process died writing it
      return make_error(Errc::invalid_argument, fmt::format("{}:{}: not a progress line (JSON object)", path, n));
    }
    const std::string ev = j.value("event", ""), id = j.value("id", "");
    if (ev == "listing") {
      p.listing = detail::listing_from_json(j);
    } else if (ev == "step") {
      p.step = detail::step_from_json(j);
    } else if (ev == "start") {
      p.started = id;
    } else if (ev == "row" || ev == "fault") {
      if (ev == "row") p.rows[id] = detail::exact_row_from_json(j);
      if (ev == "fault") p.faulted[id] = j.value("reason", "");
      if (p.started == id) p.started.clear();
    }
  }
  return p;
}

Result<GraphReplay> graph_replay_from_progress(const ReplayProgress& p, const std::map<std::string, std::string>& faulted,
                                               const std::string& reason) {
  if (!p.listing) return make_error(Errc::invalid_argument, "the progress file has no listing: the replay did not reach its rows");
  GraphReplay R = *p.listing;
  std::vector<ExactRow> rows = std::move(R.rows);
  R.rows.clear();
  for (ExactRow& x : rows) {
    if (auto it = p.rows.find(x.group.id); it != p.rows.end()) {
      x = it->second;
    } else if (auto f = faulted.find(x.group.id); f != faulted.end()) {
      x.status = "faulted";
      x.reason = f->second;
    } else if (auto pf = p.faulted.find(x.group.id); pf != p.faulted.end()) {
      x.status = "faulted";
      x.reason = pf->second;
    } else {
      x.status = "not_measured";
      x.reason = reason;
    }
  }
  if (p.step) R.step = *p.step;
  auto node_time = [](const ExactRow& x) { return x.time_ns * static_cast<double>(x.group.count); };
  std::stable_sort(rows.begin(), rows.end(), [&](const ExactRow& a, const ExactRow& b) { return node_time(a) > node_time(b); });
  detail::assemble_prediction(std::move(rows), R);
  return R;
}

}  // namespace jouleprof
