// A fake cuDNN (libcudnn.so.9) for the replay engine's convolution and batch-norm tiers on a CPU: the entry points
// of workloads/replay/cudnn_entry_points.def, which record every call in a log
// (fakecudnn_log()), keep the descriptors they are given, compute the forward output size as
// cuDNN does, and offer a fixed heuristic list (an unsupported algorithm, one whose workspace is
// 64 GiB, then algorithm 1 on tensor cores with 1 MiB), so that the caller's choice is visible.
// fakecudnn_fail(call, status) makes one entry point return an error from then on.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cudnn_conv.hpp"

using namespace jouleprof::replay::cudnn;

struct cudnnContext {
  Stream stream = nullptr;
};
struct cudnnTensorStruct {
  int dt = -1;
  std::vector<int> dims, strides;
};
struct cudnnFilterStruct {
  int dt = -1, format = -1;
  std::vector<int> dims;
};
struct cudnnConvolutionStruct {
  std::vector<int> pad, stride, dil;
  int mode = -1, compute = -1, groups = 1, math = 0;
};

namespace {

std::string g_log;
std::string g_fail_call;
Status g_fail_status = 0;
constexpr Status kBadParam = 2000, kNotSupported = 3000;

std::string list(const int* v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i > 0 ? "," : "") + std::to_string(v[i]);
  return s;
}

Status logged(const char* call, const std::string& args) {
  g_log += std::string(call) + (args.empty() ? "" : " " + args) + "\n";
  return g_fail_call == call ? g_fail_status : 0;
}

}  // namespace

#define FAKE extern "C" __attribute__((visibility("default")))

FAKE const char* fakecudnn_log() { return g_log.c_str(); }
FAKE void fakecudnn_reset() {
  g_log.clear();
  g_fail_call.clear();
  g_fail_status = 0;
}
FAKE void fakecudnn_fail(const char* call, int status) {
  g_fail_call = call;
  g_fail_status = status;
}

