// The fusion partitioner: groups ops into subgraphs (kernels). Memory traffic is charged only
// for tensors that cross a subgraph boundary; tensors produced and consumed inside one
// subgraph stay on chip.
#pragma once

#include <string>
#include <vector>

#include "jouleprof/estimate/graph.hpp"

namespace jouleprof::estimate {

struct PartitionOptions {
  /// true: a fusing compiler/engine (pointwise ops into their producers, attention blocks);
  /// false: eager execution, one kernel per op.
  bool fuse = true;
};

struct Subgraph {
  std::string name;           ///< the anchor op's name
  OpClass anchor = OpClass::elementwise;
  std::vector<int> ops;       ///< op indices, in execution order
  double matrix_flops = 0, vector_flops = 0, transcendentals = 0;
  double input_bytes = 0;     ///< activations read from outside the subgraph
  double weight_bytes = 0;    ///< parameters read
  double output_bytes = 0;    ///< tensors written that are used outside (or graph outputs)
  std::vector<std::pair<int, double>> reads;   ///< (storage tensor, bytes) read, for the cache model
  std::vector<std::pair<int, double>> writes;  ///< (tensor, bytes) written
  int kernels = 0;            ///< kernel launches (eager: one per op; fused: one)
  /// Extra read sweeps of multi-pass row kernels (Op::row_passes - 1 times their input), bytes:
  /// re-read from on-chip caches, but they take time (see docs/estimate.md, "Row kernels").
  double resweep_bytes = 0;
  /// Ops that run as their own kernel and need a host dispatch in an eager framework (views
  /// and eager epilogues excluded).
  std::vector<int> dispatched;
  /// Dominant GEMM (largest matrix_flops) for the tile-utilization model; 0 when none.
  int64_t gemm_batch = 0, gemm_m = 0, gemm_n = 0, gemm_k = 0;
  double bytes() const { return input_bytes + weight_bytes + output_bytes; }
  double flops() const { return matrix_flops + vector_flops; }
};

/// Partitions a graph whose ops are in topological order.
std::vector<Subgraph> partition(const Graph& g, const PartitionOptions& opt = {});

/// Checks that ops are topologically ordered (every input produced earlier); an error names
/// the first op that reads a tensor produced later.
Result<void> check_topological(const Graph& g);

}  // namespace jouleprof::estimate
