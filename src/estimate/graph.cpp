#include "jouleprof/estimate/graph.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace jouleprof::estimate {
namespace {
// Longest row a row-wise kernel keeps in registers (one warp, 32 values per lane: PyTorch's
// persistent softmax handles rows up to 1024 elements this way); longer rows are re-read.
constexpr int64_t kRegisterRow = 1024;
int64_t s_last(const Shape& s) { return s.empty() ? 1 : s.back(); }
}  // namespace

double dtype_bytes(DType t) {
  switch (t) {
    case DType::f32: case DType::tf32: case DType::i32: return 4;
    case DType::f16: case DType::bf16: return 2;
    case DType::fp8: case DType::i8: case DType::boolean: return 1;
    case DType::i64: return 8;
  }
  return 4;
}

const char* to_string(DType t) {
  switch (t) {
    case DType::f32: return "fp32";
    case DType::tf32: return "tf32";
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::fp8: return "fp8";
    case DType::i8: return "int8";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::boolean: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t : {DType::f32, DType::tf32, DType::f16, DType::bf16, DType::fp8, DType::i8, DType::i32, DType::i64,
                  DType::boolean}) {
    if (s == to_string(t)) return t;
  }
  if (s == "float32" || s == "f32") return DType::f32;
  if (s == "float16" || s == "half" || s == "f16") return DType::f16;
  if (s == "bfloat16") return DType::bf16;
  if (s == "int8" || s == "i8") return DType::i8;
  return std::nullopt;
}

const char* to_string(OpClass c) {
  switch (c) {
    case OpClass::matmul: return "matmul";
    case OpClass::conv: return "conv";
    case OpClass::attention: return "attention";
    case OpClass::elementwise: return "elementwise";
    case OpClass::normalization: return "normalization";
    case OpClass::softmax: return "softmax";
    case OpClass::reduction: return "reduction";
    case OpClass::pooling: return "pooling";
    case OpClass::data_movement: return "data_movement";
    case OpClass::view: return "view";
  }
  return "?";
}

std::string to_string(const Shape& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  }
  return n;
}

bool numel_fits(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return false;
  }
  return true;
}

int Graph::storage(int t) const {
  while (t >= 0 && tensors[static_cast<std::size_t>(t)].alias_of >= 0) t = tensors[static_cast<std::size_t>(t)].alias_of;
  return t;
}

