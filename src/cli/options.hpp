// What every subcommand shares (docs/cli.md): checked numeric options, output flags where
// '-' is stdout, and the global options accepted before or after the subcommand.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "jouleprof/core/checked.hpp"
#include "jouleprof/core/error.hpp"
#include "jouleprof/measure/measure.hpp"

namespace jouleprof::cli {

/// Range checks in words ("--runs must be ≥ 1, got 0") on a numeric option; NaN, inf and
/// non-numbers are refused too. Replaces CLI11's Range/PositiveNumber (whose messages print
/// DBL_MAX as 300 digits). Returns `o` for chaining.
CLI::Option* checked(CLI::Option* o, IntRange r);
CLI::Option* checked(CLI::Option* o, DoubleRange r);

/// `--json [FILE]`: a file, or stdout for '-' or no value.
CLI::Option* add_json_option(CLI::App* c, std::string& path, const std::string& what);
/// The path an output option names: '-' means stdout.
inline bool is_stdout(const std::string& path) { return path == "-"; }
/// Writes `text` to `path` ('-': stdout), checking every write; a file is replaced atomically
/// (a temporary in the same folder, renamed) so a failed write leaves the old file.
Result<void> write_output(const std::string& path, const std::string& text);

/// For library writers that take a file name: '-' runs `write_file` on a temporary file and
/// copies it to stdout.
Result<void> write_output_with(const std::string& path, const std::function<Result<void>(const std::string&)>& write_file);

/// Repeated `--tag KEY=VALUE` options as a map (a later KEY wins); "--tag needs KEY=VALUE, got
/// 'X'" for one without '=' or without a key.
Result<std::map<std::string, std::string>> parse_tags(const std::vector<std::string>& tags);

/// The measuring flags every command that launches and measures a workload shares (measure, trace,
/// sweep, replay; docs/cli.md "Measuring flags"). One declaration, one wiring into MeasureOptions.
struct MeasuringFlags {
  std::string device = "auto";  ///< --device: a backend of the sensor registry, or auto
  std::string gpus{};           ///< --gpus: NVML indices or UUIDs
  double idle_s = 2.0;          ///< --idle (a command sets its own default before adding the flags)
  std::string idle_from{};      ///< --idle-from RESULT.json
  std::string nvml_lib{};       ///< --nvml-lib (else $JOULEPROF_NVML_LIB)
  double sim_power_w = 450;     ///< --sim-power
  std::string sim_scenario{};   ///< --sim-scenario
  bool no_cpu = false;          ///< --no-cpu
};

/// Which of the measuring flags a command has, and the help words that differ between commands.
struct MeasuringFlagSet {
  bool gpus = true, idle_from = true, nvml_lib = true, sim_power = true, sim_scenario = true, no_cpu = true;
  /// "{}" becomes the registry's list ("auto, nvml or sim").
  const char* device_help = "GPU backend: {} (simulated H100)";
  const char* gpus_help = "GPUs to measure: NVML indices or UUIDs, comma separated (default: CUDA_VISIBLE_DEVICES, else all)";
  const char* idle_help = "seconds of idle baseline before the runs (0: none)";
  const char* sim_power_help = "simulated GPU power while the command runs, W";
};

/// Declares --device (its choices from the sensor registry), --idle and the flags `which` names.
void add_measuring_flags(CLI::App* c, MeasuringFlags& f, const MeasuringFlagSet& which = {});

/// The measuring flags and the environment (CUDA_VISIBLE_DEVICES, JOULEPROF_NVML_LIB) into `o`:
/// backend, GPUs (one named twice refused), idle baseline (--idle-from read here), NVML library,
/// simulated GPU, CPU sensors. Errors: bad --gpus, an unreadable --idle-from.
Result<void> apply_measuring_flags(const MeasuringFlags& f, MeasureOptions& o);

/// The global options (docs/cli.md): they may come before the subcommand; main() moves them after it.
struct GlobalOption {
  const char* name;
  bool takes_value;   ///< --db FILE
  bool value_optional;  ///< --json [FILE]
};
const std::vector<GlobalOption>& global_options();

/// -q and --progress of commands that declare none of their own (main() adds them to every
/// command, so every command accepts the global options it can use).
struct GlobalFlags {
  bool quiet = false;
  bool progress = false;
};
GlobalFlags& global_flags();

namespace detail {
/// Called by main(): every numeric option of every subcommand refuses NaN/inf/non-numbers in
/// words, and every subcommand lets its parent take options it does not have (so
/// `runs list --db X` reaches `runs`' --db).
void apply_contract(CLI::App& app);
/// argv with global options given before the subcommand moved to after it.
std::vector<std::string> hoist_global_options(const std::vector<std::string>& args, const CLI::App& app);
/// One-line message for a CLI11 parse error, in the contract's words, with closest names.
/// " runs list" for the deepest subcommand parsed ("" when none): where --help helps.
std::string help_path(const CLI::App& app);
std::string parse_error_message(const CLI::ParseError& e, const CLI::App& app, const std::vector<std::string>& args);
}  // namespace detail

}  // namespace jouleprof::cli
