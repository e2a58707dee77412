// Sensor layer seams: the NVML loader over a symbol table, RAPL over a fake sysfs tree,
// GPU selection (indices, UUIDs, CUDA_VISIBLE_DEVICES) on the simulated backend.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "jouleprof/sensors/gpu_sensor.hpp"
#include "jouleprof/sensors/rapl.hpp"
#include "nvml/nvml_api.hpp"

using namespace jouleprof;
namespace fs = std::filesystem;

namespace {
extern "C" nvmlReturn_t fake_init() { return 0; }
extern "C" nvmlReturn_t fake_count_v1(unsigned* n) {
  *n = 3;
  return 0;
}
}  // namespace

TEST(NvmlLoader, PrefersVersionedSymbolsAndListsMissingOnes) {
  std::map<std::string, void*> table = {{"nvmlInit", reinterpret_cast<void*>(&fake_init)},
                                        {"nvmlDeviceGetCount", reinterpret_cast<void*>(&fake_count_v1)}};
  nvml::SymbolResolver r;
  r.resolve = [&](const char* name) -> void* {
    auto it = table.find(name);
    return it == table.end() ? nullptr : it->second;
  };
  const nvml::Api api = nvml::load_api(r, "table");
  ASSERT_NE(api.Init, nullptr);  // fell back from nvmlInit_v2 to nvmlInit
  unsigned n = 0;
  ASSERT_NE(api.DeviceGetCount, nullptr);
  EXPECT_EQ(api.DeviceGetCount(&n), 0);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(api.DeviceGetSamples, nullptr);
  EXPECT_NE(std::find(api.missing.begin(), api.missing.end(), "nvmlDeviceGetSamples"), api.missing.end());
  EXPECT_EQ(std::find(api.missing.begin(), api.missing.end(), "nvmlInit_v2"), api.missing.end());
  // Without nvmlErrorString, errors still say something useful.
  EXPECT_EQ(nvml::describe(api, "nvmlX", 15), "nvmlX failed: unknown error (15)");
}

