// Replay-informed attribution's input: the unique kernels of a run replayed in isolation
// (`jouleprof replay` output, or rows of the same format from the exact in-process replay), read
// from their JSON, matched to the run's kernels by name and launch configuration, and checked
// against the run's GPU (docs/trace.md, "Replay-informed attribution").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace jouleprof {

struct ReplayKernel {
  std::string name;
  std::optional<std::array<int, 3>> grid, block;  ///< absent: the row matches the name with any configuration
  std::string status;              ///< replayed | exact | with_row | extrapolated: only measured rows are used
  double energy_per_call_j = 0;    ///< total (with the GPU's idle power), per call
  double half_width_j = 0;         ///< its 95% half-width
  double time_per_call_s = 0;
  uint64_t count = 0;
  bool measured() const { return status == "replayed" || status == "exact"; }
};

struct ReplayReference {
  std::string source;  ///< file or run it came from
  std::string gpu;     ///< the GPU it ran on (device name)
  std::string gpu_uuid;  ///< the board it ran on (exact replays carry it): another board of the model is marked
  std::string driver;  ///< driver version, where the rows carry it
  std::optional<double> sm_clock_mhz;  ///< the SM clock it ran at, where the rows carry it
  double idle_w = 0;   ///< the replay's idle power: subtracted from each call's energy
  std::vector<ReplayKernel> kernels;
};

/// The replay's rows from `jouleprof replay --json` output (a result with a "replay" section) or
/// the section itself (schema jouleprof.replay). Bad input: Errc::parse with the reason.
Result<ReplayReference> parse_replay_reference(const std::string& json_text, const std::string& source);

/// The measured row for a kernel of the run: the row of the same name and launch configuration,
/// else the only measured row of that name without one (several: their count-weighted mean);
/// nullopt where the replay has none. Energy per call above the replay's idle, and its half-width.
struct ReplayMatch {
  double above_idle_j = 0, half_width_j = 0;
};
std::optional<ReplayMatch> match_replay(const ReplayReference& r, const std::string& name, const int grid[3], const int block[3]);

}  // namespace jouleprof
