// cuDNN loaded at run time and one forward convolution planned and run through it (cudnn_conv.hpp).
#include "cudnn_conv.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>

#include "jouleprof/core/library.hpp"

namespace jouleprof::replay::cudnn {

std::string Api::describe(const char* call, Status s) const {
  const char* text = GetErrorString != nullptr ? GetErrorString(s) : nullptr;
  return fmt::format("{}: {} ({})", call, text != nullptr ? text : "cuDNN error", s);
}

std::shared_ptr<const Api> load(const std::string& library, std::string& error) {
  const OpenedLibrary lib = open_first_library(library_candidates(library, "JOULEPROF_CUDNN_LIB", {"libcudnn.so.9"}), RTLD_NOW | RTLD_LOCAL);
  if (lib.handle == nullptr) {
    error = "cannot load cuDNN (" + lib.tried + "): " + lib.why + "; set JOULEPROF_CUDNN_LIB to PyTorch's libcudnn.so.9";
    return nullptr;
  }
  auto api = std::make_shared<Api>();
  api->library = lib.name;
  api->handle = std::shared_ptr<void>(lib.handle, [](void* h) { dlclose(h); });
#define JP_CUDNN(member, ret, params, sym)                                 \
  api->member = reinterpret_cast<Api::member##_fn>(dlsym(lib.handle, #sym)); \
  if (api->member == nullptr && error.empty()) error = "cuDNN " + lib.name + " lacks " #sym " (cuDNN 8 or 9 is needed)";
#define JP_CUDNN_OPTIONAL(member, ret, params, sym) api->member = reinterpret_cast<Api::member##_fn>(dlsym(lib.handle, #sym));
#include "cudnn_entry_points.def"
#undef JP_CUDNN_OPTIONAL
#undef JP_CUDNN
  if (!error.empty()) return nullptr;
  return api;
}

Session::~Session() {
  if (handle_ != nullptr) api_->Destroy(handle_);
}

std::string Session::open(Stream stream) {
  if (tried_) return error_;
  tried_ = true;
  api_ = load("", error_);
  if (!api_) return error_;
  if (const Status st = api_->Create(&handle_); st != kSuccess) {
    handle_ = nullptr;
    return error_ = api_->describe("cudnnCreate", st);
  }
  if (const Status st = api_->SetStream(handle_, stream); st != kSuccess) return error_ = api_->describe("cudnnSetStream", st);
  return "";
}

std::string Session::version() const {
  if (!api_) return "";
  const size_t v = api_->GetVersion();  // cuDNN 9: major·10000 + minor·100 + patch
  return v >= 10000 ? fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100) : fmt::format("{}.{}.{}", v / 1000, v / 100 % 10, v % 100);
}

