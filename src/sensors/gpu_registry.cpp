// The GPU sensor backends by --device name (kGpuBackends): nvml (the driver) and sim (the
// simulated GPU). A new backend is one open function and one entry in the table.
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "jouleprof/sensors/gpu_sensor.hpp"
#include "jouleprof/sensors/sim_model.hpp"
#include "nvml/nvml_gpu.hpp"
#include "sim/sim_gpu.hpp"
#include "jouleprof/core/files.hpp"

namespace jouleprof {
namespace {

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 6 && s.find_first_not_of("0123456789") == std::string::npos;
}

// The ids to open: --gpus wins; else CUDA_VISIBLE_DEVICES (what the workload will see).
Result<std::vector<std::string>> requested_ids(const GpuSelection& sel) {
  if (!sel.ids.empty()) return sel.ids;
  if (!sel.cuda_visible_devices) return std::vector<std::string>{};
  std::vector<std::string> ids = split_gpu_list(*sel.cuda_visible_devices);
  // CUDA stops at the first invalid entry; "-1" or "" hide every GPU.
  if (ids.empty() || ids.front() == "-1") {
    return make_error(Errc::unavailable, "CUDA_VISIBLE_DEVICES='" + *sel.cuda_visible_devices +
                                           "' hides every GPU; unset it or pass --gpus");
  }
  return ids;
}

}  // namespace

Result<std::vector<unsigned>> select_gpu_indices(const std::vector<std::string>& ids,
                                                 const std::vector<PresentGpu>& present) {
  std::vector<unsigned> out;
  if (ids.empty()) {
    for (const auto& p : present) out.push_back(p.index);
    return out;
  }
  for (const std::string& id : ids) {
    if (id.rfind("MIG-", 0) == 0) {
      return make_error(Errc::unsupported, "GPU '" + id +
                                               "' is a MIG instance: energy is measured per "
                                               "physical GPU; pass its parent GPU");
    }
    bool found = false;
    for (const auto& p : present) {
      const bool match =
          is_index(id) ? std::stoul(id) == p.index
                       : (p.uuid.rfind(id, 0) == 0 || p.uuid.rfind("GPU-" + id, 0) == 0);
      if (match) {
        // One GPU named twice (0,0 or an index and its UUID) would be measured twice.
        for (std::size_t k = 0; k < out.size(); ++k) {
          if (out[k] == p.index) {
            return make_error(Errc::invalid_argument, "GPU " + std::to_string(p.index) + " is selected twice ('" +
                                                          ids[k] + "' and '" + id + "'); name each GPU once");
          }
        }
        out.push_back(p.index);
        found = true;
        break;
      }
    }
    if (!found) {
      std::string have;
      for (const auto& p : present) {
        have += (have.empty() ? "" : ", ") + std::to_string(p.index) + ": " + p.uuid;
      }
      return make_error(Errc::not_present,
                        "GPU '" + id + "' not found (present: " + (have.empty() ? "none" : have) + ")");
    }
  }
  return out;
}

