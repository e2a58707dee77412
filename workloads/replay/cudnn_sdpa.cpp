// cuDNN's fused SDPA forward built as a backend operation graph, planned and run (cudnn_sdpa.hpp).
#include "cudnn_sdpa.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <limits>

namespace jouleprof::replay::cudnn {

namespace backend {

const char* type_name(int type) {
  switch (type) {
    case kPointwiseDesc: return "POINTWISE_DESCRIPTOR";
    case kEngineCfg: return "ENGINECFG_DESCRIPTOR";
    case kEngineHeur: return "ENGINEHEUR_DESCRIPTOR";
    case kExecutionPlan: return "EXECUTION_PLAN_DESCRIPTOR";
    case kOpPointwise: return "OPERATION_POINTWISE_DESCRIPTOR";
    case kOpGraph: return "OPERATIONGRAPH_DESCRIPTOR";
    case kVariantPack: return "VARIANT_PACK_DESCRIPTOR";
    case kTensor: return "TENSOR_DESCRIPTOR";
    case kMatmulDesc: return "MATMUL_DESCRIPTOR";
    case kOpMatmul: return "OPERATION_MATMUL_DESCRIPTOR";
    case kReductionDesc: return "REDUCTION_DESCRIPTOR";
    case kOpReduction: return "OPERATION_REDUCTION_DESCRIPTOR";
    default: return "descriptor";
  }
}

}  // namespace backend

using namespace backend;
using namespace detail;
using Dims = std::vector<int64_t>;

namespace {

// cuDNN's status text, and its last-error text where the library has cudnnGetLastErrorString.
std::string status_text(const Api& a, Status st) {
  std::string s = a.describe("", st).substr(2);  // "CUDNN_STATUS_... (n)"
  if (a.GetLastErrorString != nullptr) {
    char buf[1024] = {};
    a.GetLastErrorString(buf, sizeof buf);
    if (buf[0] != '\0') s += std::string(": ") + buf;
  }
  return s;
}

// Packed strides of `d` in its own order (BHSD).
Dims packed(const Dims& d) {
  Dims s(d.size(), 1);
  for (std::size_t i = d.size() - 1; i-- > 0;) s[i] = s[i + 1] * d[i + 1];
  return s;
}

}  // namespace

// The graph's descriptors, made and finalized in order, each failure one line naming the step.
class SdpaGraph {
 public:
  SdpaGraph(Sdpa& owner, const Api& a) : o_(owner), a_(a) {}

  std::string make(int type, const std::string& what, BackendDesc& d) {
    d = nullptr;
    if (const Status st = a_.BackendCreateDescriptor(type, &d); st != kSuccess) {
      d = nullptr;
      return fmt::format("cudnnBackendCreateDescriptor({} '{}'): {}", type_name(type), what, status_text(a_, st));
    }
    o_.owned_.push_back(d);
    types_[d] = type;
    names_[d] = what;
    return "";
  }
  std::string set(BackendDesc d, int attr, const char* attr_name, int type, int64_t n, const void* v) {
    if (const Status st = a_.BackendSetAttribute(d, attr, type, n, v); st != kSuccess) {
      return fmt::format("cudnnBackendSetAttribute({} '{}', {}): {}", type_name(types_[d]), names_[d], attr_name, status_text(a_, st));
    }
    return "";
  }
  std::string finalize(BackendDesc d) {
    if (const Status st = a_.BackendFinalize(d); st != kSuccess) {
      return fmt::format("cudnnBackendFinalize({} '{}'): {}", type_name(types_[d]), names_[d], status_text(a_, st));
    }
    return "";
  }