namespace detail {

int data_type(const std::string& d) {
  if (d == "fp32") return kFloat;
  if (d == "fp64") return kDouble;
  if (d == "fp16") return kHalf;
  if (d == "bf16") return kBfloat16;
  return -1;
}

size_t elem_bytes(const std::string& d) { return d == "fp64" ? 8 : d == "fp32" ? 4 : 2; }

// Packed strides of `dims` (N C spatial..) in NCHW order, or NHWC order when channels-last.
std::vector<int> packed_strides(const std::vector<int>& dims, bool channels_last) {
  std::vector<int> s(dims.size(), 1);
  if (!channels_last) {
    for (std::size_t i = dims.size() - 1; i-- > 0;) s[i] = s[i + 1] * dims[i + 1];
    return s;
  }
  s[1] = 1;
  int acc = dims[1];
  for (std::size_t i = dims.size() - 1; i >= 2; --i) {
    s[i] = acc;
    acc *= dims[i];
  }
  s[0] = acc;
  return s;
}

std::vector<int> ints(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

size_t count(const std::vector<int>& dims) {
  size_t n = 1;
  for (int d : dims) n *= static_cast<size_t>(std::max(d, 0));
  return n;
}

std::string stand_in(const std::string& tier, const std::string& failed, const std::string& why) {
  return tier + " " + failed + " (" + why + "): a memory-bound kernel moving the op's bytes stands in";
}

}  // namespace detail

using namespace detail;

void Conv::release() {
  if (s_ == nullptr || s_->api() == nullptr) return;
  const Api& a = *s_->api();
  if (x_ != nullptr) a.DestroyTensorDescriptor(x_);
  if (y_ != nullptr) a.DestroyTensorDescriptor(y_);
  if (w_ != nullptr) a.DestroyFilterDescriptor(w_);
  if (conv_ != nullptr) a.DestroyConvolutionDescriptor(conv_);
  x_ = y_ = nullptr;
  w_ = nullptr;
  conv_ = nullptr;
}

// The input, filter and convolution descriptors and the output descriptor of cuDNN's output size.
std::string Conv::describe(const Item& it) {
  const Api& a = *s_->api();
  const int dt = data_type(it.dtype);
  if (dt < 0) return "dtype " + it.dtype + " is not replayed through cuDNN (bf16, fp16, fp32, fp64 are)";
  std::vector<int> x = ints(it.conv_input), w = ints(it.conv_weight), pad = ints(it.conv_padding), stride = ints(it.conv_stride),
                   dil = ints(it.conv_dilation);
  const std::size_t sp = x.size() < 2 ? 0 : x.size() - 2;
  if (sp < 1 || sp > 3 || w.size() != x.size() || pad.size() != sp || stride.size() != sp || dil.size() != sp || it.groups < 1) {
    return "the conv item's sizes do not describe a 1- to 3-D convolution";
  }
  if (sp == 1) {  // cuDNN wants 4-D tensors: a 1-D convolution is a 2-D one of width 1, as PyTorch's
    x.push_back(1), w.push_back(1), pad.push_back(0), stride.push_back(1), dil.push_back(1);
  }
  const int nd = static_cast<int>(x.size());
  const Status st[] = {
      a.CreateTensorDescriptor(&x_),
      a.SetTensorNdDescriptor(x_, dt, nd, x.data(), packed_strides(x, it.channels_last).data()),
      a.CreateFilterDescriptor(&w_),
      a.SetFilterNdDescriptor(w_, dt, it.channels_last ? kNhwc : kNchw, nd, w.data()),
      a.CreateConvolutionDescriptor(&conv_),
      a.SetConvolutionNdDescriptor(conv_, nd - 2, pad.data(), stride.data(), dil.data(), kCrossCorrelation, dt == kDouble ? kDouble : kFloat),
      a.SetConvolutionGroupCount(conv_, static_cast<int>(it.groups))};
  const char* calls[] = {"cudnnCreateTensorDescriptor", "cudnnSetTensorNdDescriptor", "cudnnCreateFilterDescriptor", "cudnnSetFilterNdDescriptor",
                         "cudnnCreateConvolutionDescriptor", "cudnnSetConvolutionNdDescriptor", "cudnnSetConvolutionGroupCount"};
  for (std::size_t i = 0; i < std::size(st); ++i) {
    if (st[i] != kSuccess) return a.describe(calls[i], st[i]);
  }
  std::vector<int> y(x.size());
  if (const Status s = a.GetConvolutionNdForwardOutputDim(conv_, x_, w_, nd, y.data()); s != kSuccess) {
    return a.describe("cudnnGetConvolutionNdForwardOutputDim", s);
  }
  std::vector<int> traced = ints(it.conv_output);
  if (sp == 1) traced.push_back(1);
  if (!traced.empty() && traced != y) {
    return fmt::format("cuDNN's output {} differs from the op's {}", fmt::join(y, "x"), fmt::join(traced, "x"));
  }
  if (const Status s = a.CreateTensorDescriptor(&y_); s != kSuccess) return a.describe("cudnnCreateTensorDescriptor", s);
  if (const Status s = a.SetTensorNdDescriptor(y_, dt, nd, y.data(), packed_strides(y, it.channels_last).data()); s != kSuccess) {
    return a.describe("cudnnSetTensorNdDescriptor", s);
  }
  const size_t es = elem_bytes(it.dtype);
  input_bytes = count(x) * es;
  weight_bytes = count(w) * es;
  output_bytes = count(y) * es;
  return "";
}

// PyTorch's choice with benchmark off: the heuristic's list in order, the first that succeeds
// and fits the workspace; its math type, except that fp32 without TF32 stays on FMA math.
std::string Conv::choose_algorithm(size_t max_workspace, bool fp32_no_tf32) {
  const Api& a = *s_->api();
  AlgoPerf perf[kForwardAlgos] = {};
  int found = 0;
  if (const Status s = a.GetConvolutionForwardAlgorithm_v7(s_->handle(), x_, w_, conv_, y_, kForwardAlgos, &found, perf); s != kSuccess) {
    return a.describe("cudnnGetConvolutionForwardAlgorithm_v7", s);
  }
  for (int i = 0; i < std::min(found, kForwardAlgos); ++i) {
    if (perf[i].status != kSuccess || perf[i].memory > max_workspace) continue;
    const int math = fp32_no_tf32 ? kFmaMath : perf[i].math_type;
    if (a.SetConvolutionMathType(conv_, math) != kSuccess) continue;
    size_t ws = 0;
    if (a.GetConvolutionForwardWorkspaceSize(s_->handle(), x_, w_, conv_, y_, perf[i].algo, &ws) != kSuccess || ws > max_workspace) continue;
    algo = perf[i].algo;
    math_type = math;
    workspace_bytes = ws;
    return "";
  }
  return fmt::format("cuDNN has no forward algorithm for this convolution within {:.4g} MiB of workspace ({} tried)",
                     static_cast<double>(max_workspace) / (1 << 20), found);
}

std::string Conv::plan(Session& s, const Item& it, size_t max_workspace) {
  release();
  s_ = &s;
  if (s.api() == nullptr || s.handle() == nullptr) return "cuDNN is not open";
  f64_ = it.dtype == "fp64";
  if (auto why = describe(it); !why.empty()) return why;
  if (const Status st = s.api()->SetConvolutionMathType(conv_, it.dtype == "fp16" || it.dtype == "bf16" ? kTensorOpMath : kDefaultMath);
      st != kSuccess) {
    return s.api()->describe("cudnnSetConvolutionMathType", st);
  }
  return choose_algorithm(max_workspace, it.dtype == "fp32" && !it.allow_tf32);
}

std::string Conv::run(void* x, void* w, void* y, void* workspace) const {
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* alpha = f64_ ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* beta = f64_ ? static_cast<const void*>(&zero_d) : static_cast<const void*>(&zero_f);
  const Status st = s_->api()->ConvolutionForward(s_->handle(), alpha, x_, x, w_, w, conv_, algo, workspace, workspace_bytes, beta, y_, y);
  return st == kSuccess ? "" : s_->api()->describe("cudnnConvolutionForward", st);
}

}  // namespace jouleprof::replay::cudnn
