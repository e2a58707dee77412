// jouleprof-replay's attention tier against the fake cuDNN (fakes/cudnn): the SDPA-forward graph
// built through the backend API for a causal GQA bf16 shape and a non-causal fp16 one (operations
// in order, tensor dims/strides/types, unique uids, the scale passed by value, finalize order),
// the engine config of heuristics mode A, the variant pack and execution on the session's
// stream; and every refusal as one line naming the step and cuDNN's status (finalize refused,
// no engine, execution failed, a cuDNN without the backend API), kept per shape by the cache.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cudnn_sdpa.hpp"

using namespace jouleprof::replay;
namespace be = jouleprof::replay::cudnn::backend;

namespace {

struct Fake {
  void* h = dlopen(JOULEPROF_FAKE_CUDNN, RTLD_NOW | RTLD_LOCAL);
  std::string log() const { return reinterpret_cast<const char* (*)()>(dlsym(h, "fakecudnn_log"))(); }
  void reset() const { reinterpret_cast<void (*)()>(dlsym(h, "fakecudnn_reset"))(); }
  Fake() {
    setenv("JOULEPROF_CUDNN_LIB", JOULEPROF_FAKE_CUDNN, 1);
    unsetenv("FAKECUDNN_FAIL_FINALIZE");
    unsetenv("FAKECUDNN_FAIL_EXECUTE");
    unsetenv("JOULEPROF_REPLAY_ATTENTION");
    reset();
  }
  ~Fake() {
    unsetenv("JOULEPROF_CUDNN_LIB");
    unsetenv("FAKECUDNN_FAIL_FINALIZE");
    unsetenv("FAKECUDNN_FAIL_EXECUTE");
    dlclose(h);
  }
};

// The backend descriptors the fake logged: type, attributes (as logged values), finalize order.
struct Desc {
  int type = -1, finalized_at = -1;
  std::map<int, std::string> attrs;
};
std::map<int, Desc> descriptors(const std::string& log) {
  std::map<int, Desc> d;
  std::istringstream in(log);
  std::string line;
  int finalizes = 0;
  while (std::getline(in, line)) {
    std::istringstream w(line);
    std::string call, a, b, c, n, values;
    w >> call >> a >> b;
    if (call == "cudnnBackendCreateDescriptor") {
      d[std::stoi(b.substr(1))].type = std::stoi(a.substr(5));
    } else if (call == "cudnnBackendSetAttribute") {
      w >> c >> n >> values;
      d[std::stoi(a.substr(1))].attrs[std::stoi(b.substr(5))] = values;
    } else if (call == "cudnnBackendFinalize" && b != "refused") {
      d[std::stoi(a.substr(1))].finalized_at = finalizes++;
    }
  }
  return d;
}
int id_of(const std::string& ref) { return std::stoi(ref.substr(1)); }

// The operation graph's operations in order, e.g. "matmul mul max sub exp sum log add div matmul".
std::string op_sequence(const std::map<int, Desc>& d) {
  const auto graph = std::find_if(d.begin(), d.end(), [](const auto& x) { return x.second.type == be::kOpGraph; });
  if (graph == d.end()) return "no graph";
  std::string seq, ref;
  std::istringstream ops(graph->second.attrs.at(be::kOpGraphOps));
  const std::map<std::string, std::string> pw = {{"0", "add"}, {"1", "mul"}, {"9", "sub"}, {"13", "exp"}, {"15", "log"}, {"6", "div"}, {"303", "cmp_ge"}, {"601", "select"}};
  while (std::getline(ops, ref, ',')) {
    const Desc& op = d.at(id_of(ref));
    std::string name = "?";
    if (op.type == be::kOpMatmul) name = "matmul";
    if (op.type == be::kOpReduction) name = d.at(id_of(op.attrs.at(be::kOpReductionDesc))).attrs.at(be::kReductionOperator) == "3" ? "max" : "sum";
    if (op.type == be::kOpPointwise) {
      const Desc& p = d.at(id_of(op.attrs.at(be::kOpPwDesc)));
      const std::string mode = p.attrs.at(be::kPointwiseMode);
      name = mode == "501" ? "index" + p.attrs.at(be::kPointwiseAxis) : pw.count(mode) != 0 ? pw.at(mode) : mode;
    }
    if (op.finalized_at < 0 || op.finalized_at > graph->second.finalized_at) name += "(not finalized before the graph)";
    seq += (seq.empty() ? "" : " ") + name;
  }
  return seq;
}

// The graph's dataflow by tensor uid, op by op: "matmul(1,2>100) mul(100,5>101) ...".
std::string dataflow(const std::map<int, Desc>& d) {
  const auto graph = std::find_if(d.begin(), d.end(), [](const auto& x) { return x.second.type == be::kOpGraph; });
  if (graph == d.end()) return "no graph";
  auto uid = [&](const Desc& op, int attr) { return op.attrs.count(attr) != 0 ? d.at(id_of(op.attrs.at(attr))).attrs.at(be::kTensorUid) : ""; };
  std::string flow, ref;
  std::istringstream ops(graph->second.attrs.at(be::kOpGraphOps));
  while (std::getline(ops, ref, ',')) {
    const Desc& op = d.at(id_of(ref));
    std::vector<int> in = {be::kOpPwX, be::kOpPwB, be::kOpPwT};
    int out = be::kOpPwY;
    if (op.type == be::kOpMatmul) in = {be::kOpMatmulA, be::kOpMatmulB}, out = be::kOpMatmulC;
    if (op.type == be::kOpReduction) in = {be::kOpReductionX}, out = be::kOpReductionY;
    std::string args;
    for (int a : in) {
      if (op.attrs.count(a) != 0) args += (args.empty() ? "" : ",") + uid(op, a);
    }
    flow += (flow.empty() ? "" : " ") + std::string("(") + args + ">" + uid(op, out) + ")";
  }
  return flow;
}

// Each matmul's A and B data types, "A/B" per matmul: cuDNN's backend refuses a matmul whose
// operands differ ("A and B need to have the same datatype in the matmul", cuDNN 9.19 on an H200).
std::string matmul_operand_types(const std::map<int, Desc>& d) {
  std::string out;
  for (const auto& [id, op] : d) {
    if (op.type != be::kOpMatmul) continue;
    auto type = [&](int attr) { return d.at(id_of(op.attrs.at(attr))).attrs.at(be::kTensorDataType); };
    out += (out.empty() ? "" : " ") + type(be::kOpMatmulA) + "/" + type(be::kOpMatmulB);
  }
  return out;
}

// The tensor of uid `uid`.
const Desc* tensor(const std::map<int, Desc>& d, int64_t uid) {
  for (const auto& [id, t] : d) {
    if (t.type == be::kTensor && t.attrs.count(be::kTensorUid) != 0 && t.attrs.at(be::kTensorUid) == std::to_string(uid)) return &t;
  }
  return nullptr;
}

Item attention(const std::string& dtype, int64_t b, int64_t hq, int64_t hkv, int64_t s, int64_t d, bool causal) {
  Item it;
  it.tier = "attention";
  it.dtype = dtype;
  it.batch = b;
  it.heads_q = hq;
  it.heads_kv = hkv;
  it.seq_q = it.seq_kv = s;
  it.head_dim = d;
  it.causal = causal;
  return it;
}

auto* const kStream = reinterpret_cast<cudnn::Stream>(0x1234);
bool has(const std::string& log, const std::string& line) { return log.find(line) != std::string::npos; }

}  // namespace

