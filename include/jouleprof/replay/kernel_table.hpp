// The kernel table of a traced run (`jouleprof kernels`, input of `jouleprof replay`): one row per
// unique kernel — name, launch configuration and the shapes/dtypes/layouts of the op that launched
// it — with exact invocation counts and times, a class (data/kernel-classes.tsv) and a replay tier
// (data/replay-tiers.tsv) with the parameters its replay needs (GEMM M/N/K..., copy bytes and
// direction, attention shapes, bytes moved by the rest). Read from PyTorch profiler / Kineto
// Chrome traces (plain or .gz, streamed: kineto.cpp) and from jouleprof's own trace files.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/trace/kernel_classes.hpp"

namespace jouleprof {

struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool trans_a = false, trans_b = false;  ///< row-major operands as PyTorch sees them: A[M,K] B[K,N]
  int64_t lda = 0, ldb = 0, ldc = 0;      ///< leading dimensions (row-major, in elements)
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  ///< batch strides (batched GEMMs)
  std::string dtype_a, dtype_b, dtype_c;  ///< bf16 fp16 fp32 fp64 fp8e4m3 fp8e5m2 int8
  bool accumulate = false;                ///< beta = 1 (addmm/baddbmm: C or bias added)
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch); }
};

struct AttentionShape {
  int64_t batch = 0, heads_q = 0, heads_kv = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  std::string dtype;
  bool causal = false;  ///< the op's is_causal where the trace has concrete inputs, else seq_q == seq_kv > 1
  std::string causal_from;      ///< "is_causal", "custom_mask_type" or "guessed from seq_q == seq_kv"
  std::optional<double> scale;  ///< the op's scale where given (else PyTorch's 1/sqrt(head_dim))
  bool masked = false;          ///< the op had an attention mask/bias tensor (not replayed)
};

/// A forward convolution as cuDNN runs it, from its op's inputs: sizes in PyTorch's logical order,
/// the memory layout PyTorch gives cuDNN (channels-last when the input or the weight is).
struct ConvShape {
  std::vector<int64_t> input, weight, output;      ///< N C spatial..; K C/groups kernel..; N K spatial..
  std::vector<int64_t> stride, padding, dilation;  ///< one per spatial dimension (1 to 3)
  int64_t groups = 1;
  bool channels_last = false;  ///< NHWC / NDHWC memory order (from the traced strides)
  bool allow_tf32 = true;      ///< fp32: TF32 tensor cores allowed (the op's allow_tf32, PyTorch's default)
  std::string dtype;           ///< bf16 fp16 fp32 fp64
  int spatial() const { return static_cast<int>(input.size()) - 2; }
  double flops() const;             ///< 2 · N·K·output spatial · C/groups · kernel spatial
  uint64_t bytes_read() const;      ///< input and weight, once
  uint64_t bytes_written() const;   ///< output, once
};

/// An inference batch normalization as cuDNN runs it (`cudnnBatchNormalizationForwardInference`),
/// from its op's inputs: x's sizes, layout and dtype; scale, bias, mean and variance have C values
/// (fp32, fp64 for fp64 inputs). Epsilon does not change the time and is not kept.
struct BatchNormShape {
  std::vector<int64_t> input;  ///< N C spatial.. (0 to 3 spatial dimensions)
  bool channels_last = false;  ///< NHWC / NDHWC memory order (from the traced strides)
  std::string dtype;           ///< bf16 fp16 fp32 fp64
  int64_t channels() const { return input.size() > 1 ? input[1] : 0; }
  uint64_t bytes_read() const;     ///< x, then scale, bias, mean, variance
  uint64_t bytes_written() const;  ///< y
};

struct KernelRow {
  std::string name;   ///< demangled kernel name, "Memcpy HtoD (Pageable -> Device)", "Memset (Device)"
  std::string kind;   ///< kernel | memcpy | memset
  std::string kclass; ///< kernel class (kernel-classes.tsv)
  std::string tier;   ///< copy | gemm | conv | batchnorm | attention | communication | other (replay-tiers.tsv)
  int rank = 0;       ///< trace file's rank (distributedInfo), else its position among the files
  uint32_t device = 0;
  int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t registers = 0, shared_bytes = 0;
  uint64_t bytes = 0;     ///< copies: bytes per call
  int64_t graph = -1;     ///< the CUDA graph that launched it (Kineto "graph id"), -1: none
  std::string copy_kind;  ///< copies: HtoD DtoH DtoD PtoP (memset: "set")
  std::string op;         ///< the CPU op that launched it (aten::mm ...), "" when unknown
  std::string input_dims, input_types, input_strides;  ///< the op's record_shapes, as JSON text
  std::string input_concrete;  ///< the op's "Concrete Inputs" (scalars and int lists, as strings), JSON text
  uint64_t count = 0;
  int64_t total_ns = 0, min_ns = 0, max_ns = 0;
  // Replay parameters derived from the op's shapes (kernel_table.cpp).
  std::optional<GemmShape> gemm;
  std::optional<AttentionShape> attention;
  std::optional<ConvShape> conv;  ///< conv tier: replayed through cuDNN (workloads/replay)
  std::optional<BatchNormShape> batchnorm;  ///< batchnorm tier: replayed through cuDNN (workloads/replay)
  uint64_t bytes_read = 0, bytes_written = 0, elements = 0;  ///< other tier: from the op's tensors
  std::string note;       ///< why a tier falls back to a proxy, what could not be derived
  double mean_ns() const { return count > 0 ? static_cast<double>(total_ns) / static_cast<double>(count) : 0; }
};