double Graph::total_flops() const {
  double f = 0;
  for (const Op& o : ops) f += o.flops();
  return f;
}
double Graph::total_matrix_flops() const {
  double f = 0;
  for (const Op& o : ops) f += o.matrix_flops;
  return f;
}
double Graph::weight_bytes() const {
  double b = 0;
  for (const Tensor& t : tensors) {
    if (t.is_weight) b += t.bytes();
  }
  return b;
}
double Graph::unfused_bytes() const {
  double b = 0;
  for (const Op& o : ops) {
    if (o.cls == OpClass::view) continue;
    for (std::size_t i = 0; i < o.inputs.size(); ++i) b += tensors[static_cast<std::size_t>(o.inputs[i])].bytes() * o.input_fraction(i);
    for (int t : o.outputs) b += tensors[static_cast<std::size_t>(t)].bytes();
  }
  return b;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    r[i] = da == 1 ? db : da;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------

GraphBuilder::GraphBuilder(std::string name, DType dtype) {
  g_.name = std::move(name);
  g_.dtype = dtype;
}

void GraphBuilder::fail(const std::string& msg) {
  if (!err_) err_ = make_error(Errc::invalid_argument, msg);
}

bool GraphBuilder::valid(int t) const { return ok() && t >= 0 && static_cast<std::size_t>(t) < g_.tensors.size(); }

int GraphBuilder::new_tensor(const std::string& name, Shape shape, DType dt) {
  for (int64_t d : shape) {
    if (d <= 0) {
      fail("tensor '" + name + "' has a non-positive dimension " + to_string(shape));
      return -1;
    }
  }
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = dt;
  g_.tensors.push_back(std::move(t));
  return static_cast<int>(g_.tensors.size() - 1);
}

int GraphBuilder::input(const std::string& name, Shape shape, std::optional<DType> dt) {
  if (!ok()) return -1;
  const int t = new_tensor(name, std::move(shape), dt.value_or(g_.dtype));
  if (t >= 0) g_.inputs.push_back(t);
  return t;
}

int GraphBuilder::weight(const std::string& name, Shape shape, std::optional<DType> dt) {
  if (!ok()) return -1;
  const int t = new_tensor(name, std::move(shape), dt.value_or(g_.dtype));
  if (t >= 0) g_.tensors[static_cast<std::size_t>(t)].is_weight = true;
  return t;
}

void GraphBuilder::output(int t) {
  if (valid(t)) g_.outputs.push_back(t);
}

int GraphBuilder::add_op(Op op) {
  if (!ok()) return -1;
  for (int t : op.inputs) {
    if (!valid(t)) {
      fail("op '" + op.name + "' has an invalid input");
      return -1;
    }
  }
  const int id = static_cast<int>(g_.ops.size());
  for (int t : op.inputs) {
    auto& c = g_.tensors[static_cast<std::size_t>(t)].consumers;
    if (std::find(c.begin(), c.end(), id) == c.end()) c.push_back(id);
  }
  for (int t : op.outputs) g_.tensors[static_cast<std::size_t>(t)].producer = id;
  if (op.cls == OpClass::view) {
    op.kernels = 0;
  } else {
    op.module_calls += pending_modules_;
    pending_modules_ = 0;
  }
  g_.ops.push_back(std::move(op));
  return id;
}

void GraphBuilder::mark_epilogue(int t) {
  if (!valid(t)) return;
  const int p = g_.tensors[static_cast<std::size_t>(t)].producer;
  if (p >= 0) g_.ops[static_cast<std::size_t>(p)].eager_epilogue = true;
}

namespace {
Op make_op(const std::string& name, std::string_view type, OpClass cls, std::vector<int> in, int out) {
  Op o;
  o.name = name;
  o.type = std::string(type);
  o.cls = cls;
  o.inputs = std::move(in);
  o.outputs = {out};
  return o;
}
}  // namespace

int GraphBuilder::matmul(const std::string& name, int a, int b, std::string_view type) {
  if (!valid(a) || !valid(b)) return -1;
  Shape sa = tensor(a).shape, sb = tensor(b).shape;
  if (sa.empty() || sb.empty()) {
    fail(name + ": MatMul of a scalar");
    return -1;
  }
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  const int64_t M = sa[sa.size() - 2], K = sa.back(), K2 = sb[sb.size() - 2], N = sb.back();
  if (K != K2) {
    fail(name + ": MatMul inner dimensions differ: " + to_string(tensor(a).shape) + " x " + to_string(tensor(b).shape));
    return -1;
  }
  auto batch = broadcast_shapes(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
  if (!batch) {
    fail(name + ": MatMul batch dimensions do not broadcast: " + to_string(sa) + " x " + to_string(sb));
    return -1;
  }
  Shape out = *batch;
  if (!a_vec) out.push_back(M);
  if (!b_vec) out.push_back(N);
  const int o = new_tensor(name + ".out", out, g_.dtype);
  if (o < 0) return -1;
  Op op = make_op(name, type, OpClass::matmul, {a, b}, o);
  op.gemm_batch = numel(*batch);
  op.gemm_m = M;
  op.gemm_n = N;
  op.gemm_k = K;
  op.matrix_flops = 2.0 * static_cast<double>(op.gemm_batch) * static_cast<double>(M) * static_cast<double>(N) *
                    static_cast<double>(K);
  // A weight operand broadcast over the batch is read once, not once per batch entry.
  add_op(std::move(op));
  return o;
}

int GraphBuilder::linear(const std::string& name, int x, int64_t out_features, bool bias) {
  if (!valid(x)) return -1;
  const int w = weight(name + ".weight", {tensor(x).shape.back(), out_features});
  int y = matmul(name, x, w, "Gemm");
  if (bias && y >= 0) {
    const int b = weight(name + ".bias", {out_features});
    y = binary(name + ".bias_add", "Add", y, b);
    mark_epilogue(y);  // F.linear with bias is one addmm (cuBLASLt bias epilogue)
  }
  return y;
}

int GraphBuilder::conv2d(const std::string& name, int x, int64_t out_ch, int64_t kh, int64_t kw, int64_t stride,
                         int64_t pad, int64_t groups, bool bias, int64_t dilation) {
  if (!valid(x)) return -1;
  if (tensor(x).shape.size() != 4) {
    fail(name + ": Conv expects NCHW input, got " + to_string(tensor(x).shape));
    return -1;
  }
  const int64_t cin = tensor(x).shape[1];
  if (groups <= 0 || cin % groups != 0 || out_ch % groups != 0) {
    fail(name + ": Conv groups " + std::to_string(groups) + " do not divide the channels");
    return -1;
  }
  const int w = weight(name + ".weight", {out_ch, cin / groups, kh, kw});
  const int b = bias ? weight(name + ".bias", {out_ch}) : -1;
  return conv2d_w(name, x, w, b, {stride, stride}, {pad, pad, pad, pad}, {dilation, dilation}, groups);
}

int GraphBuilder::conv2d_w(const std::string& name, int x, int w, int b, std::vector<int64_t> strides,
                           std::vector<int64_t> pads, std::vector<int64_t> dil, int64_t groups) {
  if (!valid(x) || !valid(w)) return -1;
  const Shape xs = tensor(x).shape;
  const Shape ws = tensor(w).shape;
  if (xs.size() != 4 || ws.size() != 4) {
    fail(name + ": only 2-D convolutions (NCHW) are supported, got input " + to_string(xs));
    return -1;
  }
  if (strides.size() != 2 || pads.size() != 4 || dil.size() != 2 || groups <= 0) {
    fail(name + ": bad Conv attributes");
    return -1;
  }
  const int64_t n = xs[0], cin = xs[1], h = xs[2], wd = xs[3];
  const int64_t cout = ws[0], kh = ws[2], kw = ws[3];
  if (ws[1] * groups != cin) {
    fail(name + ": Conv weight " + to_string(ws) + " does not match input channels " + std::to_string(cin) + " / groups " +
         std::to_string(groups));
    return -1;
  }
  if (strides[0] <= 0 || strides[1] <= 0 || dil[0] <= 0 || dil[1] <= 0) {
    fail(name + ": Conv strides and dilations must be positive");
    return -1;
  }
  const int64_t ho = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) / strides[0] + 1;
  const int64_t wo = (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) / strides[1] + 1;
  const int o = new_tensor(name + ".out", {n, cout, ho, wo}, g_.dtype);
  if (o < 0) return -1;
  std::vector<int> in{x, w};
  if (b >= 0) in.push_back(b);
  Op op = make_op(name, "Conv", OpClass::conv, in, o);
  const double macs = static_cast<double>(n * cout * ho * wo) * static_cast<double>(ws[1] * kh * kw);
  if (ws[1] == 1 && groups > 1) {
    op.vector_flops = 2 * macs;  // depthwise: no reduction dimension worth a matrix unit
  } else {
    op.matrix_flops = 2 * macs;
    op.gemm_batch = groups;
    op.gemm_m = n * ho * wo;
    op.gemm_n = cout / groups;
    op.gemm_k = ws[1] * kh * kw;
  }
  if (b >= 0) op.vector_flops += static_cast<double>(numel(tensor(o).shape));
  add_op(std::move(op));
  return o;
}

int GraphBuilder::attention(const std::string& name, int q, int k, int v, bool causal) {
  if (!valid(q) || !valid(k) || !valid(v)) return -1;
  const Shape qs = tensor(q).shape, ks = tensor(k).shape, vs = tensor(v).shape;  // copies: new tensors reallocate
  if (qs.size() != 4 || ks.size() != 4 || vs != ks || qs[0] != ks[0] || qs[3] != ks[3] || ks[1] <= 0 ||
      qs[1] % ks[1] != 0) {
    fail(name + ": attention expects q [B,H,Sq,D], k/v [B,Hkv,Skv,D], got " + to_string(qs) + " " + to_string(ks) + " " +
         to_string(vs));
    return -1;
  }
  const double B = static_cast<double>(qs[0]), H = static_cast<double>(qs[1]), Sq = static_cast<double>(qs[2]),
               Skv = static_cast<double>(ks[2]), D = static_cast<double>(qs[3]);
  // Query i (aligned to the end of the keys) sees Skv - Sq + i + 1 keys when causal.
  const double pairs = causal && Skv >= Sq ? Sq * (Skv - Sq) + Sq * (Sq + 1) / 2 : Sq * Skv;
  const int o = new_tensor(name + ".out", qs, g_.dtype);
  if (o < 0) return -1;
  Op op = make_op(name, "Attention", OpClass::attention, {q, k, v}, o);
  op.matrix_flops = 4.0 * B * H * pairs * D;
  op.vector_flops = 5.0 * B * H * pairs;  // scale, max, subtract, exp, sum per score
  op.transcendentals = B * H * pairs;
  op.gemm_batch = qs[0] * qs[1];
  op.gemm_m = qs[2];
  op.gemm_n = ks[2];
  op.gemm_k = qs[3];
  add_op(std::move(op));
  return o;
}

int GraphBuilder::unary(const std::string& name, std::string_view type, int x, double flops_per_elem, double transc) {
  if (!valid(x)) return -1;
  const int o = new_tensor(name + ".out", tensor(x).shape, tensor(x).dtype);
  if (o < 0) return -1;
  Op op = make_op(name, type, OpClass::elementwise, {x}, o);
  const double n = static_cast<double>(numel(tensor(x).shape));
  op.vector_flops = n * flops_per_elem;
  op.transcendentals = n * transc;
  add_op(std::move(op));
  return o;
}

int GraphBuilder::binary(const std::string& name, std::string_view type, int a, int b) {
  if (!valid(a) || !valid(b)) return -1;
  auto s = broadcast_shapes(tensor(a).shape, tensor(b).shape);
  if (!s) {
    fail(name + ": shapes do not broadcast: " + to_string(tensor(a).shape) + " and " + to_string(tensor(b).shape));
    return -1;
  }
  const DType dt = tensor(a).is_weight ? tensor(b).dtype : tensor(a).dtype;
  const int o = new_tensor(name + ".out", *s, dt);
  if (o < 0) return -1;
  Op op = make_op(name, type, OpClass::elementwise, {a, b}, o);
  op.vector_flops = static_cast<double>(numel(*s));
  if (type == "Pow" || type == "Div") op.transcendentals = type == "Pow" ? static_cast<double>(numel(*s)) : 0;
  add_op(std::move(op));
  return o;
}

int GraphBuilder::cast(const std::string& name, int x, DType to) {
  if (!valid(x)) return -1;
  const int o = new_tensor(name + ".out", tensor(x).shape, to);
  if (o < 0) return -1;
  Op op = make_op(name, "Cast", OpClass::elementwise, {x}, o);
  op.vector_flops = static_cast<double>(numel(tensor(x).shape));
  add_op(std::move(op));
  return o;
}

int GraphBuilder::batchnorm(const std::string& name, int x) {
  if (!valid(x)) return -1;
  const Shape s = tensor(x).shape;
  if (s.size() < 2) {
    fail(name + ": BatchNormalization needs a channel dimension, got " + to_string(s));
    return -1;
  }
  const int scale = weight(name + ".scale", {s[1]});
  const int shift = weight(name + ".shift", {s[1]});
  const int o = new_tensor(name + ".out", s, tensor(x).dtype);
  if (o < 0) return -1;
  Op op = make_op(name, "BatchNormalization", OpClass::normalization, {x, scale, shift}, o);
  op.vector_flops = 2.0 * static_cast<double>(numel(s));
  add_op(std::move(op));
  return o;
}

int GraphBuilder::layernorm(const std::string& name, int x, bool bias) {
  if (!valid(x)) return -1;
  const Shape s = tensor(x).shape;
  std::vector<int> in{x, weight(name + ".weight", {s.back()})};
  if (bias) in.push_back(weight(name + ".bias", {s.back()}));
  const int o = new_tensor(name + ".out", s, tensor(x).dtype);
  if (o < 0) return -1;
  Op op = make_op(name, "LayerNormalization", OpClass::normalization, in, o);
  const double n = static_cast<double>(numel(s));
  op.vector_flops = 8.0 * n;  // mean, variance (2), subtract, scale by rstd, affine (2) + rounding
  op.transcendentals = n / static_cast<double>(s.back());  // one rsqrt per row
  // Statistics (Welford) pass, then a normalize pass that reads the row again.
  op.row_passes = s.back() > kRegisterRow ? 2 : 1;
  add_op(std::move(op));
  return o;
}

int GraphBuilder::softmax(const std::string& name, int x) {
  if (!valid(x)) return -1;
  const int o = new_tensor(name + ".out", tensor(x).shape, tensor(x).dtype);
  if (o < 0) return -1;
  Op op = make_op(name, "Softmax", OpClass::softmax, {x}, o);
  const double n = static_cast<double>(numel(tensor(x).shape));
  op.vector_flops = 5.0 * n;  // max, subtract, exp, sum, divide
  op.transcendentals = n;
  // Rows longer than one warp's registers hold (PyTorch: > 1024 elements) are swept three
  // times: row maximum, sum of exponentials, normalize-and-write.
  op.row_passes = s_last(tensor(x).shape) > kRegisterRow ? 3 : 1;
  add_op(std::move(op));
  return o;
}

int GraphBuilder::reduce(const std::string& name, std::string_view type, int x, std::vector<int64_t> axes,
                         bool keepdims) {
  if (!valid(x)) return -1;
  const Shape s = tensor(x).shape;
  const auto rank = static_cast<int64_t>(s.size());
  std::vector<bool> red(s.size(), axes.empty());
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      fail(name + ": reduce axis " + std::to_string(a) + " out of range for " + to_string(s));
      return -1;
    }
    red[static_cast<std::size_t>(a < 0 ? a + rank : a)] = true;
  }
  Shape out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!red[i]) out.push_back(s[i]);
    else if (keepdims) out.push_back(1);
  }
  const int o = new_tensor(name + ".out", out, tensor(x).dtype);
  if (o < 0) return -1;
  Op op = make_op(name, type, OpClass::reduction, {x}, o);
  op.vector_flops = static_cast<double>(numel(s));
  add_op(std::move(op));
  return o;
}

