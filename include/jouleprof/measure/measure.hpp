// `jouleprof measure`: idle baseline, warm-up and measured runs of a command (or the built-in
// workload), phases from the marker FIFO, optional cool-down, statistics over repeats.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/measure/result.hpp"
#include "jouleprof/sampler/monitor.hpp"
#include "jouleprof/sensors/meter_csv.hpp"

namespace jouleprof {

struct MeasureOptions {
  std::vector<std::string> command;  ///< empty: the built-in workload
  std::vector<std::string> builtin_command;  ///< how to run the built-in GPU workload (nvml backend)
  int warmup = 0;
  int runs = 1;
  double idle_s = 2.0;                        ///< idle baseline before the runs (0: none)
  std::vector<std::optional<double>> idle_w;  ///< taken from an earlier result instead
  std::string idle_source;
  bool cooldown = false;
  double cooldown_tolerance_c = 1.0;  ///< temperature range over the last 5 s to call it stable
  double cooldown_max_s = 120;
  double ci_warn_relative = 0.05;
  double sim_active_w = 450;  ///< simulated GPU power while an external command runs
  MonitorOptions monitor;
  std::optional<std::string> meter_csv;
  MeterCsvOptions meter;
  std::map<std::string, std::string> tags;
  std::vector<std::string> extra_env;  ///< "K=V" entries added to the workload's environment (trace: CUDA_INJECTION64_PATH ...)
  std::vector<std::string> invocation;  ///< jouleprof's own command line, for provenance
  std::function<void(const std::string&)> progress;  ///< one line per event (stderr)
};

/// Runs the whole measurement. Errors are returned only for failures before anything was
/// measured (no GPU, command not found ...); later faults give an incomplete result.
Result<Measurement> run_measure(const MeasureOptions& opt);

/// Idle power per GPU from an earlier result JSON (the idle baseline it measured).
Result<std::vector<std::optional<double>>> idle_power_from_result(const std::string& path);

}  // namespace jouleprof
