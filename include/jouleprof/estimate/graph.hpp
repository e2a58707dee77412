// The estimator's graph IR: tensors with shapes and dtypes, ops with FLOP and byte counts.
//
// Graphs come from the built-in builders (builders.hpp) or ONNX files (onnx.hpp); both go
// through GraphBuilder, which does the shape inference and costing of every op kind once.
// Costs are per op and unfused: `partition()` (partition.hpp) decides which intermediate
// tensors stay on chip.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace jouleprof::estimate {

enum class DType { f32, tf32, f16, bf16, fp8, i8, i32, i64, boolean };

double dtype_bytes(DType t);
const char* to_string(DType t);
std::optional<DType> parse_dtype(std::string_view s);

/// What kind of work an op is: decides the unit that executes it and how it fuses.
enum class OpClass {
  matmul,         ///< GEMM / batched GEMM / linear: matrix units
  conv,           ///< convolution (im2col GEMM on matrix units; depthwise on vector units)
  attention,      ///< fused scaled-dot-product attention (QK^T, softmax, PV)
  elementwise,    ///< unary/binary pointwise math
  normalization,  ///< batch/layer/RMS norm
  softmax,
  reduction,      ///< sum/mean/max over axes, global pooling
  pooling,        ///< windowed pooling
  data_movement,  ///< copy, transpose, concat, slice, gather, embedding lookup
  view,           ///< reshape/flatten/squeeze: no data moves, no kernel
};
const char* to_string(OpClass c);

using Shape = std::vector<int64_t>;
std::string to_string(const Shape& s);
/// Element count; INT64_MAX when the product does not fit 64 bits (estimate() then refuses the
/// graph, naming the tensor, instead of computing with a wrapped, negative size).
int64_t numel(const Shape& s);
/// Whether every dimension is positive and the element count fits 64 bits.
bool numel_fits(const Shape& s);

struct Tensor {
  std::string name;
  Shape shape;
  DType dtype = DType::f32;
  bool is_weight = false;  ///< parameter / constant (read from memory, never produced)
  int producer = -1;       ///< op index, -1 for graph inputs and weights
  std::vector<int> consumers;
  int alias_of = -1;       ///< for view outputs: the tensor whose storage this is
  double bytes() const { return static_cast<double>(numel(shape)) * dtype_bytes(dtype); }
};

struct Op {
  std::string name;  ///< unique, e.g. "layer3.1.conv2"
  std::string type;  ///< op type as in ONNX where one exists ("MatMul", "Conv", "Relu" ...)
  OpClass cls = OpClass::elementwise;
  std::vector<int> inputs, outputs;  ///< tensor indices
  double matrix_flops = 0;     ///< FLOPs that matrix units (tensor cores, systolic array) can do; MAC = 2
  double vector_flops = 0;     ///< other arithmetic (SIMT/SIMD/vector unit)
  double transcendentals = 0;  ///< exp/tanh/sigmoid/rsqrt/erf evaluations (also counted in vector_flops)
  /// GEMM shape for the mapper's tile model: batch x (m x k) * (k x n); 0 when not a GEMM.
  int64_t gemm_batch = 0, gemm_m = 0, gemm_n = 0, gemm_k = 0;
  int kernels = 1;  ///< kernels an eager framework launches for this op (0 for views)
  /// Read sweeps a row-wise kernel makes over its input (softmax over long rows: max, sum of
  /// exponentials, normalize = 3; layer norm: statistics, normalize = 2); 1 for everything else.
  int row_passes = 1;
  /// Eager frameworks run this op inside its producer's kernel (a GEMM's bias add: cuBLASLt
  /// bias epilogue of addmm), so it costs no launch, no dispatch and no intermediate traffic.
  bool eager_epilogue = false;
  /// Framework module calls (PyTorch nn.Module __call__: hooks, forward dispatch, Python
  /// bodies) made on the host before this op's dispatch; eager host time is charged per call.
  double module_calls = 0;
  /// Fraction of each input that is read (empty: all of every input); e.g. an embedding
  /// lookup reads only the gathered rows of its table.
  std::vector<double> read_fraction;
  double flops() const { return matrix_flops + vector_flops; }
  double input_fraction(std::size_t i) const { return i < read_fraction.size() ? read_fraction[i] : 1.0; }
};

struct Graph {
  std::string name;
  DType dtype = DType::bf16;  ///< compute precision
  std::vector<Tensor> tensors;
  std::vector<Op> ops;  ///< in a valid execution (topological) order
  std::vector<int> inputs, outputs;

  /// The tensor whose storage t uses (follows view aliases).
  int storage(int t) const;
  double total_flops() const;
  double total_matrix_flops() const;
  double weight_bytes() const;
  /// Sum over ops of (input + output) bytes, views excluded: the traffic without any fusion.
  double unfused_bytes() const;
};

