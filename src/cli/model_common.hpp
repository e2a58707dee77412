// Flags shared by `jouleprof model` and `jouleprof optimize`: the CSV column mapping, probes,
// outputs.
#pragma once

#include <CLI/CLI.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "options.hpp"
#include "jouleprof/models/dataset.hpp"
#include "jouleprof/models/model.hpp"
#include "jouleprof/models/report.hpp"
#include "jouleprof/models/validate.hpp"
#include "jouleprof/report/assets.hpp"
#include "jouleprof/report/charts.hpp"

namespace jouleprof::cli {

struct DataFlags {
  std::string data;
  models::ColumnMap map;
  models::ProbeOptions probe;
  models::StoreSource store;
  std::string gpu;
  bool force = false;
  bool no_outliers = false;
  double outlier_power_tol = 0.15;
  double outlier_time_tol = 0;

  void add(CLI::App* c, bool probes) {
    c->add_option("--data", data, "CSV file: one row per (application, clock[, repeat]) (docs/models.md)");
    c->add_option("--sweep", store.sweep, "train/optimise on a sweep's runs in the run store instead of a CSV");
    c->add_option("--db", store.db, "run store of --sweep (default: $JOULEPROF_DB, else the user's)");
    c->add_option("--app-tag", store.app_tag, "--sweep: the tag naming the application (default: the sweep's parameters)");
    c->add_flag("--phases", store.phases, "--sweep: one curve per marked phase (prefill, decode ...) instead of per run");
    c->add_option("--power-limit-col", map.power_limit, "column with the run's power limit (W): optimise the limit with the clock");
    c->add_option("--app-col", map.application, "column naming the application")->capture_default_str();
    c->add_option("--clock-col", map.clock, "column with the SM clock (MHz)")->capture_default_str();
    c->add_option("--power-col", map.power, "column with the run's mean power (W)")->capture_default_str();
    c->add_option("--time-col", map.time, "column with the run time (s)")->capture_default_str();
    c->add_option("--phase-col", map.phase, "column with a phase (prefill, decode ...): one curve per application and phase");
    c->add_option("--quality-col", map.quality, "column with a quality figure, higher is better (Pareto front)");
    c->add_option("--pred-power-col", map.pred_power, "column with another model's predicted power (evaluated without --model)");
    c->add_option("--pred-time-col", map.pred_time, "column with another model's predicted run time");
    c->add_option("--activity", map.activity, "activity columns to use (default: every known one present)")->delimiter(',');
    c->add_option("--gpu", gpu, "the GPU the data was measured on (stored at fit; a model from another GPU is refused without --force)");
    c->add_flag("--force", force, "apply a model trained on another GPU than --gpu names");
    c->add_flag("--no-outliers", no_outliers, "keep every row (default: rows far from their neighbouring clocks are outliers)");
    checked(c->add_option("--outlier-power-tol", outlier_power_tol, "relative power departure that makes a row an outlier"),
            DoubleRange{.min = 0, .max = 100, .min_exclusive = true})->capture_default_str();
    checked(c->add_option("--outlier-time-tol", outlier_time_tol, "relative run-time departure that makes a row an outlier (0: run time not checked)"),
            DoubleRange{.min = 0, .max = 100})->capture_default_str();
    if (probes) {
      checked(c->add_option("--probe-clock", probe.probe_clock_mhz, "clock (MHz) of the probe run each application is predicted from (default: its highest)"),
              DoubleRange{.min = 0, .max = 100000});
      c->add_option("--probes", probe.probes, "probe runs per application, 1-3 (extra ones at ~75% and ~55% of the first clock)")
          ->check(CLI::Range(1, 3))->capture_default_str();
    }
  }
  /// The CSV (--data) or the sweep in the run store (--sweep): exactly one.
  Result<models::Dataset> load() const {
    if (data.empty() == store.sweep.empty())
      return make_error(Errc::invalid_argument, data.empty() ? "give --data FILE.csv or --sweep ID (runs in the store)"
                                                             : "give --data or --sweep, not both");
    if (data.empty()) return models::read_store(store);
    return models::read_csv(data, map);
  }
  std::string source() const { return data.empty() ? "sweep " + store.sweep : data; }
  models::OutlierRule outlier_rule() const {
    models::OutlierRule r;
    r.enabled = !no_outliers;
    r.power_tol = outlier_power_tol;
    r.time_tol = outlier_time_tol;
    return r;
  }
};

struct OutFlags {
  std::string json, csv, latex, svg_dir;
  bool quiet = false;
  void add(CLI::App* c) {
    add_json_option(c, json, "write JSON here");
    c->add_option("--csv", csv, "write CSV here ('-': stdout)");
    c->add_option("--latex", latex, "write a LaTeX tabular here ('-': stdout)");
    c->add_option("--svg-dir", svg_dir, "write figures here as SVG: energy-vs-clock U-curves, predicted vs measured");
    c->add_flag("-q,--quiet", quiet, "no summary on stdout");
  }
  /// The result table goes to stdout unless another output does; -q silences messages on stderr
  /// only (docs/cli.md: results are still written).
  bool text() const { return json != "-" && csv != "-" && latex != "-"; }
};

inline models::EvalContext eval_ctx(std::string model, std::string form, std::string data, std::string split,
                                    models::ProbeOptions probe, std::size_t outliers) {
  models::EvalContext c;
  c.model = std::move(model);
  c.form = std::move(form);
  c.data = std::move(data);
  c.split = std::move(split);
  c.probe = probe;
  c.outlier_rows = outliers;
  return c;
}

/// write_output (checked, atomic), with the final newline the documents are read with.
inline Result<void> write_text(const std::string& path, const std::string& text) {
  if (path.empty()) return {};
  return write_output(path, !text.empty() && text.back() != '\n' ? text + "\n" : text);
}

/// Renders the ECharts options to DIR/NAME.svg (as `sweep --svg-dir` does); names are made file-safe.
inline Result<void> write_svgs(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& charts, bool quiet) {
  if (dir.empty()) return {};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(Errc::io, "cannot create " + dir + ": " + ec.message());
  for (const auto& [name, option] : charts) {
    if (option.empty()) continue;
    std::string safe;
    for (char ch : name) safe += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.') ? ch : '_';
    ChartSpec spec;
    spec.id = safe;
    spec.option_json = option;
    auto svg = render_svg(spec, 720, 420);
    if (!svg) return svg.error();
    const std::string path = dir + "/" + safe + ".svg";
    if (auto w = write_output(path, *svg); !w) return w.error();
    if (!quiet) std::cerr << "jouleprof: wrote " << path << "\n";
  }
  return {};
}

/// A model trained on another GPU than the data's (--gpu) is refused unless --force: the
/// voltage-frequency curve, the static power and the clocks are the chip's.
inline Result<void> check_gpu(const models::Model& m, const DataFlags& d, bool quiet) {
  const std::string& gpu = d.gpu;
  if (gpu.empty() || m.info().gpu.empty() || gpu == m.info().gpu) return {};
  if (!d.force)
    return make_error(Errc::invalid_argument, "the model was trained on " + m.info().gpu + ", the data is from " + gpu +
                                                  ": its clocks, voltage curve and static power are another chip's (refit on this GPU, "
                                                  "or --force to apply it anyway)");
  if (!quiet)
    std::cerr << "jouleprof: warning: the model was trained on " << m.info().gpu << ", applied to " << gpu
              << " data (--force): expect larger errors\n";
  return {};
}

/// One line per application whose probe lies outside the model's training range.
inline void warn_outside(const std::vector<models::Curve>& curves, bool quiet) {
  if (quiet) return;
  for (const auto& c : curves)
    if (!c.outside_training.empty())
      std::cerr << "jouleprof: warning: " << c.application << ": probe outside the training range: " << c.outside_training
                << " — its predictions extrapolate\n";
}

}  // namespace jouleprof::cli
