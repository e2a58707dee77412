// Shapes of the replay tiers read from the op that launched a kernel: the shared readers of the
// profiler's record_shapes fields, and the convolution tier (cuDNN's forward convolution from the
// op's input sizes, strides, dtype and its concrete stride/padding/dilation/groups), and the
// batch-norm tier (cuDNN's inference batch normalization from x's sizes, strides and dtype).
#include "tier_shapes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace jouleprof {
namespace replay_detail {

Dims parse_dims(const std::string& text) {
  Dims out;
  if (text.empty()) return out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& d : j) {
    std::vector<int64_t> v;
    if (d.is_array()) {
      for (const auto& x : d) {
        if (x.is_number_integer()) v.push_back(x.get<int64_t>());
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<std::string> parse_types(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& t : j) out.push_back(t.is_string() ? t.get<std::string>() : "");
  return out;
}

std::string dtype_of(const std::string& t) {
  if (t == "c10::BFloat16") return "bf16";
  if (t == "c10::Half") return "fp16";
  if (t == "float") return "fp32";
  if (t == "double") return "fp64";
  if (t == "c10::Float8_e4m3fn" || t == "c10::Float8_e4m3fnuz") return "fp8e4m3";
  if (t == "c10::Float8_e5m2" || t == "c10::Float8_e5m2fnuz") return "fp8e5m2";
  if (t == "signed char" || t == "int8") return "int8";
  if (t == "unsigned char" || t == "bool") return "u8";
  if (t == "int") return "int32";
  if (t == "long int" || t == "long") return "int64";
  if (t == "short int") return "int16";
  return "";
}

int elem_size(const std::string& t) {
  const std::string d = dtype_of(t);
  if (d == "bf16" || d == "fp16" || d == "int16") return 2;
  if (d == "fp32" || d == "int32") return 4;
  if (d == "fp64" || d == "int64") return 8;
  if (d == "fp8e4m3" || d == "fp8e5m2" || d == "int8" || d == "u8") return 1;
  return 0;
}

uint64_t numel(const std::vector<int64_t>& d) {
  uint64_t n = 1;
  for (int64_t x : d) n *= static_cast<uint64_t>(std::max<int64_t>(x, 0));
  return n;
}

namespace {

// Where a convolution op keeps its arguments (PyTorch's native_functions.yaml schemas); -1: absent.
struct ConvArgs {
  int stride, padding, dilation, transposed, groups, allow_tf32;
};

std::optional<ConvArgs> conv_args(const std::string& op) {
  // cudnn_convolution(self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
  if (op == "aten::cudnn_convolution") return ConvArgs{3, 2, 4, -1, 5, 8};
  // convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  // _convolution adds benchmark, deterministic, cudnn_enabled, allow_tf32
  if (op == "aten::convolution") return ConvArgs{3, 4, 5, 6, 8, -1};
  if (op == "aten::_convolution") return ConvArgs{3, 4, 5, 6, 8, 12};
  // conv{1,2,3}d(input, weight, bias, stride, padding, dilation, groups); cudnn_convolution_relu the same
  if (op == "aten::conv1d" || op == "aten::conv2d" || op == "aten::conv3d" || op == "aten::cudnn_convolution_relu") {
    return ConvArgs{3, 4, 5, -1, 6, -1};
  }
  return std::nullopt;
}

// One "Concrete Inputs" entry: "[2, 2]", "1", "True" (strings), or a number/array where a
// profiler writes those. Nullopt when absent or not integers.
// The op's concrete inputs (the profiler's "Concrete Inputs"): a JSON array, discarded (not an
// array) when the trace has none or they do not parse.
nlohmann::json concrete_inputs(const KernelRow& r) {
  return nlohmann::json::parse(r.input_concrete.empty() ? "[]" : r.input_concrete, nullptr, false);
}

std::optional<std::vector<int64_t>> concrete_ints(const nlohmann::json& c, int i) {
  if (i < 0 || !c.is_array() || static_cast<std::size_t>(i) >= c.size()) return std::nullopt;
  nlohmann::json v = c[static_cast<std::size_t>(i)];
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "True" || s == "true") return std::vector<int64_t>{1};
    if (s == "False" || s == "false") return std::vector<int64_t>{0};
    v = nlohmann::json::parse(s, nullptr, false);
  }
  if (v.is_number_integer()) return std::vector<int64_t>{v.get<int64_t>()};
  if (!v.is_array()) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto& x : v) {
    if (!x.is_number_integer()) return std::nullopt;
    out.push_back(x.get<int64_t>());
  }
  return out;
}

// A list argument per spatial dimension (PyTorch expands a one-element list to all of them).
bool spatial_list(const nlohmann::json& c, int i, int spatial, const char* what, std::vector<int64_t>& out, std::string& why) {
  auto v = concrete_ints(c, i);
  if (!v) {
    why = fmt::format("the op's {} is not in its concrete inputs (record_shapes with PyTorch >= 2.1 records them)", what);
    return false;
  }
  if (v->size() == 1) v->assign(static_cast<std::size_t>(spatial), (*v)[0]);
  if (static_cast<int>(v->size()) != spatial) {
    why = fmt::format("the op's {} has {} values for {} spatial dimensions", what, v->size(), spatial);
    return false;
  }
  out = *v;
  return true;
}

// Channels-last when the channel stride is 1 and the last spatial stride is C (packed NHWC/NDHWC);
// a 1x1 NCHW tensor (strides C,1,1,1) is not.
bool is_channels_last(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  if (strides.size() != dims.size() || dims.size() < 3 || dims[1] <= 1) return false;
  return strides[1] == 1 && strides.back() == dims[1];
}

// The first input's dtype where cuDNN takes it (bf16, fp16, fp32, fp64); false and `why` otherwise.
bool cudnn_dtype(const std::vector<std::string>& ty, std::string& dtype, std::string& why) {
  dtype = ty.empty() ? std::string() : dtype_of(ty[0]);
  if (dtype == "bf16" || dtype == "fp16" || dtype == "fp32" || dtype == "fp64") return true;
  why = "dtype " + (ty.empty() || ty[0].empty() ? std::string("unknown") : ty[0]) + " is not replayed through cuDNN (bf16, fp16, fp32, fp64 are)";
  return false;
}

// Sizes, layout and dtype of the input and weight tensors.
bool conv_tensors(const KernelRow& r, ConvShape& c, std::string& why) {
  const Dims d = parse_dims(r.input_dims);
  const Dims st = parse_dims(r.input_strides);
  const auto ty = parse_types(r.input_types);
  if (d.size() < 2 || d[0].size() < 3 || d[0].size() > 5 || d[1].size() != d[0].size()) {
    why = "the op's input/weight shapes are missing or not 3- to 5-dimensional";
    return false;
  }
  c.input = d[0];
  c.weight = d[1];
  const bool in_cl = st.size() > 0 && is_channels_last(d[0], st[0]);
  const bool w_cl = st.size() > 1 && is_channels_last(d[1], st[1]);
  c.channels_last = in_cl || w_cl;  // PyTorch's cudnn_conv_suggest_memory_format
  return cudnn_dtype(ty, c.dtype, why);
}

}  // namespace

