// Activity metrics during a run — the power/run-time models' inputs (docs/models.md, issue 19):
// per time window, the fraction of time the SMs, tensor pipes, FP64/FP32/FP16 pipes and DRAM
// were busy. One source per GPU, the best available:
//   nvml-gpm          NVML GPU performance monitoring (Hopper and later; no DCGM needed)
//   nvml-utilization  nvmlDeviceGetUtilizationRates (kernel-running and memory-busy time): the
//                     fallback; it cannot tell a GEMM from a copy
//   sim-utilization   the simulated GPU's utilization (simulated)
// Each timeline says its source and, when a better one was not used, why.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/core/timebase.hpp"
#include "jouleprof/measure/result.hpp"
#include "jouleprof/sensors/gpu_sensor.hpp"

namespace jouleprof {

struct ActivityOptions {
  std::string source = "auto";  ///< auto | gpm | utilization
  double period_s = 0.5;        ///< window length (GPM needs >= 0.1 s)
  std::string nvml_library = "libnvidia-ml.so.1";
};

/// One GPU's activity: windows [t0_s, t1_s] on the run time base, a value per metric (0..1).
struct ActivityTimeline {
  int gpu = 0;  ///< index into the measurement's GPUs
  std::string source;
  std::string note;  ///< why a better source was not used ("" when none was wanted)
  std::vector<std::string> metrics;
  std::vector<double> t0_s, t1_s;
  std::vector<std::vector<double>> values;  ///< [window][metric]
  std::vector<std::string> errors;          ///< first read errors (bounded)
};

/// Samples activity on its own thread from start() until stop().
class ActivityRecorder {
 public:
  /// Chooses each GPU's source. Errors: an unknown source name, or `gpm` asked for and missing.
  static Result<std::unique_ptr<ActivityRecorder>> start(GpuSet& gpus, const TimeBase& tb, const ActivityOptions& o);
  virtual ~ActivityRecorder() = default;
  /// Stops the thread (idempotent) and returns the timelines.
  virtual std::vector<ActivityTimeline> stop() = 0;
};

inline constexpr const char* kActivitySchema = "jouleprof.activity/1";

/// The result's "activity" section (JSON text, "schema": kActivitySchema; `runs show` prints it): the timelines and, per measured run and GPU,
/// each metric's time-weighted mean over the run's window — what `model fit --db` reads.
std::string activity_section_json(const std::vector<ActivityTimeline>& timelines, const Measurement& m);

/// Time-weighted mean of each metric over [t0, t1] (windows overlapping it, weighted by the
/// overlap); empty when no window overlaps.
std::vector<double> activity_mean(const ActivityTimeline& t, double t0_s, double t1_s);

}  // namespace jouleprof