FAKE size_t cudnnGetVersion() { return 91002; }
FAKE const char* cudnnGetErrorString(Status s) { return s == kBadParam ? "CUDNN_STATUS_BAD_PARAM" : s == kNotSupported ? "CUDNN_STATUS_NOT_SUPPORTED" : "CUDNN_STATUS_FAKE"; }
FAKE Status cudnnCreate(Handle* h) {
  *h = new cudnnContext;
  return logged("cudnnCreate", "");
}
FAKE Status cudnnDestroy(Handle h) {
  delete h;
  return logged("cudnnDestroy", "");
}
FAKE Status cudnnSetStream(Handle h, Stream s) {
  h->stream = s;
  std::ostringstream o;
  o << "stream=" << static_cast<const void*>(s);
  return logged("cudnnSetStream", o.str());
}
FAKE Status cudnnCreateTensorDescriptor(TensorDesc* d) {
  *d = new cudnnTensorStruct;
  return logged("cudnnCreateTensorDescriptor", "");
}
FAKE Status cudnnSetTensorNdDescriptor(TensorDesc d, int dt, int nd, const int* dims, const int* strides) {
  d->dt = dt;
  d->dims.assign(dims, dims + nd);
  d->strides.assign(strides, strides + nd);
  return logged("cudnnSetTensorNdDescriptor", "dt=" + std::to_string(dt) + " dims=" + list(dims, nd) + " strides=" + list(strides, nd));
}
FAKE Status cudnnDestroyTensorDescriptor(TensorDesc d) {
  delete d;
  return logged("cudnnDestroyTensorDescriptor", "");
}
FAKE Status cudnnCreateFilterDescriptor(FilterDesc* d) {
  *d = new cudnnFilterStruct;
  return logged("cudnnCreateFilterDescriptor", "");
}
FAKE Status cudnnSetFilterNdDescriptor(FilterDesc d, int dt, int format, int nd, const int* dims) {
  d->dt = dt;
  d->format = format;
  d->dims.assign(dims, dims + nd);
  return logged("cudnnSetFilterNdDescriptor", "dt=" + std::to_string(dt) + " format=" + std::to_string(format) + " dims=" + list(dims, nd));
}
FAKE Status cudnnDestroyFilterDescriptor(FilterDesc d) {
  delete d;
  return logged("cudnnDestroyFilterDescriptor", "");
}
FAKE Status cudnnCreateConvolutionDescriptor(ConvDesc* d) {
  *d = new cudnnConvolutionStruct;
  return logged("cudnnCreateConvolutionDescriptor", "");
}
FAKE Status cudnnSetConvolutionNdDescriptor(ConvDesc d, int n, const int* pad, const int* stride, const int* dil, int mode, int compute) {
  d->pad.assign(pad, pad + n);
  d->stride.assign(stride, stride + n);
  d->dil.assign(dil, dil + n);
  d->mode = mode;
  d->compute = compute;
  return logged("cudnnSetConvolutionNdDescriptor", "pad=" + list(pad, n) + " stride=" + list(stride, n) + " dilation=" + list(dil, n) +
                                                       " mode=" + std::to_string(mode) + " compute=" + std::to_string(compute));
}
FAKE Status cudnnSetConvolutionGroupCount(ConvDesc d, int groups) {
  d->groups = groups;
  return logged("cudnnSetConvolutionGroupCount", std::to_string(groups));
}
FAKE Status cudnnSetConvolutionMathType(ConvDesc d, int math) {
  d->math = math;
  return logged("cudnnSetConvolutionMathType", std::to_string(math));
}
FAKE Status cudnnDestroyConvolutionDescriptor(ConvDesc d) {
  delete d;
  return logged("cudnnDestroyConvolutionDescriptor", "");
}
// cuDNN's forward size: N, K, then (in + 2p - d(k-1) - 1)/s + 1 per spatial dimension.
FAKE Status cudnnGetConvolutionNdForwardOutputDim(ConvDesc c, TensorDesc x, FilterDesc w, int nd, int* out) {
  if (nd != static_cast<int>(x->dims.size()) || w->dims.size() != x->dims.size() || c->pad.size() + 2 != x->dims.size()) return kBadParam;
  out[0] = x->dims[0];
  out[1] = w->dims[0];
  for (int i = 2; i < nd; ++i) {
    const auto s = static_cast<std::size_t>(i - 2);
    out[i] = (x->dims[static_cast<std::size_t>(i)] + 2 * c->pad[s] - c->dil[s] * (w->dims[static_cast<std::size_t>(i)] - 1) - 1) / c->stride[s] + 1;
  }
  return logged("cudnnGetConvolutionNdForwardOutputDim", list(out, nd));
}
FAKE Status cudnnGetConvolutionForwardAlgorithm_v7(Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int requested, int* returned, AlgoPerf* perf) {
  const AlgoPerf list3[3] = {{7, kNotSupported, -1, 0, 0, 0, {}}, {6, 0, 0.1f, size_t{64} << 30, 0, 1, {}}, {1, 0, 0.2f, size_t{1} << 20, 1, 1, {}}};
  *returned = std::min(requested, 3);
  for (int i = 0; i < *returned; ++i) perf[i] = list3[i];
  return logged("cudnnGetConvolutionForwardAlgorithm_v7", "requested=" + std::to_string(requested));
}
FAKE Status cudnnGetConvolutionForwardWorkspaceSize(Handle, TensorDesc, FilterDesc, ConvDesc c, TensorDesc, int algo, size_t* bytes) {
  *bytes = algo == 6 ? size_t{64} << 30 : algo == 1 ? size_t{1} << 20 : 0;
  return logged("cudnnGetConvolutionForwardWorkspaceSize", "algo=" + std::to_string(algo) + " math=" + std::to_string(c->math));
}
FAKE Status cudnnConvolutionForward(Handle h, const void*, TensorDesc, const void* x, FilterDesc, const void* w, ConvDesc c, int algo, void* ws,
                                    size_t ws_bytes, const void*, TensorDesc, void* y) {
  std::ostringstream o;
  o << "algo=" << algo << " math=" << c->math << " groups=" << c->groups << " workspace=" << ws_bytes << " stream=" << static_cast<const void*>(h->stream)
    << " buffers=" << (x != nullptr && w != nullptr && y != nullptr && ws != nullptr ? "set" : "null");
  return logged("cudnnConvolutionForward", o.str());
}

FAKE Status cudnnBatchNormalizationForwardInference(Handle h, int mode, const void* alpha, const void* beta, TensorDesc xd, const void* x,
                                                    TensorDesc yd, void* y, TensorDesc pd, const void* scale, const void* bias,
                                                    const void* mean, const void* var, double eps) {
  std::ostringstream o;
  o << "mode=" << mode << " x=dt" << xd->dt << ":" << list(xd->dims.data(), static_cast<int>(xd->dims.size())) << "/"
    << list(xd->strides.data(), static_cast<int>(xd->strides.size())) << " y=" << (yd == xd ? "x" : "other") << " params=dt" << pd->dt << ":"
    << list(pd->dims.data(), static_cast<int>(pd->dims.size())) << " eps=" << eps << " stream=" << static_cast<const void*>(h->stream)
    << " scalars=" << (alpha != nullptr && beta != nullptr ? "set" : "null")
    << " buffers=" << (x != nullptr && y != nullptr && scale != nullptr && bias != nullptr && mean != nullptr && var != nullptr ? "set" : "null");
  // The parameter pointers' distances from scale, in bytes: the caller's layout of its parameter block.
  const auto at = [&](const void* p) { return static_cast<const char*>(p) - static_cast<const char*>(scale); };
  o << " offsets=" << at(bias) << "," << at(mean) << "," << at(var);
  return logged("cudnnBatchNormalizationForwardInference", o.str());
}

// Each entry point of the table, with the table's signature.
#define JP_CUDNN(member, ret, params, sym) [[maybe_unused]] static const Api::member##_fn check_##member = &sym;
#include "cudnn_entry_points.def"
#undef JP_CUDNN