  // One attribute to set: skipped when n is 0 (an optional one not given).
  struct Attr {
    int attr;
    const char* name;
    int type;
    int64_t n;
    const void* v;
  };
  // A descriptor of `type` with these attributes, finalized.
  std::string described(int type, const std::string& what, const std::vector<Attr>& attrs, BackendDesc& d) {
    std::string w = make(type, what, d);
    for (const Attr& a : attrs) {
      if (w.empty() && a.n > 0) w = set(d, a.attr, a.name, a.type, a.n, a.v);
    }
    return w.empty() ? finalize(d) : w;
  }
  // An operation: its op descriptor (matmul, pointwise, reduction) with these, then the operation over it.
  std::string operation(const std::string& what, int desc_type, std::initializer_list<Attr> desc, int op_type, int desc_attr,
                        const char* desc_attr_name, std::initializer_list<Attr> tensors) {
    BackendDesc d = nullptr, op = nullptr;
    std::string w = described(desc_type, what, desc, d);
    std::vector<Attr> attrs = {{desc_attr, desc_attr_name, kTypeDescriptor, 1, &d}};
    attrs.insert(attrs.end(), tensors.begin(), tensors.end());
    if (w.empty()) w = described(op_type, what, attrs, op);
    if (w.empty()) ops_.push_back(op);
    return w;
  }

  // A tensor: real (in the variant pack), virtual (inside the fused kernel) or a by-value scalar.
  std::string tensor(const std::string& what, int dtype, const Dims& dims, const Dims& strides, bool is_virtual, bool by_value,
                     BackendDesc& t, int64_t uid = 0) {
    if (uid == 0) uid = next_virtual_++;
    const int64_t align = 16, n = static_cast<int64_t>(dims.size());
    return described(kTensor, what,
                     {{kTensorDataType, "CUDNN_ATTR_TENSOR_DATA_TYPE", kTypeDataType, 1, &dtype},
                      {kTensorDims, "CUDNN_ATTR_TENSOR_DIMENSIONS", kTypeInt64, n, dims.data()},
                      {kTensorStrides, "CUDNN_ATTR_TENSOR_STRIDES", kTypeInt64, n, strides.data()},
                      {kTensorUid, "CUDNN_ATTR_TENSOR_UNIQUE_ID", kTypeInt64, 1, &uid},
                      {kTensorAlignment, "CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT", kTypeInt64, 1, &align},
                      {kTensorVirtual, "CUDNN_ATTR_TENSOR_IS_VIRTUAL", kTypeBoolean, is_virtual ? 1 : 0, &is_virtual},
                      {kTensorByValue, "CUDNN_ATTR_TENSOR_IS_BY_VALUE", kTypeBoolean, by_value ? 1 : 0, &by_value}},
                     t);
  }
  // A virtual fp32 tensor of `dims`, packed.
  std::string scratch(const std::string& what, const Dims& dims, BackendDesc& t, int dtype = kFloat) {
    return tensor(what, dtype, dims, packed(dims), true, false, t);
  }

  // A pointwise operation y = mode(x[, b][, t]); GEN_INDEX along `axis`.
  std::string pointwise(const std::string& what, int mode, int compute, BackendDesc x, BackendDesc b, BackendDesc t, BackendDesc y,
                        int64_t axis = -1) {
    return operation(what, kPointwiseDesc,
                     {{kPointwiseMode, "CUDNN_ATTR_POINTWISE_MODE", kTypePointwiseMode, 1, &mode},
                      {kPointwiseMathPrec, "CUDNN_ATTR_POINTWISE_MATH_PREC", kTypeDataType, 1, &compute},
                      {kPointwiseAxis, "CUDNN_ATTR_POINTWISE_AXIS", kTypeInt64, axis >= 0 ? 1 : 0, &axis}},
                     kOpPointwise, kOpPwDesc, "CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR",
                     {{kOpPwX, "CUDNN_ATTR_OPERATION_POINTWISE_XDESC", kTypeDescriptor, 1, &x},
                      {kOpPwB, "CUDNN_ATTR_OPERATION_POINTWISE_BDESC", kTypeDescriptor, b != nullptr ? 1 : 0, &b},
                      {kOpPwT, "CUDNN_ATTR_OPERATION_POINTWISE_TDESC", kTypeDescriptor, t != nullptr ? 1 : 0, &t},
                      {kOpPwY, "CUDNN_ATTR_OPERATION_POINTWISE_YDESC", kTypeDescriptor, 1, &y}});
  }