std::optional<ConvShape> conv_shape(const KernelRow& r, std::string& why) {
  const auto args = conv_args(r.op);
  if (!args) {
    why = "the op " + (r.op.empty() ? std::string("(none)") : r.op) + " is not a convolution op the replay reads";
    return std::nullopt;
  }
  ConvShape c;
  if (!conv_tensors(r, c, why)) return std::nullopt;
  const int sp = c.spatial();
  const nlohmann::json concrete = concrete_inputs(r);
  if (const auto t = concrete_ints(concrete, args->transposed); t && !t->empty() && (*t)[0] != 0) {
    why = "a transposed convolution is not replayed through cuDNN (forward convolutions are)";
    return std::nullopt;
  }
  if (!spatial_list(concrete, args->stride, sp, "stride", c.stride, why) || !spatial_list(concrete, args->padding, sp, "padding", c.padding, why) ||
      !spatial_list(concrete, args->dilation, sp, "dilation", c.dilation, why)) {
    return std::nullopt;
  }
  const auto g = concrete_ints(concrete, args->groups);
  if (!g || g->size() != 1) {
    why = "the op's groups is not in its concrete inputs";
    return std::nullopt;
  }
  c.groups = (*g)[0];
  if (const auto tf32 = concrete_ints(concrete, args->allow_tf32); tf32 && tf32->size() == 1) c.allow_tf32 = (*tf32)[0] != 0;
  const int64_t n = c.input[0], ch = c.input[1], k = c.weight[0];
  if (n <= 0 || ch <= 0 || k <= 0 || c.groups <= 0 || ch % c.groups != 0 || c.weight[1] * c.groups != ch || k % c.groups != 0) {
    why = fmt::format("input channels {}, weight {}x{} and groups {} do not make a convolution", ch, k, c.weight[1], c.groups);
    return std::nullopt;
  }
  c.output = {n, k};
  for (int i = 0; i < sp; ++i) {
    const auto s = static_cast<std::size_t>(i);
    const int64_t in = c.input[s + 2], ks = c.weight[s + 2];
    if (c.stride[s] <= 0 || c.dilation[s] <= 0 || c.padding[s] < 0 || in <= 0 || ks <= 0) {
      why = "the op's sizes, stride, padding or dilation hold a non-positive value";
      return std::nullopt;
    }
    const int64_t span = in + 2 * c.padding[s] - c.dilation[s] * (ks - 1) - 1;  // < 0: the kernel does not fit once
    const int64_t out = span < 0 ? 0 : span / c.stride[s] + 1;
    if (out <= 0) {
      why = fmt::format("spatial dimension {} gives no output ({} wide, kernel {}, padding {})", i, in, ks, c.padding[s]);
      return std::nullopt;
    }
    c.output.push_back(out);
  }
  return c;
}