/// Builds a graph op by op with shape inference and costing. Errors are sticky: the first one
/// is kept, later calls return -1, and finish() returns it.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name, DType dtype = DType::bf16);

  int input(const std::string& name, Shape shape, std::optional<DType> dt = std::nullopt);
  int weight(const std::string& name, Shape shape, std::optional<DType> dt = std::nullopt);
  void output(int t);

  // --- compute ---
  /// a [..., M, K] x b [..., K, N] with numpy broadcasting of the batch dimensions.
  int matmul(const std::string& name, int a, int b, std::string_view type = "MatMul");
  /// x [..., K] -> [..., N]: weight [K, N] (+ bias, fused as an elementwise add).
  int linear(const std::string& name, int x, int64_t out_features, bool bias = true);
  /// NCHW convolution; weight [Cout, Cin/groups, kh, kw] (+ bias).
  int conv2d(const std::string& name, int x, int64_t out_ch, int64_t kh, int64_t kw, int64_t stride, int64_t pad,
             int64_t groups = 1, bool bias = false, int64_t dilation = 1);
  /// conv2d against an existing weight tensor (ONNX); pads = {top, left, bottom, right}.
  int conv2d_w(const std::string& name, int x, int w, int b, std::vector<int64_t> strides, std::vector<int64_t> pads,
               std::vector<int64_t> dilations, int64_t groups);
  /// Fused attention: q [B, H, Sq, D], k/v [B, Hkv, Skv, D] (H multiple of Hkv) -> [B, H, Sq, D].
  int attention(const std::string& name, int q, int k, int v, bool causal);

  // --- pointwise and normalizations ---
  /// One-input pointwise op; flops per element, of which `transc` are transcendental.
  int unary(const std::string& name, std::string_view type, int x, double flops_per_elem = 1, double transc = 0);
  /// Two-input pointwise op with numpy broadcasting.
  int binary(const std::string& name, std::string_view type, int a, int b);
  /// Cast to another dtype.
  int cast(const std::string& name, int x, DType to);
  int batchnorm(const std::string& name, int x);  ///< inference: scale and shift per channel (dim 1)
  int layernorm(const std::string& name, int x, bool bias = true);  ///< over the last dim
  int softmax(const std::string& name, int x);  ///< over the last dim
  /// Reduction over axes (negative allowed); keepdims as in ONNX.
  int reduce(const std::string& name, std::string_view type, int x, std::vector<int64_t> axes, bool keepdims);
  int pool2d(const std::string& name, std::string_view type, int x, int64_t k, int64_t stride, int64_t pad);
  int pool2d_ex(const std::string& name, std::string_view type, int x, std::vector<int64_t> kernel,
                std::vector<int64_t> strides, std::vector<int64_t> pads, bool ceil_mode);
  int global_avg_pool(const std::string& name, int x);  ///< NCHW -> NC11

  // --- data movement ---
  int reshape(const std::string& name, int x, Shape shape);  ///< a view; one -1 allowed, 0 copies the input dim
  int transpose(const std::string& name, int x, std::vector<int64_t> perm, bool as_view = false);
  int concat(const std::string& name, const std::vector<int>& xs, int64_t axis);
  /// as_view: a strided view (PyTorch x[..., a:b]) rather than a copy.
  int slice(const std::string& name, int x, int64_t axis, int64_t start, int64_t end, int64_t step = 1,
            bool as_view = false);
  /// Embedding lookup: table [V, D], ids [...] -> [..., D]; only the gathered rows are read.
  int embedding(const std::string& name, int table, int ids);
  /// ONNX Gather on axis with an index tensor.
  int gather(const std::string& name, int x, int idx, int64_t axis);
  /// A materialising copy (contiguous(), clone()).
  int copy(const std::string& name, int x);

  const Tensor& tensor(int t) const { return g_.tensors.at(static_cast<std::size_t>(t)); }
  bool ok() const { return !err_.has_value(); }
  const std::optional<Error>& error() const { return err_; }
  void fail(const std::string& msg);
  int new_tensor(const std::string& name, Shape shape, DType dt);
  /// Adds an op with the given costs (for importers with ops outside the list above).
  int add_op(Op op);
  /// Marks the op that produced tensor t as an eager epilogue of its producer (Op::eager_epilogue).
  void mark_epilogue(int t);
  /// Records n framework module calls; they are charged to the next op that launches a
  /// kernel (Op::module_calls). Builders mirror the framework's module structure with it.
  void modules(double n) { pending_modules_ += n; }
  Graph& graph() { return g_; }
  DType dtype() const { return g_.dtype; }
  Result<Graph> finish();

 private:
  bool valid(int t) const;
  Graph g_;
  std::optional<Error> err_;
  double pending_modules_ = 0;
};

/// Numpy broadcasting of two shapes; nullopt when incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace jouleprof::estimate
