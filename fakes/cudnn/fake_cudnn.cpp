// A fake cuDNN (libcudnn.so.9) for the replay engine's convolution and batch-norm tiers on a CPU: the entry points
// of workloads/replay/cudnn_entry_points.def, which record every call in a log
// (fakecudnn_log()), keep the descriptors they are given, compute the forward output size as
// cuDNN does, and offer a fixed heuristic list (an unsupported algorithm, one whose workspace is
// 64 GiB, then algorithm 1 on tensor cores with 1 MiB), so that the caller's choice is visible.
// fakecudnn_fail(call, status) makes one entry point return an error from then on. The backend
// graph API of the attention tier: below, before the table check.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
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
FAKE const char* cudnnGetErrorString(Status s) {
  return s == kBadParam ? "CUDNN_STATUS_BAD_PARAM" : s == kNotSupported ? "CUDNN_STATUS_NOT_SUPPORTED" : s == 5000 ? "CUDNN_STATUS_EXECUTION_FAILED" : "CUDNN_STATUS_FAKE";
}
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


// The backend graph API (cudnn_graph.h) of the attention tier: descriptors are numbered in
// creation order (#1, #2 ...) and every attribute set is logged with its values
// ("cudnnBackendSetAttribute #3 attr=902 type=3 n=4 32,8,1024,128"; descriptors as #ids), so a
// test sees the graph the caller built. Heuristics give two engine configs; a plan asks for 1 MiB
// of workspace. Failure switches besides fakecudnn_fail(): FAKECUDNN_FAIL_FINALIZE=<descriptor
// type> refuses the finalize of that type (CUDNN_STATUS_NOT_SUPPORTED, with a last-error text);
// FAKECUDNN_FAIL_EXECUTE=1 fails cudnnBackendExecute (CUDNN_STATUS_EXECUTION_FAILED).
// Built without them (FAKECUDNN_NO_BACKEND): a cuDNN that serves only conv and batch norm.
#ifndef FAKECUDNN_NO_BACKEND
namespace {

struct BackendObject {
  int id = 0, type = -1;
  bool finalized = false;
  std::map<int, std::string> attrs;  // attribute → its values as logged
  std::vector<int64_t> uids;         // a variant pack's
  std::vector<void*> pointers;
};
std::vector<std::unique_ptr<BackendObject>> g_objects;
std::string g_last_error;
constexpr int kFakeTypeDescriptor = 15, kFakeTypeVoidPtr = 6, kFakeTypeBoolean = 2, kFakeTypeFloat = 4, kFakeTypeHandle = 0;
constexpr int kFakeHeur = 4, kFakeCfg = 3, kFakePlan = 5, kFakePack = 16, kFakeResults = 202, kFakeWorkspace = 402;

BackendObject* object(BackendDesc d) { return static_cast<BackendObject*>(d); }

std::string values(int type, int64_t n, const void* v) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) {
    s += i > 0 ? "," : "";
    if (type == kFakeTypeDescriptor) {
      const BackendObject* o = object(static_cast<const BackendDesc*>(v)[i]);
      s += o != nullptr ? "#" + std::to_string(o->id) : "null";
    } else if (type == kFakeTypeVoidPtr || type == kFakeTypeHandle) {
      s += static_cast<void* const*>(v)[i] != nullptr ? "set" : "null";
    } else if (type == kFakeTypeBoolean) {
      s += static_cast<const bool*>(v)[i] ? "1" : "0";
    } else if (type == kFakeTypeFloat) {
      std::ostringstream o;
      o << static_cast<const float*>(v)[i];
      s += o.str();
    } else if (type == 3) {  // INT64
      s += std::to_string(static_cast<const int64_t*>(v)[i]);
    } else {  // enums: data types, modes, operators
      s += std::to_string(static_cast<const int*>(v)[i]);
    }
  }
  return s;
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : -1;
}

}  // namespace