namespace {

// Where a batch-norm op keeps its `training` flag (native_functions.yaml): cudnn_batch_norm,
// native_batch_norm and batch_norm(input, weight, bias, running_mean, running_var, training, ...);
// _native_batch_norm_legit_no_training has none (always inference). Nullopt: not a BN op we read.
std::optional<int> bn_training_arg(const std::string& op) {
  if (op == "aten::cudnn_batch_norm" || op == "aten::native_batch_norm" || op == "aten::batch_norm") return 5;
  if (op == "aten::_native_batch_norm_legit_no_training") return -1;
  return std::nullopt;
}

// Training or inference: the op's concrete `training`, else cuDNN's kernel name (bn_fw_inf_* /
// bn_fw_tr_*); nullopt when neither says.
std::optional<bool> bn_training(const KernelRow& r, int arg) {
  if (arg < 0) return false;
  const nlohmann::json concrete = concrete_inputs(r);
  if (const auto t = concrete_ints(concrete, arg); t && t->size() == 1) return (*t)[0] != 0;
  if (r.name.find("bn_fw_inf") != std::string::npos) return false;
  if (r.name.find("bn_fw_tr") != std::string::npos) return true;
  return std::nullopt;
}

}  // namespace

std::optional<BatchNormShape> batchnorm_shape(const KernelRow& r, std::string& why) {
  const auto arg = bn_training_arg(r.op);
  if (!arg) {
    why = "the op " + (r.op.empty() ? std::string("(none)") : r.op) + " is not a batch-norm op the replay reads";
    return std::nullopt;
  }
  const auto training = bn_training(r, *arg);
  if (!training) {
    why = "the op's training flag is neither in its concrete inputs nor in the kernel's name";
    return std::nullopt;
  }
  if (*training) {
    why = "a training batch norm is not replayed through cuDNN (inference is)";
    return std::nullopt;
  }
  const Dims d = parse_dims(r.input_dims);
  const Dims st = parse_dims(r.input_strides);
  const auto ty = parse_types(r.input_types);
  if (d.empty() || d[0].size() < 2 || d[0].size() > 5) {
    why = "the op's input shape is missing or not 2- to 5-dimensional";
    return std::nullopt;
  }
  BatchNormShape b;
  b.input = d[0];
  for (int64_t x : b.input) {
    if (x <= 0) {
      why = "the op's input has an empty dimension";
      return std::nullopt;
    }
  }
  b.channels_last = !st.empty() && is_channels_last(d[0], st[0]);
  if (!cudnn_dtype(ty, b.dtype, why)) return std::nullopt;
  return b;
}

