// The hardware catalog: every shipped file loads and validates; bad files give one clear error.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jouleprof/estimate/hardware.hpp"

using namespace jouleprof::estimate;
using nlohmann::json;

namespace {
std::string read(const std::string& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
json h100() { return json::parse(read(std::string(JOULEPROF_DATA) + "/hw/h100-sxm.json")); }
}  // namespace

TEST(EstimateHardware, ShippedCatalogLoadsAndValidates) {
  auto c = load_catalog({std::string(JOULEPROF_DATA) + "/hw"});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_GE(c->hw.size(), 19u);
  int classes[4] = {0, 0, 0, 0};
  for (const auto& h : c->hw) {
    ++classes[static_cast<int>(h.cls)];
    EXPECT_TRUE(validate(h)) << h.id;
    EXPECT_FALSE(h.process_nm.source.empty()) << h.id;
    for (const auto& m : h.memory) EXPECT_FALSE(m.bandwidth_gbps.source.empty()) << h.id << " " << m.name;
    for (const auto& [k, v] : h.events_pj) EXPECT_FALSE(v.source.empty()) << h.id << " " << k;
  }
  for (int k : classes) EXPECT_GE(k, 3);
}

TEST(EstimateHardware, DatasheetNumbersOfTheH100) {
  auto c = load_catalog({std::string(JOULEPROF_DATA) + "/hw"});
  ASSERT_TRUE(c);
  auto h = c->find("H100");  // alias, case-insensitive
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_EQ((*h)->id, "h100-sxm");
  EXPECT_DOUBLE_EQ((*h)->dram().bandwidth_gbps.value, 3350);  // not the PCIe part's 2 TB/s
  EXPECT_NEAR(*(*h)->peak_flops(DType::bf16, true), 989.4e12, 1e9);
  EXPECT_DOUBLE_EQ((*h)->tdp_w.value, 700);
}

TEST(EstimateHardware, EventEnergiesAreScaledFromHorowitz) {
  auto hw = parse_hardware(h100().dump(), "h100.json");
  ASSERT_TRUE(hw) << hw.error().message;
  // bf16 MAC: 2.0 pJ at 45 nm, x (4/45) x (1.0/0.9)^2
  EXPECT_NEAR(hw->event_pj("mac_bf16"), 2.0 * 4.0 / 45.0 / 0.81, 1e-9);
  EXPECT_NE(hw->events_pj.at("mac_bf16").source.find("Horowitz"), std::string::npos);
}

TEST(EstimateHardware, MissingFieldNamesFieldAndFile) {
  json j = h100();
  j.erase("tdp_w");
  auto hw = parse_hardware(j.dump(), "my-gpu.json");
  ASSERT_FALSE(hw);
  EXPECT_NE(hw.error().message.find("my-gpu.json"), std::string::npos);
  EXPECT_NE(hw.error().message.find("'tdp_w'"), std::string::npos);
  j = h100();
  j["memory"][2].erase("bandwidth_gbps");
  hw = parse_hardware(j.dump(), "x.json");
  ASSERT_FALSE(hw);
  EXPECT_NE(hw.error().message.find("memory[2].bandwidth_gbps"), std::string::npos) << hw.error().message;
}

TEST(EstimateHardware, NumbersWithoutSourcesAreRefused) {
  json j = h100();
  j["tdp_w"] = {{"value", 700}};
  auto hw = parse_hardware(j.dump(), "x.json");
  ASSERT_FALSE(hw);
  EXPECT_NE(hw.error().message.find("source"), std::string::npos);
  j = h100();
  j["tdp_w"] = 700;
  EXPECT_FALSE(parse_hardware(j.dump(), "x.json"));
}

TEST(EstimateHardware, InconsistentValuesAreRefused) {
  json j = h100();
  j["idle_w"]["value"] = 800;
  auto hw = parse_hardware(j.dump(), "x.json");
  ASSERT_FALSE(hw);
  EXPECT_NE(hw.error().message.find("idle_w"), std::string::npos);
  j = h100();
  j["clock_min_mhz"]["value"] = 5000;
  EXPECT_FALSE(parse_hardware(j.dump(), "x.json"));
  j = h100();
  j["matrix_peak_tflops"]["bf17"] = {{"value", 1}, {"source", "x"}};
  EXPECT_FALSE(parse_hardware(j.dump(), "x.json"));
  j = h100();
  j["class"] = "fpga";
  EXPECT_FALSE(parse_hardware(j.dump(), "x.json"));
  EXPECT_FALSE(parse_hardware("{not json", "x.json"));
}

TEST(EstimateHardware, UnknownNameSuggestsCloseOnes) {
  auto c = load_catalog({std::string(JOULEPROF_DATA) + "/hw"});
  ASSERT_TRUE(c);
  auto h = c->find("a100-sxm4");
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("did you mean a100-sxm-80gb"), std::string::npos) << h.error().message;
  EXPECT_FALSE(c->find("zzzzzzzzzz"));
}

TEST(EstimateHardware, UserDirectoryOverridesShippedId) {
  auto c = load_catalog({std::string(JOULEPROF_DATA) + "/hw", std::string(JOULEPROF_ESTIMATE_FIXTURES) + "/hw"});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->find("test-gpu"));
  EXPECT_FALSE(load_catalog({"/nonexistent/dir"}));
}
