// The activity recorder: one thread polling each GPU's source every period.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <condition_variable>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <thread>

#include "jouleprof/activity/activity.hpp"
#include "jouleprof/result/sections.hpp"
#include "source.hpp"

namespace jouleprof {
namespace {

constexpr std::size_t kMaxErrors = 5;

class Recorder final : public ActivityRecorder {
 public:
  Recorder(const TimeBase& tb, double period_s, std::vector<std::unique_ptr<activity::Source>> sources,
           std::vector<ActivityTimeline> timelines)
      : tb_(tb), period_s_(period_s), sources_(std::move(sources)), timelines_(std::move(timelines)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~Recorder() override { halt(); }
  std::vector<ActivityTimeline> stop() override {
    halt();
    return timelines_;
  }

 private:
  void halt() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void poll_all() {
    for (std::size_t g = 0; g < sources_.size(); ++g) {
      auto w = sources_[g]->poll(tb_.now_s());
      ActivityTimeline& t = timelines_[g];
      if (!w) {
        if (t.errors.size() < kMaxErrors) t.errors.push_back(w.error().message);
        continue;
      }
      if (!*w) continue;
      t.t0_s.push_back((*w)->t0_s);
      t.t1_s.push_back((*w)->t1_s);
      t.values.push_back(std::move((*w)->values));
    }
  }
  void loop() {
    std::unique_lock<std::mutex> l(mu_);
    const auto period = std::chrono::duration<double>(period_s_);
    auto next = std::chrono::steady_clock::now();
    while (true) {
      l.unlock();
      poll_all();
      l.lock();
      if (stop_) break;
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
      cv_.wait_until(l, next, [this] { return stop_; });
      if (stop_) {
        l.unlock();
        poll_all();  // the last, partial window
        return;
      }
    }
  }

  const TimeBase& tb_;
  double period_s_;
  std::vector<std::unique_ptr<activity::Source>> sources_;
  std::vector<ActivityTimeline> timelines_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

const std::vector<std::string>& activity_source_names() {
  static const std::vector<std::string> names{"auto", "dcgm", "gpm", "utilization", "cupti-pm"};
  return names;
}

namespace {

// One GPU's source under `auto` or a named one; `t.note` collects why better ones were not used.
// An error only when a named source is missing.
Result<std::unique_ptr<activity::Source>> choose_source(GpuSensor& gpu, std::size_t g, const TimeBase& tb,
                                                       const ActivityOptions& o, ActivityTimeline& t,
                                                       std::optional<Result<std::shared_ptr<activity::DcgmSession>>>& dcgm) {
  const std::string& want = o.source;
  auto missing = [&](const std::string& why) {
    return make_error(Errc::unavailable, "GPU " + std::to_string(g) + ": --metrics-source " + want + ": " + why);
  };
  auto add_note = [&](const std::string& n) {
    if (!n.empty()) t.note += (t.note.empty() ? "" : "; ") + n;
  };
  if (want == "cupti-pm") {
    if (gpu.info().simulated) return missing("the simulated GPU has no performance counters");
    auto pm = activity::open_cupti_pm({o.cupti_library, o.cuda_library}, gpu.info(), tb, o.period_s, t.note);
    if (!pm) return missing(pm.error().message);
    return std::move(*pm);
  }
  if (gpu.info().simulated && want != "utilization") {
    if (want == "gpm" || want == "dcgm") return missing("the simulated GPU has none");
    t.note = "GPM: the simulated GPU has none (its utilization is used)";
    return activity::open_utilization(gpu, o.period_s);
  }
  if (want == "auto" || want == "dcgm") {
    // Asked for by name, DCGM may run embedded; `auto` takes only a running host engine.
    if (!dcgm) dcgm = activity::connect_dcgm(o.dcgm_library, o.dcgm_host, want == "dcgm");
    Result<std::unique_ptr<activity::Source>> src =
        *dcgm ? activity::open_dcgm(**dcgm, static_cast<unsigned>(gpu.info().index), o.period_s) : dcgm->error();
    if (src) {
      add_note(activity::dcgm_session_note(***dcgm));
      return src;
    }
    if (want == "dcgm") return missing(src.error().message);
    add_note("DCGM: " + src.error().message);
  }
  if (want == "auto" || want == "gpm") {
    auto gpm = activity::open_gpm(o.nvml_library, static_cast<unsigned>(gpu.info().index));
    if (gpm) return gpm;
    if (want == "gpm") return missing(gpm.error().message);
    add_note("GPM: " + gpm.error().message);
  }
  if (!gpu.supports(Metric::gpu_util_pct))
    return make_error(Errc::unavailable, "GPU " + std::to_string(g) + ": no activity source (" +
                                             (t.note.empty() ? "" : t.note + "; ") + "utilization not supported)");
  return activity::open_utilization(gpu, o.period_s);
}

}  // namespace

Result<std::unique_ptr<ActivityRecorder>> ActivityRecorder::start(GpuSet& gpus, const TimeBase& tb, const ActivityOptions& o) {
  const auto& names = activity_source_names();
  if (std::find(names.begin(), names.end(), o.source) == names.end())
    return make_error(Errc::invalid_argument, fmt::format("--metrics-source must be one of {}, not '{}'", fmt::join(names, ", "), o.source));
  if (!(o.period_s >= 0.1 && o.period_s <= 60)) return make_error(Errc::invalid_argument, "--metrics-period must be 100 to 60000 ms");
  std::vector<std::unique_ptr<activity::Source>> sources;
  std::vector<ActivityTimeline> timelines;
  std::optional<Result<std::shared_ptr<activity::DcgmSession>>> dcgm;  // connected once, for every GPU
  for (std::size_t g = 0; g < gpus.gpus.size(); ++g) {
    ActivityTimeline t;
    t.gpu = static_cast<int>(g);
    auto src = choose_source(*gpus.gpus[g], g, tb, o, t, dcgm);
    if (!src) return src.error();
    t.source = (*src)->name();
    t.metrics = (*src)->metrics();
    t.definitions = (*src)->definitions();
    sources.push_back(std::move(*src));
    timelines.push_back(std::move(t));
  }
  return std::unique_ptr<ActivityRecorder>(new Recorder(tb, o.period_s, std::move(sources), std::move(timelines)));
}

std::vector<double> activity_mean(const ActivityTimeline& t, double t0, double t1) {
  std::vector<double> sum(t.metrics.size(), 0.0), w(t.metrics.size(), 0.0);
  for (std::size_t i = 0; i < t.values.size(); ++i) {
    const double ov = std::min(t1, t.t1_s[i]) - std::max(t0, t.t0_s[i]);
    if (ov <= 0) continue;
    for (std::size_t k = 0; k < sum.size(); ++k) {
      if (t.values[i][k] < 0) continue;  // not reported in this window
      sum[k] += ov * t.values[i][k];
      w[k] += ov;
    }
  }
  if (std::all_of(w.begin(), w.end(), [](double v) { return v <= 0; })) return {};
  for (std::size_t k = 0; k < sum.size(); ++k) sum[k] = w[k] > 0 ? sum[k] / w[k] : -1;
  return sum;
}

std::string activity_section_json(const std::vector<ActivityTimeline>& timelines, const Measurement& m) {
  using nlohmann::json;
  json gpus = json::array();
  for (const auto& t : timelines) {
    json g = {{"gpu", t.gpu},         {"source", t.source},       {"note", t.note},
              {"metrics", t.metrics}, {"windows", t.values.size()}, {"errors", t.errors}};
    if (!t.definitions.empty()) g["definitions"] = t.definitions;
    json t0 = json::array(), t1 = json::array(), v = json::array();
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      t0.push_back(t.t0_s[i]);
      t1.push_back(t.t1_s[i]);
      json row = json::array();
      for (double x : t.values[i]) row.push_back(x < 0 ? json(nullptr) : json(x));
      v.push_back(std::move(row));
    }
    g["t0_s"] = std::move(t0);
    g["t1_s"] = std::move(t1);
    g["values"] = std::move(v);
    // Per window of the measurement (runs and phases): each metric's mean over it.
    json means = json::array();
    for (std::size_t w = 0; w < m.windows.size(); ++w) {
      const auto& win = m.windows[w];
      if (win.kind != "run" && win.kind != "phase" && win.kind != "warmup") continue;
      const auto mean = activity_mean(t, win.t0_s, win.t1_s);
      if (mean.empty()) continue;
      json mm = json::object();
      for (std::size_t k = 0; k < mean.size(); ++k) mm[t.metrics[k]] = mean[k] < 0 ? json(nullptr) : json(mean[k]);
      means.push_back({{"window", w}, {"name", win.name}, {"kind", win.kind}, {"run", win.run}, {"mean", mm}});
    }
    g["window_means"] = std::move(means);
    gpus.push_back(std::move(g));
  }
  return json{{"schema", kActivitySchema}, {"schema_version", 1}, {"gpus", gpus}}.dump();
}

namespace {

// `runs show`: per GPU its source and each run's and phase's mean activity.
void print_activity(const std::string& text, std::ostream& out) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return;
  for (const auto& g : j.value("gpus", nlohmann::json::array())) {
    out << "  GPU " << g.value("gpu", 0) << ": " << g.value("source", "?") << ", " << g.value("windows", 0) << " windows";
    if (!g.value("note", "").empty()) out << " (" << g.value("note", "") << ")";
    out << "\n";
    for (const auto& w : g.value("window_means", nlohmann::json::array())) {
      out << "    " << w.value("kind", "") << " " << w.value("name", "") << " " << w.value("run", -1) << ":";
      for (const auto& [k, v] : w["mean"].items())
        if (v.is_number()) out << " " << k << " " << std::round(v.get<double>() * 1000) / 1000;
      out << "\n";
    }
  }
}

const bool registered = register_section_renderer({kActivitySchema, "activity", print_activity});

}  // namespace

}  // namespace jouleprof