  std::string matmul(const std::string& what, BackendDesc a, BackendDesc b, BackendDesc c) {
    const int compute = kFloat;
    return operation(what, kMatmulDesc, {{kMatmulCompType, "CUDNN_ATTR_MATMUL_COMP_TYPE", kTypeDataType, 1, &compute}}, kOpMatmul,
                     kOpMatmulDesc, "CUDNN_ATTR_OPERATION_MATMUL_DESC",
                     {{kOpMatmulA, "CUDNN_ATTR_OPERATION_MATMUL_ADESC", kTypeDescriptor, 1, &a},
                      {kOpMatmulB, "CUDNN_ATTR_OPERATION_MATMUL_BDESC", kTypeDescriptor, 1, &b},
                      {kOpMatmulC, "CUDNN_ATTR_OPERATION_MATMUL_CDESC", kTypeDescriptor, 1, &c}});
  }

  std::string reduction(const std::string& what, int reduce_op, BackendDesc x, BackendDesc y) {
    const int compute = kFloat;
    return operation(what, kReductionDesc,
                     {{kReductionOperator, "CUDNN_ATTR_REDUCTION_OPERATOR", kTypeReductionOp, 1, &reduce_op},
                      {kReductionCompType, "CUDNN_ATTR_REDUCTION_COMP_TYPE", kTypeDataType, 1, &compute}},
                     kOpReduction, kOpReductionDesc, "CUDNN_ATTR_OPERATION_REDUCTION_DESC",
                     {{kOpReductionX, "CUDNN_ATTR_OPERATION_REDUCTION_XDESC", kTypeDescriptor, 1, &x},
                      {kOpReductionY, "CUDNN_ATTR_OPERATION_REDUCTION_YDESC", kTypeDescriptor, 1, &y}});
  }

  // The tensors and operations of the SDPA forward, then the operation graph over them.
  std::string build(const Item& it, int dt, Handle handle) {
    const int64_t b = it.batch, hq = it.heads_q, hk = it.heads_kv, sq = it.seq_q, sk = it.seq_kv, d = it.head_dim;
    const Dims s_dims = {b, hq, sq, sk}, row = {b, hq, sq, 1}, one = {1, 1, 1, 1};
    BackendDesc q, kt, v, out, scale, s, s_scaled, m, sub, e, z, log_z, stats, p;
    std::string w = tensor("Q", dt, {b, hq, sq, d}, packed({b, hq, sq, d}), false, false, q, kUidQ);
    // Kᵀ: K [b, hk, sk, d] read as [b, hk, d, sk] through swapped strides.
    if (w.empty()) w = tensor("K^T", dt, {b, hk, d, sk}, {hk * sk * d, sk * d, 1, d}, false, false, kt, kUidK);
    if (w.empty()) w = tensor("V", dt, {b, hk, sk, d}, packed({b, hk, sk, d}), false, false, v, kUidV);
    if (w.empty()) w = tensor("O", dt, {b, hq, sq, d}, packed({b, hq, sq, d}), false, false, out, kUidO);
    if (w.empty()) w = tensor("scale", kFloat, one, one, false, true, scale, kUidScale);
    if (w.empty()) w = scratch("S = Q K^T", s_dims, s);
    if (w.empty()) w = matmul("S = Q K^T", q, kt, s);
    if (w.empty()) w = scratch("S * scale", s_dims, s_scaled);
    if (w.empty()) w = pointwise("S * scale", kMul, kFloat, s, scale, nullptr, s_scaled);
    if (w.empty() && it.causal) w = causal_mask(s_dims, s_scaled);
    if (w.empty()) w = scratch("max", row, m);
    if (w.empty()) w = reduction("max", kReduceMax, s_scaled, m);
    if (w.empty()) w = scratch("S - max", s_dims, sub);
    if (w.empty()) w = pointwise("S - max", kSub, kFloat, s_scaled, m, nullptr, sub);
    if (w.empty()) w = scratch("exp", s_dims, e);
    if (w.empty()) w = pointwise("exp", kExp, kFloat, sub, nullptr, nullptr, e);
    if (w.empty()) w = scratch("sum", row, z);
    if (w.empty()) w = reduction("sum", kReduceAdd, e, z);
    // The softmax statistics max + log(sum), virtual: cuDNN's SDPA pattern is the softmax with
    // them (without, its fused engine does not recognise the graph: "Dropout set of ops not
    // configured correctly", cuDNN 9.19 on an H200).
    if (w.empty()) w = scratch("log sum", row, log_z);
    if (w.empty()) w = pointwise("log sum", kLog, kFloat, z, nullptr, nullptr, log_z);
    if (w.empty()) w = scratch("stats = max + log sum", row, stats);
    if (w.empty()) w = pointwise("stats = max + log sum", kAdd, kFloat, m, log_z, nullptr, stats);
    // P, the ·V matmul's A operand, virtual in the I/O type: the backend wants both of that
    // matmul's operands in one type (cudnn-frontend sets it so; in float, cuDNN 9.19 on an H200
    // refused the graph: "A and B need to have the same datatype in the matmul").
    if (w.empty()) w = scratch("P = exp / sum", s_dims, p, dt);
    if (w.empty()) w = pointwise("P = exp / sum", kDiv, kFloat, e, z, nullptr, p);
    if (w.empty()) w = matmul("O = P V", p, v, out);
    if (!w.empty()) return w;
    BackendDesc g = nullptr;
    w = make(kOpGraph, "SDPA forward", g);
    if (w.empty()) w = set(g, kOpGraphHandle, "CUDNN_ATTR_OPERATIONGRAPH_HANDLE", kTypeHandle, 1, &handle);
    if (w.empty()) w = set(g, kOpGraphOps, "CUDNN_ATTR_OPERATIONGRAPH_OPS", kTypeDescriptor, static_cast<int64_t>(ops_.size()), ops_.data());
    if (w.empty()) w = finalize(g);
    o_.graph_ = g;
    o_.ops = ops_.size();
    return w;
  }

