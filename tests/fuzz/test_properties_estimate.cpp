// Property tests of the estimate layer's readers and size checks (issue 22): hardware files,
// calibration files, sizes from the command line. Separate from test_properties.cpp so that the
// sanitizer run (scripts/asan-fuzz.sh) need not build the estimate layer.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "jouleprof/estimate/builders.hpp"
#include "jouleprof/estimate/estimate.hpp"
#include "jouleprof/estimate/hardware.hpp"

namespace jouleprof {
namespace {

using nlohmann::json;

// ---- hardware files and calibration ----
RC_GTEST_PROP(HardwareFile, MutatedSpecsAreRefusedOrValid, ()) {
  const std::string path = std::string(JOULEPROF_SOURCE_DIR) + "/data/hw/h100-sxm.json";
  std::ifstream in(path);
  json doc = json::parse(in);
  std::vector<json::json_pointer> paths;
  const json flat = doc.flatten();  // items() of a temporary would dangle
  for (const auto& [p, v] : flat.items()) paths.emplace_back(p);
  const auto& where = *rc::gen::elementOf(paths);
  doc[where] = *rc::gen::element<json>(json(-1), json(0), json(1e300), json("x"), json(nullptr), json::array(), json::object());
  auto hw = estimate::parse_hardware(doc.dump(), "mutated.json");
  if (hw) RC_ASSERT(estimate::validate(*hw).ok());
}

RC_GTEST_PROP(Calibration, MutatedFilesAreRefusedOrInRange, ()) {
  const std::string src = std::string(JOULEPROF_SOURCE_DIR) + "/data/calibration/h100-sxm.json";
  std::ifstream in(src);
  json doc = json::parse(in);
  std::vector<json::json_pointer> paths;
  const json flat = doc.flatten();  // items() of a temporary would dangle
  for (const auto& [p, v] : flat.items()) paths.emplace_back(p);
  const auto& where = *rc::gen::elementOf(paths);
  doc[where] = *rc::gen::element<json>(json(-1), json(0), json(1e300), json(-1e300), json("x"), json(nullptr), json::array());
  const std::string path = ::testing::TempDir() + "/jp-cal-" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << doc.dump();
  auto c = estimate::load_calibration(path);
  std::filesystem::remove(path);
  if (!c) return;
  for (const auto& v : {c->eff_matrix, c->eff_vector, c->eff_memory}) {
    if (v) RC_ASSERT(*v > 0 && *v <= 1.5);
  }
}

// ---- estimate: sizes from the command line (micro-graphs, --image, --batch) ----
RC_GTEST_PROP(EstimateSizes, NeverANegativeOrNonFiniteFigure, ()) {
  static const auto catalog = estimate::load_catalog({std::string(JOULEPROF_SOURCE_DIR) + "/data/hw"});
  RC_PRE(catalog.ok());
  auto hw = catalog->find("h100-sxm");
  RC_PRE(hw.ok());
  const auto big = rc::gen::oneOf(rc::gen::inRange<int64_t>(1, 4096), rc::gen::just<int64_t>(2147483647),
                                  rc::gen::just<int64_t>(std::numeric_limits<int64_t>::max()),
                                  rc::gen::just<int64_t>(int64_t{1} << 32));
  const int64_t a = *big, b = *big, c = *big;
  const std::string name = *rc::gen::element<std::string>("gemm:" + std::to_string(a) + "x" + std::to_string(b) + "x" + std::to_string(c),
                                                          "copy:" + std::to_string(a), "resnet18", "vit-b16");
  estimate::ModelOptions mo;
  mo.image = *rc::gen::oneOf(rc::gen::just<int64_t>(224), rc::gen::just<int64_t>(2147483647));
  mo.batch = *rc::gen::oneOf(rc::gen::just<int64_t>(1), rc::gen::just<int64_t>(int64_t{1} << 40));
  auto g = estimate::build_model(name, mo);
  if (!g) return;
  auto e = estimate::estimate(*g, **hw, {});
  if (!e) return;
  RC_ASSERT(std::isfinite(e->energy_j) && e->energy_j >= 0);
  RC_ASSERT(std::isfinite(e->latency_s) && e->latency_s >= 0);
  RC_ASSERT(e->dram_bytes >= 0 && e->flops >= 0);
}

TEST(FuzzCorpus, EveryKeptHardwareFileIsRefusedCleanly) {
  namespace fs = std::filesystem;
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(JOULEPROF_SOURCE_DIR) / "tests/fuzz/corpus/hardware")) {
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    EXPECT_FALSE(estimate::parse_hardware(ss.str(), e.path().string()).ok()) << e.path();
    ++n;
  }
  EXPECT_GT(n, 0u);
}

}  // namespace
}  // namespace jouleprof
