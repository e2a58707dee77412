// Report layer: escaping, downsampling, chart specifications, trace structure, plots.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "jouleprof/measure/footprint.hpp"
#include "jouleprof/report/assets.hpp"
#include "jouleprof/report/charts.hpp"
#include "jouleprof/report/downsample.hpp"
#include "jouleprof/report/html_report.hpp"
#include "jouleprof/report/section_views.hpp"
#include "jouleprof/report/sweep_report.hpp"
#include "jouleprof/report/trace.hpp"
#include "jouleprof/store/synthetic.hpp"

namespace jouleprof {
namespace {

using nlohmann::json;

TEST(ReportEscape, HtmlAndScript) {
  EXPECT_EQ(html_escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(html_escape("a&b \"c\" 'd'"), "a&amp;b &quot;c&quot; &#39;d&#39;");
  const std::string j = script_safe_json(R"({"x":"</script><!--","y":"a&b"})");
  EXPECT_EQ(j.find('<'), std::string::npos);
  EXPECT_EQ(json::parse(j)["x"], "</script><!--");
  const std::string ls = script_safe_json("\"a\xE2\x80\xA8" "b\"");
  EXPECT_EQ(ls, "\"a\\u2028b\"");
  EXPECT_EQ(json::parse(ls).get<std::string>(), "a\xE2\x80\xA8" "b");
}

std::vector<Sample> wave(std::size_t n) {
  std::vector<Sample> v;
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) * 0.02;
    v.push_back({t, 400 + 300 * std::sin(t) + (i == n / 3 ? 900.0 : 0.0)});  // one spike
  }
  return v;
}

TEST(ReportDownsample, MinMaxKeepsExtremesAndOrder) {
  const auto in = wave(360000);  // 2 h at 50 Hz
  const auto out = downsample_minmax(in, 1000);
  EXPECT_LE(out.size(), 2000u);
  EXPECT_GT(out.size(), 1500u);
  double max_in = 0, max_out = 0, min_in = 1e9, min_out = 1e9;
  for (const auto& s : in) {
    max_in = std::max(max_in, s.value);
    min_in = std::min(min_in, s.value);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    max_out = std::max(max_out, out[i].value);
    min_out = std::min(min_out, out[i].value);
    if (i > 0) {
      EXPECT_LE(out[i - 1].t_s, out[i].t_s);
    }
  }
  EXPECT_EQ(max_out, max_in);  // the spike survives
  EXPECT_EQ(min_out, min_in);
  EXPECT_EQ(downsample_minmax(wave(100), 1000).size(), 100u);
}

TEST(ReportDownsample, LttbSizeAndEnds) {
  const auto in = wave(50000);
  const auto out = downsample_lttb(in, 1000);
  ASSERT_EQ(out.size(), 1000u);
  EXPECT_EQ(out.front().t_s, in.front().t_s);
  EXPECT_EQ(out.back().t_s, in.back().t_s);
  for (std::size_t i = 1; i < out.size(); ++i) EXPECT_LT(out[i - 1].t_s, out[i].t_s);
  double max_out = 0;
  for (const auto& s : out) max_out = std::max(max_out, s.value);
  EXPECT_GT(max_out, 1200);  // the spike is the largest triangle of its bucket
  EXPECT_EQ(downsample_lttb(wave(10), 1000).size(), 10u);
}

TEST(ReportCharts, SpecsAreDataOnlyJson) {
  SyntheticSpec s;
  s.gpus = 2;
  s.duration_s = 600;
  const auto a = make_synthetic_measurement(s);
  s.decode_w = 480;
  s.seed = 2;
  s.tag_value = "other";
  auto b = make_synthetic_measurement(s);
  b.tags["batch"] = "8";
  auto a2 = a;
  a2.tags["batch"] = "1";
  std::vector<ReportRun> runs = {{"run 1", 1, &a2}, {"run 2", 2, &b}};
  ChartOptions o;
  o.max_points = 1000;
  const ChartSpec tl = timeline_chart(runs[0], 0, o);
  const json t = json::parse(tl.option_json);
  ASSERT_EQ(t["series"].size(), 2u);  // two GPUs
  EXPECT_LE(t["series"][0]["data"].size(), 1000u);
  EXPECT_FALSE(t["series"][0]["markArea"]["data"].empty());
  EXPECT_FALSE(t["series"][0]["markLine"]["data"].empty());  // idle baseline
  EXPECT_EQ(comparison_tag(runs, o), "batch");
  const json c = json::parse(compare_chart(runs, o).option_json);
  // Numeric tag values on a category axis in numeric order (issue 15: batch 1/8/32 at equal steps),
  // labelled by the values, with the repeats' CI as error bars.
  EXPECT_EQ(c["xAxis"]["type"], "category");
  EXPECT_EQ(c["xAxis"]["name"], "batch");
  EXPECT_EQ(c["series"][1]["type"], "boxplot");
  // Legends never over data: the plot starts below the title and the legend's band.
  EXPECT_GE(c["grid"]["top"].get<int>(), 40 + 26);
  EXPECT_FALSE(json::parse(repeats_chart(runs, o).option_json)["series"][0]["data"].empty());
  EXPECT_FALSE(per_count_chart(runs, o).option_json.empty());
  EXPECT_FALSE(windows_chart(runs[0], 0, o).option_json.empty());
  EXPECT_FALSE(clocks_chart(runs[0], 0, o).option_json.empty());
}

// A bench llm point as the "llm" section holds it.
json bench_point(const std::string& model, double params, int batch, int prompt, double decode_j) {
  return {{"model", model}, {"dtype", "bf16"}, {"batch", batch}, {"prompt", prompt}, {"gen", 128}, {"params", params},
          {"variant", "auto"}, {"status", "complete"},
          {"prefill", {{"j_per_token", decode_j / 20}, {"above_idle_j_per_token", decode_j / 40}, {"tokens_per_s", 1e4 * batch}}},
          {"decode", {{"j_per_token", decode_j}, {"above_idle_j_per_token", decode_j / 2}, {"tokens_per_s", 100.0 * batch}}},
          {"components", json::array({{{"name", "attn_qkv"}, {"j_per_token", decode_j / 3}},
                                      {{"name", "mlp_down"}, {"j_per_token", decode_j / 2}}})}};
}

TEST(ReportCharts, BenchScalingChartsFromLlmSections) {
  // One "run" per configuration (as bench llm stores them): 2 models x 2 batches x 3 prompts.
  std::vector<Measurement> ms;
  for (const auto& [model, params] : {std::pair{"llama-3.2-1b", 1.24e9}, std::pair{"llama-3.1-8b", 8.03e9}}) {
    for (int batch : {1, 8}) {
      for (int prompt : {128, 512, 1024}) {
        Measurement m = make_synthetic_measurement();
        json llm = {{"schema", "jouleprof.bench-llm/1"}, {"simulated", false},
                    {"points", json::array({bench_point(model, params, batch, prompt, 0.002 * params / 1e9 / batch)})}};
        m.sections["llm"] = llm.dump();
        ms.push_back(std::move(m));
      }
    }
  }
  std::vector<ReportRun> runs;
  for (std::size_t i = 0; i < ms.size(); ++i) runs.push_back({"run " + std::to_string(i + 1), static_cast<int64_t>(i + 1), &ms[i]});
  const auto pts = bench_points(runs);
  ASSERT_EQ(pts.size(), 12u);
  EXPECT_EQ(pts[3].run, "run 4");
  EXPECT_EQ(pts[3].batch, 8);
  EXPECT_EQ(bench_axes(pts), (std::vector<BenchAxis>{BenchAxis::prompt, BenchAxis::batch, BenchAxis::model}));
  ChartOptions o;
  // Prompt: one line per model x batch and figure; 128..1024 is a factor 8: a log-2 axis.
  const json e = json::parse(bench_energy_chart(pts, BenchAxis::prompt, o).option_json);
  EXPECT_EQ(e["xAxis"]["type"], "log");
  EXPECT_EQ(e["xAxis"]["logBase"], 2);
  ASSERT_EQ(e["series"].size(), 16u);  // 4 groups x (prefill, above idle, decode, above idle)
  EXPECT_EQ(e["series"][2]["name"], "llama-3.2-1b b1 decode");
  EXPECT_EQ(e["series"][2]["data"].size(), 3u);
  EXPECT_DOUBLE_EQ(e["series"][2]["data"][0]["value"][1].get<double>(), 1e3 * 0.002 * 1.24);  // mJ
  EXPECT_EQ(e["series"][3]["lineStyle"]["type"], "dashed");
  // Model size: parameters in billions, points named by model.
  const json m = json::parse(bench_energy_chart(pts, BenchAxis::model, o).option_json);
  EXPECT_DOUBLE_EQ(m["series"][0]["data"][1]["value"][0].get<double>(), 8.03);
  EXPECT_EQ(m["series"][0]["data"][1]["name"], "llama-3.1-8b");
  const json t = json::parse(bench_throughput_chart(pts, BenchAxis::batch, o).option_json);
  EXPECT_EQ(t["series"].size(), 12u);  // 6 groups x (prefill, decode)
  const json c = json::parse(bench_components_chart(pts, o).option_json);
  ASSERT_EQ(c["series"].size(), 3u);  // two stacked components and the measured decode
  EXPECT_EQ(c["series"][0]["stack"], "components");
  EXPECT_EQ(c["xAxis"]["data"].size(), 12u);
  EXPECT_TRUE(bench_components_chart({}, o).option_json.empty());
  EXPECT_TRUE(bench_axes({pts[0]}).empty());
  if (charting_library_js().ok()) {
    auto html = render_html_report(runs);
    ASSERT_TRUE(html.ok()) << html.error().message;
    for (const char* id : {"bench-energy-prompt", "bench-throughput-batch", "bench-energy-model", "bench-components"}) {
      EXPECT_NE(html->find(std::string("id=\"") + id + "\""), std::string::npos) << id;
    }
  }
}

TEST(ReportHtml, EscapesUserTextEverywhere) {
  if (!charting_library_js().ok()) GTEST_SKIP() << "charting library not installed";
  auto m = make_synthetic_measurement();
  const std::string evil = "<script>alert(1)</script>";
  m.tags["note"] = evil;
  m.command = {"python", evil};
  m.windows[2].name = evil;
  m.gpus[0].name = evil;
  m.host = evil;
  ReportOptions o;
  o.title = evil;
  auto html = render_html_report({{evil, 1, &m}}, o);
  ASSERT_TRUE(html.ok()) << html.error().message;
  // The only literal "<script" tags are ours: the early hook, the spec JSON, the library and the glue.
  const std::regex tag("<script[ >]");
  const auto n = std::distance(std::sregex_iterator(html->begin(), html->end(), tag), std::sregex_iterator());
  EXPECT_EQ(n, 4);
  EXPECT_EQ(html->find(evil), std::string::npos);
  EXPECT_NE(html->find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
}

// A traced run (the result's "trace" section): the class breakdown, layers in model order, the
// tables with kernel names escaped.
TEST(ReportHtml, TraceSectionChartsAndTables) {
  auto m = make_synthetic_measurement();
  const std::string evil = "<script>alert(1)</script>";
  auto row = [](const std::string& key, double j) {
    return json{{"key", key}, {"energy_j", j}, {"share", 0.5}, {"busy_s", 0.1}, {"count", 3}, {"mean_power_above_idle_w", 400},
                {"uncertainty_j", 1}, {"below_resolution", false}};
  };
  json g = {{"gpu", 0}, {"uuid", "GPU-x"}, {"kernels", 6}, {"table_method", "split"},
            {"methods", json::array({json{{"method", "split"}, {"measured_energy_j", 100}, {"attributed_energy_j", 70},
                                          {"idle_static_energy_j", 25}, {"unattributed_energy_j", 5}}})},
            {"by_class", json::array({row("gemm", 40), row("copy", 30)})},
            {"by_component", json::array({row("mlp", 40), row("attention", 30)})},
            {"by_layer", json::array({row("layers.10", 20), row("layers.2", 25), row("layers.0", 25)})},
            {"by_kernel", json::array({row(evil, 70)})}};
  m.sections["trace"] = json{{"schema_version", 1}, {"gpus", json::array({g})}}.dump();
  const ReportRun r{"run 1", 1, &m};
  const json c = json::parse(trace_breakdown_chart(r, 0, {}).option_json);
  ASSERT_EQ(c["series"].size(), 4u);  // gemm, copy, idle/static, unattributed: they add up to the measured 100 J
  double sum = 0;
  for (const auto& sr : c["series"]) sum += sr["data"][0].get<double>();
  EXPECT_DOUBLE_EQ(sum, 100);
  const json l = json::parse(trace_layers_chart(r, 0, {}).option_json);
  EXPECT_EQ(l["xAxis"]["data"], json({"layers.0", "layers.2", "layers.10"}));
  if (charting_library_js().ok()) {
    auto html = render_html_report({r});
    ASSERT_TRUE(html.ok()) << html.error().message;
    EXPECT_NE(html->find("Kernels and layers"), std::string::npos);
    EXPECT_NE(html->find("<td>attention</td>"), std::string::npos);
    EXPECT_EQ(html->find(evil), std::string::npos);
  }
  m.sections.erase("trace");
  EXPECT_TRUE(trace_breakdown_chart(r, 0, {}).option_json.empty());
}

// Issue 35 item 8: a plot titled "GPU power — run 3" had lanes "run 0, run 1, run 2"; the repeats
// are "repeat 1..N" (a "run" is the stored run) in the charts, the windows table and the trace.
TEST(ReportCharts, RepeatsAreLabelledRepeatFromOne) {
  auto m = make_synthetic_measurement();
  const ReportRun r{"run 3", 3, &m};
  for (const std::string& spec : {timeline_chart(r, 0, {}).option_json, windows_chart(r, 0, {}).option_json}) {
    EXPECT_NE(spec.find("repeat 1"), std::string::npos) << spec.substr(0, 400);
    EXPECT_EQ(spec.find("\"run 0"), std::string::npos);
    EXPECT_EQ(spec.find("(run 0)"), std::string::npos);
  }
}

// Carbon and cost (issue 35): the footprint section in the HTML report, sources escaped.
TEST(ReportHtml, CarbonAndCostTable) {
  auto m = make_synthetic_measurement();
  FootprintSettings s;
  s.carbon_g_per_kwh = 400;
  s.carbon_source = "--carbon-intensity: <b>grid</b>";
  s.price_per_kwh = 0.3;
  s.price_source = "--price";
  add_footprint(m, s);
  const json fp = json::parse(m.sections.at("footprint"));
  EXPECT_NEAR(fp["windows"][1]["gco2e"].get<double>(), m.windows[1].gpu_energy_j / 3.6e6 * 400, 1e-12);
  if (!charting_library_js().ok()) GTEST_SKIP() << "charting library not installed";
  auto html = render_html_report({{"run 1", 1, &m}});
  ASSERT_TRUE(html.ok()) << html.error().message;
  EXPECT_NE(html->find("Carbon and cost"), std::string::npos);
  EXPECT_NE(html->find("&lt;b&gt;grid&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(html->find("<b>grid</b>"), std::string::npos);
  EXPECT_NE(html->find("repeat 2"), std::string::npos);
}

TEST(ReportHtml, ReplaySectionPredictedVsMeasuredPerTierAndPhase) {
  auto m = make_synthetic_measurement();
  const std::string evil = "<script>alert(1)</script>";
  json rp = {{"schema", "jouleprof.replay"},
             {"replay_gpu", "NVIDIA H100 80GB HBM3"},
             {"gap_power_w", 231.5},
             {"isolated_gap_power_w", 135.9},
             {"idle_power_w", 70},
             {"prediction", {{"predicted_duration_s", 1.134}, {"predicted_energy_j", 461.25}, {"gap_duration_s", 0.485}, {"gap_energy_j", 112.3}}},
             {"comparison", {{"measured_run", evil}, {"window", "work"}, {"measured_duration_s", 1.164}, {"measured_energy_j", 473.9},
                             {"duration_error", -0.0258}, {"energy_error", -0.0267}}},
             {"context", {{"measured", true}, {"activities", 4000}, {"pass_duration_s", 0.12}, {"pass_energy_j", 50.0},
                          {"isolated_duration_s", 0.07}, {"isolated_energy_j", 38.0}}},
             {"tiers", json::array({json{{"tier", "gemm"}, {"rows", 8}, {"replayed_rows", 7}, {"extrapolated_rows", 1},
                                         {"traced_duration_s", 0.2231}, {"predicted_duration_s", 0.2242}, {"predicted_energy_j", 147.087}}})},
             {"phases", json::array({json{{"phase", "prefill"}, {"ranges", 1}, {"predicted_duration_s", 0.05}, {"measured_duration_s", 0.052},
                                          {"duration_error", -0.0385}, {"predicted_energy_j", 20.0}, {"measured_energy_j", 21.0},
                                          {"energy_error", -0.0476}},
                                     json{{"phase", "decode"}, {"ranges", 1}, {"predicted_duration_s", 2.0}, {"predicted_energy_j", 280.0}}})}};
  m.sections["replay"] = rp.dump();
  const ReportRun r{"replay run", 1, &m};
  if (!charting_library_js().ok()) GTEST_SKIP() << "no charting library (JOULEPROF_WEB_DIR)";
  auto html = render_html_report({r});
  ASSERT_TRUE(html.ok()) << html.error().message;
  EXPECT_NE(html->find("Replay prediction"), std::string::npos);
  EXPECT_NE(html->find("<td>gemm</td><td>8</td><td>7</td><td>1</td><td>223.1</td><td>224.2</td><td>147.1</td>"), std::string::npos);
  EXPECT_NE(html->find("<td>error</td><td>-2.6%</td><td>-2.7%</td>"), std::string::npos);
  EXPECT_NE(html->find("<td>prefill</td><td>1</td><td>0.05</td><td>0.052</td><td>-3.9%</td><td>20</td><td>21</td><td>-4.8%</td>"),
            std::string::npos);
  EXPECT_NE(html->find("<td>decode</td><td>1</td><td>2</td><td>–</td><td>–</td>"), std::string::npos);  // no measured window
  EXPECT_NE(html->find("in context"), std::string::npos);
  EXPECT_EQ(html->find(evil), std::string::npos);
  // A section that is not a replay result (or not JSON) adds no replay view and no error.
  m.sections["replay"] = "{not json";
  auto plain = render_html_report({r});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->find("Replay prediction"), std::string::npos);
}

// A section type's report view is registered under its schema, in the registry that holds its
// `runs show` renderer (result/sections.hpp); the report shows the registered views in their place
// and order, the built-in ones included (replay before carbon and cost).
TEST(ReportHtml, SectionViewsComeFromTheRegistryOfSectionTypes) {
  static const SectionView test_view{SectionView::Place::after_summaries, 99,
                                     [](const std::vector<ReportRun>& runs, const ReportOptions&, std::string& body, std::vector<ChartSpec>&) {
                                       for (const ReportRun& r : runs) {
                                         if (r.m->sections.contains("test")) body += "<p>the test section's view</p>\n";
                                       }
                                     }};
  register_section_view("test.report-view/1", &test_view);
  const SectionType* t = find_section_type("test.report-view/1");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->view, &test_view);
  const auto views = section_views();
  ASSERT_FALSE(views.empty());
  EXPECT_EQ(views.back(), &test_view);  // after_summaries, the highest order
  EXPECT_NE(find_section_type(kFootprintSchema), nullptr);
  EXPECT_NE(find_section_type(kFootprintSchema)->view, nullptr);  // the report's own views are in the same registry
  auto m = make_synthetic_measurement();
  FootprintSettings s;
  s.carbon_g_per_kwh = 400;
  add_footprint(m, s);
  m.sections["replay"] = json{{"schema", "jouleprof.replay"}, {"prediction", {{"predicted_energy_j", 1.0}}}}.dump();
  m.sections["test"] = R"({"schema": "test.report-view/1"})";
  if (!charting_library_js().ok()) GTEST_SKIP() << "charting library not installed";
  auto html = render_html_report({{"run 1", 1, &m}});
  ASSERT_TRUE(html.ok()) << html.error().message;
  const auto replay = html->find("Replay prediction"), carbon = html->find("Carbon and cost"), test = html->find("the test section's view");
  ASSERT_NE(replay, std::string::npos);
  ASSERT_NE(carbon, std::string::npos);
  ASSERT_NE(test, std::string::npos);
  EXPECT_LT(replay, carbon);
  EXPECT_LT(carbon, test);
  EXPECT_LT(test, html->find("id=\"run-0\""));  // before the per-run sections
}

TEST(ReportHtml, LongRunStaysSmall) {
  if (!charting_library_js().ok()) GTEST_SKIP() << "charting library not installed";
  SyntheticSpec s;
  s.gpus = 8;
  s.duration_s = 7200;
  s.sample_hz = 50;
  const auto m = make_synthetic_measurement(s);
  auto html = render_html_report({{"run 1", 1, &m}});
  ASSERT_TRUE(html.ok()) << html.error().message;
  EXPECT_LT(html->size(), 20u * 1000 * 1000);
}

TEST(ReportTrace, StructureParsesWithNlohmann) {
  SyntheticSpec s;
  s.gpus = 2;
  s.duration_s = 30;
  auto m = make_synthetic_measurement(s);
  m.windows[1].name = "quote\" and <tag>";
  m.cpu_domains = {"package-0"};
  m.cpu_energy = {{{0, 0}, {1, 50}, {2, 110}}};
  m.meter_power = {{0, 900}, {1, 950}};
  const json t = json::parse(chrome_trace_json(m));
  std::map<std::string, int> counters;
  int slices = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "C") counters[e["name"].get<std::string>() + "@" + std::to_string(e["pid"].get<int>())]++;
    if (e["ph"] == "X") ++slices;
  }
  EXPECT_EQ(slices, static_cast<int>(m.windows.size()));
  EXPECT_EQ(counters["power_sample_w@10"], static_cast<int>(m.timelines[0]->series[0].size()));
  EXPECT_GT(counters["power_sample_w@11"], 0);
  EXPECT_EQ(counters["package-0_power_w@2"], 2);
  EXPECT_EQ(counters["power_w@3"], 2);
  TraceOptions o;
  o.max_points = 200;
  const json small = json::parse(chrome_trace_json(m, o));
  int n = 0;
  for (const auto& e : small["traceEvents"]) n += (e["ph"] == "C" && e["name"] == "power_sample_w" && e["pid"] == 10) ? 1 : 0;
  EXPECT_LE(n, 200);
}