FAKE Status cudnnBackendCreateDescriptor(int type, BackendDesc* d) {
  g_objects.push_back(std::make_unique<BackendObject>());
  BackendObject* o = g_objects.back().get();
  o->id = static_cast<int>(g_objects.size());
  o->type = type;
  *d = o;
  return logged("cudnnBackendCreateDescriptor", "type=" + std::to_string(type) + " #" + std::to_string(o->id));
}
FAKE Status cudnnBackendDestroyDescriptor(BackendDesc d) {
  return logged("cudnnBackendDestroyDescriptor", "#" + std::to_string(object(d)->id));  // kept: ids stay unique in a test
}
FAKE Status cudnnBackendSetAttribute(BackendDesc d, int attr, int type, int64_t n, const void* v) {
  BackendObject* o = object(d);
  if (o->finalized || n < 0 || (n > 0 && v == nullptr)) return kBadParam;
  o->attrs[attr] = values(type, n, v);
  if (attr == 1000 && type == 3) o->uids.assign(static_cast<const int64_t*>(v), static_cast<const int64_t*>(v) + n);
  if (attr == 1001 && type == kFakeTypeVoidPtr) o->pointers.assign(static_cast<void* const*>(v), static_cast<void* const*>(v) + n);
  return logged("cudnnBackendSetAttribute", "#" + std::to_string(o->id) + " attr=" + std::to_string(attr) + " type=" + std::to_string(type) +
                                                " n=" + std::to_string(n) + " " + o->attrs[attr]);
}
FAKE Status cudnnBackendGetAttribute(BackendDesc d, int attr, int type, int64_t requested, int64_t* count, void* out) {
  BackendObject* o = object(d);
  if (!o->finalized) return kBadParam;
  if (o->type == kFakeHeur && attr == kFakeResults && type == kFakeTypeDescriptor) {
    *count = requested == 0 ? 2 : std::min<int64_t>(requested, 2);
    for (int64_t i = 0; requested > 0 && i < *count; ++i) {
      BackendObject* cfg = object(static_cast<BackendDesc*>(out)[i]);
      if (cfg == nullptr || cfg->type != kFakeCfg) return kBadParam;
      cfg->finalized = true;
      cfg->attrs[0] = "engine " + std::to_string(i);
    }
  } else if (o->type == kFakePlan && attr == kFakeWorkspace && requested >= 1) {
    *count = 1;
    *static_cast<int64_t*>(out) = int64_t{1} << 20;
  } else {
    return kBadParam;
  }
  return logged("cudnnBackendGetAttribute", "#" + std::to_string(o->id) + " attr=" + std::to_string(attr) + " count=" + std::to_string(*count));
}
FAKE Status cudnnBackendFinalize(BackendDesc d) {
  BackendObject* o = object(d);
  if (o->type == env_int("FAKECUDNN_FAIL_FINALIZE")) {
    g_last_error = "fake cuDNN refuses to finalize descriptor type " + std::to_string(o->type);
    logged("cudnnBackendFinalize", "#" + std::to_string(o->id) + " refused");
    return kNotSupported;
  }
  o->finalized = true;
  const Status st = logged("cudnnBackendFinalize", "#" + std::to_string(o->id) + " type=" + std::to_string(o->type));
  if (st != 0) o->finalized = false;
  return st;
}
FAKE Status cudnnBackendExecute(Handle h, BackendDesc plan, BackendDesc pack) {
  const BackendObject* p = object(plan);
  const BackendObject* v = object(pack);
  if (p->type != kFakePlan || !p->finalized || v->type != kFakePack || !v->finalized) return kBadParam;
  if (env_int("FAKECUDNN_FAIL_EXECUTE") == 1) {
    g_last_error = "fake cuDNN fails the execution";
    return 5000;
  }
  std::ostringstream o;
  o << "plan=#" << p->id << " pack=#" << v->id << " stream=" << static_cast<const void*>(h->stream) << " uids=" << v->attrs.at(1000)
    << " pointers=" << v->attrs.at(1001) << " workspace=" << v->attrs.at(1003) << " by_value=";
  // The host scalars of the by-value tensors (finalized tensors with IS_BY_VALUE set), by uid.
  for (std::size_t i = 0; i < v->uids.size() && i < v->pointers.size(); ++i) {
    for (const auto& t : g_objects) {
      if (t->type == 17 && t->attrs.count(908) != 0 && t->attrs.at(908) == "1" && t->attrs.count(906) != 0 && t->attrs.at(906) == std::to_string(v->uids[i])) {
        o << v->uids[i] << ":" << *static_cast<const float*>(v->pointers[i]) << ";";
      }
    }
  }
  return logged("cudnnBackendExecute", o.str());
}
FAKE void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (max_size == 0) return;
  std::snprintf(message, max_size, "%s", g_last_error.c_str());
  g_last_error.clear();
}
#endif

// Each entry point of the table, with the table's signature.
#define JP_CUDNN(member, ret, params, sym) [[maybe_unused]] static const Api::member##_fn check_##member = &sym;
#ifdef FAKECUDNN_NO_BACKEND
#define JP_CUDNN_OPTIONAL(member, ret, params, sym)
#endif
#include "cudnn_entry_points.def"
#ifdef FAKECUDNN_NO_BACKEND
#undef JP_CUDNN_OPTIONAL
#endif
#undef JP_CUDNN