namespace {

Result<GpuSet> open_sim(const GpuSelection& sel, const std::vector<std::string>& ids,
                        const TimeBase& tb) {
  SimConfig cfg;
  cfg.initial.high_w = cfg.idle_w;
  cfg.noise_w = 3;
  if (!sel.sim_scenario.empty()) {
    auto text = read_text_file(sel.sim_scenario);
    if (!text) return make_error(text.error().code, "simulated-GPU scenario: " + text.error().message);
    auto parsed = parse_sim_scenario(*text, cfg);
    if (!parsed) return make_error(Errc::parse, sel.sim_scenario + ": " + parsed.error().message);
    cfg = *parsed;
  }
  std::vector<PresentGpu> present;
  for (int i = 0; i < cfg.gpus; ++i) {
    present.push_back({static_cast<unsigned>(i), sim_gpu_uuid(i)});
  }
  auto which = select_gpu_indices(ids, present);
  if (!which) return which.error();
  GpuSet set;
  set.backend = "sim";
  for (unsigned i : *which) {
    auto model = std::make_shared<SimGpuModel>(cfg);
    model->set_control(sim_device_control(static_cast<int>(i)));
    set.sim_models.push_back(model);
    set.gpus.push_back(std::make_unique<SimGpu>(static_cast<int>(i), model, tb));
  }
  return set;
}

Result<GpuSet> open_nvml(const GpuSelection& sel, const std::vector<std::string>& ids, const TimeBase& tb) {
  auto ctx = nvml::Context::open(sel.nvml_library);
  if (!ctx) {
    if (sel.backend == "auto" && sel.fallback_to_sim) {
      auto set = open_sim(sel, ids, tb);
      if (set) set->note = "no NVIDIA GPU usable here (" + ctx.error().message + "); using the simulated GPU";
      return set;
    }
    return make_error(ctx.error().code, ctx.error().message + " (use --device sim for the simulated GPU)");
  }
  auto count = (*ctx)->device_count();
  if (!count) return count.error();
  std::vector<PresentGpu> present;
  std::vector<std::unique_ptr<nvml::NvmlGpu>> all;
  for (unsigned i = 0; i < *count; ++i) {
    nvmlDevice_t dev = nullptr;
    if ((*ctx)->api.DeviceGetHandleByIndex == nullptr ||
        (*ctx)->api.DeviceGetHandleByIndex(i, &dev) != nvml::kSuccess) {
      continue;
    }
    char uuid[96] = {0};
    if ((*ctx)->api.DeviceGetUUID != nullptr) (*ctx)->api.DeviceGetUUID(dev, uuid, sizeof(uuid));
    present.push_back({i, uuid});
  }
  if (present.empty()) return make_error(Errc::unavailable, "NVML reports no GPU on this machine");
  auto which = select_gpu_indices(ids, present);
  if (!which) return which.error();
  GpuSet set;
  set.backend = "nvml";
  for (unsigned i : *which) {
    auto gpu = nvml::open_device(*ctx, i, tb);
    if (!gpu) return gpu.error();
    set.gpus.push_back(std::move(*gpu));
  }
  return set;
}

// The backends: `auto` opens the first (the driver; without one it falls back to the simulated
// GPU where the caller allows).
struct GpuBackend {
  const char* name;
  Result<GpuSet> (*open)(const GpuSelection&, const std::vector<std::string>& ids, const TimeBase&);
};
constexpr GpuBackend kGpuBackends[] = {{"nvml", open_nvml}, {"sim", open_sim}};

}  // namespace

const std::vector<std::string>& gpu_backend_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v{"auto"};
    for (const GpuBackend& b : kGpuBackends) v.emplace_back(b.name);
    return v;
  }();
  return names;
}

void apply_gpu_environment(GpuSelection& sel, const std::string& nvml_flag) {
  if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES")) sel.cuda_visible_devices = cvd;
  if (!nvml_flag.empty()) {
    sel.nvml_library = nvml_flag;
  } else if (const char* lib = std::getenv("JOULEPROF_NVML_LIB"); lib != nullptr && *lib != '\0') {
    sel.nvml_library = lib;
  }
}

Result<GpuSet> open_gpus(const GpuSelection& sel, const TimeBase& tb) {
  auto ids = requested_ids(sel);
  if (!ids) return ids.error();
  const std::string name = sel.backend == "auto" ? kGpuBackends[0].name : sel.backend;
  std::string names = "auto";
  for (const GpuBackend& b : kGpuBackends) {
    if (name == b.name) return b.open(sel, *ids, tb);
    names += std::string(", ") + b.name;
  }
  return make_error(Errc::invalid_argument, "unknown device backend '" + sel.backend + "' (" + names + ")");
}

std::size_t sensor_of_cuda_device(const GpuSet& set, std::size_t index, const std::string& cuda_uuid, std::string& warning) {
  const std::size_t at = index < set.gpus.size() ? index : 0;
  if (cuda_uuid.empty()) return at;
  for (std::size_t i = 0; i < set.gpus.size(); ++i) {
    if (set.gpus[i]->info().uuid == cuda_uuid) return i;
  }
  if (!set.simulated()) {
    warning = fmt::format("no power sensor has this CUDA device's UUID ({}): the sensor of GPU {} ({}) is measured", cuda_uuid, at,
                          set.gpus.at(at)->info().uuid);
  }
  return at;
}

}  // namespace jouleprof