/// One GPU activity of the trace, in order: the sequence a context replay re-creates and the
/// phases are cut from.
struct TraceActivity {
  uint32_t row = 0;     ///< index into KernelTable::rows
  uint32_t device = 0;  ///< (rank << 8) | device
  int64_t start_ns = 0, dur_ns = 0;
};

/// A `record_function` / user annotation range of the trace (Kineto `user_annotation`).
struct TraceRange {
  std::string name;
  int rank = 0;
  int64_t start_ns = 0, end_ns = 0;
};

struct KernelTable {
  std::string format;  ///< kineto | jouleprof
  std::vector<std::string> files;
  std::vector<std::string> gpus;  ///< device names the traces carry
  bool shapes = false;            ///< the trace has the ops' input shapes (record_shapes)
  std::vector<KernelRow> rows;    ///< by total time, longest first
  uint64_t kernels = 0, memcpys = 0, memsets = 0;
  int64_t kernel_ns = 0, memcpy_ns = 0, memset_ns = 0;  ///< exact sums of the trace's durations
  int64_t span_ns = 0;  ///< first GPU activity start to last end (summed over devices/ranks)
  int64_t busy_ns = 0;  ///< union of GPU activity intervals (summed over devices/ranks)
  int devices = 0;      ///< distinct (rank, device) pairs with GPU activity
  uint64_t events = 0, bytes = 0;  ///< trace events and (uncompressed) bytes read
  uint64_t skipped_events = 0;     ///< events that could not be read (args of unexpected types or values): skipped, counted
  uint64_t graph_kernels = 0;      ///< GPU activities launched by CUDA graphs
  std::vector<std::string> warnings;
  std::vector<TraceActivity> activities;  ///< every GPU activity, by start time per device
  std::vector<TraceRange> annotations;    ///< user annotation ranges (record_function), by start
  int64_t gpu_ns() const { return kernel_ns + memcpy_ns + memset_ns; }
  int64_t idle_ns() const { return span_ns - busy_ns; }
};

/// Rules that map a kernel to its replay tier: "TIER<TAB>REGEX" lines searched in
/// "kind:KIND class:CLASS op:OP kernel:NAME" (data/replay-tiers.tsv).
std::string default_replay_tiers_path();

struct KernelTableOptions {
  const KernelClassifier* classes = nullptr;  ///< kernel classes (required)
  const KernelClassifier* tiers = nullptr;    ///< replay tiers (required)
  std::size_t chunk_bytes = 4u << 20;         ///< Kineto import: bytes read at a time (tests use small ones)
  int threads = 0;                            ///< Kineto import: parsing threads (0: the CPUs, at most 8)
  /// Called now and then during long steps ("t.json: 512 MiB read", "tiers: 200000/1000000 rows").
  std::function<void(const std::string&)> progress;
};

/// Reads one or several traces: Kineto/PyTorch profiler JSON (.json, .json.gz; several files =
/// several ranks), a jouleprof trace file (.jpt) or a folder of them. Errors name the file and,
/// for malformed JSON, the byte offset.
Result<KernelTable> read_kernel_table(const std::vector<std::string>& paths, const KernelTableOptions& o);

/// Streams one Kineto trace into `t` (exposed for tests and the import benchmark). The file is
/// opened once (pipes work); an event that cannot be read is skipped, counted and named in one warning.
Result<void> import_kineto(const std::string& path, int rank, KernelTable& t, const KernelTableOptions& o);
/// Like import_kineto, but a jouleprof trace file (its magic in the first bytes, read from the
/// same descriptor) is not read: `jouleprof_file` says so and the caller reads it.
Result<void> import_trace_file(const std::string& path, int rank, KernelTable& t, const KernelTableOptions& o, bool& jouleprof_file);

/// Fills each row's tier and replay parameters (GEMM shape, attention shape, bytes) and sorts rows.
void derive_replay_parameters(KernelTable& t, const KernelTableOptions& o);

/// The replay plan's fields of a conv row (tier, shape, the bytes of its memory-bound fallback),
/// as one JSON object's text; "" when the row has no conv shape.
std::string conv_item_json(const KernelRow& r);
/// The replay plan's fields of a batchnorm row (tier, x's shape, layout, dtype, the bytes of its
/// memory-bound fallback), as one JSON object's text; "" when the row has no batchnorm shape.
std::string batchnorm_item_json(const KernelRow& r);
/// Whether one replay of the row re-creates its op's whole call (a GEMM, a convolution, a batch
/// normalization or a fused attention with its shape): the op's other kernels with the same count ride with it.
bool replays_op_call(const KernelRow& r);

/// One JSON document: {schema, schema_version, format, files, totals, tiers, kernels}.
std::string kernel_table_json(const KernelTable& t);
std::string kernel_table_csv(const KernelTable& t);
/// A human summary: totals, per-tier table, the `top` longest rows.
std::string kernel_table_text(const KernelTable& t, std::size_t top);

}  // namespace jouleprof
