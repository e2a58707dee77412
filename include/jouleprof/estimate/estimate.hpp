// Mapping a partitioned graph onto a hardware target: roofline-with-efficiency latency per
// subgraph and an architectural energy model whose events are counted from the ops.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/estimate/graph.hpp"
#include "jouleprof/estimate/hardware.hpp"
#include "jouleprof/estimate/partition.hpp"

namespace jouleprof::estimate {

/// Fitted parameters for one hardware target (data/calibration/<id>.json), with provenance.
struct Calibration {
  std::string hw_id, file, provenance;
  std::optional<double> eff_matrix, eff_vector, eff_memory, idle_w, active_w, launch_us;
  /// Matrix efficiency of fused attention kernels (default: eff_matrix): PyTorch's SDPA flash
  /// kernel (FlashAttention-2) does not use Hopper's wgmma/TMA paths that cuBLAS GEMMs use.
  std::optional<double> eff_attention;
  /// GEMM per-tile fixed cost (pipeline fill, epilogue) in equivalent K-loop depth: a GEMM
  /// reaches K / (K + gemm_k0) of the matrix efficiency (GPU).
  std::optional<double> gemm_k0;
  double k_compute = 1, k_onchip = 1, k_dram = 1;  ///< multipliers on the event energies
  /// Eager frameworks: host time per op by class (matmul, conv, attention, other), microseconds.
  std::map<std::string, double> dispatch_us;
  double model_overhead_us = 0;  ///< eager: extra host time per op inside a multi-op model
  double module_us = 0;          ///< eager: host time per framework module call (Op::module_calls)
  /// Power drawn while the device executes kernels (clocked SMs, schedulers, on-chip network),
  /// on top of active_w, scaled by V(f)/Vmax like it; charged over device busy time.
  double busy_w = 0;
  std::map<std::string, double> stats;  ///< fit statistics (mape_* ...), for display
};
Result<Calibration> load_calibration(const std::string& path);
Result<void> save_calibration(const Calibration& c, const std::string& path);

struct EstimateOptions {
  DType precision = DType::bf16;
  std::optional<double> clock_mhz;  ///< core clock; default: the maximum
  bool fuse = true;                 ///< fusing engine (true) or one kernel per op
  bool eager = false;               ///< add eager-framework host dispatch per op (calibrated)
  bool warm = true;                 ///< steady state of repeated runs (cache warm) vs one cold run
  bool power_cap = true;            ///< throttle the clock where power would exceed TDP
};

struct Event {
  std::string group, name, unit;
  double count = 0, energy_j = 0;
};

struct SubgraphEstimate {
  std::string name;
  OpClass anchor = OpClass::elementwise;
  std::size_t ops = 0;
  int kernels = 0;
  double flops = 0, matrix_flops = 0, dram_bytes = 0, llc_bytes = 0;
  double t_compute_s = 0, t_memory_s = 0, t_overhead_s = 0, latency_s = 0;
  double device_s = 0;  ///< device busy time (kernel execution and launch gaps)
  std::string bound;  ///< compute, memory, overhead (launch/dispatch)
  double utilization = 0;  ///< achieved FLOP/s over the precision's peak
  double clock_mhz = 0;
  double dynamic_j = 0, static_j = 0, energy_j = 0;
  std::vector<Event> events;
};

struct Estimate {
  std::string model, hw_id, hw_name, calibration;
  HwClass cls = HwClass::gpu;
  DType precision = DType::bf16;
  bool fused = true, eager = false, warm = true;
  double clock_mhz = 0;            ///< the clock the estimate runs at (after the power cap)
  double clock_requested_mhz = 0;  ///< --clock, else the maximum
  /// The power cap lowered the clock: at the requested clock the average power would have been
  /// uncapped_power_w, above power_cap_w (the TDP).
  bool power_capped = false;
  double uncapped_power_w = 0, power_cap_w = 0;
  std::size_t ops = 0;
  double flops = 0, weight_bytes = 0, dram_bytes = 0;
  double latency_s = 0, energy_j = 0, dynamic_j = 0, static_j = 0, avg_power_w = 0;
  std::vector<SubgraphEstimate> subgraphs;
  std::vector<Event> totals;  ///< summed by (group, name), in model order
  std::vector<std::string> notes;
  /// Tokens the graph processes (LLMs: batch × prompt for prefill, batch for one decode step;
  /// 0 otherwise): with it the report gives tok/s and J/token.
  double tokens = 0;
};

/// Why and how far the power cap lowered the clock, in words ("" when it did not).
std::string power_cap_text(const Estimate& e);

/// The software stack the estimate's mode stands for, in words (stated with every estimate).
std::string stack_text(const Estimate& e);

Result<Estimate> estimate(const Graph& g, const HardwareSpec& hw, const EstimateOptions& opt,
                          const Calibration* cal = nullptr);

/// The same, on a partition computed by the caller (the benchmark times both steps).
Result<Estimate> estimate_partitioned(const Graph& g, const std::vector<Subgraph>& sgs, const HardwareSpec& hw,
                                      const EstimateOptions& opt, const Calibration* cal);

/// Voltage at a core clock: linear between (clock_min, voltage_min) and (clock_max, voltage_max).
double voltage_at(const HardwareSpec& hw, double mhz);

}  // namespace jouleprof::estimate
