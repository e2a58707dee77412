// Property tests for every parser that reads user input (issue 22): arbitrary and mutated inputs
// never crash, never hang, and whatever is accepted satisfies the reader's invariants. Run under
// ASan/UBSan by scripts/asan-fuzz.sh. RC_PARAMS="max_success=N" sets how many inputs.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "jouleprof/core/parse.hpp"
#include "jouleprof/core/text.hpp"
#include "jouleprof/measure/markers.hpp"
#include "jouleprof/sensors/meter_csv.hpp"
#include "jouleprof/sensors/sim_model.hpp"
#include "jouleprof/result/result_io.hpp"
#include "jouleprof/store/store.hpp"
#include "fuzz_inputs.hpp"

namespace jouleprof {
namespace {

using nlohmann::json;

// Bytes biased towards what breaks text parsers: separators, digits, signs, exponents, UTF-8
// lead and continuation bytes, controls.
rc::Gen<std::string> hostile_text() {
  return rc::gen::container<std::string>(rc::gen::oneOf(
      rc::gen::elementOf(std::string("0123456789,.-+eE \t\r\n#=:")), rc::gen::elementOf(std::string("abtcount begin end")),
      rc::gen::map(rc::gen::inRange(0, 256), [](int b) { return static_cast<char>(b); })));
}

// ---- the text layer ----
RC_GTEST_PROP(TextLayer, OutputIsAlwaysValidUtf8, (const std::string& raw)) {
  const auto bytes = *rc::gen::container<std::string>(rc::gen::map(rc::gen::inRange(0, 256), [](int b) { return static_cast<char>(b); }));
  for (const std::string& s : {raw, bytes}) {
    bool replaced = false;
    const std::string v = to_valid_utf8(s, &replaced);
    RC_ASSERT(is_valid_utf8(v));
    RC_ASSERT(replaced == !is_valid_utf8(s));
    if (!replaced) RC_ASSERT(v == s);
    const std::string label = clean_label(s);
    RC_ASSERT(is_valid_utf8(label));
    for (unsigned char c : label) RC_ASSERT(c >= 0x20 && c != 0x7F);
    const std::string term = for_terminal(s);
    RC_ASSERT(is_valid_utf8(term));
    for (unsigned char c : term) RC_ASSERT(c >= 0x20 && c != 0x7F);
    // The JSON writer accepts whatever the text layer produced.
    RC_ASSERT_FALSE(json(v).dump().empty());
  }
}

TEST(TextLayer, KnownSequences) {
  EXPECT_TRUE(is_valid_utf8("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xFE"));
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));          // truncated
  EXPECT_EQ(to_valid_utf8("a\xFE" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(clean_label("red\x1B[31m"), "red\\x1b[31m");
  EXPECT_EQ(clean_label("csi\xC2\x9B"), "csi\\x9b");
  EXPECT_EQ(for_terminal("a\nb\tc"), "a\\nb\\tc");
}

// ---- JSON nesting ----
RC_GTEST_PROP(JsonDepth, MatchesTheParser, ()) {
  const int depth = *rc::gen::inRange(0, 200);
  const std::string text = std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']');
  RC_ASSERT(json_too_deep(text).has_value() == (depth > kMaxJsonDepth));
  // Brackets inside strings do not count.
  RC_ASSERT_FALSE(json_too_deep("\"" + std::string(static_cast<std::size_t>(depth), '[') + "\"").has_value());
}

// ---- markers ----
RC_GTEST_PROP(MarkerParser, AcceptedLinesAreSane, ()) {
  const std::string line = *hostile_text();
  auto m = parse_marker_line(line);
  if (!m || !*m) return;
  const Marker& k = **m;
  if (k.unix_s) RC_ASSERT(std::isfinite(*k.unix_s) && *k.unix_s > 0 && *k.unix_s <= 9e9);
  if (k.kind == Marker::Kind::count) RC_ASSERT(std::isfinite(k.value) && k.value >= 0);
  RC_ASSERT(is_valid_utf8(k.name) && is_valid_utf8(k.key));
}

RC_GTEST_PROP(MarkerParser, ExplicitTimes, ()) {
  const double t = *rc::gen::oneOf(rc::gen::just(1e300), rc::gen::just(-1.0), rc::gen::just(0.0),
                                    rc::gen::map(rc::gen::inRange(1, 2000000000), [](int v) { return static_cast<double>(v); }));
  std::ostringstream line;
  line << "begin w t=" << t;
  auto m = parse_marker_line(line.str());
  RC_ASSERT(static_cast<bool>(m) == (t > 0 && t <= 9e9));
}

// ---- meter CSV ----
RC_GTEST_PROP(MeterCsv, AcceptedLogsAreSane, ()) {
  const std::string body = *hostile_text();
  const std::string header = *rc::gen::element<std::string>("time,power_w\n", "timestamp,sum,x\n", "time,watts\n", "");
  auto log = parse_meter_csv(header + body, {});
  if (!log) {
    RC_ASSERT(is_valid_utf8(log.error().message));
    return;
  }
  double last = -1e300;
  for (const Sample& s : log->samples) {
    RC_ASSERT(std::isfinite(s.t_s) && std::isfinite(s.value) && s.value >= 0);
    RC_ASSERT(s.t_s >= last);
    last = s.t_s;
  }
  RC_ASSERT(is_valid_utf8(log->column));
}

// ---- simulated-GPU scenarios ----
RC_GTEST_PROP(SimScenario, ArbitraryTextNeverCrashes, ()) {
  const std::string key = *rc::gen::element<std::string>("name ", "gpus ", "idle_w ", "tdp_w ", "noise_w ", "phase ", "");
  auto cfg = parse_sim_scenario(key + *hostile_text());
  if (!cfg) {
    RC_ASSERT(is_valid_utf8(cfg.error().message));
    return;
  }
  RC_ASSERT(is_valid_utf8(cfg->name));
  RC_ASSERT(cfg->gpus >= 1 && cfg->gpus <= 64);
}

// ---- result JSON import: arbitrary, mutated and structurally wrong documents ----
RC_GTEST_PROP(ResultImport, ArbitraryBytesNeverCrash, ()) {
  auto m = measurement_from_json(*hostile_text());
  RC_ASSERT_FALSE(m.ok());
}

void assert_structurally_valid(const Measurement& m) {
  if (m.complete) RC_ASSERT_FALSE(m.windows.empty());
  const auto n = static_cast<int>(m.windows.size());
  for (int i = 0; i < n; ++i) {
    const WindowResult& w = m.windows[static_cast<std::size_t>(i)];
    RC_ASSERT(w.parent >= -1 && w.parent < n && w.parent != i);
    RC_ASSERT(std::isfinite(w.t0_s) && std::isfinite(w.t1_s) && w.t1_s >= w.t0_s);
    RC_ASSERT(w.gpus.size() == m.gpus.size());
    RC_ASSERT(w.gpu_energy_j >= 0);
    for (const GpuEnergy& e : w.gpus) RC_ASSERT(e.energy_j >= 0);
  }
  for (const RunInfo& r : m.runs) RC_ASSERT(r.window >= -1 && r.window < n);
  for (const auto& [k, v] : m.tags) RC_ASSERT(is_valid_utf8(k) && is_valid_utf8(v));
}

RC_GTEST_PROP(ResultImport, MutatedResultsAreRefusedOrValid, ()) {
  json doc = json::parse(fuzz::sample_result());
  // Replace one value anywhere in the document by a hostile one.
  std::vector<json::json_pointer> paths;
  const json flat = doc.flatten();
  for (const auto& [p, v] : flat.items()) paths.emplace_back(p);
  const auto& where = *rc::gen::elementOf(paths);
  const json hostile = *rc::gen::element<json>(
      json(-1), json(0), json(1), json(7), json(1e300), json(-1e300), json(1208925819614629174706176.0),
      json(std::numeric_limits<int64_t>::max()), json(std::numeric_limits<uint64_t>::max()), json("x"),
      json("incomplete"), json("bogus"), json(nullptr), json::array(), json::object(), json(true));
  doc[where] = hostile;
  auto m = measurement_from_json(doc.dump());
  if (m) assert_structurally_valid(*m);
}

RC_GTEST_PROP(ResultImport, DeepNestingIsRefused, ()) {
  const int depth = *rc::gen::inRange(kMaxJsonDepth + 1, 200000);
  const char open = *rc::gen::element('[', '{');
  std::string text = "{\"schema_version\":" + std::to_string(kResultSchemaVersion) + ",\"x\":";
  for (int i = 0; i < depth; ++i) text += open == '[' ? "[" : "{\"a\":";
  text += "1";
  for (int i = 0; i < depth; ++i) text += open == '[' ? "]" : "}";
  text += "}";
  RC_ASSERT_FALSE(measurement_from_json(text).ok());
}

TEST(ResultImport, StructuralErrorsNameTheJsonPath) {
  auto with = [](const std::function<void(json&)>& edit) {
    json doc = json::parse(fuzz::sample_result());
    edit(doc);
    return measurement_from_json(doc.dump());
  };
  auto self_parent = with([](json& d) { d["windows"][1]["parent"] = 1; });
  ASSERT_FALSE(self_parent.ok());
  EXPECT_NE(self_parent.error().message.find("/windows/1/parent"), std::string::npos) << self_parent.error().message;
  auto out_of_range = with([](json& d) { d["runs"][0]["window"] = 99; });
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.error().message.find("/runs/0/window"), std::string::npos);
  auto empty = with([](json& d) { d["windows"] = json::array(); });
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("/windows"), std::string::npos) << empty.error().message;
  auto status = with([](json& d) { d["windows"][0]["status"] = "finished"; });
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("/windows/0/status"), std::string::npos) << status.error().message;
  auto origin = with([](json& d) { d["origin_realtime_ns"] = 1208925819614629174706176.0; });  // 2^80
  ASSERT_FALSE(origin.ok());
  EXPECT_NE(origin.error().message.find("/origin_realtime_ns"), std::string::npos) << origin.error().message;
  auto cycle = with([](json& d) {
    d["windows"][0]["parent"] = 1;
    d["windows"][1]["parent"] = 0;
  });
  ASSERT_FALSE(cycle.ok());
  auto backwards = with([](json& d) { d["windows"][1]["t1_s"] = 0.0; });
  ASSERT_FALSE(backwards.ok());
  EXPECT_TRUE(with([](json&) {}).ok());
}

