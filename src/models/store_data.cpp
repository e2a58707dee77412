// Training data from the run store: the runs of one `jouleprof sweep` (docs/models.md).
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "jouleprof/core/parse.hpp"
#include "jouleprof/models/dataset.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof::models {
namespace {

// Tags the sweep itself writes: not parameters of the workload.
bool bookkeeping(const std::string& k) {
  return k == "sweep" || k == "point" || k == "pass" || k == "clock_mhz" || k == "mem_clock_mhz" || k == "power_limit_w" ||
         k == "control" || k == "simulated" || k.rfind("observed_", 0) == 0;
}

std::optional<double> tag_number(const std::map<std::string, std::string>& tags, const std::string& key) {
  const auto it = tags.find(key);
  double v = 0;
  if (it == tags.end() || !parse_finite_double(it->second, v) || v <= 0) return std::nullopt;
  return v;
}

// Per window index: each activity metric's mean (GPUs averaged), from the result's activity section.
struct Activity {
  std::vector<std::string> metrics;
  std::map<int, std::map<std::string, double>> by_window;
};
Activity activity_of(const Measurement& m) {
  Activity a;
  const auto it = m.sections.find("activity");
  if (it == m.sections.end()) return a;
  const auto j = nlohmann::json::parse(it->second, nullptr, false);
  if (j.is_discarded() || !j.contains("gpus")) return a;
  std::map<int, std::map<std::string, std::pair<double, int>>> acc;
  for (const auto& g : j["gpus"]) {
    if (a.metrics.empty()) a.metrics = g.value("metrics", std::vector<std::string>{});
    for (const auto& w : g.value("window_means", nlohmann::json::array()))
      for (const auto& [k, v] : w["mean"].items())
        if (v.is_number()) {
          auto& s = acc[w["window"].get<int>()][k];
          s.first += v.get<double>();
          ++s.second;
        }
  }
  for (const auto& [w, kv] : acc)
    for (const auto& [k, s] : kv) a.by_window[w][k] = s.first / s.second;
  return a;
}

}  // namespace

Result<Dataset> read_store(const StoreSource& src) {
  if (src.sweep.empty()) return make_error(Errc::invalid_argument, "--sweep needs a sweep id (jouleprof runs list --tag sweep=*)");
  const std::string path = resolve_db_path(src.db);
  auto store = Store::open(path, Store::Mode::read);
  if (!store) return store.error();
  RunFilter filter;
  filter.tags = {{"sweep", src.sweep}};
  auto runs = store->list(filter);
  if (!runs) return runs.error();
  if (runs->empty())
    return make_error(Errc::not_found, "no run of sweep '" + src.sweep + "' in " + path + " (jouleprof runs list --tag sweep='*')");
  Dataset d;
  d.source = path + "#sweep=" + src.sweep;
  std::vector<std::pair<Row, std::map<std::string, double>>> rows;
  std::map<std::string, int> metric_count;
  int with_activity = 0;
  for (const auto& s : *runs) {
    auto m = store->load(s.id, false);
    if (!m) return m.error();
    d.simulated = d.simulated || m->simulated;
    std::string app;
    if (!src.app_tag.empty()) {
      const auto it = m->tags.find(src.app_tag);
      if (it == m->tags.end())
        return make_error(Errc::invalid_argument, "run " + std::to_string(s.id) + " has no tag '" + src.app_tag + "' (--app-tag)");
      app = it->second;
    } else {
      for (const auto& [k, v] : m->tags)
        if (!bookkeeping(k)) app += (app.empty() ? "" : ",") + k + "=" + v;
      if (app.empty()) app = "workload";
    }
    auto clock = tag_number(m->tags, "clock_mhz");
    if (!clock) clock = tag_number(m->tags, "observed_clock_mhz");
    if (!clock && !m->gpu_state.empty()) clock = m->gpu_state.front().sm_clock_max_mhz;
    if (!clock) return make_error(Errc::invalid_argument, "run " + std::to_string(s.id) + " has no clock (tag clock_mhz)");
    const auto pl = tag_number(m->tags, "power_limit_w");
    const Activity act = activity_of(*m);
    if (!act.metrics.empty()) ++with_activity;
    for (const auto& m2 : act.metrics) ++metric_count[m2];
    auto add = [&](const WindowResult& w, int index, const std::string& name) {
      const double t = w.duration_s();
      if (!w.complete || t <= 0 || w.gpu_energy_j <= 0) return;
      Row r;
      r.application = name;
      r.clock_mhz = *clock;
      r.power_limit_w = pl;
      r.time_s = t;
      r.power_w = w.gpu_energy_j / t;
      const auto it = act.by_window.find(index);
      rows.emplace_back(std::move(r), it == act.by_window.end() ? std::map<std::string, double>{} : it->second);
    };
    for (const auto& run : m->runs) {
      if (run.warmup || !run.complete || run.window < 0) continue;
      const auto& rw = m->windows[static_cast<std::size_t>(run.window)];
      if (!src.phases) {
        add(rw, run.window, app);
        continue;
      }
      for (std::size_t i = 0; i < m->windows.size(); ++i)
        if (m->windows[i].kind == "phase" && m->windows[i].parent == run.window)
          add(m->windows[i], static_cast<int>(i), app + "/" + m->windows[i].name);
    }
  }
  // Activity columns: those every run recorded (a run without --metrics leaves the models none).
  for (const auto& [name, n] : metric_count)
    if (n == with_activity && with_activity == static_cast<int>(runs->size())) d.activity.push_back(name);
  std::size_t no_activity = 0;
  for (auto& [r, a] : rows) {
    bool complete = true;
    for (const auto& name : d.activity) {
      const auto it = a.find(name);
      if (it == a.end()) {
        complete = false;
        break;
      }
      r.activity.push_back(it->second);
    }
    if (!complete) {  // a window shorter than one activity window: no mean to train on
      ++no_activity;
      continue;
    }
    d.rows.push_back(std::move(r));
  }
  if (no_activity) d.source += " (" + std::to_string(no_activity) + " windows without activity left out)";
  if (d.rows.empty())
    return make_error(Errc::invalid_argument, "sweep '" + src.sweep + "' has no complete measured " + (src.phases ? "phase" : "run") +
                                                  " window" + (src.phases ? " (did the workload mark phases?)" : ""));
  return d;
}

}  // namespace jouleprof::models
