// ECharts option objects for the report and the plots. Only data and declarative options:
// no functions, so that the same JSON renders in the browser and in Node (SVG).
#include "jouleprof/report/charts.hpp"

#include "jouleprof/measure/repeat_label.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "jouleprof/report/downsample.hpp"
#include "jouleprof/store/compare.hpp"

namespace jouleprof {
namespace {

using nlohmann::json;

double round_sig(double v) {
  if (!std::isfinite(v)) return 0;
  // 6 significant digits keep the file small without visible loss.
  return std::stod(fmt::format("{:.6g}", v));
}

json points(const std::vector<Sample>& v) {
  json a = json::array();
  for (const Sample& s : v) {
    if (std::isfinite(s.value)) a.push_back(json::array({std::round(s.t_s * 1000) / 1000, round_sig(s.value)}));
  }
  return a;
}

json base_option(const std::string& title, const ChartOptions& o) {
  json j = {{"animation", false},
            {"title", {{"text", title}, {"left", "center"}, {"textStyle", {{"fontSize", 14}}}}},
            {"grid", {{"left", 70}, {"right", 40}, {"top", 60}, {"bottom", o.for_static ? 50 : 80}, {"containLabel", false}}},
            {"legend", {{"top", 26}, {"type", o.for_static ? "plain" : "scroll"}}}};
  if (!o.for_static) j["toolbox"] = {{"feature", {{"saveAsImage", json::object()}, {"dataZoom", json::object()}, {"restore", json::object()}}}};
  return j;
}

// Rows a plain legend of these names takes at this width (ECharts: 25 px icon, 5 px gap, ~7 px
// a character at 12 px, 10 px between items).
int legend_rows(const std::vector<std::string>& names, int width_px) {
  int rows = names.empty() ? 0 : 1, x = 0;
  const int avail = std::max(200, width_px - 20);
  for (const auto& n : names) {
    const int w = 25 + 5 + 7 * static_cast<int>(n.size()) + 10;
    if (x > 0 && x + w > avail) {
      ++rows;
      x = 0;
    }
    x += w;
  }
  return rows;
}

// Every chart ends here, so the HTML report and `plot` get the same layout rules: "(simulated)"
// in the title of every figure of simulated data; the legend in its own band between the title
// and the plot (the plot starts below however many rows it takes, so it never covers data);
// axis labels that would collide are hidden rather than drawn over each other.
void finish(json& j, ChartSpec& spec, const ChartOptions& o, bool simulated) {
  std::string title = j["title"]["text"].get<std::string>();
  if (simulated && title.find("(simulated)") == std::string::npos) title += " (simulated)";
  j["title"]["text"] = title;
  std::vector<std::string> names;
  for (const auto& sr : j.value("series", json::array())) {
    if (sr.contains("name") && sr["name"].is_string()) names.push_back(sr["name"].get<std::string>());
  }
  const int rows = legend_rows(names, o.width_px);
  constexpr int kTitle = 40, kRow = 26, kAxisName = 30;  // measured in Chromium: the title ends at 33 px, a row is ≤ 26 px
  j["legend"] = {{"top", kTitle}, {"left", "center"}, {"type", "plain"}, {"itemGap", 10}, {"textStyle", {{"fontSize", 12}}}};
  j["grid"]["top"] = kTitle + rows * kRow + kAxisName;
  spec.height_px += std::max(0, rows - 1) * kRow;
  for (const char* ax : {"xAxis", "yAxis"}) {
    if (!j.contains(ax)) continue;
    auto fix = [](json& a) { a["axisLabel"]["hideOverlap"] = true; };
    if (j[ax].is_array()) {
      for (auto& a : j[ax]) fix(a);
    } else {
      fix(j[ax]);
    }
  }
  spec.option_json = j.dump();
}

// Error bars in declarative ECharts: a box plot whose box is flat at the mean and whose whiskers
// end at the 95% CI (n < 2: no whiskers).
json error_bar(double mean, double half) {
  return json::array({round_sig(mean - half), round_sig(mean), round_sig(mean), round_sig(mean), round_sig(mean + half)});
}

bool any_simulated(const std::vector<ReportRun>& runs) {
  for (const auto& r : runs) {
    if (r.m->simulated) return true;
  }
  return false;
}

// Repeats are numbered from 1 and warm-ups apart (README "Words"): "run 3" is a stored run.
std::string window_label(const Measurement& m, const WindowResult& w) {
  return (w.kind == "run" || w.kind == "warmup") ? repeat_label(m, w.run) : w.name;
}

// Shading colours per window kind (translucent, drawn under the lines).
const char* area_colour(const std::string& kind, std::size_t k) {
  if (kind == "idle") return "rgba(120,120,120,0.12)";
  if (kind == "warmup") return "rgba(250,200,90,0.15)";
  if (kind == "phase") return k % 2 == 0 ? "rgba(84,112,198,0.10)" : "rgba(145,204,117,0.14)";
  return "rgba(200,200,200,0.10)";
}

std::vector<Sample> cpu_power(const std::vector<Sample>& e) {
  std::vector<Sample> p;
  for (std::size_t i = 1; i < e.size(); ++i) {
    const double dt = e[i].t_s - e[i - 1].t_s;
    if (dt > 0) p.push_back({e[i].t_s, (e[i].value - e[i - 1].value) / dt});
  }
  return p;
}

std::string tag_of(const ReportRun& r, const std::string& tag) {
  auto it = r.m->tags.find(tag);
  return it == r.m->tags.end() ? "" : it->second;
}

// Tag values in order: numerically when every value is a number (batch 1, 8, 32), else as
// first seen. A category axis puts 1, 8 and 32 at equal steps, as a sweep is read.
std::vector<std::size_t> tag_order(const std::vector<ReportRun>& runs, const std::string& tag) {
  bool numeric = !tag.empty();
  for (const auto& r : runs) {
    const std::string v = tag_of(r, tag);
    char* end = nullptr;
    if (v.empty()) {
      numeric = false;
      break;
    }
    std::strtod(v.c_str(), &end);
    numeric = numeric && end != nullptr && *end == '\0';
  }
  std::vector<std::pair<double, std::size_t>> order;
  for (std::size_t i = 0; i < runs.size(); ++i) order.push_back({numeric ? std::stod(tag_of(runs[i], tag)) : static_cast<double>(i), i});
  std::stable_sort(order.begin(), order.end());
  std::vector<std::size_t> out;
  for (const auto& [x, i] : order) out.push_back(i);
  return out;
}

std::string run_label(const ReportRun& r, const std::string& tag) {
  const std::string v = tag.empty() ? "" : tag_of(r, tag);
  return v.empty() ? r.label : v;
}

}  // namespace

ChartSpec timeline_chart(const ReportRun& r, std::size_t index, const ChartOptions& o) {
  const Measurement& m = *r.m;
  ChartSpec spec{"timeline-" + std::to_string(index), "GPU power — " + r.label, "", 380};
  json j = base_option(spec.title + (m.simulated ? " (simulated)" : ""), o);
  j["tooltip"] = {{"trigger", "axis"}, {"axisPointer", {{"type", "line"}}}};
  j["xAxis"] = {{"type", "value"}, {"name", "time (s)"}, {"nameLocation", "middle"}, {"nameGap", 28}, {"min", "dataMin"}, {"max", "dataMax"}};
  j["yAxis"] = {{"type", "value"}, {"name", "power (W)"}, {"min", 0}};
  if (!o.for_static) {
    j["dataZoom"] = json::array({{{"type", "inside"}, {"xAxisIndex", 0}, {"filterMode", "none"}},
                                 {{"type", "slider"}, {"xAxisIndex", 0}, {"height", 18}, {"bottom", 10}, {"filterMode", "none"}}});
  }
  json series = json::array();
  // Windows as shaded areas, labelled at the top; phases inside runs get their own colour.
  json areas = json::array();
  std::map<std::string, std::size_t> phase_colour;
  for (const WindowResult& w : m.windows) {
    std::size_t k = 0;
    if (w.kind == "phase") k = phase_colour.emplace(w.name, phase_colour.size()).first->second;
    if (w.kind == "run") continue;  // runs are the sum of their phases; drawn as boundary lines below
    areas.push_back(json::array({{{"name", window_label(m, w)},
                                  {"xAxis", round_sig(w.t0_s)},
                                  {"itemStyle", {{"color", area_colour(w.kind, k)}}},
                                  {"label", {{"fontSize", 9}, {"color", "#666"}}}},
                                 {{"xAxis", round_sig(w.t1_s)}}}));
  }
  json run_lines = json::array();
  for (const WindowResult& w : m.windows) {
    if (w.kind == "run" || w.kind == "warmup") run_lines.push_back({{"xAxis", round_sig(w.t0_s)}, {"name", window_label(m, w)}});
  }
  bool first = true;
  for (std::size_t g = 0; g < m.gpus.size() && g < m.timelines.size(); ++g) {
    if (!m.timelines[g]) continue;
    // The highest-resolution power source this GPU has.
    const Series* src = nullptr;
    std::string src_name;
    for (Metric k : {Metric::power_sample_w, Metric::power_instant_w, Metric::power_average_w}) {
      const Series& s = m.timelines[g]->series[static_cast<std::size_t>(k)];
      if (!s.empty()) {
        src = &s;
        src_name = metric_name(k);
        break;
      }
    }
    if (src == nullptr) continue;
    json sr = {{"type", "line"},
               {"name", "GPU " + std::to_string(m.gpus[g].index) + " (" + src_name + ")"},
               {"showSymbol", false},
               {"lineStyle", {{"width", 1}}},
               {"sampling", "lttb"},
               {"data", points(downsample_minmax(src->all(), o.max_points / 2))}};
    json lines = json::array();
    if (g < m.gpu_state.size() && m.gpu_state[g].idle_power_w) {
      lines.push_back({{"yAxis", round_sig(*m.gpu_state[g].idle_power_w)},
                       {"name", "idle GPU " + std::to_string(m.gpus[g].index)},
                       {"label", {{"formatter", "idle {c} W"}, {"position", "insideEndTop"}, {"fontSize", 9}}}});
    }
    if (first) {
      sr["markArea"] = {{"silent", true}, {"data", areas}, {"label", {{"position", "insideTop"}}}};
      for (const auto& l : run_lines) {
        json x = l;
        x["label"] = {{"formatter", "{b}"}, {"position", "insideStartTop"}, {"fontSize", 9}};
        lines.push_back(x);
      }
    }
    if (!lines.empty()) {
      sr["markLine"] = {{"silent", true}, {"symbol", "none"}, {"lineStyle", {{"type", "dashed"}, {"width", 1}}}, {"data", lines}};
    }
    first = false;
    series.push_back(sr);
  }
  for (std::size_t d = 0; d < m.cpu_energy.size() && d < m.cpu_domains.size(); ++d) {
    series.push_back({{"type", "line"},
                      {"name", "CPU " + m.cpu_domains[d]},
                      {"showSymbol", false},
                      {"lineStyle", {{"width", 1}}},
                      {"data", points(downsample_minmax(cpu_power(m.cpu_energy[d]), o.max_points / 2))}});
  }
  if (!m.meter_power.empty()) {
    series.push_back({{"type", "line"},
                      {"name", "meter"},
                      {"showSymbol", false},
                      {"lineStyle", {{"width", 1}}},
                      {"data", points(downsample_minmax(m.meter_power, o.max_points / 2))}});
  }
  j["series"] = series;
  finish(j, spec, o, m.simulated);
  return spec;
}

ChartSpec clocks_chart(const ReportRun& r, std::size_t index, const ChartOptions& o) {
  const Measurement& m = *r.m;
  ChartSpec spec{"clocks-" + std::to_string(index), "SM clock and temperature — " + r.label, "", 300};
  json series = json::array();
  for (std::size_t g = 0; g < m.gpus.size() && g < m.timelines.size(); ++g) {
    if (!m.timelines[g]) continue;
    const std::string gpu = "GPU " + std::to_string(m.gpus[g].index);
    const Series& clk = m.timelines[g]->series[static_cast<std::size_t>(Metric::sm_clock_mhz)];
    const Series& tmp = m.timelines[g]->series[static_cast<std::size_t>(Metric::temperature_c)];
    if (!clk.empty()) {
      series.push_back({{"type", "line"}, {"name", gpu + " SM clock"}, {"showSymbol", false}, {"step", "end"},
                        {"lineStyle", {{"width", 1}}}, {"data", points(downsample_minmax(clk.all(), o.max_points / 2))}});
    }
    if (!tmp.empty()) {
      series.push_back({{"type", "line"}, {"name", gpu + " temperature"}, {"showSymbol", false}, {"yAxisIndex", 1},
                        {"lineStyle", {{"width", 1}, {"type", "dotted"}}},
                        {"data", points(downsample_minmax(tmp.all(), o.max_points / 2))}});
    }
  }
  if (series.empty()) return spec;
  json j = base_option(spec.title, o);
  j["tooltip"] = {{"trigger", "axis"}};
  j["xAxis"] = {{"type", "value"}, {"name", "time (s)"}, {"nameLocation", "middle"}, {"nameGap", 28}, {"min", "dataMin"}, {"max", "dataMax"}};
  j["yAxis"] = json::array({{{"type", "value"}, {"name", "clock (MHz)"}, {"min", 0}},
                            {{"type", "value"}, {"name", "temperature (°C)"}, {"scale", true}, {"splitLine", {{"show", false}}}}});
  if (!o.for_static) {
    j["dataZoom"] = json::array({{{"type", "inside"}, {"filterMode", "none"}},
                                 {{"type", "slider"}, {"height", 18}, {"bottom", 10}, {"filterMode", "none"}}});
  }
  j["series"] = series;
  finish(j, spec, o, m.simulated);
  return spec;
}

ChartSpec windows_chart(const ReportRun& r, std::size_t index, const ChartOptions& o) {
  const Measurement& m = *r.m;
  ChartSpec spec{"windows-" + std::to_string(index), "Energy per window — " + r.label, "", 340};
  json cats = json::array();
  std::vector<json> per_gpu(m.gpus.size(), json::array());
  json above = json::array(), bars = json::array();
  bool any_above = false, negative = false;
  for (const WindowResult& w : m.windows) {
    std::string label = window_label(m, w);
    if (w.kind == "phase") label = w.name + (w.run >= 0 ? " (" + repeat_label(m, w.run) + ")" : "");
    cats.push_back(label);
    double unc = 0;
    for (std::size_t g = 0; g < m.gpus.size(); ++g) {
      per_gpu[g].push_back(g < w.gpus.size() ? round_sig(w.gpus[g].energy_j) : 0.0);
      if (g < w.gpus.size()) unc += w.gpus[g].uncertainty_j;
    }
    bars.push_back(error_bar(w.gpu_energy_j, unc));
    // The idle window is the baseline: its energy above idle is not a figure.
    const bool has_above = w.gpu_above_idle_j && w.kind != "idle";
    above.push_back(has_above ? json(round_sig(*w.gpu_above_idle_j)) : json(nullptr));
    any_above = any_above || has_above;
    negative = negative || (has_above && *w.gpu_above_idle_j < 0);
  }
  json j = base_option(spec.title + (m.simulated ? " (simulated)" : ""), o);
  j["tooltip"] = {{"trigger", "axis"}, {"axisPointer", {{"type", "shadow"}}}};
  j["grid"]["bottom"] = 90;
  j["xAxis"] = {{"type", "category"}, {"data", cats}, {"axisLabel", {{"rotate", 35}, {"fontSize", 10}}}};
  j["yAxis"] = {{"type", "value"}, {"name", "energy (J)"}};
  if (!negative) j["yAxis"]["min"] = 0;
  json series = json::array();
  for (std::size_t g = 0; g < m.gpus.size(); ++g) {
    series.push_back({{"type", "bar"}, {"name", "GPU " + std::to_string(m.gpus[g].index)}, {"stack", "gpu"}, {"data", per_gpu[g]}});
  }
  series.push_back({{"type", "boxplot"}, {"name", "uncertainty (all GPUs)"}, {"boxWidth", json::array({6, 14})},
                    {"itemStyle", {{"color", "transparent"}, {"borderColor", "#333"}}}, {"data", bars}});
  if (any_above) {
    series.push_back({{"type", "scatter"}, {"name", "above idle (all GPUs)"}, {"symbol", "diamond"}, {"symbolSize", 9}, {"data", above}});
  }
  j["series"] = series;
  finish(j, spec, o, m.simulated);
  return spec;
}

ChartSpec repeats_chart(const std::vector<ReportRun>& runs, const ChartOptions& o) {
  ChartSpec spec{"repeats", "GPU energy per run over the repeats", "", 340};
  json cats = json::array(), boxes = json::array(), pts = json::array();
  const std::string tag = comparison_tag(runs, o);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    cats.push_back(run_label(runs[i], tag));
    auto v = repeat_values(*runs[i].m)["gpu_energy_j"];
    std::sort(v.begin(), v.end());
    auto q = [&](double p) {
      if (v.empty()) return 0.0;
      const double x = p * static_cast<double>(v.size() - 1);
      const auto lo = static_cast<std::size_t>(std::floor(x));
      const std::size_t hi = std::min(v.size() - 1, lo + 1);
      return v[lo] + (v[hi] - v[lo]) * (x - static_cast<double>(lo));
    };
    boxes.push_back(v.empty() ? json::array() : json::array({round_sig(q(0)), round_sig(q(0.25)), round_sig(q(0.5)),
                                                             round_sig(q(0.75)), round_sig(q(1))}));
    for (double x : v) pts.push_back(json::array({static_cast<int>(i), round_sig(x)}));
  }
  json j = base_option(spec.title, o);
  j["tooltip"] = {{"trigger", "item"}};
  j["xAxis"] = {{"type", "category"}, {"data", cats}};
  j["yAxis"] = {{"type", "value"}, {"name", "energy (J)"}, {"scale", true}};
  if (!tag.empty()) j["xAxis"]["name"] = tag;
  j["series"] = json::array({{{"type", "boxplot"}, {"name", "quartiles"}, {"data", boxes}},
                             {{"type", "scatter"}, {"name", "runs"}, {"symbolSize", 7}, {"data", pts}}});
  finish(j, spec, o, any_simulated(runs));
  return spec;
}