// ---- run references and time filters ----
RC_GTEST_PROP(TimeFilter, NeverOverflows, ()) {
  const std::string digits = *rc::gen::container<std::string>(rc::gen::elementOf(std::string("0123456789")));
  const std::string text = *rc::gen::oneOf(rc::gen::just(digits + "d"), rc::gen::just(digits + "s"), hostile_text());
  auto t = parse_time_filter(text, int64_t{1} << 62);
  (void)t;
}

// ---- the regression corpus: every input that once crashed or misled a parser ----
TEST(FuzzCorpus, EveryKeptInputIsRefusedCleanly) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(JOULEPROF_SOURCE_DIR) / "tests/fuzz/corpus";
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string kind = e.path().parent_path().filename().string();
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    bool refused = false;
    if (kind == "result") refused = !measurement_from_json(text).ok();
    if (kind == "marker") refused = !parse_marker_line(text).ok();
    if (kind == "meter") refused = !parse_meter_csv(text, {}).ok();
    if (kind == "scenario") refused = !parse_sim_scenario(text).ok();
    if (kind == "hardware") continue;  // test_properties_estimate.cpp
    if (kind == "onnx") continue;      // test_properties_onnx.cpp
    EXPECT_TRUE(refused) << e.path();
    ++n;
  }
  EXPECT_GT(n, 5u);
}

}  // namespace
}  // namespace jouleprof