int GraphBuilder::pool2d(const std::string& name, std::string_view type, int x, int64_t k, int64_t stride, int64_t pad) {
  return pool2d_ex(name, type, x, {k, k}, {stride, stride}, {pad, pad, pad, pad}, false);
}

int GraphBuilder::pool2d_ex(const std::string& name, std::string_view type, int x, std::vector<int64_t> kernel,
                            std::vector<int64_t> strides, std::vector<int64_t> pads, bool ceil_mode) {
  if (!valid(x)) return -1;
  const Shape s = tensor(x).shape;
  if (s.size() != 4 || kernel.size() != 2 || strides.size() != 2 || pads.size() != 4 || strides[0] <= 0 ||
      strides[1] <= 0) {
    fail(name + ": only 2-D pooling on NCHW is supported, got " + to_string(s));
    return -1;
  }
  auto outdim = [&](int64_t in, int64_t k, int64_t st, int64_t p0, int64_t p1) {
    const int64_t num = in + p0 + p1 - k;
    return (ceil_mode ? (num + st - 1) / st : num / st) + 1;
  };
  const Shape out{s[0], s[1], outdim(s[2], kernel[0], strides[0], pads[0], pads[2]),
                  outdim(s[3], kernel[1], strides[1], pads[1], pads[3])};
  const int o = new_tensor(name + ".out", out, tensor(x).dtype);
  if (o < 0) return -1;
  Op op = make_op(name, type, OpClass::pooling, {x}, o);
  op.vector_flops = static_cast<double>(numel(out) * kernel[0] * kernel[1]);
  add_op(std::move(op));
  return o;
}