TEST(NvmlLoader, MissingLibraryIsUnavailable) {
  auto r = nvml::open_library("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::unavailable);
}

namespace {
fs::path make_rapl_tree() {
  const fs::path root = fs::temp_directory_path() / ("jp-rapl-" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto dom = [&](const fs::path& d, const std::string& name, uint64_t e, uint64_t max) {
    fs::create_directories(d);
    std::ofstream(d / "name") << name << "\n";
    std::ofstream(d / "energy_uj") << e << "\n";
    std::ofstream(d / "max_energy_range_uj") << max << "\n";
  };
  dom(root / "intel-rapl:0", "package-0", 999'000'000, 1'000'000'000);
  dom(root / "intel-rapl:0" / "intel-rapl:0:0", "core", 5, 1'000'000'000);
  dom(root / "intel-rapl:0" / "intel-rapl:0:1", "dram", 100, 1'000'000'000);
  return root;
}
}  // namespace

TEST(Rapl, ReadsPackageAndDramAndUnwrapsTheCounter) {
  const fs::path root = make_rapl_tree();
  auto r = Rapl::open(root.string());
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->domains().size(), 2u);  // package-0 and dram; core is inside the package
  EXPECT_EQ(r->domains()[0].name, "package-0");
  EXPECT_EQ(r->domains()[1].name, "dram-0:1");
  // The package counter wraps: 999 000 000 → 2 000 000 µJ with max 1 000 000 000.
  std::ofstream(root / "intel-rapl:0" / "energy_uj") << 2'000'000 << "\n";
  std::ofstream(root / "intel-rapl:0" / "intel-rapl:0:1" / "energy_uj") << 3'000'100 << "\n";
  auto e = r->read();
  ASSERT_TRUE(e);
  EXPECT_NEAR((*e)[0], 3.000001, 1e-9);  // 1 000 001 µJ to the wrap + 2 000 000 after
  EXPECT_NEAR((*e)[1], 3.0, 1e-9);
  fs::remove_all(root);
}

TEST(Rapl, AbsentIsUnavailableWithAReason) {
  auto r = Rapl::open("/nonexistent/powercap");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::unavailable);
  EXPECT_FALSE(r.error().message.empty());
}

namespace {
std::string scenario_file(const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("jp-sc-" + std::to_string(::getpid()) + ".txt");
  std::ofstream(p) << text;
  return p.string();
}
}  // namespace

TEST(GpuSelection, IndicesUuidsAndCudaVisibleDevices) {
  TimeBase tb;
  GpuSelection sel;
  sel.backend = "sim";
  sel.sim_scenario = scenario_file("gpus 4\n");
  auto all = open_gpus(sel, tb);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->gpus.size(), 4u);
  EXPECT_TRUE(all->simulated());

  sel.ids = {"2", "GPU-5151a000-0000-4000-8000-00000000000"};  // index and UUID prefix (GPU 0)
  auto two = open_gpus(sel, tb);
  ASSERT_TRUE(two) << two.error().message;
  ASSERT_EQ(two->gpus.size(), 2u);
  EXPECT_EQ(two->gpus[0]->info().index, 2);
  EXPECT_EQ(two->gpus[1]->info().index, 0);

  sel.ids.clear();
  sel.cuda_visible_devices = "3,1";
  auto cvd = open_gpus(sel, tb);
  ASSERT_TRUE(cvd);
  ASSERT_EQ(cvd->gpus.size(), 2u);
  EXPECT_EQ(cvd->gpus[0]->info().index, 3);

  sel.cuda_visible_devices = "";
  EXPECT_EQ(open_gpus(sel, tb).error().code, Errc::unavailable);
  sel.cuda_visible_devices = "MIG-1234";
  EXPECT_EQ(open_gpus(sel, tb).error().code, Errc::unsupported);
  sel.cuda_visible_devices.reset();
  sel.ids = {"9"};
  auto missing = open_gpus(sel, tb);
  ASSERT_FALSE(missing);
  // Its own kind (not 'unavailable': the driver is there), still exit 3 in the CLI.
  EXPECT_EQ(missing.error().code, Errc::not_present);
  EXPECT_EQ(exit_code_for(missing.error()), 3);
  EXPECT_NE(missing.error().message.find("GPU '9' not found"), std::string::npos);
  sel.backend = "cuda";
  EXPECT_EQ(open_gpus(sel, tb).error().code, Errc::invalid_argument);
  EXPECT_EQ(split_gpu_list(" 0, GPU-ab ,,1"), (std::vector<std::string>{"0", "GPU-ab", "1"}));
}

TEST(GpuSelection, NoDriverFallsBackToSimOnlyWhenAsked) {
  TimeBase tb;
  GpuSelection sel;
  sel.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  auto strict = open_gpus(sel, tb);
  ASSERT_FALSE(strict);
  EXPECT_EQ(strict.error().code, Errc::unavailable);
  EXPECT_NE(strict.error().message.find("--device sim"), std::string::npos);
  sel.fallback_to_sim = true;
  auto sim = open_gpus(sel, tb);
  ASSERT_TRUE(sim);
  EXPECT_TRUE(sim->simulated());
  EXPECT_NE(sim->note.find("simulated"), std::string::npos);
}

TEST(GpuSelection, SensorOfCudaDeviceByUuidElseOrdinal) {
  TimeBase tb;
  GpuSelection sel;
  sel.backend = "sim";
  sel.sim_scenario = scenario_file("gpus 3\n");
  auto set = open_gpus(sel, tb);
  ASSERT_TRUE(set) << set.error().message;
  const std::string uuid2 = set->gpus[2]->info().uuid;
  std::string warning;
  EXPECT_EQ(sensor_of_cuda_device(*set, 0, uuid2, warning), 2u);  // the UUID wins over the ordinal
  EXPECT_EQ(warning, "");
  EXPECT_EQ(sensor_of_cuda_device(*set, 1, "", warning), 1u);  // no UUID: the ordinal, nothing to say
  EXPECT_EQ(warning, "");
  EXPECT_EQ(sensor_of_cuda_device(*set, 7, "", warning), 0u);  // out of range: the first
  EXPECT_EQ(sensor_of_cuda_device(*set, 1, "GPU-ffffffff-0000-0000-0000-000000000000", warning), 1u);
  EXPECT_EQ(warning, "");  // the simulated GPUs' UUIDs are not CUDA's: no warning
  set->backend = "nvml";   // the same set as NVML's: a UUID no sensor has is said
  EXPECT_EQ(sensor_of_cuda_device(*set, 1, "GPU-ffffffff-0000-0000-0000-000000000000", warning), 1u);
  EXPECT_NE(warning.find("no power sensor has this CUDA device's UUID (GPU-ffffffff"), std::string::npos) << warning;
  EXPECT_NE(warning.find("the sensor of GPU 1 (" + set->gpus[1]->info().uuid + ")"), std::string::npos) << warning;
}
