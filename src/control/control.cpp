// What the control backends share: permission wording, setting validation, GPU selection.
#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <set>

#include "control_backends.hpp"
#include "jouleprof/sensors/gpu_sensor.hpp"

namespace jouleprof::control {

std::vector<unsigned> GpuCapabilities::all_gpu_clocks() const {
  std::set<unsigned, std::greater<>> all;
  for (const auto& [m, list] : gpu_clocks_mhz) all.insert(list.begin(), list.end());
  return {all.begin(), all.end()};
}

std::string permission_problem(unsigned euid, unsigned long long cap_effective, bool api_restricted) {
  constexpr unsigned long long kCapSysAdmin = 1ULL << 21;
  const bool admin = euid == 0 || (cap_effective & kCapSysAdmin) != 0;
  if (admin) return "";
  std::string s = fmt::format(
      "changing GPU clocks and power limits needs root or CAP_SYS_ADMIN (this process runs as uid {} without "
      "CAP_SYS_ADMIN)",
      euid);
  if (api_restricted) {
    s += "; the administrator has also restricted application clocks to root (nvidia-smi -acp RESTRICTED)";
  }
  return s + "; use --observe-only to run the same schedule without changing anything";
}

namespace {

std::string nearest_text(const std::vector<unsigned>& list, unsigned want) {
  if (list.empty()) return "the GPU reports no supported clocks";
  unsigned below = 0, above = 0;
  for (unsigned f : list) {
    if (f < want && f > below) below = f;
    if (f > want && (above == 0 || f < above)) above = f;
  }
  if (below != 0 && above != 0) return fmt::format("nearest: {} or {} MHz", below, above);
  return fmt::format("nearest: {} MHz", below != 0 ? below : above);
}

}  // namespace

Result<void> validate_setting(const GpuCapabilities& caps, const Setting& s) {
  const std::string gpu = fmt::format("GPU {} ({})", caps.index, caps.name);
  if (s.mem_clock_mhz) {
    const auto& m = caps.mem_clocks_mhz;
    if (std::find(m.begin(), m.end(), *s.mem_clock_mhz) == m.end()) {
      return make_error(Errc::invalid_argument, fmt::format("memory clock {} MHz is not supported by {}; {}",
                                                            *s.mem_clock_mhz, gpu, nearest_text(m, *s.mem_clock_mhz)));
    }
    if (!caps.mem_locked_clocks) {
      return make_error(Errc::unsupported, gpu + " cannot lock memory clocks (nvmlDeviceSetMemoryLockedClocks missing)");
    }
  }
  if (s.gpu_clock_mhz) {
    std::vector<unsigned> list;
    if (s.mem_clock_mhz && caps.gpu_clocks_mhz.count(*s.mem_clock_mhz) != 0) {
      list = caps.gpu_clocks_mhz.at(*s.mem_clock_mhz);
    } else {
      list = caps.all_gpu_clocks();
    }
    if (std::find(list.begin(), list.end(), *s.gpu_clock_mhz) == list.end()) {
      return make_error(Errc::invalid_argument, fmt::format("clock {} MHz is not supported by {}; {}", *s.gpu_clock_mhz,
                                                            gpu, nearest_text(list, *s.gpu_clock_mhz)));
    }
    if (!caps.locked_clocks && !caps.app_clocks) {
      return make_error(Errc::unsupported, gpu + " offers neither locked nor application clocks");
    }
  }
  if (s.power_limit_w) {
    if (!caps.power_limit) return make_error(Errc::unsupported, gpu + " does not let its power limit be set");
    const unsigned mw = *s.power_limit_w * 1000U;
    if (mw < *caps.power_limit_min_mw || mw > *caps.power_limit_max_mw) {
      return make_error(Errc::invalid_argument,
                        fmt::format("power limit {} W is outside {}'s range {}–{} W", *s.power_limit_w, gpu,
                                    *caps.power_limit_min_mw / 1000, *caps.power_limit_max_mw / 1000));
    }
  }
  return {};
}

Result<std::vector<GpuCapabilities>> select_gpus(const std::vector<GpuCapabilities>& all,
                                                 const std::vector<std::string>& ids) {
  if (ids.empty() || (ids.size() == 1 && ids.front() == "all")) return all;
  std::vector<PresentGpu> present;
  for (const auto& c : all) present.push_back({static_cast<unsigned>(c.index), c.uuid});
  auto chosen = select_gpu_indices(ids, present);
  if (!chosen) return chosen.error();
  std::vector<GpuCapabilities> out;
  for (unsigned index : *chosen) {
    out.push_back(*std::find_if(all.begin(), all.end(), [&](const GpuCapabilities& c) { return static_cast<unsigned>(c.index) == index; }));
  }
  return out;
}

Result<std::unique_ptr<ControlBackend>> open_backend(const std::string& backend, const std::string& nvml_library,
                                                      const std::string& sim_scenario) {
  if (backend == "sim") return open_sim_control(sim_scenario);
  if (backend == "nvml" || backend == "auto") return open_nvml_control(nvml_library);
  return make_error(Errc::invalid_argument, "unknown device backend '" + backend + "' (auto, nvml, sim)");
}

}  // namespace jouleprof::control
