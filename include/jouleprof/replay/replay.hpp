// `jouleprof replay`: the replay plan of a kernel table (which rows the engine re-creates, how),
// the prediction of the traced run's time and energy from the engine's per-kernel measurements
// (Σ count × per-call figures + the gaps' time at the GPU's clocked-up idle power), and its
// comparison with a measured run of the same work (docs/replay.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/measure/result.hpp"
#include "jouleprof/replay/kernel_table.hpp"

namespace jouleprof {

struct ReplayOptions {
  double coverage = 0.99;       ///< replay rows, longest first, until this share of GPU time is covered
  std::size_t max_rows = 150;   ///< ... or this many rows (the rest: extrapolated, listed)
  int trials = 5;               ///< trials per kernel (confidence interval)
  double trial_s = 0.2;         ///< seconds per trial (≥ 10 power-sample periods of ~20 ms)
  double settle_s = 0.4;        ///< before the trials of each kernel (sensor and power-management response)
  double warmup_s = 3;          ///< warm-up GEMM before the first kernel (stable temperature)
  double gap_s = 1;             ///< measuring the power of the GPU between kernels
  double gap_us = 0;            ///< ... as a tiny kernel every gap_us (0: the trace's mean gap, 10 µs – 1 ms)
};

/// The plan for jouleprof-replay (JSON): one item per replayed row, and why the others are not.
std::string replay_plan_json(const KernelTable& t, const ReplayOptions& o);

struct RowPrediction {
  std::string status;       ///< replayed | with_row | extrapolated
  std::string reason;       ///< why not replayed (cutoff, skipped by the engine ...)
  int with_row = -1;        ///< GEMM rows of one op call: the row whose replay includes this one
  double time_ns = 0;       ///< per call (replayed; else the traced mean)
  double time_half_width_ns = 0;
  double power_w = 0;
  double energy_j = 0;      ///< per call
  double energy_half_width_j = 0;
  double traced_ns = 0;     ///< traced mean per call
  bool time_off = false;    ///< replayed time more than 10% from the traced time
  std::vector<double> trial_power_w, trial_time_ns;  ///< the engine's trials
};

struct TierPrediction {
  std::string tier;
  uint64_t count = 0;
  int rows = 0, replayed = 0, extrapolated = 0;
  double traced_s = 0, predicted_s = 0, energy_j = 0;
  double energy_at_traced_time_j = 0;  ///< diagnostic: replayed power × traced time
};

struct ReplayPrediction {
  std::string gpu;
  std::vector<RowPrediction> rows;  ///< by the table's row index
  std::vector<TierPrediction> tiers;
  double idle_w = 0, gap_w = 0;
  double traced_time_s = 0, traced_gpu_s = 0, gap_time_s = 0;
  double predicted_gpu_s = 0, predicted_time_s = 0;
  double kernel_energy_j = 0, gap_energy_j = 0, predicted_energy_j = 0;
  std::string warmup_note;
  std::vector<std::string> warnings;
  // The comparison (compare_with_measurement).
  std::string measured_run, measured_window;
  std::optional<double> measured_energy_j, measured_time_s;
  std::optional<double> energy_error() const {
    return measured_energy_j && *measured_energy_j > 0 ? std::optional<double>(predicted_energy_j / *measured_energy_j - 1) : std::nullopt;
  }
  std::optional<double> time_error() const {
    return measured_time_s && *measured_time_s > 0 ? std::optional<double>(predicted_time_s / *measured_time_s - 1) : std::nullopt;
  }
};

/// The prediction from the engine's output (jouleprof-replay's JSON) for the table it was planned from.
Result<ReplayPrediction> predict_from_replay(const KernelTable& t, const std::string& measurements_json);

/// Compares with a measured run: its window `window` (e.g. "work", bracketing the traced work).
Result<void> compare_with_measurement(ReplayPrediction& p, const Measurement& m, const std::string& label, const std::string& window);

/// {schema "jouleprof.replay", schema_version, trace totals, prediction, tiers, kernels, comparison}
std::string replay_json(const KernelTable& t, const ReplayPrediction& p);
std::string replay_text(const KernelTable& t, const ReplayPrediction& p, std::size_t top);
/// Per-kernel rows as CSV.
std::string replay_csv(const KernelTable& t, const ReplayPrediction& p);

}  // namespace jouleprof