std::string comparison_tag(const std::vector<ReportRun>& runs, const ChartOptions& o) {
  if (!o.by_tag.empty()) return o.by_tag;
  std::set<std::string> keys;
  for (const auto& r : runs) {
    for (const auto& [k, _] : r.m->tags) keys.insert(k);
  }
  for (const auto& k : keys) {
    std::set<std::string> values;
    for (const auto& r : runs) values.insert(tag_of(r, k));
    if (values.size() > 1) return k;
  }
  return "";
}

std::string by_tag_warning(const std::vector<ReportRun>& runs, const ChartOptions& o) {
  if (runs.size() < 2) return "";
  if (o.by_tag.empty()) {
    return comparison_tag(runs, o).empty() ? "no tag differs between these runs: the comparison is labelled by run" : "";
  }
  std::set<std::string> values;
  for (const auto& r : runs) values.insert(tag_of(r, o.by_tag));
  if (values.size() > 1) return "";
  const std::string v = *values.begin();
  return "--by " + o.by_tag + " does not vary across these runs (" +
         (v.empty() ? "no run has the tag" : "all are " + o.by_tag + "=" + v) + "): nothing to compare along";
}

ChartSpec compare_chart(const std::vector<ReportRun>& runs, const ChartOptions& o) {
  const std::string tag = comparison_tag(runs, o);
  ChartSpec spec{"compare", tag.empty() ? "Mean GPU energy per run" : "Mean GPU energy per run vs " + tag, "", 340};
  json cats = json::array(), mean = json::array(), bars = json::array();
  for (std::size_t i : tag_order(runs, tag)) {
    const auto vals = repeat_values(*runs[i].m);
    auto it = vals.find("gpu_energy_j");
    cats.push_back(run_label(runs[i], tag));
    if (it == vals.end() || it->second.empty()) {
      mean.push_back(nullptr);
      bars.push_back(json::array());
      continue;
    }
    const Summary s = summarize(it->second);
    mean.push_back(round_sig(s.mean));
    bars.push_back(error_bar(s.mean, s.n >= 2 ? s.ci95_half_width : 0));
  }
  json j = base_option(spec.title, o);
  j["tooltip"] = {{"trigger", "axis"}};
  j["xAxis"] = {{"type", "category"}, {"data", cats}, {"name", tag}, {"nameLocation", "middle"}, {"nameGap", 28}};
  j["yAxis"] = {{"type", "value"}, {"name", "energy per run (J)"}, {"scale", true}};
  j["series"] = json::array({{{"type", "line"}, {"name", "mean"}, {"symbolSize", 8}, {"data", mean}},
                             {{"type", "boxplot"}, {"name", "95% CI over repeats"}, {"boxWidth", json::array({8, 16})},
                              {"itemStyle", {{"color", "transparent"}, {"borderColor", "#333"}}}, {"data", bars}}});
  finish(j, spec, o, any_simulated(runs));
  return spec;
}