 private:
  // Top-left causal (PyTorch's is_causal): scores where col > row become the lowest float.
  std::string causal_mask(const Dims& dims, BackendDesc& scores) {
    BackendDesc r, c, keep, low, masked;
    const Dims one = {1, 1, 1, 1};
    std::string w = scratch("row index", dims, r, kInt32);
    if (w.empty()) w = pointwise("row index", kGenIndex, kFloat, scores, nullptr, nullptr, r, 2);
    if (w.empty()) w = scratch("col index", dims, c, kInt32);
    if (w.empty()) w = pointwise("col index", kGenIndex, kFloat, scores, nullptr, nullptr, c, 3);
    if (w.empty()) w = scratch("row >= col", dims, keep, kBoolean);
    if (w.empty()) w = pointwise("row >= col", kCmpGe, kBoolean, r, c, nullptr, keep);
    if (w.empty()) w = tensor("mask value", kFloat, one, one, false, true, low, kUidMaskValue);
    if (w.empty()) w = scratch("causal S", dims, masked);
    if (w.empty()) w = pointwise("causal S", kBinarySelect, kFloat, scores, low, keep, masked);
    if (w.empty()) scores = masked;
    return w;
  }

  Sdpa& o_;
  const Api& a_;
  std::map<BackendDesc, int> types_;
  std::map<BackendDesc, std::string> names_;
  std::vector<BackendDesc> ops_;
  int64_t next_virtual_ = kFirstVirtualUid;
};

void Sdpa::release() {
  if (s_ != nullptr && s_->api() != nullptr && s_->api()->BackendDestroyDescriptor != nullptr) {
    for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) s_->api()->BackendDestroyDescriptor(*it);
  }
  owned_.clear();
  graph_ = plan_ = nullptr;
  engine.clear();
  ops = 0;
}

std::string sdpa_refused(const Item& it) {
  if (const char* mode = std::getenv("JOULEPROF_REPLAY_ATTENTION"); mode != nullptr && std::string(mode) == "unfused") {
    return "JOULEPROF_REPLAY_ATTENTION=unfused";
  }
  if (it.dtype != "fp16" && it.dtype != "bf16") return "dtype " + it.dtype + " is not run through cuDNN's SDPA (fp16, bf16 are)";
  if (it.batch <= 0 || it.heads_q <= 0 || it.heads_kv <= 0 || it.seq_q <= 0 || it.seq_kv <= 0 || it.head_dim <= 0) {
    return "empty attention shape";
  }
  if (it.heads_q % it.heads_kv != 0) return fmt::format("{} query heads are not a multiple of {} key/value heads", it.heads_q, it.heads_kv);
  return "";
}

