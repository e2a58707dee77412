// `jouleprof bench llm`: the sweep (models x dtypes x batches x prompt lengths x generation
// lengths), its energy windows on the Monitor, the isolation runs that give per-component and
// per-layer energy, the derived figures (J/token, tokens/s, TFLOP/s, bandwidth), the table and the
// result JSON. Shared by the CLI (simulated engine, in-process) and jouleprof-llm (the CUDA
// engine), which links no SQLite: the run store records from this JSON (jouleprof/workloads/bench_record.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "host/engine.hpp"
#include "jouleprof/result/result.hpp"

namespace jouleprof {
class Monitor;
}

namespace jouleprof::llm {

struct BenchOptions {
  std::vector<std::string> models{"llama-3.2-1b"};
  std::string weights;
  std::vector<int> batches{1};
  std::vector<int> prompts{128};
  std::vector<int> gens{128};
  std::vector<std::string> dtypes{"bf16"};
  std::string device = "auto";  ///< auto | nvml | sim
  int gpu = 0;
  double min_seconds = 1.0;     ///< each prefill / decode energy window
  double iso_seconds = 1.0;     ///< each isolation window (components, layers, step)
  bool no_components = false;
  bool per_layer = false;
  double idle_s = 2.0;
  std::string json;
  bool json_timelines = false;  ///< embed every sample in the JSON (what the run store records)
  std::string tokens_file;
  uint64_t seed = 1234;
  std::vector<std::string> tags;
  bool quiet = false;
  bool progress = false;  ///< --progress: configuration i/N with ETA (also when stderr is a terminal)
  bool no_graphs = false;
  int chunk_tokens = 8192;
  std::string variant;  ///< --variant: the decode plan and its options (decode_plan.hpp)
  int top_k = 0;               ///< 0: greedy decoding
  float temperature = 1.0f;    ///< top-k softmax temperature
  std::string nvml_lib;
};

/// Adds the flags to a CLI11 (sub)command; the same flags in `jouleprof bench llm` and `jouleprof-llm bench`.
void add_bench_options(CLI::App* app, BenchOptions& o);
/// The flags that reproduce `o` (for handing a run to jouleprof-llm).
std::vector<std::string> bench_args(const BenchOptions& o);

/// Creates the engine of one model; gets the Monitor so a simulated engine can drive its GPU.
using EngineFactory = std::function<Result<std::unique_ptr<LlmEngine>>(const EngineOptions&, Monitor&)>;
/// The simulated engine on the Monitor's simulated GPUs.
EngineFactory sim_engine_factory();

/// Schema name of the "llm" section.
inline constexpr const char* kBenchSchema = "jouleprof.bench-llm/1";

struct BenchResult {
  /// The whole sweep: one window of kind "run" per configuration (run index = point index) with
  /// its prefill and decode as phases and the isolation windows inside; sections["llm"] = llm.
  Measurement measurement;
  nlohmann::json llm;  ///< the "llm" section: points with derived figures
  bool simulated = false;
  /// Set when the sweep stopped early after measuring something (an engine error); the
  /// measurement is then incomplete and holds the configurations finished before it.
  std::optional<Error> error;
};

/// Runs the whole sweep. `progress` gets one line per step (may be empty). SIGINT, SIGTERM and
/// SIGHUP stop it between repetitions (install_signal_forwarding): the result keeps what was
/// measured, marked incomplete, with exit_code 128 + signal.
Result<BenchResult> run_bench(const BenchOptions& o, const EngineFactory& factory,
                              const std::function<void(const std::string&)>& progress);
/// The table for people.
void print_bench(const BenchResult& r, std::ostream& out);
/// The table of an "llm" section (a whole sweep or one stored configuration).
void print_bench_section(const nlohmann::json& llm, std::ostream& out);
/// Result JSON: the Measurement's schema plus the "llm" section (and every sample with
/// `with_timelines`, written compactly).
Result<void> write_bench_json(const BenchResult& r, const std::string& path, bool with_timelines = false);

/// What a front end does after printing and writing (e.g. record in the run store); returns an
/// exit code (0: fine), used when the benchmark itself succeeded.
using BenchAfter = std::function<int(const BenchResult&)>;

/// Everything a front end does: run, print, write, then `after`; returns the exit code (errors:
/// one line on stderr; 128 + signal when interrupted, after printing and writing what was measured).
int bench_main(const BenchOptions& o, const EngineFactory& factory, const BenchAfter& after = nullptr);

}  // namespace jouleprof::llm
