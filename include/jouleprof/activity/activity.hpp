// Activity metrics during a run — the power/run-time models' inputs (docs/models.md, issue 19):
// per time window, the fraction of time the SMs, tensor pipes, FP64/FP32/FP16 pipes and DRAM
// were busy. One source per GPU, the best available (`auto`), or the one asked for:
//   dcgm              DCGM's profiling fields from a running host engine (libdcgm at run time)
//   nvml-gpm          NVML GPU performance monitoring (Hopper and later; no DCGM needed)
//   nvml-utilization  nvmlDeviceGetUtilizationRates (kernel-running and memory-busy time): the
//                     fallback; it cannot tell a GEMM from a copy
//   sim-utilization   the simulated GPU's utilization (simulated)
//   cupti-pm          CUPTI PM sampling of the GPU's counters (libcupti at run time); only when
//                     asked for: the counters are exclusive, a profiler cannot run beside it
// Each timeline says its source and, when a better one was not used, why.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/core/timebase.hpp"
#include "jouleprof/result/result.hpp"
#include "jouleprof/sensors/gpu_sensor.hpp"

namespace jouleprof {

struct ActivityOptions {
  ActivityOptions() = default;
  ActivityOptions(std::string src, double period, std::string nvml)
      : source(std::move(src)), period_s(period), nvml_library(std::move(nvml)) {}
  std::string source = "auto";  ///< auto | dcgm | gpm | utilization | cupti-pm
  double period_s = 0.5;        ///< window length (GPM needs >= 0.1 s)
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string cupti_library, cuda_library;  ///< cupti-pm; empty: $JOULEPROF_CUPTI_LIB / $JOULEPROF_CUDA_LIB, else the sonames
  std::string dcgm_library, dcgm_host;      ///< dcgm; empty: $JOULEPROF_DCGM_LIB / $JOULEPROF_DCGM_HOST, else libdcgm.so.4, 127.0.0.1
};

/// The --metrics-source names, `auto` first.
const std::vector<std::string>& activity_source_names();

/// One GPU's activity: windows [t0_s, t1_s] on the run time base, a value per metric (0..1).
struct ActivityTimeline {
  int gpu = 0;  ///< index into the measurement's GPUs
  std::string source;
  std::string note;  ///< why a better source was not used, or which metrics the source could not give ("" when none)
  std::vector<std::string> metrics;
  std::vector<std::string> definitions;  ///< per metric, how the source obtains it (empty when the name says it)
  std::vector<double> t0_s, t1_s;
  std::vector<std::vector<double>> values;  ///< [window][metric]
  std::vector<std::string> errors;          ///< first read errors (bounded)
};

/// Samples activity on its own thread from start() until stop().
class ActivityRecorder {
 public:
  /// Chooses each GPU's source. Errors: an unknown source name, or a named source (gpm, dcgm,
  /// cupti-pm) that this GPU, driver or machine lacks (Errc::unavailable, with the reason).
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
