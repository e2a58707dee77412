// Clock and power-limit control of GPUs: one backend interface, two strategies (nvml: the driver,
// loaded at run time; sim: the in-process simulated GPU). Used only through ControlSession
// (session.hpp), which journals the original state before any change and always restores it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace jouleprof::control {

struct ClockRange {
  unsigned min_mhz = 0, max_mhz = 0;
  bool operator==(const ClockRange&) const = default;
};

/// A GPU's settings that a sweep may change, as far as the driver lets them be read. This is
/// what the journal keeps and what restore puts back.
struct GpuControlState {
  /// Locked graphics / memory clocks. NVML offers no getter for them: nullopt means "not
  /// locked" (the state a GPU has unless an administrator locked it; see docs/sweep.md).
  std::optional<ClockRange> gpu_locked, mem_locked;
  /// Application clocks; nullopt where the driver no longer offers them (deprecated).
  std::optional<unsigned> app_gpu_mhz, app_mem_mhz;
  std::optional<unsigned> power_limit_mw;
  std::optional<bool> persistence;  ///< recorded, never changed
  bool operator==(const GpuControlState&) const = default;
};

/// What a GPU supports, discovered from the driver (never hard-coded).
struct GpuCapabilities {
  int index = 0;
  std::string uuid, name;
  std::vector<unsigned> mem_clocks_mhz;                         ///< highest first
  std::map<unsigned, std::vector<unsigned>> gpu_clocks_mhz;     ///< by memory clock, highest first
  std::optional<unsigned> power_limit_min_mw, power_limit_max_mw, power_limit_default_mw;
  bool locked_clocks = false;      ///< SetGpuLockedClocks present
  bool mem_locked_clocks = false;  ///< SetMemoryLockedClocks present
  bool app_clocks = false;         ///< application clocks readable (not deprecated away)
  bool power_limit = false;        ///< SetPowerManagementLimit present
  /// Every graphics clock supported at any memory clock, highest first.
  std::vector<unsigned> all_gpu_clocks() const;
};

/// One point's settings (unset: left as the GPU has it).
struct Setting {
  std::optional<unsigned> gpu_clock_mhz, mem_clock_mhz;
  std::optional<unsigned> power_limit_w;
  bool empty() const { return !gpu_clock_mhz && !mem_clock_mhz && !power_limit_w; }
};

/// Why settings cannot be changed here, in words, or empty when nothing is missing.
/// `euid` and `cap_effective` (the CapEff mask of /proc/self/status) are seams for tests.
std::string permission_problem(unsigned euid, unsigned long long cap_effective, bool api_restricted);

class ControlBackend {
 public:
  virtual ~ControlBackend() = default;
  virtual std::string name() const = 0;  ///< "nvml" or "sim"
  /// The library the backend drives (NVML's path; empty for sim). Journals record it.
  virtual std::string library() const = 0;
  /// True when settings outlive this process (real GPU): a journal is then required.
  virtual bool durable() const = 0;
  /// GPUs by index or UUID (prefixes allowed); empty: all.
  virtual Result<std::vector<GpuCapabilities>> discover(const std::vector<std::string>& ids) = 0;
  virtual Result<GpuControlState> read_state(const std::string& uuid) = 0;
  /// Empty when settings can be changed; else what is missing (root, CAP_SYS_ADMIN, restriction).
  virtual std::string permission(const std::string& uuid) = 0;
  virtual Result<void> apply(const std::string& uuid, const Setting& s) = 0;
  /// Puts every setting of `original` back (idempotent: safe to repeat after a crash).
  virtual Result<void> restore(const std::string& uuid, const GpuControlState& original) = 0;
  /// Clocks the GPU reports now (graphics, memory), for the record of a point.
  virtual Result<std::pair<unsigned, unsigned>> current_clocks(const std::string& uuid) = 0;
};

/// Opens a backend: "nvml" (library path, e.g. libnvidia-ml.so.1) or "sim" (scenario file).
Result<std::unique_ptr<ControlBackend>> open_backend(const std::string& backend, const std::string& nvml_library,
                                                      const std::string& sim_scenario = "");

/// Checks a setting against a GPU's capabilities: a clock not supported names the nearest
/// ones, a power limit outside the constraints names the range.
Result<void> validate_setting(const GpuCapabilities& caps, const Setting& s);

}  // namespace jouleprof::control
