// The attention tier of jouleprof-replay: cuDNN's fused scaled-dot-product attention (forward,
// inference: no dropout, no statistics), reachable only through cuDNN's backend graph API
// (cudnnBackendCreateDescriptor / SetAttribute / Finalize / Execute), loaded at run time with the
// rest of cuDNN (cudnn_conv.hpp). The graph is the one cuDNN's SDPA engines recognise:
//   S = Q·Kᵀ → S·scale → [causal: select(row ≥ col, S, lowest)] → softmax (max, sub, exp, sum, div)
//   → O = P·V, Q K V O in BHSD layout (K read transposed through its strides), GQA by fewer K/V heads.
// Plain C++: built everywhere, tested on a CPU against fakes/cudnn; replay_cuda.cu gives it
// device buffers and a stream. Failures come back as one line naming the failing step (which
// descriptor, which attribute) and cuDNN's status and last-error text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cudnn_conv.hpp"

namespace jouleprof::replay::cudnn {

/// The backend API's constants this tier uses, by their values in cuDNN 9 API reference,
/// cudnn_graph.h (an interface: the enums are part of cuDNN's stable ABI).
namespace backend {
// cudnnBackendDescriptorType_t
inline constexpr int kPointwiseDesc = 0, kEngineCfg = 3, kEngineHeur = 4, kExecutionPlan = 5, kOpPointwise = 13, kOpGraph = 15,
                     kVariantPack = 16, kTensor = 17, kMatmulDesc = 18, kOpMatmul = 19, kReductionDesc = 21, kOpReduction = 22;
// cudnnBackendAttributeType_t
inline constexpr int kTypeHandle = 0, kTypeDataType = 1, kTypeBoolean = 2, kTypeInt64 = 3, kTypeFloat = 4, kTypeVoidPtr = 6,
                     kTypeHeurMode = 8, kTypePointwiseMode = 14, kTypeDescriptor = 15, kTypeReductionOp = 18;
// cudnnBackendAttributeName_t
inline constexpr int kPointwiseMode = 0, kPointwiseMathPrec = 1, kPointwiseAxis = 9;
inline constexpr int kHeurMode = 200, kHeurOpGraph = 201, kHeurResults = 202;
inline constexpr int kPlanHandle = 400, kPlanEngineCfg = 401, kPlanWorkspaceSize = 402;
inline constexpr int kOpPwDesc = 750, kOpPwX = 751, kOpPwB = 752, kOpPwY = 753, kOpPwT = 758;
inline constexpr int kOpGraphHandle = 800, kOpGraphOps = 801;
inline constexpr int kTensorAlignment = 900, kTensorDataType = 901, kTensorDims = 902, kTensorStrides = 903, kTensorUid = 906,
                     kTensorVirtual = 907, kTensorByValue = 908;
inline constexpr int kPackUids = 1000, kPackPointers = 1001, kPackWorkspace = 1003;
inline constexpr int kMatmulCompType = 1500, kOpMatmulA = 1520, kOpMatmulB = 1521, kOpMatmulC = 1522, kOpMatmulDesc = 1523;
inline constexpr int kReductionOperator = 1600, kReductionCompType = 1601, kOpReductionX = 1610, kOpReductionY = 1611,
                     kOpReductionDesc = 1612;
// cudnnPointwiseMode_t
inline constexpr int kAdd = 0, kMul = 1, kDiv = 6, kSub = 9, kExp = 13, kLog = 15, kCmpGe = 303, kGenIndex = 501, kBinarySelect = 601;
// cudnnReduceTensorOp_t
inline constexpr int kReduceAdd = 0, kReduceMax = 3;
// cudnnBackendHeurMode_t
inline constexpr int kHeurInstant = 0, kHeurB = 1, kHeurFallback = 2, kHeurA = 3;
// cudnnDataType_t (beyond cudnn_conv.hpp's)
inline constexpr int kInt32 = 4, kBoolean = 11;
// cudnnStatus_t
inline constexpr Status kNotSupported = 3000;
/// The descriptor type's name, as in cudnn_graph.h without its CUDNN_BACKEND_ prefix.
const char* type_name(int type);
}  // namespace backend

/// Tensor uids of the graph's inputs and output (the variant pack's); virtual tensors from kFirstVirtualUid.
inline constexpr int64_t kUidQ = 1, kUidK = 2, kUidV = 3, kUidO = 4, kUidScale = 5, kUidMaskValue = 6, kFirstVirtualUid = 100;

/// Device buffers of one SDPA call: Q, K, V, O in BHSD layout and the plan's workspace.
struct SdpaBuffers {
  void* q = nullptr;
  void* k = nullptr;
  void* v = nullptr;
  void* o = nullptr;
  void* workspace = nullptr;
};

/// One SDPA forward described to cuDNN and planned: the operation graph, the first engine config
/// of heuristics mode A (then the fallback mode) whose plan finalizes within the workspace limit.
class Sdpa {
 public:
  Sdpa() = default;
  Sdpa(const Sdpa&) = delete;
  Sdpa& operator=(const Sdpa&) = delete;
  ~Sdpa() { release(); }
  /// Describes `it` (tier attention) to cuDNN and plans it; "" or why it cannot run (one line).
  std::string plan(Session& s, const Item& it, size_t max_workspace);
  /// A variant pack of `b` (built once per buffer set, outside any graph capture); "" or why.
  /// The caller owns it: drop() it before this plan goes.
  std::string pack(const SdpaBuffers& b, BackendDesc& out);
  void drop(BackendDesc pack) const;
  /// Enqueues one SDPA on the session's stream with a pack of pack(); "" or the cuDNN error.
  std::string run(BackendDesc pack) const;
  void release();

  size_t q_bytes = 0, kv_bytes = 0, o_bytes = 0, workspace_bytes = 0;  ///< K and V: kv_bytes each
  float scale = 0;        ///< the scale of Q·Kᵀ (the item's, else 1/sqrt(head_dim))
  std::string engine;     ///< which engine config ran: "engine config 1 of 4 (heuristics mode A)"
  std::size_t ops = 0;    ///< operations in the graph

 private:
  friend class SdpaGraph;
  std::string heuristics(int mode, const char* mode_name, size_t max_workspace, std::string& last);
  Session* s_ = nullptr;
  std::vector<BackendDesc> owned_;  // every descriptor made here, destroyed by release()
  BackendDesc graph_ = nullptr, plan_ = nullptr;
  bool causal_ = false;
  float mask_value_ = 0;  // the by-value "minus infinity" of the causal mask
};

/// Plans per attention shape, kept for the engine's life (the context replay's units and repeated
/// rows of one shape share a plan); a failure is kept too (answered at once the next time).
class SdpaCache {
 public:
  /// The plan of `it`'s shape, or null and `why`.
  std::shared_ptr<Sdpa> get(Session& s, const Item& it, size_t max_workspace, std::string& why);
  std::size_t size() const { return plans_.size(); }
  void clear() { plans_.clear(); }

 private:
  std::map<std::string, std::pair<std::shared_ptr<Sdpa>, std::string>> plans_;
};

/// Why `it` is not run through cuDNN's SDPA before any cuDNN call ("" when it may be):
/// $JOULEPROF_REPLAY_ATTENTION=unfused (the baseline), a dtype other than fp16/bf16, a bad shape.
std::string sdpa_refused(const Item& it);

/// The engine's one line for an attention row replayed unfused:
/// "attention not run through cuDNN SDPA (why): replayed unfused, two batched cuBLASLt GEMMs and a memory pass".
std::string unfused_line(const std::string& why);

}  // namespace jouleprof::replay::cudnn
