// `jouleprof bench llm`: the sweep (models x batches x prompt lengths), its energy windows on the
// Monitor, the isolation runs that give per-component and per-layer energy, the derived figures
// (J/token, tokens/s, TFLOP/s, bandwidth), the table and the result JSON. Shared by the CLI
// (simulated engine, in-process) and jouleprof-llm (the CUDA engine).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "engine.hpp"
#include "jouleprof/measure/result.hpp"

namespace jouleprof {
class Monitor;
}

namespace jouleprof::llm {

struct BenchOptions {
  std::vector<std::string> models{"llama-3.2-1b"};
  std::string weights;
  std::vector<int> batches{1};
  std::vector<int> prompts{128};
  int gen = 128;
  std::string dtype = "bf16";
  std::string device = "auto";  ///< auto | nvml | sim
  int gpu = 0;
  double min_seconds = 1.0;     ///< each prefill / decode energy window
  double iso_seconds = 1.0;     ///< each isolation window (components, layers, step)
  bool no_components = false;
  bool per_layer = false;
  double idle_s = 2.0;
  std::string json;
  std::string tokens_file;
  uint64_t seed = 1234;
  std::vector<std::string> tags;
  bool quiet = false;
  std::string decode_path = "auto";
  bool no_graphs = false;
  bool pdl = false;
  int chunk_tokens = 8192;
  std::string prefill_attention = "cublas";
  std::string variant;
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

struct BenchResult {
  Measurement measurement;
  nlohmann::json llm;  ///< the "llm" section: points with derived figures
  bool simulated = false;
};

/// Runs the whole sweep. `progress` gets one line per step (may be empty).
Result<BenchResult> run_bench(const BenchOptions& o, const EngineFactory& factory,
                              const std::function<void(const std::string&)>& progress);
/// The table for people.
void print_bench(const BenchResult& r, std::ostream& out);
/// Result JSON: the Measurement's schema plus the "llm" section.
Result<void> write_bench_json(const BenchResult& r, const std::string& path);

/// Everything a front end does: run, print, write; returns the exit code (errors: one line on stderr).
int bench_main(const BenchOptions& o, const EngineFactory& factory);

}  // namespace jouleprof::llm