std::string unfused_line(const std::string& why) {
  return "attention not run through cuDNN SDPA (" + why + "): replayed unfused, two batched cuBLASLt GEMMs and a memory pass";
}

// Heuristics of `mode`: its engine configs in order, the first whose plan finalizes within the
// workspace limit. "" when one did; else why (and `last`: the last refusal).
std::string Sdpa::heuristics(int mode, const char* mode_name, size_t max_workspace, std::string& last) {
  const Api& a = *s_->api();
  SdpaGraph g(*this, a);
  BackendDesc heur = nullptr;
  const std::string heur_name = std::string("heuristics mode ") + mode_name;
  std::string w = g.make(kEngineHeur, heur_name, heur);
  if (w.empty()) w = g.set(heur, kHeurOpGraph, "CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH", kTypeDescriptor, 1, &graph_);
  if (w.empty()) w = g.set(heur, kHeurMode, "CUDNN_ATTR_ENGINEHEUR_MODE", kTypeHeurMode, 1, &mode);
  if (w.empty()) w = g.finalize(heur);
  int64_t count = 0;
  if (w.empty()) {
    if (const Status st = a.BackendGetAttribute(heur, kHeurResults, kTypeDescriptor, 0, &count, nullptr); st != kSuccess) {
      w = fmt::format("cudnnBackendGetAttribute(ENGINEHEUR_DESCRIPTOR '{}', CUDNN_ATTR_ENGINEHEUR_RESULTS): {}", heur_name, status_text(a, st));
    }
  }
  if (!w.empty()) return last = w;
  std::vector<BackendDesc> cfgs(static_cast<std::size_t>(std::max<int64_t>(count, 0)));
  for (std::size_t i = 0; i < cfgs.size() && w.empty(); ++i) w = g.make(kEngineCfg, fmt::format("{} config {}", heur_name, i + 1), cfgs[i]);
  int64_t got = 0;
  if (w.empty() && count > 0) {
    if (const Status st = a.BackendGetAttribute(heur, kHeurResults, kTypeDescriptor, count, &got, cfgs.data()); st != kSuccess) {
      w = fmt::format("cudnnBackendGetAttribute(ENGINEHEUR_DESCRIPTOR '{}', CUDNN_ATTR_ENGINEHEUR_RESULTS): {}", heur_name, status_text(a, st));
    }
  }
  if (!w.empty()) return last = w;
  Handle h = s_->handle();
  for (int64_t i = 0; i < std::min(got, count); ++i) {
    BackendDesc plan = nullptr;
    const std::string what = fmt::format("engine config {} of {} ({})", i + 1, got, heur_name);
    std::string pw = g.make(kExecutionPlan, what, plan);
    if (pw.empty()) pw = g.set(plan, kPlanHandle, "CUDNN_ATTR_EXECUTION_PLAN_HANDLE", kTypeHandle, 1, &h);
    if (pw.empty()) pw = g.set(plan, kPlanEngineCfg, "CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG", kTypeDescriptor, 1, &cfgs[static_cast<std::size_t>(i)]);
    if (pw.empty()) pw = g.finalize(plan);
    int64_t ws = 0, n = 0;
    if (pw.empty()) {
      if (const Status st = a.BackendGetAttribute(plan, kPlanWorkspaceSize, kTypeInt64, 1, &n, &ws); st != kSuccess) {
        pw = fmt::format("cudnnBackendGetAttribute(EXECUTION_PLAN_DESCRIPTOR '{}', CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE): {}", what,
                         status_text(a, st));
      } else if (ws < 0 || static_cast<size_t>(ws) > max_workspace) {
        pw = fmt::format("{} needs {:.4g} MiB of workspace", what, static_cast<double>(ws) / (1 << 20));
      }
    }
    if (pw.empty()) {
      plan_ = plan;
      workspace_bytes = static_cast<size_t>(ws);
      engine = what;
      return "";
    }
    last = pw;
  }
  return got == 0 ? (last = heur_name + " gave no engine config") : last;
}

