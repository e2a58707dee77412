// Chrome trace-event JSON (opens in ui.perfetto.dev and chrome://tracing): counter tracks for
// every sampled metric per GPU, CPU power (from RAPL energy) and meter power; complete-event
// slices for windows (idle, runs, phases). Timestamps are microseconds on the run time base;
// "otherData" holds the wall-clock origin (docs/report.md, "Perfetto").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/result/result.hpp"

namespace jouleprof {

/// A slice on a named track (kernel on a GPU stream, NVTX range on a CPU thread): `jouleprof trace`.
struct TraceSlice {
  int gpu = -1;        ///< index into Measurement::gpus; -1: the "NVTX ranges" process
  std::string track;   ///< e.g. "stream 7", "pid 123 thread 456"
  std::string name;
  double t0_s = 0, t1_s = 0;
  std::string args_json;  ///< a JSON object's text, or empty
};

struct TraceOptions {
  std::size_t max_points = 0;  ///< per counter track, min/max downsampled; 0: every sample
  std::string label;           ///< shown in the process names (e.g. "run 12")
  const std::vector<TraceSlice>* slices = nullptr;  ///< kernel/range slices (trace)
};

struct TraceData;

/// The slices of a placed trace `t` of measurement `m`: kernels and copies on a track per process
/// and stream of their measured GPU, NVTX ranges on a track per process and thread (`jouleprof
/// trace --perfetto`, `trace --from`); syncs and marks are left out.
std::vector<TraceSlice> trace_slices(const Measurement& m, const TraceData& t);

std::string chrome_trace_json(const Measurement& m, const TraceOptions& o = {});
Result<void> write_chrome_trace(const Measurement& m, const std::string& path, const TraceOptions& o = {});

}  // namespace jouleprof