ChartSpec per_count_chart(const std::vector<ReportRun>& runs, const ChartOptions& o) {
  ChartSpec spec{"tokens", "Energy per count (e.g. J/token), mean and 95% CI over repeats", "", 320};
  std::vector<std::string> keys;  // phase:NAME:gpu_energy_per_KEY_j in first-seen order
  std::vector<std::map<std::string, std::vector<double>>> vals;
  for (const auto& r : runs) {
    vals.push_back(repeat_values(*r.m));
    for (const auto& [k, _] : vals.back()) {
      if (k.find("gpu_energy_per_") != std::string::npos && std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
  }
  if (keys.empty()) return spec;
  // Runs along the x axis (labelled by the compared tag's values); one error-bar series per
  // count, named as it reads: "decode J/token".
  const std::string tag = comparison_tag(runs, o);
  const auto order = tag_order(runs, tag);
  json cats = json::array();
  for (std::size_t i : order) cats.push_back(run_label(runs[i], tag));
  json series = json::array();
  for (const auto& k : keys) {
    std::string name = k;
    std::string phase;
    if (name.rfind("phase:", 0) == 0) {
      phase = name.substr(6, name.find(':', 6) - 6);
      name = name.substr(name.find(':', 6) + 1);
    }
    const auto p = name.find("gpu_energy_per_");
    name = (phase.empty() ? "run" : phase) + " J/" + name.substr(p + 15, name.size() - p - 17);
    json data = json::array();
    for (std::size_t i : order) {
      auto it = vals[i].find(k);
      if (it == vals[i].end() || it->second.empty()) {
        data.push_back(json::array());
        continue;
      }
      const Summary s = summarize(it->second);
      data.push_back(error_bar(s.mean, s.n >= 2 ? s.ci95_half_width : 0));
    }
    series.push_back({{"type", "boxplot"}, {"name", name}, {"boxWidth", json::array({10, 40})}, {"data", data}});
  }
  json j = base_option(spec.title, o);
  j["tooltip"] = {{"trigger", "item"}};
  j["xAxis"] = {{"type", "category"}, {"data", cats}, {"name", tag}, {"nameLocation", "middle"}, {"nameGap", 28}};
  j["yAxis"] = {{"type", "value"}, {"name", "J per count"}, {"scale", true}};
  j["series"] = series;
  finish(j, spec, o, any_simulated(runs));
  return spec;
}

// ---- bench llm: scaling with prompt length, batch and model size --------------------------

namespace {

std::optional<double> num_at(const json& o, const char* phase, const char* key) {
  if (!o.contains(phase) || !o[phase].is_object()) return std::nullopt;
  const json& p = o[phase];
  auto it = p.find(key);
  if (it == p.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

double axis_value(const BenchPoint& p, BenchAxis a) {
  switch (a) {
    case BenchAxis::prompt: return p.prompt;
    case BenchAxis::batch: return p.batch;
    case BenchAxis::model: return p.params / 1e9;
  }
  return 0;
}

// The other sweep values of a point, where they vary: names one line of a scaling chart.
std::string group_of(const BenchPoint& p, BenchAxis a, const std::vector<BenchPoint>& all) {
  auto varies = [&](auto get) {
    for (const auto& q : all) {
      if (get(q) != get(all.front())) return true;
    }
    return false;
  };
  std::string g;
  auto add = [&](const std::string& s) { g += (g.empty() ? "" : " ") + s; };
  if (a != BenchAxis::model && varies([](const BenchPoint& q) { return q.model; })) add(p.model);
  if (varies([](const BenchPoint& q) { return q.dtype; })) add(p.dtype);
  if (a != BenchAxis::batch && varies([](const BenchPoint& q) { return q.batch; })) add("b" + std::to_string(p.batch));
  if (a != BenchAxis::prompt && varies([](const BenchPoint& q) { return q.prompt; })) add("p" + fmt::format("{:g}", p.prompt));
  if (varies([](const BenchPoint& q) { return q.gen; })) add("g" + std::to_string(p.gen));
  if (varies([](const BenchPoint& q) { return q.variant; })) add(p.variant);
  return g;
}

// A value axis, logarithmic when the values span a factor of `ratio` or more (and are positive).
json value_axis(const std::string& name, const std::vector<double>& values, double ratio, int log_base) {
  json ax = {{"type", "value"}, {"name", name}};
  double lo = 0, hi = 0;
  bool positive = !values.empty();
  for (double v : values) {
    positive = positive && v > 0;
    lo = lo == 0 ? v : std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (positive && hi / lo >= ratio) {
    ax["type"] = "log";
    ax["logBase"] = log_base;
  } else {
    ax["scale"] = true;
  }
  return ax;
}

struct BenchMetric {
  const char* name;
  std::optional<double> BenchPoint::*field;
  bool dashed;         ///< above idle: the dashed twin of a figure
  const char* symbol;  ///< prefill and decode told apart by their markers
};

// ECharts' default palette: one colour per line group, shared by its figures.
constexpr const char* kPalette[] = {"#5470c6", "#91cc75", "#fac858", "#ee6666", "#73c0de",
                                    "#3ba272", "#fc8452", "#9a60b4", "#ea7ccc"};

ChartSpec scaling_chart(const std::vector<BenchPoint>& points, BenchAxis axis, const ChartOptions& o, const std::string& id,
                        const std::string& what, const std::string& y_name, const std::vector<BenchMetric>& metrics, double scale) {
  const std::string axis_title = axis == BenchAxis::prompt ? "prompt length" : axis == BenchAxis::batch ? "batch size" : "model size";
  ChartSpec spec{id, what + " vs " + axis_title, "", 360};
  if (points.empty()) return spec;
  bool sim = false;
  for (const auto& p : points) sim = sim || p.simulated;
  // (group, metric) -> x -> values (several runs of one configuration are averaged).
  std::vector<std::string> groups;
  std::map<std::pair<std::string, std::size_t>, std::map<double, std::vector<double>>> data;
  std::map<double, std::string> model_names;
  std::vector<double> xs, ys;
  for (const auto& p : points) {
    const std::string g = group_of(p, axis, points);
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
    const double x = axis_value(p, axis);
    if (axis == BenchAxis::model) model_names[x] = p.model;
    for (std::size_t k = 0; k < metrics.size(); ++k) {
      const auto& v = p.*(metrics[k].field);
      if (!v) continue;
      data[{g, k}][x].push_back(*v * scale);
    }
  }
  json series = json::array();
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const std::string& g = groups[gi];
    for (std::size_t k = 0; k < metrics.size(); ++k) {
      auto it = data.find({g, k});
      if (it == data.end()) continue;
      json d = json::array(), ci = json::array();
      for (const auto& [x, vals] : it->second) {
        const Summary st = summarize(vals);
        const double mean = st.mean;
        xs.push_back(x);
        ys.push_back(mean);
        json item = {{"value", json::array({round_sig(x), round_sig(mean)})}};
        if (axis == BenchAxis::model) item["name"] = model_names[x];
        d.push_back(item);
        // A configuration measured several times: its 95% CI as a vertical bar.
        if (st.n >= 2 && st.ci95_half_width > 0) {
          ci.push_back(json::array({{{"coord", json::array({round_sig(x), round_sig(mean - st.ci95_half_width)})}},
                                    {{"coord", json::array({round_sig(x), round_sig(mean + st.ci95_half_width)})}}}));
        }
      }
      json sr = {{"type", "line"},
                 {"name", g.empty() ? std::string(metrics[k].name) : g + " " + metrics[k].name},
                 {"symbol", metrics[k].symbol},
                 {"symbolSize", 8},
                 {"itemStyle", {{"color", kPalette[gi % std::size(kPalette)]}}},
                 {"lineStyle", {{"color", kPalette[gi % std::size(kPalette)]}, {"type", metrics[k].dashed ? "dashed" : "solid"}}},
                 {"data", d}};
      if (axis == BenchAxis::model) sr["label"] = {{"show", true}, {"formatter", "{b}"}, {"fontSize", 9}, {"position", "top"}};
      if (!ci.empty()) {
        sr["markLine"] = {{"silent", true}, {"symbol", json::array({"none", "none"})}, {"label", {{"show", false}}},
                          {"lineStyle", {{"type", "solid"}, {"width", 1.5}}}, {"data", ci}};
      }
      series.push_back(sr);
    }
  }
  if (series.empty()) return spec;
  json j = base_option(spec.title + (sim ? " (simulated)" : ""), o);
  j["tooltip"] = {{"trigger", "axis"}};
  const std::string x_name = axis == BenchAxis::prompt ? "prompt (tokens per sequence)"
                             : axis == BenchAxis::batch ? "batch (sequences)"
                                                        : "parameters (billions)";
  j["xAxis"] = value_axis(x_name, xs, 8, axis == BenchAxis::model ? 10 : 2);
  j["xAxis"]["min"] = "dataMin";
  j["xAxis"]["max"] = "dataMax";
  j["xAxis"]["nameLocation"] = "middle";
  j["xAxis"]["nameGap"] = 28;
  j["yAxis"] = value_axis(y_name, ys, 20, 10);
  j["series"] = series;
  finish(j, spec, o, sim);
  return spec;
}

}  // namespace

std::string BenchPoint::label() const {
  return fmt::format("{} {} b{} p{:g} g{}", model, dtype, batch, prompt, gen);
}

std::vector<BenchPoint> bench_points(const std::vector<ReportRun>& runs) {
  std::vector<BenchPoint> out;
  for (const auto& r : runs) {
    auto it = r.m->sections.find("llm");
    if (it == r.m->sections.end()) continue;
    const json llm = json::parse(it->second, nullptr, false);
    if (!llm.is_object() || !llm.contains("points") || !llm["points"].is_array()) continue;
    for (const json& p : llm["points"]) {
      if (!p.is_object()) continue;
      BenchPoint b;
      b.run = r.label;
      b.model = p.value("model", std::string("?"));
      b.dtype = p.value("dtype", std::string("?"));
      b.variant = p.value("variant", std::string());
      b.status = p.value("status", std::string(p.contains("skipped") ? "skipped" : "complete"));
      b.params = p.value("params", 0.0);
      b.batch = p.value("batch", 0);
      b.gen = p.value("gen", 0);
      b.simulated = llm.value("simulated", false);
      if (p.contains("prompt") && p["prompt"].is_array() && !p["prompt"].empty()) {
        for (const auto& x : p["prompt"]) b.prompt += x.get<double>();
        b.prompt /= static_cast<double>(p["prompt"].size());
      } else {
        b.prompt = p.value("prompt", 0.0);
      }
      b.prefill_j_per_token = num_at(p, "prefill", "j_per_token");
      b.prefill_above_idle_j_per_token = num_at(p, "prefill", "above_idle_j_per_token");
      b.prefill_tokens_per_s = num_at(p, "prefill", "tokens_per_s");
      b.prefill_mean_power_w = num_at(p, "prefill", "mean_power_w");
      b.decode_j_per_token = num_at(p, "decode", "j_per_token");
      b.decode_above_idle_j_per_token = num_at(p, "decode", "above_idle_j_per_token");
      b.decode_tokens_per_s = num_at(p, "decode", "tokens_per_s");
      b.decode_mean_power_w = num_at(p, "decode", "mean_power_w");
      b.decode_ms_per_step = num_at(p, "decode", "ms_per_step");
      for (const json& c : p.value("components", json::array())) {
        if (c.contains("j_per_token") && c["j_per_token"].is_number()) {
          b.components_j_per_token.emplace_back(c.value("name", std::string("?")), c["j_per_token"].get<double>());
        }
      }
      out.push_back(std::move(b));
    }
  }
  return out;
}

const char* bench_axis_name(BenchAxis a) {
  switch (a) {
    case BenchAxis::prompt: return "prompt";
    case BenchAxis::batch: return "batch";
    case BenchAxis::model: return "model";
  }
  return "?";
}

std::optional<BenchAxis> bench_axis_from_name(const std::string& name) {
  for (BenchAxis a : {BenchAxis::prompt, BenchAxis::batch, BenchAxis::model}) {
    if (name == bench_axis_name(a)) return a;
  }
  return std::nullopt;
}

std::vector<BenchAxis> bench_axes(const std::vector<BenchPoint>& points) {
  std::vector<BenchAxis> out;
  for (BenchAxis a : {BenchAxis::prompt, BenchAxis::batch, BenchAxis::model}) {
    std::set<double> values;
    for (const auto& p : points) {
      if (p.status != "skipped") values.insert(axis_value(p, a));
    }
    if (values.size() > 1) out.push_back(a);
  }
  return out;
}

ChartSpec bench_energy_chart(const std::vector<BenchPoint>& points, BenchAxis axis, const ChartOptions& o) {
  return scaling_chart(points, axis, o, std::string("bench-energy-") + bench_axis_name(axis), "Energy per token", "mJ/token",
                       {{"prefill", &BenchPoint::prefill_j_per_token, false, "circle"},
                        {"prefill above idle", &BenchPoint::prefill_above_idle_j_per_token, true, "emptyCircle"},
                        {"decode", &BenchPoint::decode_j_per_token, false, "triangle"},
                        {"decode above idle", &BenchPoint::decode_above_idle_j_per_token, true, "emptyTriangle"}},
                       1e3);
}

ChartSpec bench_throughput_chart(const std::vector<BenchPoint>& points, BenchAxis axis, const ChartOptions& o) {
  return scaling_chart(points, axis, o, std::string("bench-throughput-") + bench_axis_name(axis), "Tokens per second",
                       "tokens per second",
                       {{"prefill", &BenchPoint::prefill_tokens_per_s, false, "circle"},
                        {"decode", &BenchPoint::decode_tokens_per_s, false, "triangle"}},
                       1.0);
}

ChartSpec bench_components_chart(const std::vector<BenchPoint>& points, const ChartOptions& o) {
  ChartSpec spec{"bench-components", "Decode energy per token by component (each isolated)", "", 380};
  std::vector<std::string> names;  // first-seen order (the order of a decode step)
  std::vector<const BenchPoint*> with;
  bool sim = false;
  for (const auto& p : points) {
    if (p.components_j_per_token.empty()) continue;
    with.push_back(&p);
    sim = sim || p.simulated;
    for (const auto& [n, _] : p.components_j_per_token) {
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
  }
  if (with.empty()) return spec;
  json cats = json::array();
  for (const BenchPoint* p : with) cats.push_back(with.size() > 1 && p->run.rfind("run ", 0) == 0 ? p->label() + " (" + p->run + ")" : p->label());
  json series = json::array();
  for (const auto& n : names) {
    json d = json::array();
    for (const BenchPoint* p : with) {
      auto it = std::find_if(p->components_j_per_token.begin(), p->components_j_per_token.end(),
                             [&](const auto& c) { return c.first == n; });
      d.push_back(it == p->components_j_per_token.end() ? json(nullptr) : json(round_sig(it->second * 1e3)));
    }
    series.push_back({{"type", "bar"}, {"name", n}, {"stack", "components"}, {"data", d}});
  }
  json measured = json::array();
  for (const BenchPoint* p : with) measured.push_back(p->decode_j_per_token ? json(round_sig(*p->decode_j_per_token * 1e3)) : json(nullptr));
  series.push_back({{"type", "scatter"}, {"name", "decode (measured)"}, {"symbol", "diamond"}, {"symbolSize", 11}, {"data", measured}});
  json j = base_option(spec.title + (sim ? " (simulated)" : ""), o);
  j["tooltip"] = {{"trigger", "axis"}, {"axisPointer", {{"type", "shadow"}}}};
  j["grid"]["bottom"] = 110;
  j["xAxis"] = {{"type", "category"}, {"data", cats}, {"axisLabel", {{"rotate", 25}, {"fontSize", 10}}}};
  j["yAxis"] = {{"type", "value"}, {"name", "mJ/token"}};
  j["series"] = series;
  finish(j, spec, o, sim);
  return spec;
}

// --- jouleprof trace (the result's "trace" section, docs/trace.md) ---------------------------

namespace {

std::optional<json> trace_section(const ReportRun& r) {
  auto it = r.m->sections.find("trace");
  if (it == r.m->sections.end()) return std::nullopt;
  json t = json::parse(it->second, nullptr, false);
  if (!t.is_object() || !t.contains("gpus") || !t["gpus"].is_array() || t["gpus"].empty()) return std::nullopt;
  return t;
}

}  // namespace

ChartSpec trace_breakdown_chart(const ReportRun& r, std::size_t index, const ChartOptions& o) {
  ChartSpec spec{"trace-classes-" + std::to_string(index), "Energy by kernel class — " + r.label, "", 300};
  const auto t = trace_section(r);
  if (!t) return spec;
  // One bar per GPU: the classes (the table method's figures), then idle/static and unattributed,
  // which together make the measured energy.
  std::vector<std::string> names;
  json cats = json::array();
  for (const json& g : (*t)["gpus"]) {
    cats.push_back(fmt::format("GPU {}", g.value("gpu", 0)));
    for (const json& c : g.value("by_class", json::array())) {
      const std::string k = c.value("key", std::string("?"));
      if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
    }
  }
  json series = json::array();
  auto add = [&](const std::string& name, const std::function<double(const json&)>& value) {
    json d = json::array();
    for (const json& g : (*t)["gpus"]) d.push_back(round_sig(value(g)));
    series.push_back({{"type", "bar"}, {"name", name}, {"stack", "energy"}, {"data", d}});
  };
  for (const auto& n : names) {
    add(n, [&](const json& g) {
      for (const json& c : g.value("by_class", json::array())) {
        if (c.value("key", std::string()) == n) return c.value("energy_j", 0.0);
      }
      return 0.0;
    });
  }
  auto method_value = [](const json& g, const char* key) {
    const std::string m = g.value("table_method", std::string("split"));
    for (const json& x : g.value("methods", json::array())) {
      if (x.value("method", std::string()) == m) return x.value(key, 0.0);
    }
    return 0.0;
  };
  add("idle/static", [&](const json& g) { return method_value(g, "idle_static_energy_j"); });
  add("unattributed", [&](const json& g) { return method_value(g, "unattributed_energy_j"); });
  json j = base_option(spec.title, o);
  j["tooltip"] = {{"trigger", "axis"}, {"axisPointer", {{"type", "shadow"}}}};
  j["xAxis"] = {{"type", "value"}, {"name", "J"}};
  j["yAxis"] = {{"type", "category"}, {"data", cats}};
  j["series"] = series;
  finish(j, spec, o, r.m->simulated);
  return spec;
}

ChartSpec trace_layers_chart(const ReportRun& r, std::size_t index, const ChartOptions& o) {
  ChartSpec spec{"trace-layers-" + std::to_string(index), "Energy by layer — " + r.label, "", 360};
  const auto t = trace_section(r);
  if (!t) return spec;
  // Layers in model order (layers.2 before layers.10), one bar per GPU.
  json series = json::array();
  std::vector<std::string> layers;
  for (const json& g : (*t)["gpus"]) {
    for (const json& l : g.value("by_layer", json::array())) {
      const std::string k = l.value("key", std::string());
      if (!k.empty() && std::find(layers.begin(), layers.end(), k) == layers.end()) layers.push_back(k);
    }
  }
  auto number_of = [](const std::string& k) {
    const auto p = k.find_last_not_of("0123456789");
    return p + 1 < k.size() ? std::stol(k.substr(p + 1)) : -1L;
  };
  std::stable_sort(layers.begin(), layers.end(), [&](const std::string& a, const std::string& b) { return number_of(a) < number_of(b); });
  if (layers.size() < 2) return spec;  // one layer (or none): the class chart says it all
  json cats = json::array();
  for (const auto& l : layers) cats.push_back(l);
  for (const json& g : (*t)["gpus"]) {
    json d = json::array();
    for (const auto& l : layers) {
      double e = 0;
      for (const json& x : g.value("by_layer", json::array())) {
        if (x.value("key", std::string()) == l) e = x.value("energy_j", 0.0);
      }
      d.push_back(round_sig(e));
    }
    series.push_back({{"type", "bar"}, {"name", fmt::format("GPU {}", g.value("gpu", 0))}, {"data", d}});
  }
  json j = base_option(spec.title, o);
  j["tooltip"] = {{"trigger", "axis"}, {"axisPointer", {{"type", "shadow"}}}};
  j["grid"]["bottom"] = 90;
  j["xAxis"] = {{"type", "category"}, {"data", cats}, {"axisLabel", {{"rotate", 30}, {"fontSize", 10}}}};
  j["yAxis"] = {{"type", "value"}, {"name", "J"}};
  j["series"] = series;
  finish(j, spec, o, r.m->simulated);
  return spec;
}

}  // namespace jouleprof
