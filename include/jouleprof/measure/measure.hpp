// `jouleprof measure`: idle baseline, warm-up and measured runs of a command (or the built-in
// workload), phases from the marker FIFO, optional cool-down, statistics over repeats.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jouleprof/activity/activity.hpp"
#include "jouleprof/result/result.hpp"
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
  bool cooldown_first = false;  ///< also before the first run (a sweep cools down between points)
  std::vector<std::string> env;  ///< extra KEY=VALUE entries for the workload (sweep parameters; trace: CUDA_INJECTION64_PATH ...)
  double cooldown_tolerance_c = 1.0;  ///< temperature range over the last 5 s to call it stable
  double cooldown_max_s = 120;
  double ci_warn_relative = 0.05;
  double sim_active_w = 450;  ///< simulated GPU power while an external command runs
  MonitorOptions monitor;
  std::optional<std::string> meter_csv;
  MeterCsvOptions meter;
  std::map<std::string, std::string> tags;
  std::vector<std::string> invocation;  ///< jouleprof's own command line, for provenance
  std::function<void(const std::string&)> progress;  ///< one line per event (stderr)
  /// Show "run i/N · elapsed · ETA · last: E J" and the cool-down's temperature on stderr
  /// (core/progress.hpp); the CLI sets it when stderr is a terminal or --progress is given.
  bool show_progress = false;
  /// Activity metrics (`--metrics`): sampled during the whole measurement into the result's
  /// "activity" section (jouleprof/activity/activity.hpp).
  std::optional<ActivityOptions> activity;
};

/// Runs the whole measurement. Errors are returned only for failures before anything was
/// measured (no GPU, command not found ...); later faults give an incomplete result.
Result<Measurement> run_measure(const MeasureOptions& opt);

/// Sets the monitor's idle baseline from a closed idle window (kind "idle"): per GPU, the mean
/// power of its second half; a warning when the first half differs (the GPU had not settled).
/// The one function for every caller (`measure`, `bench llm`, the Python package); `when` ends
/// the recorded source ("second half of a 2.0 s idle window <when>"). In src/measure/idle.cpp.
void set_idle_baseline(Monitor& mon, Monitor::WindowId idle_window, std::vector<std::string>& warnings,
                       std::string_view when = "before the runs");

/// Adds a warning for each phase/window shorter than the energy counter's update period,
/// naming the method its energy came from and its uncertainty.
void warn_short_windows(Measurement& m, const EnergyOptions& energy);

/// Idle power per GPU from an earlier result JSON (the idle baseline it measured).
Result<std::vector<std::optional<double>>> idle_power_from_result(const std::string& path);

}  // namespace jouleprof