int GraphBuilder::global_avg_pool(const std::string& name, int x) {
  if (!valid(x)) return -1;
  if (tensor(x).shape.size() != 4) {
    fail(name + ": GlobalAveragePool expects NCHW, got " + to_string(tensor(x).shape));
    return -1;
  }
  const int o = reduce(name, "GlobalAveragePool", x, {2, 3}, true);
  return o;
}

int GraphBuilder::reshape(const std::string& name, int x, Shape shape) {
  if (!valid(x)) return -1;
  const Shape s = tensor(x).shape;
  int infer = -1;
  int64_t known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      if (i >= s.size()) {
        fail(name + ": Reshape copies dimension " + std::to_string(i) + " that the input " + to_string(s) + " lacks");
        return -1;
      }
      shape[i] = s[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) {
        fail(name + ": Reshape with two -1 dimensions");
        return -1;
      }
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      fail(name + ": Reshape to a negative dimension " + to_string(shape));
      return -1;
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel(s) % known != 0) {
      fail(name + ": cannot reshape " + to_string(s) + " to " + to_string(shape));
      return -1;
    }
    shape[static_cast<std::size_t>(infer)] = numel(s) / known;
  }
  if (numel(shape) != numel(s)) {
    fail(name + ": cannot reshape " + to_string(s) + " to " + to_string(shape));
    return -1;
  }
  const int o = new_tensor(name + ".out", shape, tensor(x).dtype);
  if (o < 0) return -1;
  g_.tensors[static_cast<std::size_t>(o)].alias_of = x;
  add_op(make_op(name, "Reshape", OpClass::view, {x}, o));
  return o;
}

