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
#include "jouleprof/result/result.hpp"
#include "jouleprof/replay/kernel_table.hpp"

namespace jouleprof {

/// The "schema" of the replay result (the "replay" section of a stored replay session).
inline constexpr const char* kReplaySchema = "jouleprof.replay";

struct ReplayOptions {
  double coverage = 0.99;       ///< replay rows, longest first, until this share of GPU time is covered
  std::size_t max_rows = 150;   ///< ... or this many rows (the rest: extrapolated, listed)
  int trials = 5;               ///< trials per kernel (confidence interval)
  double trial_s = 0.2;         ///< seconds per trial (≥ 10 power-sample periods of ~20 ms)
  double settle_s = 0.4;        ///< before the trials of each kernel (sensor and power-management response)
  double warmup_s = 3;          ///< warm-up GEMM before the first kernel (stable temperature)
  double gap_s = 1;             ///< measuring the power of the GPU between kernels
  double gap_us = 0;            ///< ... as a tiny kernel every gap_us (0: the trace's mean gap, 10 µs – 1 ms)
  // Per-kernel repeatability: kernels ≥ ci_min_ns whose energy CI half-width exceeds ci_target
  // after the short trials are measured again in trials of long_trial_s, until the target or
  // max_trials or row_cap_s.
  double ci_target = 0.02;
  double ci_min_ns = 10e3;
  double long_trial_s = 1.0;
  int max_trials = 8;
  double row_cap_s = 10;
  // The context replay: this many activities of the busiest device, in `context_windows` evenly
  // spread windows, re-created in trace order with the traced gaps (one CUDA graph).
  std::size_t context_activities = 4000;
  int context_windows = 4;
  double context_trial_s = 1.0;
  int context_trials = 8;  // BLOOM on the H100: 3 left the prediction at ±3.7%, 8 at ±0.9% (docs/validation/replay.md)
};

/// The plan for jouleprof-replay (JSON): one item per replayed row, and why the others are not.
std::string replay_plan_json(const KernelTable& t, const ReplayOptions& o);

struct RowPrediction {
  std::string status;       ///< replayed | with_row | extrapolated
  std::string reason;       ///< why not replayed (cutoff, skipped by the engine ...)
  int with_row = -1;        ///< GEMM rows of one op call: the row whose replay includes this one
  double time_ns = 0;       ///< per call as predicted (the replay's for faithful rows; else the traced mean)
  double time_half_width_ns = 0;
  double power_w = 0;
  double energy_j = 0;      ///< per call
  double energy_half_width_j = 0;
  double traced_ns = 0;     ///< traced mean per call
  bool time_off = false;    ///< replayed time more than 10% from the traced time
  /// The replay is a proxy, not the traced operation (memory-bound stand-ins, unfused attention,
  /// time-matched proxies): counted with its replayed time and energy like every replayed row.
  bool proxy = false;
  /// A time-matched proxy (no shapes: tuned until its time matched the traced mean): its time is the trace's.
  bool time_matched = false;
  double replayed_time_ns = 0, replayed_energy_j = 0;  ///< the engine's own per-call figures
  /// Per call, what the engine ran: its own figures where replayed, else the prediction's.
  double engine_time_ns() const { return status == "replayed" ? replayed_time_ns : time_ns; }
  double engine_energy_j() const { return status == "replayed" ? replayed_energy_j : energy_j; }
  std::vector<double> trial_power_w, trial_time_ns;  ///< the engine's trials
};

struct TierPrediction {
  std::string tier;
  uint64_t count = 0;
  int rows = 0, replayed = 0, extrapolated = 0;
  double traced_s = 0, predicted_s = 0, energy_j = 0;
  double replayed_s = 0;               ///< diagnostic: Σ count × the engine's own time (stand-ins' too)
  double energy_at_traced_time_j = 0;  ///< diagnostic: replayed power × traced time
};

/// The context replay (the trace's own kernel sequence with its gaps, one CUDA graph): what it
/// drew beyond the same kernels measured in isolation is the power of the gaps between them.
struct ContextFigures {
  bool measured = false;
  std::string reason;                  ///< why there is no in-context gap power
  std::size_t activities = 0, stand_ins = 0;
  double traced_span_s = 0;            ///< the windows' traced span
  double pass_time_s = 0;              ///< one pass of the sequence, replayed
  double pass_energy_j = 0, pass_energy_half_width_j = 0;
  double isolated_time_s = 0, isolated_energy_j = 0;  ///< Σ per-call isolated figures of its activities
  double gap_time_s = 0, gap_power_w = 0;             ///< (pass − isolated) time, and energy / time
  double gap_power_half_width_w = 0;  ///< from the pass's and its rows' 95% half-widths (independent terms)
  double temperature_c = 0;
};

/// Predicted vs measured for one phase (the trace's record_function ranges of that name; the
/// measured run's marker windows of that name).
struct PhasePrediction {
  std::string name;
  std::size_t ranges = 0;
  uint64_t activities = 0;
  double traced_time_s = 0, traced_gpu_s = 0, gap_time_s = 0;
  double predicted_time_s = 0, predicted_energy_j = 0, kernel_energy_j = 0, gap_energy_j = 0;
  std::optional<double> measured_time_s, measured_energy_j;
  double measured_uncertainty_j = 0;  ///< the windows' own bounds, summed (`jouleprof measure`)
};

/// One part of a prediction: rows of one kind (or the gaps), their energy and time.
struct PredictionPart {
  double energy_j = 0, time_s = 0;
  std::size_t rows = 0;
};

struct PredictionParts {
  PredictionPart faithful;      ///< GEMMs with their shapes, copies: the same operation replayed
  PredictionPart stand_in;      ///< memory-bound stand-ins, unfused attention: their replayed time and energy
  PredictionPart time_matched;  ///< time-matched proxies: the traced time (not predicted)
  PredictionPart extrapolated;  ///< not replayed: the traced time at their tier's power
  PredictionPart gaps;
};

struct ReplayPrediction {
  PredictionParts parts;
  std::string gpu;
  std::string gpu_uuid;  ///< the measuring sensor's board (engine's sensor_gpu_uuid): `trace --replay` marks another board
  std::vector<RowPrediction> rows;  ///< by the table's row index
  std::vector<TierPrediction> tiers;
  double idle_w = 0, gap_w = 0;      ///< gap_w: the power the gaps are predicted at (in context when measured)
  double isolated_gap_w = 0;          ///< the gaps' power around a tiny kernel (no neighbours)
  ContextFigures context;
  std::vector<PhasePrediction> phases;
  double traced_time_s = 0, traced_gpu_s = 0, gap_time_s = 0;
  double predicted_gpu_s = 0, predicted_time_s = 0;
  double kernel_energy_j = 0, gap_energy_j = 0, predicted_energy_j = 0;
  /// The prediction's own 95% half-width: the rows' per-call half-widths × counts and the gaps'
  /// power half-width × gap time, in quadrature (extrapolated rows add none: not measured).
  double predicted_energy_half_width_j = 0;
  std::string warmup_note;
  std::vector<std::string> warnings;
  // The comparison (compare_with_measurement).
  std::string measured_run, measured_window;
  std::optional<double> measured_energy_j, measured_time_s;
  double measured_uncertainty_j = 0;  ///< the window's own bound (`jouleprof measure`: counter resolution, timeline edges)
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

/// Per-phase predictions: for each name, the trace's annotation ranges of that name (an activity
/// belongs to the range its start falls in: end each range with a synchronize, as the marker
/// windows are) — their span, the predicted time and energy of the activities in them and of
/// their gaps. Names without a range are reported in `missing`.
void predict_phases(const KernelTable& t, ReplayPrediction& p, const std::vector<std::string>& names, std::vector<std::string>& missing);

/// The measured run's windows of each phase's name (summed) next to the phase prediction.
void compare_phases(ReplayPrediction& p, const Measurement& m);

/// Names that are both an annotation of the trace and a window of the measured run (except `skip`).
std::vector<std::string> common_phase_names(const KernelTable& t, const Measurement& m, const std::string& skip);

/// {schema "jouleprof.replay", schema_version, trace totals, prediction, tiers, kernels, comparison}
std::string replay_json(const KernelTable& t, const ReplayPrediction& p);
std::string replay_text(const KernelTable& t, const ReplayPrediction& p, std::size_t top);
/// Per-kernel rows as CSV.
std::string replay_csv(const KernelTable& t, const ReplayPrediction& p);

}  // namespace jouleprof
