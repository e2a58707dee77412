// `jouleprof measure [options] [-- CMD ARGS...]`
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "db_option.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "jouleprof/core/self_exe.hpp"
#include "jouleprof/core/progress.hpp"
#include "jouleprof/measure/footprint.hpp"
#include "jouleprof/measure/measure.hpp"
#include "jouleprof/measure/output.hpp"
#include "jouleprof/sensors/gpu_sensor.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof::cli {
namespace {

struct MeasureFlags {
  MeasuringFlags measuring;  // --device, --gpus, --idle, --idle-from, --nvml-lib, --sim-*, --no-cpu
  int warmup = 0, runs = 1;
  bool cooldown = false;
  double cooldown_tolerance_c = 1.0, cooldown_max_s = 120;
  double period_ms = 100;
  double counter_min_window_s = 1.0;
  double ci_warn_pct = 5;
  std::string json, timeline;
  bool quiet = false, progress = false;
  std::vector<std::string> tags;
  std::string meter_csv, meter_column;
  double meter_offset_s = 0;
  bool meter_utc = false;
  double burn_seconds = 5;
  std::string db;
  bool no_store = false;
  std::optional<double> carbon_intensity, price;
  std::string carbon_source;
  bool metrics = false;
  std::string metrics_source = "auto";
  double metrics_period_ms = 500;
  std::vector<std::string> command;
};

// The built-in GPU workload is the jouleprof-burn binary installed beside jouleprof.
std::vector<std::string> builtin_command(double seconds) {
  const auto dir = self_exe_dir();
  if (dir.empty()) return {};
  std::error_code ec;
  const auto burn = dir / JOULEPROF_BURN_NAME;
  if (!std::filesystem::exists(burn, ec)) return {};
  return {burn.string(), "--seconds", std::to_string(seconds), "--phases"};
}

int run(MeasureFlags f) {
  if (!command_after_dashes().empty()) f.command = command_after_dashes();
  MeasureOptions o;
  o.command = f.command;
  o.warmup = f.warmup;
  o.runs = f.runs;
  o.cooldown = f.cooldown;
  o.cooldown_tolerance_c = f.cooldown_tolerance_c;
  o.cooldown_max_s = f.cooldown_max_s;
  o.ci_warn_relative = f.ci_warn_pct / 100.0;
  o.invocation = invocation();
  if (auto a = apply_measuring_flags(f.measuring, o); !a) return report(a.error());
  // The main job without a command runs anywhere: on the simulated GPU when there is none.
  o.monitor.gpus.fallback_to_sim = f.command.empty();
  if (f.metrics) o.activity = ActivityOptions{f.metrics_source, f.metrics_period_ms / 1000.0, o.monitor.gpus.nvml_library};
  o.monitor.sampler.fast_period_s = f.period_ms / 1000.0;
  o.monitor.energy.counter_min_window_s = f.counter_min_window_s;
  if (f.command.empty()) o.builtin_command = builtin_command(f.burn_seconds);
  auto tags = parse_tags(f.tags);
  if (!tags) return report(tags.error());
  o.tags = std::move(*tags);
  if (!f.meter_csv.empty()) {
    if (access(f.meter_csv.c_str(), R_OK) != 0) {
      return report(make_error(Errc::invalid_argument, "cannot read meter log " + f.meter_csv));
    }
    o.meter_csv = f.meter_csv;
    o.meter.power_column = f.meter_column;
    o.meter.clock_offset_s = f.meter_offset_s;
    o.meter.utc = f.meter_utc;
  }
  if (!f.quiet) o.progress = [](const std::string& s) { std::cerr << "jouleprof: " << s << "\n"; };
  o.show_progress = !f.quiet && Progress::wanted(f.progress);

  auto footprint = resolve_footprint(f.carbon_intensity, f.price, f.carbon_source);
  if (!footprint) return report(footprint.error());

  auto result = run_measure(o);
  if (!result) return report(result.error());
  add_footprint(*result, *footprint);
  const Measurement& m = *result;
  int rc = m.exit_code;
  if (!f.json.empty()) {
    if (auto w = write_output(f.json, result_to_json(m) + "\n"); !w) rc = report(w.error());
  }
  if (!f.timeline.empty()) {
    if (auto w = write_output_with(f.timeline, [&m](const std::string& p) { return write_timeline_csv(m, p); }); !w) {
      rc = report(w.error());
    }
  }
  // Every measurement is kept in the run store unless asked not to (docs/store.md).
  if (!f.no_store) {
    StoreOptions so;
    so.db_path = f.db;
    so.source = "measure";
    if (auto id = record_measurement(m, so); !id) {
      const int e = report(id.error());
      if (rc == 0) rc = e;
    } else if (!f.quiet) {
      std::cerr << "jouleprof: recorded as run " << *id << " in " << resolve_db_path(f.db) << "\n";
    }
  }
  // With the JSON on stdout, stdout carries the JSON only.
  if (!f.quiet) {
    std::ostream& out = is_stdout(f.json) ? std::cerr : std::cout;
    print_summary(m, out);
    if (auto it = m.sections.find(kFootprintSection); it != m.sections.end()) {
      out << "\ncarbon and cost:\n";
      print_footprint(it->second, out);
    }
  }
  if (m.meter_source.rfind("error: ", 0) == 0) {
    const int e = report(make_error(Errc::parse, m.meter_source.substr(7)));
    if (rc == 0) rc = e;
  }
  return rc;
}

Runner add_measure(CLI::App& app) {
  auto f = std::make_shared<MeasureFlags>();
  CLI::App* c = app.add_subcommand("measure", "Measure the GPU (and CPU) energy of a command, or of the built-in workload");
  c->footer(
      "Examples:\n"
      "  jouleprof measure --runs 5 --json out.json -- python infer.py\n"
      "  jouleprof measure --device sim                 # the built-in workload on the simulated GPU\n"
      "Phases: the workload writes 'begin NAME' / 'end NAME' / 'count KEY N [NAME]' lines to the\n"
      "FIFO named by $JOULEPROF_MARKERS (docs/markers.md).");
  add_measuring_flags(c, f->measuring);
  checked(c->add_option("--warmup", f->warmup, "warm-up runs, measured but not in the statistics"), IntRange{.min = 0, .max = 10000})->capture_default_str();
  checked(c->add_option("--runs", f->runs, "measured runs"), IntRange{.min = 1, .max = 10000})->capture_default_str();
  c->add_flag("--cooldown", f->cooldown, "between runs, wait until the GPU temperature is stable");
  checked(c->add_option("--cooldown-tolerance", f->cooldown_tolerance_c, "°C range over 5 s that counts as stable"),
          DoubleRange{.min = 0, .max = 50, .min_exclusive = true})->capture_default_str();
  checked(c->add_option("--cooldown-max", f->cooldown_max_s, "longest cool-down wait, seconds"), DoubleRange{.min = 0, .max = 3600})->capture_default_str();
  checked(c->add_option("--period-ms", f->period_ms, "sampler period: buffer drain and power fields"), DoubleRange{.min = 10, .max = 2000})->capture_default_str();
  checked(c->add_option("--counter-min-window", f->counter_min_window_s,
                        "windows at least this long (s) take their energy from the counter, shorter ones from the timeline"),
          DoubleRange{.min = 0, .max = 86400})->capture_default_str();
  checked(c->add_option("--ci-warn", f->ci_warn_pct, "warn when the 95% CI over runs exceeds this % of the mean"), DoubleRange{.min = 0, .max = 1000})->capture_default_str();
  add_json_option(c, f->json, "write the result JSON here");
  c->add_option("--timeline", f->timeline, "write every sample as CSV here (t_s,device,metric,value)");
  c->add_option("--tag", f->tags, "KEY=VALUE recorded with the result (repeatable)");
  c->add_option("--meter-csv", f->meter_csv, "external power-meter log (CSV with time and power columns)");
  c->add_option("--meter-column", f->meter_column, "power column of the meter log (default: sum, power_w, watts, power)");
  checked(c->add_option("--meter-offset", f->meter_offset_s, "seconds added to the meter's timestamps"), DoubleRange{.min = -86400, .max = 86400})->capture_default_str();
  c->add_flag("--meter-utc", f->meter_utc, "meter date-times are UTC (default: local time)");
  checked(c->add_option("--burn-seconds", f->burn_seconds, "duration of the built-in GPU workload per run"),
          DoubleRange{.min = 0, .max = 86400, .min_exclusive = true})->capture_default_str();
  c->add_option("--db", f->db, kDbOptionHelp);
  c->add_option("--carbon-intensity", f->carbon_intensity,
                "grid carbon intensity in gCO2e/kWh: energy as gCO2e per run, window and token (also "
                "$JOULEPROF_CARBON_INTENSITY, config carbon-intensity)");
  c->add_option("--carbon-source", f->carbon_source,
                "where the carbon intensity comes from, recorded with the run (also $JOULEPROF_CARBON_SOURCE)");
  c->add_option("--price", f->price, "electricity price per kWh: energy as cost per run, window and token (also "
                                     "$JOULEPROF_PRICE, config price)");
  c->add_flag("--no-store", f->no_store, "do not record the run in the run store");
  c->add_flag("--metrics", f->metrics, "also record activity metrics (SM, tensor, FP, DRAM busy) per window: DCGM "
                                      "profiling fields, else NVML GPM, else NVML utilization; the result's \"activity\" section (docs/models.md)");
  c->add_option("--metrics-source", f->metrics_source,
                "activity source: auto (dcgm, else gpm, else utilization), dcgm, gpm, utilization, or cupti-pm "
                "(CUPTI PM sampling; never chosen by auto: it holds the GPU's counters)")
      ->check(CLI::IsMember(activity_source_names()))->capture_default_str();
  checked(c->add_option("--metrics-period-ms", f->metrics_period_ms, "activity window length"),
          DoubleRange{.min = 100, .max = 60000})->capture_default_str();
  c->add_flag("-q,--quiet", f->quiet, "no progress and no summary");
  c->add_flag("--progress", f->progress, "show run i/N, elapsed, ETA and the cool-down temperature on stderr (default: when a terminal)");
  c->add_option("command", f->command, "the workload and its arguments, after --")->expected(-1);
  return [f] { return run(*f); };
}

const bool registered = register_command(add_measure);

}  // namespace
}  // namespace jouleprof::cli