int GraphBuilder::transpose(const std::string& name, int x, std::vector<int64_t> perm, bool as_view) {
  if (!valid(x)) return -1;
  const Shape s = tensor(x).shape;
  if (perm.empty()) {
    for (std::size_t i = 0; i < s.size(); ++i) perm.push_back(static_cast<int64_t>(s.size() - 1 - i));
  }
  if (perm.size() != s.size()) {
    fail(name + ": Transpose perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(s.size()));
    return -1;
  }
  Shape out;
  std::vector<bool> seen(s.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(s.size()) || seen[static_cast<std::size_t>(p)]) {
      fail(name + ": Transpose perm is not a permutation");
      return -1;
    }
    seen[static_cast<std::size_t>(p)] = true;
    out.push_back(s[static_cast<std::size_t>(p)]);
  }
  const int o = new_tensor(name + ".out", out, tensor(x).dtype);
  if (o < 0) return -1;
  if (as_view) g_.tensors[static_cast<std::size_t>(o)].alias_of = x;
  add_op(make_op(name, "Transpose", as_view ? OpClass::view : OpClass::data_movement, {x}, o));
  return o;
}

int GraphBuilder::concat(const std::string& name, const std::vector<int>& xs, int64_t axis) {
  if (xs.empty()) {
    fail(name + ": Concat of nothing");
    return -1;
  }
  for (int x : xs) {
    if (!valid(x)) return -1;
  }
  Shape out = tensor(xs[0]).shape;
  const auto rank = static_cast<int64_t>(out.size());
  if (axis < -rank || axis >= rank) {
    fail(name + ": Concat axis " + std::to_string(axis) + " out of range");
    return -1;
  }
  const auto ax = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  out[ax] = 0;
  for (int x : xs) {
    const Shape s = tensor(x).shape;
    for (std::size_t i = 0; i < s.size() && s.size() == out.size(); ++i) {
      if (i != ax && s[i] != out[i]) {
        fail(name + ": Concat inputs differ outside the axis: " + to_string(s));
        return -1;
      }
    }
    if (s.size() != out.size()) {
      fail(name + ": Concat inputs of different rank");
      return -1;
    }
    out[ax] += s[ax];
  }
  const int o = new_tensor(name + ".out", out, tensor(xs[0]).dtype);
  if (o < 0) return -1;
  add_op(make_op(name, "Concat", OpClass::data_movement, xs, o));
  return o;
}