namespace {

// Where an attention op's concrete inputs hold is_causal, scale and its mask/bias tensor (PyTorch's
// schemas, native_functions.yaml); mask_type: _efficient_attention_forward's int custom_mask_type
// (0 none, 1 causal from the top left, 2 from the bottom right) in place of is_causal.
struct AttentionArgs {
  int causal, scale, mask;
  bool mask_type = false, bshd = false;
};

std::optional<AttentionArgs> attention_args(const std::string& op) {
  if (op == "aten::scaled_dot_product_attention") return AttentionArgs{5, 6, 3};
  if (op == "aten::_scaled_dot_product_flash_attention") return AttentionArgs{4, 6, -1};
  if (op == "aten::_scaled_dot_product_efficient_attention") return AttentionArgs{6, 7, 3};
  if (op == "aten::_scaled_dot_product_cudnn_attention") return AttentionArgs{6, 8, 3};
  if (op == "aten::_flash_attention_forward") return AttentionArgs{8, 10, -1, false, true};
  if (op == "aten::_efficient_attention_forward") return AttentionArgs{9, 11, 3, true, true};
  if (op == "aten::_cudnn_attention_forward") return AttentionArgs{10, 12, 3};
  return std::nullopt;
}

// A float concrete input ("0.125"); nullopt when absent (None: "") or not a number.
std::optional<double> concrete_number(const nlohmann::json& c, int i) {
  if (i < 0 || !c.is_array() || static_cast<std::size_t>(i) >= c.size()) return std::nullopt;
  nlohmann::json v = c[static_cast<std::size_t>(i)];
  if (v.is_string()) v = nlohmann::json::parse(v.get<std::string>(), nullptr, false);
  if (v.is_string() || !v.is_number()) return std::nullopt;
  return v.get<double>();
}

}  // namespace

std::optional<AttentionShape> attention_shape(const KernelRow& r, std::string& why) {
  const Dims d = parse_dims(r.input_dims);
  const auto ty = parse_types(r.input_types);
  if (d.size() < 3 || d[0].size() != 4 || d[1].size() != 4) {
    why = "the attention op's query/key shapes are missing";
    return std::nullopt;
  }
  const auto args = attention_args(r.op);
  AttentionShape a;
  // SDPA-family ops take query [B, H, S, D]; the flash/efficient forwards [B, S, H, D].
  const bool bshd = args && args->bshd;
  a.batch = d[0][0];
  a.heads_q = bshd ? d[0][2] : d[0][1];
  a.seq_q = bshd ? d[0][1] : d[0][2];
  a.heads_kv = bshd ? d[1][2] : d[1][1];
  a.seq_kv = bshd ? d[1][1] : d[1][2];
  a.head_dim = d[0][3];
  a.dtype = ty.empty() ? "bf16" : dtype_of(ty[0]);
  const nlohmann::json c = concrete_inputs(r);
  const auto flag = args ? concrete_ints(c, args->causal) : std::nullopt;
  if (flag && flag->size() == 1) {
    a.causal = args->mask_type ? (*flag)[0] == 1 || (*flag)[0] == 2 : (*flag)[0] != 0;
    a.causal_from = args->mask_type ? "custom_mask_type" : "is_causal";
  } else {
    a.causal = a.seq_q == a.seq_kv && a.seq_q > 1;
    a.causal_from = "guessed from seq_q == seq_kv";
  }
  if (args) a.scale = concrete_number(c, args->scale);
  a.masked = args && args->mask >= 0 && static_cast<std::size_t>(args->mask) < d.size() && !d[static_cast<std::size_t>(args->mask)].empty();
  if (a.batch <= 0 || a.heads_q <= 0 || a.heads_kv <= 0 || a.seq_q <= 0 || a.seq_kv <= 0 || a.head_dim <= 0) {
    why = "the attention op's shapes hold a non-positive dimension";
    return std::nullopt;
  }
  return a;
}