std::string Sdpa::plan(Session& s, const Item& it, size_t max_workspace) {
  release();
  s_ = &s;
  if (s.api() == nullptr || s.handle() == nullptr) return "cuDNN is not open";
  const Api& a = *s.api();
  if (a.BackendCreateDescriptor == nullptr || a.BackendSetAttribute == nullptr || a.BackendGetAttribute == nullptr ||
      a.BackendFinalize == nullptr || a.BackendExecute == nullptr || a.BackendDestroyDescriptor == nullptr) {
    return "cuDNN " + a.library + " lacks the backend graph API (cudnnBackendCreateDescriptor ...)";
  }
  if (auto why = sdpa_refused(it); !why.empty()) return why;
  causal_ = it.causal;
  scale = static_cast<float>(it.scale > 0 ? it.scale : 1.0 / std::sqrt(static_cast<double>(it.head_dim)));
  mask_value_ = std::numeric_limits<float>::lowest();
  const size_t es = elem_bytes(it.dtype);
  q_bytes = static_cast<size_t>(it.batch * it.heads_q * it.seq_q * it.head_dim) * es;
  kv_bytes = static_cast<size_t>(it.batch * it.heads_kv * it.seq_kv * it.head_dim) * es;
  o_bytes = q_bytes;
  SdpaGraph g(*this, a);
  if (auto why = g.build(it, data_type(it.dtype), s.handle()); !why.empty()) return why;
  std::string last;
  if (heuristics(kHeurA, "A", max_workspace, last).empty()) return "";
  if (heuristics(kHeurFallback, "fallback", max_workspace, last).empty()) return "";
  return "cuDNN has no engine for this SDPA graph: " + last;
}

std::string Sdpa::pack(const SdpaBuffers& b, BackendDesc& out) {
  const Api& a = *s_->api();
  SdpaGraph g(*this, a);
  std::vector<int64_t> uids = {kUidQ, kUidK, kUidV, kUidO, kUidScale};
  std::vector<void*> ptrs = {b.q, b.k, b.v, b.o, &scale};
  if (causal_) uids.push_back(kUidMaskValue), ptrs.push_back(&mask_value_);
  const auto n = static_cast<int64_t>(uids.size());
  std::string w = g.make(kVariantPack, "variant pack", out);
  if (w.empty()) w = g.set(out, kPackUids, "CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS", kTypeInt64, n, uids.data());
  if (w.empty()) w = g.set(out, kPackPointers, "CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS", kTypeVoidPtr, n, ptrs.data());
  if (w.empty()) w = g.set(out, kPackWorkspace, "CUDNN_ATTR_VARIANT_PACK_WORKSPACE", kTypeVoidPtr, 1, &b.workspace);
  if (w.empty()) w = g.finalize(out);
  if (w.empty()) owned_.pop_back();  // the caller's now (drop())
  if (!w.empty()) out = nullptr;     // destroyed with the plan
  return w;
}

void Sdpa::drop(BackendDesc pack) const {
  if (pack != nullptr && s_ != nullptr && s_->api() != nullptr) s_->api()->BackendDestroyDescriptor(pack);
}

std::string Sdpa::run(BackendDesc pack) const {
  const Api& a = *s_->api();
  const Status st = a.BackendExecute(s_->handle(), plan_, pack);
  return st == kSuccess ? "" : "cudnnBackendExecute(" + engine + "): " + status_text(a, st);
}

std::shared_ptr<Sdpa> SdpaCache::get(Session& s, const Item& it, size_t max_workspace, std::string& why) {
  const std::string key = fmt::format("{} {} {} {} {} {} {} {} {}", it.dtype, it.batch, it.heads_q, it.heads_kv, it.seq_q, it.seq_kv,
                                      it.head_dim, it.causal, it.scale);
  auto found = plans_.find(key);
  if (found == plans_.end()) {
    auto p = std::make_shared<Sdpa>();
    std::string w = p->plan(s, it, max_workspace);
    if (!w.empty()) p.reset();
    found = plans_.emplace(key, std::make_pair(p, w)).first;
  }
  why = found->second.second;
  return found->second.first;
}

}  // namespace jouleprof::replay::cudnn