int GraphBuilder::slice(const std::string& name, int x, int64_t axis, int64_t start, int64_t end, int64_t step,
                        bool as_view) {
  if (!valid(x)) return -1;
  Shape s = tensor(x).shape;
  const auto rank = static_cast<int64_t>(s.size());
  if (axis < -rank || axis >= rank || step <= 0) {
    fail(name + ": bad Slice axis/step");
    return -1;
  }
  const auto ax = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  const int64_t d = s[ax];
  auto clampi = [d](int64_t v) { return std::clamp(v < 0 ? v + d : v, int64_t{0}, d); };
  const int64_t b = clampi(start), e = clampi(end);
  const int64_t len = e > b ? (e - b + step - 1) / step : 0;
  if (len <= 0) {
    fail(name + ": Slice is empty");
    return -1;
  }
  s[ax] = len;
  const int o = new_tensor(name + ".out", s, tensor(x).dtype);
  if (o < 0) return -1;
  if (as_view) g_.tensors[static_cast<std::size_t>(o)].alias_of = x;
  Op op = make_op(name, "Slice", as_view ? OpClass::view : OpClass::data_movement, {x}, o);
  op.read_fraction = {static_cast<double>(len) / static_cast<double>(d)};
  add_op(std::move(op));
  return o;
}