std::string attention_note(const KernelRow& r) {
  const AttentionShape& a = *r.attention;
  std::string n = "fused attention (" + (r.op.empty() ? std::string("by kernel name") : r.op) +
                  ") replayed through cuDNN's fused SDPA forward, else unfused (two batched cuBLASLt GEMMs and a memory pass over the "
                  "scores) where cuDNN refuses it: the engine's item says which ran; ";
  n += a.causal ? "causal" : "not causal";
  n += " (" + a.causal_from + "), scale " + (a.scale ? fmt::format("{:.6g} (the op's)", *a.scale) : std::string("1/sqrt(d)"));
  if (a.masked) n += "; the op's attention mask/bias is not replayed";
  return n;
}

}  // namespace replay_detail

namespace {

uint64_t conv_elem_size(const std::string& dtype) { return dtype == "fp64" ? 8 : dtype == "fp32" ? 4 : 2; }

}  // namespace

double ConvShape::flops() const {
  double f = 2.0 * static_cast<double>(replay_detail::numel(output));
  for (std::size_t i = 1; i < weight.size(); ++i) f *= static_cast<double>(weight[i]);  // C/groups · kernel
  return f;
}

uint64_t ConvShape::bytes_read() const { return (replay_detail::numel(input) + replay_detail::numel(weight)) * conv_elem_size(dtype); }
uint64_t ConvShape::bytes_written() const { return replay_detail::numel(output) * conv_elem_size(dtype); }

std::string conv_item_json(const KernelRow& r) {
  if (r.tier != "conv" || !r.conv) return "";
  const ConvShape& c = *r.conv;
  // bytes_read/bytes_written: what the engine's memory-bound fallback moves when cuDNN is missing.
  nlohmann::json j = {{"tier", "conv"},          {"input", c.input},         {"weight", c.weight},      {"output", c.output},
                      {"stride", c.stride}, {"padding", c.padding},     {"dilation", c.dilation},  {"groups", c.groups},
                      {"channels_last", c.channels_last}, {"allow_tf32", c.allow_tf32}, {"dtype", c.dtype},
                      {"bytes_read", r.bytes_read}, {"bytes_written", r.bytes_written}};
  return j.dump();
}

// x and y in the input's dtype; scale, bias, mean and variance in fp32 (fp64 for fp64 inputs), as
// PyTorch hands them to cuDNN.
uint64_t BatchNormShape::bytes_read() const {
  const auto c = static_cast<uint64_t>(std::max<int64_t>(channels(), 0));
  return replay_detail::numel(input) * conv_elem_size(dtype) + 4 * c * (dtype == "fp64" ? 8 : 4);
}
uint64_t BatchNormShape::bytes_written() const { return replay_detail::numel(input) * conv_elem_size(dtype); }

std::string batchnorm_item_json(const KernelRow& r) {
  if (r.tier != "batchnorm" || !r.batchnorm) return "";
  const BatchNormShape& b = *r.batchnorm;
  nlohmann::json j = {{"tier", "batchnorm"}, {"input", b.input}, {"channels_last", b.channels_last}, {"dtype", b.dtype},
                      {"bytes_read", r.bytes_read}, {"bytes_written", r.bytes_written}};
  return j.dump();
}

bool replays_op_call(const KernelRow& r) {
  return (r.tier == "gemm" && r.gemm) || (r.tier == "conv" && r.conv) || (r.tier == "batchnorm" && r.batchnorm) ||
         (r.tier == "attention" && r.attention);
}

}  // namespace jouleprof
