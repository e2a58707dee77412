// Calibration of a target's model parameters from measurements, and validation (measured vs
// estimated, MAPE on a held-out set). Measurement sets are JSON files written by
// workloads/microbench/merge_calib.py from `jouleprof measure` runs (docs/estimate.md).
#pragma once

#include <string>
#include <vector>

#include "jouleprof/estimate/builders.hpp"
#include "jouleprof/estimate/estimate.hpp"

namespace jouleprof::estimate {

struct MeasuredItem {
  std::string name, split, model;  ///< split: "train" (fitted), "test" or another held-out set ("blind")
  ModelOptions options;
  bool eager = true;
  double latency_s = 0, energy_j = 0;
  double clock_mhz = 0;  ///< SM clock seen at the end of the measurement (0: unknown)
};

struct MeasurementSet {
  std::string hw_id, file, provenance;
  double idle_w = 0;
  std::vector<MeasuredItem> items;
};

Result<MeasurementSet> load_measurements(const std::string& path);

struct ValidationRow {
  std::string name, split;
  double meas_latency_s = 0, meas_energy_j = 0;
  double pred_latency_s = 0, pred_energy_j = 0;
  double latency_err_pct() const { return 100 * (pred_latency_s - meas_latency_s) / meas_latency_s; }
  double energy_err_pct() const { return 100 * (pred_energy_j - meas_energy_j) / meas_energy_j; }
};

/// Predicts every item (cal may be null: uncalibrated).
Result<std::vector<ValidationRow>> predict_items(const MeasurementSet& m, const HardwareSpec& hw, const Calibration* cal);

struct Mape {
  double latency_pct = 0, energy_pct = 0;
  std::size_t n = 0;
};
Mape mape(const std::vector<ValidationRow>& rows, const std::string& split);

/// Fits efficiencies, dispatch overheads, energy multipliers and active static power on the
/// "train" items; records MAPE before/after on train and test in the result's stats.
Result<Calibration> fit_calibration(const MeasurementSet& m, const HardwareSpec& hw);

/// Text table of measured vs estimated (before and after calibration) with MAPE lines.
std::string render_validation(const std::vector<ValidationRow>& before, const std::vector<ValidationRow>& after);

}  // namespace jouleprof::estimate
