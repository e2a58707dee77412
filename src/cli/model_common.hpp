// Flags shared by `jouleprof model` and `jouleprof optimize`: the CSV column mapping, probes,
// outputs.
#pragma once

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "options.hpp"
#include "jouleprof/models/dataset.hpp"
#include "jouleprof/models/model.hpp"

namespace jouleprof::cli {

struct DataFlags {
  std::string data;
  models::ColumnMap map;
  models::ProbeOptions probe;
  std::string gpu;
  bool no_outliers = false;
  double outlier_power_tol = 0.15;

  void add(CLI::App* c, bool probes) {
    c->add_option("--data", data, "CSV file: one row per (application, clock[, repeat]) (docs/models.md)")->required();
    c->add_option("--app-col", map.application, "column naming the application")->capture_default_str();
    c->add_option("--clock-col", map.clock, "column with the SM clock (MHz)")->capture_default_str();
    c->add_option("--power-col", map.power, "column with the run's mean power (W)")->capture_default_str();
    c->add_option("--time-col", map.time, "column with the run time (s)")->capture_default_str();
    c->add_option("--phase-col", map.phase, "column with a phase (prefill, decode ...): one curve per application and phase");
    c->add_option("--quality-col", map.quality, "column with a quality figure, higher is better (Pareto front)");
    c->add_option("--pred-power-col", map.pred_power, "column with another model's predicted power (evaluated without --model)");
    c->add_option("--pred-time-col", map.pred_time, "column with another model's predicted run time");
    c->add_option("--activity", map.activity, "activity columns to use (default: every known one present)")->delimiter(',');
    c->add_option("--gpu", gpu, "the GPU the data was measured on (stored at fit; a different one warns)");
    c->add_flag("--no-outliers", no_outliers, "keep every row (default: rows far from their neighbouring clocks are outliers)");
    c->add_option("--outlier-power-tol", outlier_power_tol, "relative power departure that makes a row an outlier")->capture_default_str();
    if (probes) {
      c->add_option("--probe-clock", probe.probe_clock_mhz, "clock (MHz) of the probe run each application is predicted from (default: its highest)");
      c->add_option("--probes", probe.probes, "probe runs per application, 1-3 (extra ones at ~75% and ~55% of the first clock)")
          ->check(CLI::Range(1, 3))->capture_default_str();
    }
  }
  models::OutlierRule outlier_rule() const {
    models::OutlierRule r;
    r.enabled = !no_outliers;
    r.power_tol = outlier_power_tol;
    return r;
  }
};

struct OutFlags {
  std::string json, csv;
  bool quiet = false;
  void add(CLI::App* c) {
    add_json_option(c, json, "write JSON here");
    c->add_option("--csv", csv, "write CSV here ('-': stdout)");
    c->add_flag("-q,--quiet", quiet, "no summary on stdout");
  }
  bool text() const { return !quiet && json != "-" && csv != "-"; }
};

/// write_output (checked, atomic), with the final newline the documents are read with.
inline Result<void> write_text(const std::string& path, const std::string& text) {
  if (path.empty()) return {};
  return write_output(path, !text.empty() && text.back() != '\n' ? text + "\n" : text);
}

inline void warn_gpu(const models::Model& m, const std::string& gpu) {
  if (!gpu.empty() && !m.info().gpu.empty() && gpu != m.info().gpu)
    std::cerr << "jouleprof: warning: the model was trained on " << m.info().gpu << ", applied to " << gpu
              << " data: expect larger errors\n";
}

}  // namespace jouleprof::cli
