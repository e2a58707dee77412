// Chrome trace-event JSON (opens in ui.perfetto.dev and chrome://tracing): counter tracks for
// every sampled metric per GPU, CPU power (from RAPL energy) and meter power; complete-event
// slices for windows (idle, runs, phases). Timestamps are microseconds on the run time base;
// "otherData" holds the wall-clock origin (docs/report.md, "Perfetto").
#pragma once

#include <cstddef>
#include <string>

#include "jouleprof/core/error.hpp"
#include "jouleprof/measure/result.hpp"

namespace jouleprof {

struct TraceOptions {
  std::size_t max_points = 0;  ///< per counter track, min/max downsampled; 0: every sample
  std::string label;           ///< shown in the process names (e.g. "run 12")
};

std::string chrome_trace_json(const Measurement& m, const TraceOptions& o = {});
Result<void> write_chrome_trace(const Measurement& m, const std::string& path, const TraceOptions& o = {});

}  // namespace jouleprof
