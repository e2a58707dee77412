// The stages of build_trace_profile shared between its files (not a public header):
// attribution_profile.cpp (classify, per-GPU input, sensor fit, methods, the profile into the
// measurement) and attribution_tables.cpp (the tables); trace_sampled.cpp writes its profile
// through the same write_profile.
#pragma once

#include <string>
#include <vector>

#include "jouleprof/analysis/trace_profile.hpp"

namespace jouleprof::detail {

/// The phase of an activity: its own, its NVTX path's, else the measure phase window it starts in.
struct PhaseIndex {
  std::vector<const WindowResult*> windows;  ///< sorted by start
  std::string of(const Activity& a) const;
};

/// What the tables of one GPU are built from.
struct TableInput {
  const TraceData* trace = nullptr;
  const std::vector<std::size_t>* activities = nullptr;  ///< indices into trace->activities
  const std::vector<std::size_t>* activity_class = nullptr;  ///< class index per activity
  const std::vector<std::string>* classes = nullptr;
  const PhaseIndex* phases = nullptr;
  std::size_t path_depth = 0;
  double below_s = 0;  ///< busy time under which the sensor does not resolve a row
  double cap_w = 0;    ///< power limit - idle (0: none)
};

/// The GPU's tables from the methods' results (`table` indexes the one shown): by class from
/// every method, by kernel/path/layer/component/phase from the activity-level ones; each row with
/// its interval, rows below resolution summed into their class, layer or component. Adds the
/// table method's energy per activity to `row_energy` (the unique-kernel rows, by `row_of`).
void build_tables(GpuProfile& gp, const std::vector<Attribution>& results, std::size_t table, const TableInput& in,
                  const std::vector<std::size_t>& row_of, std::vector<double>& row_energy);

/// The profile into `m`: incomplete where the trace is, its "trace" section, its warnings
/// prefixed "trace: " (analyze_trace and analyze_placed_trace end with it).
void write_profile(Measurement& m, const TraceData& t, const TraceProfile& p);

}  // namespace jouleprof::detail
