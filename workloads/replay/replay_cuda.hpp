// The CUDA side of jouleprof-replay: one unique kernel of a traced run re-created and captured
// in a CUDA graph of `reps` back-to-back calls. Plain C++ interface: main.cpp (host logic, JSON,
// the energy sensor) includes no CUDA header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace jouleprof::replay {

struct Item {
  std::string tier;  ///< gemm | conv | batchnorm | attention | copy | other | proxy_compute | proxy_memory | wait | warmup
  // gemm (row-major, as PyTorch: C[M,N] = A[M,K] B[K,N])
  int64_t m = 0, n = 0, k = 0, batch = 1, lda = 0, ldb = 0, ldc = 0, stride_a = 0, stride_b = 0, stride_c = 0;
  bool trans_a = false, trans_b = false, accumulate = false;
  bool weight_b = false;  ///< B is a layer's weight: copies rotated past the L2 cache, so each call reads it from memory
  std::string dtype;  ///< bf16 fp16 fp32 fp64
  // attention
  int64_t heads_q = 0, heads_kv = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  bool causal = false;
  double scale = 0;  ///< the scale of Q·Kᵀ; 0: 1/sqrt(head_dim), PyTorch's default
  bool no_sdpa = false;  ///< the engine's retry when a CUDA graph cannot hold cuDNN's SDPA: unfused
  // conv: a cuDNN forward convolution (sizes in PyTorch's logical order: N C spatial.., K C/g kernel..)
  std::vector<int64_t> conv_input, conv_weight, conv_output, conv_stride, conv_padding, conv_dilation;
  int64_t groups = 1;
  bool channels_last = false, allow_tf32 = true;  ///< channels_last: conv and batchnorm
  // batchnorm: cuDNN's inference batch normalization of x (N C spatial..); dtype and channels_last as above
  std::vector<int64_t> bn_input;
  // copies
  std::string copy_kind;  ///< HtoD DtoH DtoD set
  uint64_t bytes = 0;
  // memory-bound kernels and proxies
  uint64_t bytes_read = 0, bytes_written = 0;
  int grid[3] = {1, 1, 1}, block[3] = {128, 1, 1};
  double target_ns = 0;  ///< time-matched proxies and waits: the traced mean time
};

/// One entry of a context sequence: a unit (index into the units given), launched `delta_ns`
/// after the previous entry's launch (the traced start-to-start time).
struct Step {
  int unit = 0;
  int64_t delta_ns = 0;
};

class Device {
 public:
  /// Opens the CUDA device (ordinal 0 of the visible ones); "" or an error message.
  static std::unique_ptr<Device> open(std::string& error);
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  /// The board's UUID as NVML names it ("GPU-…"; "" when unknown): the engine's power sensor is
  /// chosen by it.
  virtual std::string uuid() const { return ""; }
  /// Builds the item and a graph of `reps` calls (reps 0: chosen so a graph takes ~2 ms).
  /// Returns "" or why it cannot be replayed (out of memory, unsupported dtype ...).
  virtual std::string prepare(const Item& item, int reps) = 0;
  virtual int reps() const = 0;
  /// After prepare(): why the item runs as a stand-in for its tier ("" when it runs as itself), e.g.
  /// a conv without cuDNN replayed as the memory-bound kernel of its bytes.
  virtual std::string fallback() const { return ""; }
  /// After prepare(): the engine config of an attention item cuDNN's SDPA runs ("" otherwise).
  virtual std::string sdpa_engine() const { return ""; }
  /// cuDNN's version once a cuDNN tier opened it ("" before, or without cuDNN).
  virtual std::string cudnn_version() const { return ""; }
  /// Builds every unit of a context sequence (failures: `why[i]` non-empty, that unit becomes a
  /// wait kernel of its target_ns). Returns "" or why the sequence cannot be replayed.
  virtual std::string prepare_units(const std::vector<Item>& units, std::vector<std::string>& why) = 0;
  /// Enqueues one call of unit `u` (asynchronous, as the traced program launched it).
  virtual void call_unit(int u) = 0;
  /// Enqueues `graphs` graph launches (asynchronous).
  virtual void launch(int graphs) = 0;
  /// Records event `slot` (0..79) on the stream.
  virtual void mark(int slot) = 0;
  virtual void synchronize() = 0;
  /// True once the work before event `slot` is done (does not block).
  virtual bool reached(int slot) = 0;
  /// Milliseconds between two recorded events.
  virtual double elapsed_ms(int from, int to) = 0;
  /// A 1-thread kernel then a host sleep of `gap_us`, for `seconds`: the GPU clocked up but idle.
  virtual void gap_pattern(double seconds, double gap_us) = 0;
  virtual void release() = 0;
  virtual std::string error() const = 0;  ///< a sticky CUDA error, if any
};

}  // namespace jouleprof::replay
