// The hardware catalog: one JSON file per target under data/hw/ (docs/estimate.md, "Hardware
// files"). Every number carries its source; per-event energies default to Horowitz's 45 nm
// table scaled to the target's node and voltage (stated in each event's source).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/estimate/graph.hpp"

namespace jouleprof::estimate {

enum class HwClass { cpu, gpu, tpu, kpu };
const char* to_string(HwClass c);

struct Sourced {
  double value = 0;
  std::string source;
};

struct MemoryLevel {
  std::string name;
  Sourced size_bytes;          ///< capacity (all instances together)
  Sourced bandwidth_gbps;      ///< aggregate bandwidth, GB/s (1e9 B/s)
  Sourced energy_pj_per_byte;  ///< access energy per byte moved
};

struct HardwareSpec {
  std::string id, name, vendor, file;
  HwClass cls = HwClass::gpu;
  std::vector<std::string> aliases;
  Sourced process_nm, tdp_w, idle_w, compute_units;
  Sourced clock_max_mhz, clock_min_mhz, voltage_max_v, voltage_min_v;
  Sourced launch_overhead_us;  ///< device-side cost per kernel/dispatch
  std::map<std::string, Sourced> matrix_peak_tflops;  ///< by precision name (bf16, fp16, fp8, int8, tf32 ...)
  std::map<std::string, Sourced> vector_peak_tflops;  ///< SIMT/SIMD/vector unit, by precision
  std::vector<MemoryLevel> memory;                    ///< nearest first; the last is off-chip memory
  std::map<std::string, Sourced> params;              ///< class-specific (tile_m, array_dim, tiles, simd_bits ...)
  std::map<std::string, Sourced> events_pj;           ///< per-event energies (defaults filled in by the loader)
  Sourced eff_matrix, eff_vector, eff_memory;         ///< achievable fraction of peak (defaults: assumptions)

  /// Peak FLOP/s for a precision on the matrix (or vector) units; nullopt when the file has none.
  std::optional<double> peak_flops(DType t, bool matrix) const;
  double param(const std::string& key, double fallback) const;
  double event_pj(const std::string& key) const;  ///< 0 when absent
  const MemoryLevel& dram() const { return memory.back(); }
  /// The last on-chip level (L2 on GPUs, L3 on CPUs); nullptr when the file lists only DRAM.
  const MemoryLevel* llc() const { return memory.size() >= 2 ? &memory[memory.size() - 2] : nullptr; }
};

/// Parses one hardware file's text; errors name the file and the field.
Result<HardwareSpec> parse_hardware(const std::string& json_text, const std::string& file);
Result<HardwareSpec> load_hardware_file(const std::string& path);

/// Checks ranges and consistency (idle < TDP, clocks, voltages, bandwidths, sources present).
Result<void> validate(const HardwareSpec& hw);

struct Catalog {
  std::vector<HardwareSpec> hw;
  std::vector<std::string> dirs;
  /// By id or alias (case-insensitive); an unknown name gets "did you mean ...".
  Result<const HardwareSpec*> find(const std::string& name) const;
};

/// Loads every *.json file in the directories (later directories override earlier ids).
Result<Catalog> load_catalog(const std::vector<std::string>& dirs);

/// Where the shipped data lives: $JOULEPROF_DATA_DIR, else <exe>/../share/jouleprof, else the
/// source tree's data/ (compiled in).
std::string default_data_dir();

/// The built-in 45 nm event-energy table (pJ) with its citations, before scaling.
struct EventDefault {
  const char* key;
  double pj_45nm;
  const char* source;
};
const std::vector<EventDefault>& horowitz_45nm();

}  // namespace jouleprof::estimate