int GraphBuilder::embedding(const std::string& name, int table, int ids) {
  return gather(name, table, ids, 0);
}

int GraphBuilder::gather(const std::string& name, int x, int idx, int64_t axis) {
  if (!valid(x) || !valid(idx)) return -1;
  const Shape s = tensor(x).shape;
  const auto rank = static_cast<int64_t>(s.size());
  if (axis < -rank || axis >= rank) {
    fail(name + ": Gather axis out of range");
    return -1;
  }
  const auto ax = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  Shape out(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(ax));
  for (int64_t d : tensor(idx).shape) out.push_back(d);
  out.insert(out.end(), s.begin() + static_cast<std::ptrdiff_t>(ax) + 1, s.end());
  const int o = new_tensor(name + ".out", out.empty() ? Shape{1} : out, tensor(x).dtype);
  if (o < 0) return -1;
  Op op = make_op(name, "Gather", OpClass::data_movement, {x, idx}, o);
  op.read_fraction = {std::min(1.0, static_cast<double>(numel(tensor(o).shape)) / static_cast<double>(numel(s))), 1.0};
  add_op(std::move(op));
  return o;
}

int GraphBuilder::copy(const std::string& name, int x) {
  if (!valid(x)) return -1;
  const int o = new_tensor(name + ".out", tensor(x).shape, tensor(x).dtype);
  if (o < 0) return -1;
  add_op(make_op(name, "Copy", OpClass::data_movement, {x}, o));
  return o;
}

Result<Graph> GraphBuilder::finish() {
  if (err_) return *err_;
  if (g_.outputs.empty() && !g_.ops.empty()) g_.outputs.push_back(g_.ops.back().outputs.front());
  return std::move(g_);
}

}  // namespace jouleprof::estimate