// Llama-3-8B-like prefill: 32 query heads over 8 key/value heads, causal, bf16.
TEST(EngineSdpa, CausalGqaBf16GraphIsTheSdpaPatternWithTransposedK) {
  Fake fake;
  ASSERT_NE(fake.h, nullptr);
  cudnn::Session s;
  ASSERT_EQ(s.open(kStream), "");
  cudnn::Sdpa sdpa;
  ASSERT_EQ(sdpa.plan(s, attention("bf16", 2, 32, 8, 1024, 128, true), size_t{1} << 30), "");
  const auto d = descriptors(fake.log());
  EXPECT_EQ(op_sequence(d), "matmul mul index2 index3 cmp_ge select max sub exp sum log add div matmul") << fake.log();
  // Q·Kᵀ → ·scale → the mask's indices of the scaled scores → select(scaled, mask value, row ≥ col) →
  // max, sub, exp, sum, log sum, stats = max + log sum, div of the masked scores → ·V into O.
  EXPECT_EQ(dataflow(d), "(1,2>100) (100,5>101) (101>102) (101>103) (102,103>104) (101,6,104>105) (105>106) (105,106>107) (107>108) (108>109) "
                         "(109>110) (106,110>111) (108,109>112) (112,3>4)");
  // Q [2,32,1024,128] BHSD; K [2,8,1024,128] read as Kᵀ [2,8,128,1024]; V, O packed; all bf16, 16-byte aligned.
  const Desc* q = tensor(d, cudnn::kUidQ);
  const Desc* k = tensor(d, cudnn::kUidK);
  const Desc* v = tensor(d, cudnn::kUidV);
  const Desc* o = tensor(d, cudnn::kUidO);
  ASSERT_TRUE(q && k && v && o);
  EXPECT_EQ(q->attrs.at(be::kTensorDims), "2,32,1024,128");
  EXPECT_EQ(q->attrs.at(be::kTensorStrides), "4194304,131072,128,1");
  EXPECT_EQ(k->attrs.at(be::kTensorDims), "2,8,128,1024");
  EXPECT_EQ(k->attrs.at(be::kTensorStrides), "1048576,131072,1,128");
  EXPECT_EQ(v->attrs.at(be::kTensorDims), "2,8,1024,128");
  EXPECT_EQ(v->attrs.at(be::kTensorStrides), "1048576,131072,128,1");
  EXPECT_EQ(o->attrs.at(be::kTensorDims), "2,32,1024,128");
  for (const Desc* t : {q, k, v, o}) {
    EXPECT_EQ(t->attrs.at(be::kTensorDataType), "9");
    EXPECT_EQ(t->attrs.at(be::kTensorAlignment), "16");
    EXPECT_EQ(t->attrs.count(be::kTensorVirtual), 0u);
  }
  const Desc* scale = tensor(d, cudnn::kUidScale);
  const Desc* mask = tensor(d, cudnn::kUidMaskValue);
  ASSERT_TRUE(scale && mask);
  EXPECT_EQ(scale->attrs.at(be::kTensorByValue), "1");
  EXPECT_EQ(scale->attrs.at(be::kTensorDims), "1,1,1,1");
  EXPECT_EQ(mask->attrs.at(be::kTensorByValue), "1");
  EXPECT_FLOAT_EQ(sdpa.scale, 1.0f / std::sqrt(128.0f));
  // Every uid once; the scores [2,32,1024,1024] virtual fp32; the row statistics [2,32,1024,1].
  std::set<std::string> uids;
  int tensors = 0, scores = 0, rows = 0;
  for (const auto& [id, t] : d) {
    if (t.type != be::kTensor) continue;
    ++tensors;
    uids.insert(t.attrs.at(be::kTensorUid));
    EXPECT_GE(t.finalized_at, 0) << "tensor #" << id << " not finalized";
    if (t.attrs.count(be::kTensorVirtual) != 0 && t.attrs.at(be::kTensorDims) == "2,32,1024,1024") ++scores;
    if (t.attrs.count(be::kTensorVirtual) != 0 && t.attrs.at(be::kTensorDims) == "2,32,1024,1") ++rows;
  }
  EXPECT_EQ(static_cast<int>(uids.size()), tensors);
  EXPECT_EQ(scores, 9);   // S, S·scale, row and col index, mask, masked S, S - max, exp, P
  EXPECT_EQ(rows, 4);     // max, sum, log sum, stats = max + log sum
  EXPECT_EQ(matmul_operand_types(d), "9/9 9/9");  // Q·Kᵀ and P·V, P in the I/O type (bf16)
  // Heuristics mode A; its first config planned; 1 MiB of workspace (the fake's).
  EXPECT_TRUE(has(fake.log(), " attr=200 type=8 n=1 3\n")) << fake.log();
  EXPECT_EQ(sdpa.engine, "engine config 1 of 2 (heuristics mode A)");
  EXPECT_EQ(sdpa.workspace_bytes, size_t{1} << 20);
  EXPECT_EQ(sdpa.q_bytes, size_t{2} * 32 * 1024 * 128 * 2);
  EXPECT_EQ(sdpa.kv_bytes, size_t{2} * 8 * 1024 * 128 * 2);
  int buf[5] = {};
  cudnn::BackendDesc pack = nullptr;
  ASSERT_EQ(sdpa.pack({&buf[0], &buf[1], &buf[2], &buf[3], &buf[4]}, pack), "");
  EXPECT_EQ(sdpa.run(pack), "");
  EXPECT_TRUE(has(fake.log(), "stream=0x1234 uids=1,2,3,4,5,6 pointers=set,set,set,set,set,set workspace=set by_value=5:0.0883883;6:-3.40282e+38;"))
      << fake.log();
  sdpa.drop(pack);
}