TEST(ReportPlot, SvgFromTheSameSpec) {
  if (!charting_library_js().ok()) GTEST_SKIP() << "charting library not installed";
  if (std::system("node --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "node not installed";
  const auto m = make_synthetic_measurement();
  ChartOptions o;
  o.for_static = true;
  auto svg = render_svg(timeline_chart({"run 1", 1, &m}, 0, o), 800, 400);
  ASSERT_TRUE(svg.ok()) << svg.error().message;
  EXPECT_EQ(svg->rfind("<svg", 0), 0u);
  EXPECT_NE(svg->find("<path"), std::string::npos);
  EXPECT_NE(svg->find("GPU power"), std::string::npos);
}

}  // namespace
}  // namespace jouleprof

// Issue 35 item 10: the sweep table's * marks the best clock of each application, not one row
// across all --param values (the cheapest application's).
TEST(SweepReportMarks, BestRowPerApplication) {
  auto row = [](const std::string& app, double clock, double energy) {
    jouleprof::SweepRow r;
    r.params["app"] = app;
    r.clock_mhz = clock;
    r.energy_j.n = 3;
    r.energy_j.mean = energy;
    r.edp_js = r.energy_j;
    r.ed2p_js2 = r.energy_j;
    return r;
  };
  std::vector<jouleprof::SweepRow> rows{row("a", 990, 10), row("a", 1980, 12), row("b", 990, 40), row("b", 1980, 30)};
  jouleprof::mark_best_rows(rows);
  EXPECT_TRUE(rows[0].best_energy);
  EXPECT_FALSE(rows[1].best_energy);
  EXPECT_FALSE(rows[2].best_energy);
  EXPECT_TRUE(rows[3].best_energy);  // the old single mark left application b without one
  EXPECT_TRUE(rows[3].best_edp);
}

// A point measured once has no interval: the table says n=1 instead of "± 0" (issue 35, found
// walking the sweep workflow with --runs 1).
TEST(SweepReportText, OneRepeatShowsNoInterval) {
  jouleprof::SweepReport r;
  r.sweep_id = "s";
  jouleprof::SweepRow one, three;
  one.clock_mhz = 990;
  one.energy_j.n = one.duration_s.n = one.edp_js.n = one.ed2p_js2.n = 1;
  one.energy_j.mean = 53.35;
  three.clock_mhz = 1980;
  three.energy_j.n = three.duration_s.n = three.edp_js.n = three.ed2p_js2.n = 3;
  three.energy_j.mean = 104.1;
  three.energy_j.ci95_half_width = 1.5;
  r.rows = {one, three};
  const std::string text = jouleprof::sweep_report_text(r);
  EXPECT_NE(text.find("53.35 (n=1)"), std::string::npos) << text;
  EXPECT_EQ(text.find("53.35 ± 0"), std::string::npos) << text;
  EXPECT_NE(text.find("104.1 ± 1.5"), std::string::npos) << text;
}