// BERT-base: 12 heads of 64 at 512 tokens, not causal, fp16; PyTorch's scale given.
TEST(EngineSdpa, NonCausalFp16GraphHasNoMaskAndTheGivenScale) {
  Fake fake;
  cudnn::Session s;
  ASSERT_EQ(s.open(kStream), "");
  Item it = attention("fp16", 32, 12, 12, 512, 64, false);
  it.scale = 0.2;
  cudnn::Sdpa sdpa;
  ASSERT_EQ(sdpa.plan(s, it, size_t{1} << 30), "");
  const auto d = descriptors(fake.log());
  EXPECT_EQ(op_sequence(d), "matmul mul max sub exp sum log add div matmul");
  EXPECT_EQ(dataflow(d), "(1,2>100) (100,5>101) (101>102) (101,102>103) (103>104) (104>105) (105>106) (102,106>107) (104,105>108) (108,3>4)");
  EXPECT_EQ(tensor(d, cudnn::kUidMaskValue), nullptr);
  EXPECT_EQ(tensor(d, cudnn::kUidK)->attrs.at(be::kTensorStrides), "393216,32768,1,64");
  EXPECT_EQ(tensor(d, cudnn::kUidQ)->attrs.at(be::kTensorDataType), "2");
  EXPECT_EQ(sdpa.ops, 10u);
  int buf[5] = {};
  cudnn::BackendDesc pack = nullptr;
  ASSERT_EQ(sdpa.pack({&buf[0], &buf[1], &buf[2], &buf[3], &buf[4]}, pack), "");
  EXPECT_EQ(sdpa.run(pack), "");
  EXPECT_TRUE(has(fake.log(), "uids=1,2,3,4,5 pointers=set,set,set,set,set workspace=set by_value=5:0.2;")) << fake.log();
  sdpa.drop(pack);
}

// A graph cuDNN refuses: one line naming the descriptor and cuDNN's status and text; the cache
// keeps the refusal (no second attempt) and other shapes still plan once the library accepts them.
TEST(EngineSdpa, RefusedFinalizeIsOneLineKeptPerShape) {
  Fake fake;
  cudnn::Session s;
  ASSERT_EQ(s.open(kStream), "");
  setenv("FAKECUDNN_FAIL_FINALIZE", std::to_string(be::kOpGraph).c_str(), 1);
  cudnn::SdpaCache cache;
  std::string why;
  const Item causal = attention("bf16", 2, 32, 8, 1024, 128, true);
  EXPECT_EQ(cache.get(s, causal, size_t{1} << 30, why), nullptr);
  EXPECT_EQ(why, "cudnnBackendFinalize(OPERATIONGRAPH_DESCRIPTOR 'SDPA forward'): CUDNN_STATUS_NOT_SUPPORTED (3000): fake cuDNN refuses to "
                 "finalize descriptor type 15");
  EXPECT_EQ(cudnn::unfused_line(why).rfind("attention not run through cuDNN SDPA (cudnnBackendFinalize(OPERATIONGRAPH_DESCRIPTOR", 0), 0u);
  EXPECT_NE(cudnn::unfused_line(why).find("): replayed unfused, two batched cuBLASLt GEMMs and a memory pass"), std::string::npos);
  unsetenv("FAKECUDNN_FAIL_FINALIZE");
  fake.reset();
  std::string again;
  EXPECT_EQ(cache.get(s, causal, size_t{1} << 30, again), nullptr);  // kept: no cuDNN call
  EXPECT_EQ(again, why);
  EXPECT_EQ(fake.log(), "");
  std::string ok;
  EXPECT_NE(cache.get(s, attention("bf16", 2, 32, 8, 1024, 128, false), size_t{1} << 30, ok), nullptr);
  EXPECT_EQ(ok, "");
  EXPECT_NE(cache.get(s, attention("bf16", 2, 32, 8, 1024, 128, false), size_t{1} << 30, ok), nullptr);
  EXPECT_EQ(cache.size(), 2u);
  // Every plan refused: mode A's configs, then the fallback mode's; the last refusal is the line.
  setenv("FAKECUDNN_FAIL_FINALIZE", std::to_string(be::kExecutionPlan).c_str(), 1);
  fake.reset();
  cudnn::Sdpa sdpa;
  EXPECT_EQ(sdpa.plan(s, causal, size_t{1} << 30),
            "cuDNN has no engine for this SDPA graph: cudnnBackendFinalize(EXECUTION_PLAN_DESCRIPTOR 'engine config 2 of 2 (heuristics mode "
            "fallback)'): CUDNN_STATUS_NOT_SUPPORTED (3000): fake cuDNN refuses to finalize descriptor type 5");
  EXPECT_TRUE(has(fake.log(), " attr=200 type=8 n=1 3\n") && has(fake.log(), " attr=200 type=8 n=1 2\n")) << fake.log();
  unsetenv("FAKECUDNN_FAIL_FINALIZE");
  // Within a workspace limit below the plans' 1 MiB: no engine either.
  EXPECT_EQ(sdpa.plan(s, causal, 1000),
            "cuDNN has no engine for this SDPA graph: engine config 2 of 2 (heuristics mode fallback) needs 1 MiB of workspace");
}

TEST(EngineSdpa, ExecutionFailureNamesTheEngineConfig) {
  Fake fake;
  cudnn::Session s;
  ASSERT_EQ(s.open(kStream), "");
  cudnn::Sdpa sdpa;
  ASSERT_EQ(sdpa.plan(s, attention("bf16", 1, 8, 8, 128, 64, false), size_t{1} << 30), "");
  int buf[5] = {};
  cudnn::BackendDesc pack = nullptr;
  ASSERT_EQ(sdpa.pack({&buf[0], &buf[1], &buf[2], &buf[3], &buf[4]}, pack), "");
  setenv("FAKECUDNN_FAIL_EXECUTE", "1", 1);
  EXPECT_EQ(sdpa.run(pack),
            "cudnnBackendExecute(engine config 1 of 2 (heuristics mode A)): CUDNN_STATUS_EXECUTION_FAILED (5000): fake cuDNN fails the execution");
  sdpa.drop(pack);
}

// A cuDNN without the backend API (cuDNN 7, a trimmed build): conv still opens, attention says why.
TEST(EngineSdpa, LibraryWithoutBackendApiIsRefusedButStillOpens) {
  void* legacy = dlopen(JOULEPROF_FAKE_CUDNN_LEGACY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(legacy, nullptr);
  EXPECT_EQ(dlsym(legacy, "cudnnBackendCreateDescriptor"), nullptr);
  setenv("JOULEPROF_CUDNN_LIB", JOULEPROF_FAKE_CUDNN_LEGACY, 1);
  cudnn::Session s;
  EXPECT_EQ(s.open(kStream), "");
  cudnn::Sdpa sdpa;
  const std::string why = sdpa.plan(s, attention("bf16", 1, 8, 8, 128, 64, false), size_t{1} << 30);
  unsetenv("JOULEPROF_CUDNN_LIB");
  EXPECT_EQ(why, "cuDNN " + std::string(JOULEPROF_FAKE_CUDNN_LEGACY) + " lacks the backend graph API (cudnnBackendCreateDescriptor ...)");
  dlclose(legacy);
}

TEST(EngineSdpa, RefusedBeforeCudnnForTheBaselineOtherDtypesAndOddHeads) {
  Fake fake;
  cudnn::Session s;
  ASSERT_EQ(s.open(kStream), "");
  cudnn::Sdpa sdpa;
  EXPECT_EQ(sdpa.plan(s, attention("fp32", 1, 8, 8, 128, 64, false), size_t{1} << 30),
            "dtype fp32 is not run through cuDNN's SDPA (fp16, bf16 are)");
  EXPECT_EQ(sdpa.plan(s, attention("bf16", 1, 12, 8, 128, 64, false), size_t{1} << 30), "12 query heads are not a multiple of 8 key/value heads");
  EXPECT_EQ(sdpa.plan(s, attention("bf16", 1, 8, 8, 0, 64, false), size_t{1} << 30), "empty attention shape");
  setenv("JOULEPROF_REPLAY_ATTENTION", "unfused", 1);
  EXPECT_EQ(sdpa.plan(s, attention("bf16", 1, 8, 8, 128, 64, false), size_t{1} << 30), "JOULEPROF_REPLAY_ATTENTION=unfused");
  unsetenv("JOULEPROF_REPLAY_ATTENTION");
  EXPECT_EQ(fake.log().find("cudnnBackend"), std::string::npos) << fake.log();
  cudnn::Session closed;
  setenv("JOULEPROF_CUDNN_LIB", "/nonexistent/libcudnn.so.9", 1);
  ASSERT_NE(closed.open(kStream), "");
  EXPECT_EQ(sdpa.plan(closed, attention("bf16", 1, 8, 8, 128, 64, false), size_t{1} << 30), "cuDNN is not open");
}
