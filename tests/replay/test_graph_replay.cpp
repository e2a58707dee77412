// The exact replay (graph_replay.cpp) against the fake CUDA driver (fakes/cuda): listing and
// grouping of a synthetic graph's nodes, each group replayed as copies of itself with a virtual GPU
// clock, and the error paths: a node type the replay does not know, a 100k-node graph, a node whose
// replay fails (one line naming the kernel, the rest goes on) or faults (the context is lost: the
// rest is "not_measured", never silently missing), no current context, a null graph; a graph with
// stream-ordered allocations (its nodes on graph-owned memory re-created on real buffers); the
// restart past a faulting row (stable row ids, the progress file, prior and faulted rows).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "jouleprof/replay/graph_replay.hpp"
#include "trials.hpp"

using namespace jouleprof;

namespace {

// A host clock that advances only when paused or read, and a GPU drawing a constant 300 W.
class FakeProbe final : public replay::Probe {
 public:
  double now() override { return t_ += 1e-6; }
  void pause(double s) override { t_ += s; }
  std::optional<double> counter_j() override { return std::nullopt; }
  void drain() override {}
  std::pair<double, std::size_t> mean_power(double a, double b) override { return {300.0, b > a ? 10 : 0}; }

 private:
  double t_ = 0;
};

struct Fake {
  void* lib = nullptr;
  void* (*build)(const char*) = nullptr;
  void (*reset)() = nullptr;
  Fake() {
    lib = dlopen(JOULEPROF_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return;
    build = reinterpret_cast<void* (*)(const char*)>(dlsym(lib, "fakecuda_build_graph"));
    reset = reinterpret_cast<void (*)()>(dlsym(lib, "fakecuda_reset"));
  }
  std::uintptr_t graph(const char* spec) {
    reset();
    return reinterpret_cast<std::uintptr_t>(build(spec));
  }
};

Fake& fake() {
  static Fake f;
  return f;
}

GraphReplayOptions quick() {
  GraphReplayOptions o;
  o.cuda_library = JOULEPROF_FAKE_CUDA;
  o.warmup_s = 0;
  o.trials = 3;
  o.trial_s = 0.05;
  o.settle_s = 0.01;
  return o;
}

const ExactRow* row(const GraphReplay& r, const std::string& name) {
  for (const ExactRow& x : r.rows) {
    if (x.group.name == name) return &x;
  }
  return nullptr;
}

}  // namespace

TEST(GraphReplay, ListsAndGroupsNodesWithPointersMasked) {
  ASSERT_NE(fake().build, nullptr);
  // 12 calls of one GEMM on 12 layers' buffers (one row), 5 elementwise calls of distinct sizes
  // (five rows), copies, a host node (not replayed, said so), an empty node (ignored).
  const auto g = fake().graph("kernel,_Z4gemmPfS_i,12,20000;kernel,relu_kernel,5,3000,distinct;memcpy,,2,0;memset,,3,0;host,,1,0;type5,,1,0");
  auto l = list_cuda_graph(g, JOULEPROF_FAKE_CUDA);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->nodes.size(), 24u);
  ASSERT_EQ(l->groups.size(), 1u + 5u + 1u + 1u);
  EXPECT_EQ(l->groups[0].name, "gemm(float*, float*, int)");  // demangled
  EXPECT_EQ(l->groups[0].count, 12u);
  EXPECT_EQ(l->groups[0].grid[0], 8u);
  EXPECT_EQ(l->groups[1].count, 1u);
  EXPECT_EQ(l->groups[6].name, "memcpy DtoD");
  EXPECT_EQ(l->groups[6].count, 2u);
  EXPECT_EQ(l->groups[6].bytes, 1u << 20);
  EXPECT_EQ(l->groups[7].bytes, 1u << 20);  // 2^18 elements of 4 bytes
  EXPECT_EQ(l->not_replayed.at("host"), 1u);
  EXPECT_EQ(l->not_replayed.count("empty"), 0u);
  ASSERT_EQ(l->warnings.size(), 2u);
  EXPECT_NE(l->warnings[0].find("1 node of type host not replayed"), std::string::npos);
  EXPECT_EQ(l->warnings[1].rfind("5 rows of relu_kernel share its launch configuration", 0), 0u);  // the sizes keep them apart
}

TEST(GraphReplay, UnknownNodeTypeIsCountedNotFatal) {
  const auto g = fake().graph("kernel,k,2,1000;type99,,3,0");
  auto l = list_cuda_graph(g, JOULEPROF_FAKE_CUDA);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->groups.size(), 1u);
  EXPECT_EQ(l->not_replayed.at("type 99"), 3u);
}

TEST(GraphReplay, ReplaysEachGroupWithItsOwnTimeAndTheSensorsPower) {
  const auto g = fake().graph("kernel,gemm,12,20000;kernel,relu,30,3000;memset,,3,0");
  FakeProbe probe;
  GraphReplayOptions o = quick();
  o.coverage = 1.0;
  auto r = replay_cuda_graph(g, o, &probe);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->gpu, "Fake CUDA GPU");
  EXPECT_EQ(r->nodes, 45u);
  ASSERT_EQ(r->rows.size(), 3u);
  EXPECT_EQ(r->rows[0].group.name, "gemm");  // longest (count × time) first
  for (const ExactRow& x : r->rows) EXPECT_EQ(x.status, "measured") << x.group.name << ": " << x.reason;
  const ExactRow* gemm = row(*r, "gemm");
  const ExactRow* relu = row(*r, "relu");
  ASSERT_TRUE(gemm && relu);
  EXPECT_NEAR(gemm->time_ns, 20000, 20);
  EXPECT_NEAR(relu->time_ns, 3000, 3);
  EXPECT_NEAR(gemm->energy_j, 300 * 20000e-9, 1e-6);
  EXPECT_EQ(gemm->trial_time_ns.size(), 3u);
  EXPECT_EQ(gemm->copies, 100u);  // 2 ms of 20 µs calls
  // Σ count × per call; the whole graph (12 × 20 + 30 × 3 + 3 × 0.5 µs) measured the same way.
  EXPECT_NEAR(r->predicted_time_s, 12 * 20e-6 + 30 * 3e-6 + 3 * 0.524288e-6, 1e-9);
  ASSERT_TRUE(r->step.measured) << r->step.reason;
  EXPECT_NEAR(r->step.time_ns * 1e-9, r->predicted_time_s, 1e-10);
  EXPECT_NEAR(r->measured_share, 1.0, 1e-12);
  const auto j = nlohmann::json::parse(graph_replay_json(*r));
  EXPECT_EQ(j["schema"], "jouleprof.exact_replay");
  EXPECT_EQ(j["rows"][0]["status"], "measured");
  EXPECT_EQ(j["rows"][0]["exact"], true);
}

TEST(GraphReplay, CopiesCycleThroughTheLayersBuffersNotOneLayersFromL2) {
  // 12 layers' instances of one GEMM; the fake runs a launch on the input buffer of the launch
  // just before in half its time ("l2"). Cycling through the members, the copies read each layer's
  // buffers in turn and take the step's 20 µs; copies of one member (the design before) would read
  // one buffer and take 10 µs, and this fails.
  const auto g = fake().graph("kernel,gemm,12,20000,l2");
  FakeProbe probe;
  GraphReplayOptions o = quick();
  auto r = replay_cuda_graph(g, o, &probe);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_NEAR(r->rows[0].time_ns, 20000, 20);
  EXPECT_NEAR(r->predicted_time_s, r->step.time_ns * 1e-9, 1e-9);
  // The fake's L2 reaches the replay: where the members share one input buffer ("l2-shared"),
  // the copies run in half the time, as the step itself does.
  auto shared = replay_cuda_graph(fake().graph("kernel,gemm,12,20000,l2-shared"), o, &probe);
  ASSERT_TRUE(shared) << shared.error().message;
  EXPECT_NEAR(shared->rows[0].time_ns, 10000, 10);
  EXPECT_NEAR(shared->step.time_ns, 12 * 10000, 100);
}

TEST(GraphReplay, CoverageLeavesShortRowsTimedAtTheMeasuredPower) {
  const auto g = fake().graph("kernel,big,10,100000;kernel,small,1,1000");
  GraphReplayOptions o = quick();
  o.coverage = 0.9;
  FakeProbe probe;
  auto r = replay_cuda_graph(g, o, &probe);
  ASSERT_TRUE(r);
  const ExactRow* small = row(*r, "small");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, "timed");
  EXPECT_NEAR(small->time_ns, 1000, 1);
  EXPECT_NEAR(small->power_w, 300, 1e-9);
  EXPECT_GT(r->timed_share, 0);
  EXPECT_LT(r->timed_share, 0.01);
}

TEST(GraphReplay, AFailingNodeFailsItsRowAndTheRestGoesOn) {
  const auto g = fake().graph("kernel,gemm,4,20000;kernel,needs_memory,2,5000,oom;kernel,relu,8,3000");
  FakeProbe probe;
  auto r = replay_cuda_graph(g, quick(), &probe);
  ASSERT_TRUE(r) << r.error().message;
  const ExactRow* bad = row(*r, "needs_memory");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, "failed");
  EXPECT_EQ(bad->reason, "kernel needs_memory: cuGraphInstantiate: CUDA_ERROR_OUT_OF_MEMORY (2)");
  EXPECT_EQ(row(*r, "gemm")->status, "measured");
  EXPECT_EQ(row(*r, "relu")->status, "measured");
  EXPECT_NEAR(r->predicted_time_s, 4 * 20e-6 + 8 * 3e-6, 1e-9);
}

TEST(GraphReplay, AFaultLosesTheContextAndTheRestIsNotMeasuredSaidSo) {
  const auto g = fake().graph("kernel,reads_freed,2,5000,fault;kernel,relu,8,3000");
  FakeProbe probe;
  auto r = replay_cuda_graph(g, quick(), &probe);
  ASSERT_TRUE(r) << r.error().message;
  const ExactRow* bad = row(*r, "reads_freed");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, "failed");
  EXPECT_NE(bad->reason.find("reads_freed: cuGraphLaunch: CUDA_ERROR_ILLEGAL_ADDRESS (700)"), std::string::npos);
  EXPECT_EQ(row(*r, "relu")->status, "not_measured");
  EXPECT_NE(row(*r, "relu")->reason.find("lost when reads_freed faulted"), std::string::npos);
  // In-process: one warning that this process's CUDA is gone, and the way past it.
  const auto lost = std::count_if(r->warnings.begin(), r->warnings.end(), [](const std::string& w) {
    return w.rfind(kContextLostWarning, 0) == 0 && w.find("(reads_freed faulted)") != std::string::npos &&
           w.find("replay_step_isolated") != std::string::npos;
  });
  EXPECT_EQ(lost, 1);
  EXPECT_EQ(r->predicted_energy_j, 0);
  EXPECT_GT(r->failed_share, 0.99);
}

// A step with state (transformers' StaticCache decode: the write position is a device counter
// the step advances). Reset inside the step, each row starts from the state one whole step leaves:
// the counter rows advanced is back before the row that indexes with it.
TEST(GraphReplay, EachRowStartsFromTheStateOneStepLeaves) {
  const auto g = fake().graph("kernel,reset_position,1,1000,reset;kernel,advance_position,1,1000,bump;kernel,index_copy,2,4000,index");
  FakeProbe probe;
  auto r = replay_cuda_graph(g, quick(), &probe);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(row(*r, "advance_position"));
  EXPECT_EQ(row(*r, "advance_position")->status, "measured");
  ASSERT_TRUE(row(*r, "index_copy"));
  EXPECT_EQ(row(*r, "index_copy")->status, "measured") << row(*r, "index_copy")->reason;
  EXPECT_EQ(r->failed_share, 0);
}

// The same step without its reset cannot be replayed back to back: one line says why and what to do.
TEST(GraphReplay, AStepThatAdvancesItsStateSaysResetItInsideTheStep) {
  const auto g = fake().graph("kernel,advance_position,1,1000,bump;kernel,index_copy,2,4000,index");
  FakeProbe probe;
  auto r = replay_cuda_graph(g, quick(), &probe);
  ASSERT_FALSE(r);
  const std::string& m = r.error().message;
  EXPECT_NE(m.find("the captured graph itself failed on replay: cuGraphLaunch: CUDA_ERROR_ASSERT (710)"), std::string::npos) << m;
  EXPECT_NE(m.find("must be reset inside the step"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
}

// Rows off: a step whose nodes alone would fault (an index read from a temporary that a later node
// overwrote) still gets its whole-step figures, and the context stays usable.
TEST(GraphReplay, RowsOffMeasuresTheWholeStepOnly) {
  const auto g = fake().graph("kernel,gemm,4,20000;kernel,stale_index,2,3000,fault");
  FakeProbe probe;
  GraphReplayOptions o = quick();
  o.rows = false;
  auto r = replay_cuda_graph(g, o, &probe);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->step.measured) << r->step.reason;
  EXPECT_NEAR(r->step.time_ns, 4 * 20000 + 2 * 3000, 1);
  EXPECT_TRUE(r->rows.empty());
  EXPECT_EQ(r->predicted_energy_j, 0);
  ASSERT_FALSE(r->warnings.empty());
  EXPECT_EQ(r->warnings.back(), "rows off: the whole step only, no node replayed alone");
}

TEST(GraphReplay, HundredThousandNodes) {
  const auto g = fake().graph("kernel,gemm,58000,20000;kernel,relu,2000,3000,distinct;kernel,add,40000,2000;host,,5,0");
  auto l = list_cuda_graph(g, JOULEPROF_FAKE_CUDA);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->nodes.size(), 100005u);
  EXPECT_EQ(l->groups.size(), 2002u);
  GraphReplayOptions o = quick();
  o.max_rows = 3;
  o.coverage = 1.0;
  o.measure_step = false;
  FakeProbe probe;
  auto r = replay_cuda_graph(g, o, &probe);
  ASSERT_TRUE(r);
  std::size_t measured = 0, timed = 0;
  for (const ExactRow& x : r->rows) (x.status == "measured" ? measured : timed) += 1;
  EXPECT_EQ(measured, 3u);
  EXPECT_EQ(timed, 1999u);
}

TEST(GraphReplay, ErrorsAreOneLine) {
  FakeProbe probe;
  auto r = replay_cuda_graph(0, quick(), &probe);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "no CUDA graph (null handle)");
  GraphReplayOptions o = quick();
  o.cuda_library = "/nonexistent/libcuda.so.1";
  auto n = replay_cuda_graph(1, o, &probe);
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("cannot load the CUDA driver (/nonexistent/libcuda.so.1)"), std::string::npos);
  setenv("FAKECUDA_NO_CONTEXT", "1", 1);
  auto c = replay_cuda_graph(fake().graph("kernel,k,1,1000"), quick(), &probe);
  unsetenv("FAKECUDA_NO_CONTEXT");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("no current CUDA context"), std::string::npos);
}

// A memset just before a kernel (a stream-K GEMM's or fused attention's tile counters, zeroed
// before every call) is part of that kernel's row and replayed with every copy: on the H100 the
// copies of a cuDNN flash-attention kernel without it took 1.5 µs instead of 606 µs.
TEST(GraphReplay, AKernelsMemsetIsReplayedWithIt) {
  const auto g = fake().graph("memset,,1,0;kernel,streamk_gemm,1,20000;memset,,1,0;kernel,streamk_gemm,1,20000;kernel,relu,1,3000");
  auto l = list_cuda_graph(g, JOULEPROF_FAKE_CUDA);
  ASSERT_TRUE(l);
  ASSERT_EQ(l->groups.size(), 3u);  // the memsets are inside the GEMMs' rows (two functions here)
  for (const GraphGroup& gr : l->groups) EXPECT_NE(gr.kind, "memset");
  EXPECT_EQ(l->groups[0].name, "streamk_gemm");
  EXPECT_EQ(l->groups[0].bytes, 1u << 20);
  EXPECT_EQ(l->groups[2].name, "relu");
  EXPECT_EQ(l->groups[2].bytes, 0u);
  FakeProbe probe;
  GraphReplayOptions o = quick();
  o.coverage = 1.0;
  auto r = replay_cuda_graph(g, o, &probe);
  ASSERT_TRUE(r) << r.error().message;
  const ExactRow* gemm = row(*r, "streamk_gemm");
  ASSERT_TRUE(gemm);
  EXPECT_NEAR(gemm->time_ns, 20000 + 524.288, 1);  // the kernel and its memset, per copy
  EXPECT_NEAR(r->predicted_time_s, r->step.time_ns * 1e-9, 1e-10);
}

namespace {

// The fake's logs (fakes/cuda/fake_cuda.cpp): cuMemAlloc_v2's buffers, the nodes added to other
// graphs and a built graph's nodes, each with its pointers.
struct MemEntry {
  unsigned long long ptr = 0;
  std::size_t bytes = 0;
  int zeroed = 0, freed = 0;
};
struct NodePtrs {
  int type = 0;
  unsigned long long a = 0, b = 0;
};
constexpr int kKernel = 0, kMemset = 2, kMemAlloc = 10;

std::vector<MemEntry> mem_log() {
  auto f = reinterpret_cast<int (*)(std::size_t, unsigned long long*, std::size_t*, int*, int*)>(dlsym(fake().lib, "fakecuda_mem_log"));
  std::vector<MemEntry> out;
  for (MemEntry e; f(out.size(), &e.ptr, &e.bytes, &e.zeroed, &e.freed) != 0;) out.push_back(e);
  return out;
}
std::vector<NodePtrs> added_nodes() {
  auto f = reinterpret_cast<int (*)(std::size_t, int*, unsigned long long*, unsigned long long*)>(dlsym(fake().lib, "fakecuda_added"));
  std::vector<NodePtrs> out;
  for (NodePtrs n; f(out.size(), &n.type, &n.a, &n.b) != 0;) out.push_back(n);
  return out;
}
std::vector<NodePtrs> graph_nodes(std::uintptr_t g) {
  auto f = reinterpret_cast<int (*)(void*, std::size_t, int*, unsigned long long*, unsigned long long*)>(dlsym(fake().lib, "fakecuda_node"));
  std::vector<NodePtrs> out;
  for (NodePtrs n; f(reinterpret_cast<void*>(g), out.size(), &n.type, &n.a, &n.b) != 0;) out.push_back(n);
  return out;
}

// (buffer index, offset) of `p` among `bases`/`sizes`; {-1, 0} outside them.
std::pair<int, unsigned long long> place(unsigned long long p, const std::vector<std::pair<unsigned long long, std::size_t>>& ranges) {
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (p - ranges[i].first < ranges[i].second) return {static_cast<int>(i), p - ranges[i].first};
  }
  return {-1, 0};
}

// The two-class workload's graph (cuBLAS captured outside PyTorch's pool, H200): a stream-ordered
// allocation with a memset and the GEMM on its memory; a second one with three calls of a kernel
// and a memset alone on it; the frees; and relu on ordinary memory.
constexpr const char* kTwoClass =
    "alloc,,1,0,33554432;memset,,1,0,graph-owned;kernel,cublas_gemm,1,20000,graph-owned+extra;alloc,,1,0,33554432;"
    "kernel,ws_kernel,3,5000,graph-owned;kernel,relu,4,3000;memset,,1,0,graph-owned;free,,2,0";

}  // namespace

// mem_alloc / mem_free nodes are counted, not warned about as an unknown type, and the nodes that
// differ only by graph-owned pointers (which cuPointerGetAttribute does not know) are one row.
TEST(GraphReplay, StreamOrderedAllocationsAreCountedNotWarned) {
  const auto g = fake().graph(kTwoClass);
  auto l = list_cuda_graph(g, JOULEPROF_FAKE_CUDA);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->mem_alloc_nodes, 2u);
  EXPECT_EQ(l->mem_free_nodes, 2u);
  EXPECT_EQ(l->mem_alloc_bytes, 64u << 20);
  EXPECT_TRUE(l->not_replayed.empty());
  EXPECT_TRUE(l->warnings.empty()) << l->warnings[0];
  ASSERT_EQ(l->groups.size(), 4u);  // cublas_gemm (its memset inside), ws_kernel, relu, memset
  EXPECT_EQ(l->groups[0].name, "cublas_gemm");
  EXPECT_EQ(l->groups[0].bytes, 1u << 20);
  EXPECT_EQ(l->groups[1].name, "ws_kernel");
  EXPECT_EQ(l->groups[1].count, 3u);
  EXPECT_EQ(l->groups[3].kind, "memset");
  // Other unknown types keep their warning beside them.
  auto u = list_cuda_graph(fake().graph("alloc,,1,0,4096;kernel,k,1,1000,graph-owned;type99,,1,0;free,,1,0"), JOULEPROF_FAKE_CUDA);
  ASSERT_TRUE(u);
  ASSERT_EQ(u->warnings.size(), 1u);
  EXPECT_NE(u->warnings[0].find("1 node of type type 99 not replayed"), std::string::npos);
}

// Each allocation gets a zeroed real buffer of its size, every node on graph-owned memory is
// re-created on it at the same offset, and the buffers are freed after.
TEST(GraphReplay, StreamOrderedAllocationsAreBackedByRealBuffers) {
  const auto g = fake().graph(kTwoClass);
  std::vector<std::pair<unsigned long long, std::size_t>> owned;
  for (const NodePtrs& n : graph_nodes(g)) {
    if (n.type == kMemAlloc) owned.emplace_back(n.a, n.b - n.a);
  }
  ASSERT_EQ(owned.size(), 2u);
  FakeProbe probe;
  GraphReplayOptions o = quick();
  o.coverage = 1.0;
  auto r = replay_cuda_graph(g, o, &probe);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->rows.size(), 4u);
  for (const ExactRow& x : r->rows) EXPECT_EQ(x.status, "measured") << x.group.name << ": " << x.reason;
  EXPECT_NEAR(row(*r, "cublas_gemm")->time_ns, 20000 + 524.288, 1);
  EXPECT_EQ(r->mem_alloc_nodes, 2u);
  EXPECT_EQ(r->mem_alloc_backed, 2u);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_EQ(r->warnings[0], "2 stream-ordered allocations (64 MiB) backed by real buffers, zeroed (not the contents the step left)");
  const auto j = nlohmann::json::parse(graph_replay_json(*r));
  EXPECT_EQ(j["stream_ordered_allocations"]["backed"], 2);
  EXPECT_EQ(j["stream_ordered_allocations"]["bytes"], 64u << 20);

  const std::vector<MemEntry> mem = mem_log();
  ASSERT_EQ(mem.size(), 2u);
  std::vector<std::pair<unsigned long long, std::size_t>> real;
  for (const MemEntry& m : mem) {
    EXPECT_EQ(m.bytes, 32u << 20);
    EXPECT_EQ(m.zeroed, 1);
    EXPECT_EQ(m.freed, 1);
    real.emplace_back(m.ptr, m.bytes);
  }
  // The (allocation, offset) of every graph-owned pointer of the step, and of every pointer of the
  // copies that lands in a real buffer: the same set, and no copy points at graph-owned memory.
  std::set<std::pair<int, unsigned long long>> step_places, copy_places;
  for (const NodePtrs& n : graph_nodes(g)) {
    if (n.type != kKernel && n.type != kMemset) continue;
    for (unsigned long long p : {n.a, n.b}) {
      if (auto at = place(p, owned); at.first >= 0) step_places.insert(at);
    }
  }
  std::size_t on_real = 0;
  const std::vector<NodePtrs> copies = added_nodes();
  ASSERT_FALSE(copies.empty());
  for (const NodePtrs& n : copies) {
    for (unsigned long long p : {n.a, n.b}) {
      EXPECT_EQ(place(p, owned).first, -1);
      if (auto at = place(p, real); at.first >= 0) {
        copy_places.insert(at);
        ++on_real;
      }
    }
  }
  EXPECT_EQ(step_places.size(), 10u);  // memset, gemm in/out (first allocation); 3 × ws in/out, memset (second)
  EXPECT_EQ(step_places.count({0, 4096}), 1u);
  EXPECT_EQ(step_places.count({1, 6 * 4096}), 1u);
  EXPECT_EQ(copy_places, step_places);
  EXPECT_GT(on_real, 10u);
}

// A buffer that cannot be allocated leaves its nodes as they were: each fails with one line (the
// H200's failure, mimicked by the fake), the rest is measured and the line says why.
TEST(GraphReplay, AnUnbackedAllocationFailsItsNodesWithOneLine) {
  const auto g = fake().graph(kTwoClass);
  setenv("FAKECUDA_MEMALLOC_FAIL", "1", 1);
  FakeProbe probe;
  GraphReplayOptions o = quick();
  o.coverage = 1.0;
  auto r = replay_cuda_graph(g, o, &probe);
  unsetenv("FAKECUDA_MEMALLOC_FAIL");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "cublas_gemm")->status, "failed");
  EXPECT_EQ(row(*r, "cublas_gemm")->reason, "kernel cublas_gemm: cuGraphAddMemsetNode: CUDA_ERROR_INVALID_VALUE (1)");
  EXPECT_EQ(row(*r, "ws_kernel")->reason, "kernel ws_kernel: cuGraphAddKernelNode: CUDA_ERROR_INVALID_VALUE (1)");
  EXPECT_EQ(row(*r, "memset")->reason, "memset memset: cuGraphAddMemsetNode: CUDA_ERROR_INVALID_VALUE (1)");
  EXPECT_EQ(row(*r, "relu")->status, "measured");
  EXPECT_EQ(r->mem_alloc_backed, 0u);
  EXPECT_EQ(r->warnings.front(), "a stream-ordered allocation of 32 MiB: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2): the nodes on it cannot be replayed");
  EXPECT_TRUE(mem_log().empty());
}

// --- A faulting row isolated by restart (docs/replay.md, "Faults and limits") ---

namespace {

long launches(const char* name) {
  auto f = reinterpret_cast<long (*)(const char*)>(dlsym(fake().lib, "fakecuda_launches"));
  return f(name);
}

std::vector<nlohmann::json> progress_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::string temp_path(const char* name) {
  std::string p = ::testing::TempDir() + name;
  std::remove(p.c_str());
  return p;
}

// quick() with a progress file of its own (emptied) and `coverage`.
GraphReplayOptions with_progress(const char* file, double coverage = 0.99) {
  GraphReplayOptions o = quick();
  o.coverage = coverage;
  o.progress_path = temp_path(file);
  return o;
}

const GraphGroup* group(const GraphListing& l, const std::string& name) {
  for (const GraphGroup& g : l.groups) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

}  // namespace

// Two captures of one step (another process: other function addresses, other buffers, other host
// words in the arguments) give the same ids; each group its own; two functions of one name two ids.
TEST(GraphReplay, RowIdsAreTheSameInTwoCapturesOfOneStep) {
  const char* spec = "kernel,_Z4gemmPfS_i,12,20000;kernel,relu,5,3000,distinct;kernel,index_copy,3,2000,hostptr;memcpy,,2,0;memset,,3,0";
  auto a = list_cuda_graph(fake().graph(spec), JOULEPROF_FAKE_CUDA);
  auto b = list_cuda_graph(fake().graph(spec), JOULEPROF_FAKE_CUDA);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->groups.size(), b->groups.size());
  std::set<std::string> ids;
  for (std::size_t g = 0; g < a->groups.size(); ++g) {
    EXPECT_EQ(a->groups[g].id, b->groups[g].id) << a->groups[g].name;
    EXPECT_EQ(a->groups[g].id.size(), 16u);
    ids.insert(a->groups[g].id);
  }
  EXPECT_EQ(ids.size(), a->groups.size());  // relu with n = 0..4 and index_copy on 3 host words: five and three ids
  EXPECT_EQ(ids.size(), 1u + 5u + 3u + 2u);   // gemm, relu ×5, index_copy ×3, the copy, the memset
  auto twice = list_cuda_graph(fake().graph("kernel,k,1,1000;kernel,k,1,1000"), JOULEPROF_FAKE_CUDA);
  ASSERT_TRUE(twice);
  ASSERT_EQ(twice->groups.size(), 2u);  // two functions (addresses) of one name
  EXPECT_NE(twice->groups[1].id, twice->groups[0].id);
  // The document names each row by it.
  FakeProbe probe;
  auto r = replay_cuda_graph(fake().graph(spec), quick(), &probe);
  ASSERT_TRUE(r) << r.error().message;
  const auto j = nlohmann::json::parse(graph_replay_json(*r));
  EXPECT_EQ(j["rows"][0]["id"], r->rows[0].group.id);
  EXPECT_EQ(r->rows[0].group.id, group(*a, r->rows[0].group.name)->id);
}

// Rows of one kernel and launch configuration that the arguments keep apart say which words do it:
// a scalar (relu's n = 0..4) or a word the driver does not know as device memory (index_copy's
// host address), the kernel split into the most rows first; a kernel in one row says nothing.
TEST(GraphReplay, RowsOfOneKernelKeptApartNameTheirDifferingWords) {
  auto l = list_cuda_graph(fake().graph("kernel,_Z4gemmPfS_i,12,20000;kernel,relu,5,3000,distinct;kernel,index_copy,3,2000,hostptr"),
                           JOULEPROF_FAKE_CUDA);
  ASSERT_TRUE(l) << l.error().message;
  std::vector<std::string> split;
  for (const std::string& w : l->warnings) {
    if (w.find("share its launch configuration") != std::string::npos) split.push_back(w);
  }
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0].rfind("5 rows of relu share its launch configuration; their arguments differ in 1 word ", 0), 0u) << split[0];
  EXPECT_NE(split[0].find("argument 2 byte 0: 0x0 / 0x1)"), std::string::npos) << split[0];
  EXPECT_EQ(split[1].rfind("3 rows of index_copy share its launch configuration; their arguments differ in 1 word ", 0), 0u) << split[1];
  EXPECT_NE(split[1].find("argument 0 byte 0: 0x"), std::string::npos) << split[1];
  EXPECT_NE(split[1].find(group(*l, "index_copy")->id), std::string::npos);
}

// The progress lines in order: listing, the step, each row's start before its launches and its
// row when finished; a fault with the process alive: its fault line, the rest not reported.
TEST(GraphReplay, ProgressLinesAnnounceEachRowAndItsEnd) {
  GraphReplayOptions o = with_progress("progress-order.jsonl", 1.0);
  const std::string path = o.progress_path;
  FakeProbe probe;
  auto r = replay_cuda_graph(fake().graph("kernel,gemm,4,20000;kernel,reads_freed,2,5000,fault;kernel,relu,8,3000"), o, &probe);
  ASSERT_TRUE(r) << r.error().message;
  const std::string gemm = row(*r, "gemm")->group.id, bad = row(*r, "reads_freed")->group.id;
  const auto lines = progress_lines(path);
  std::vector<std::string> seen;
  for (const auto& l : lines) seen.push_back(l["event"].get<std::string>() + (l.contains("id") ? " " + l["id"].get<std::string>() : ""));
  const std::vector<std::string> expected = {"listing", "start step", "step", "start " + gemm, "start " + bad, "fault " + bad};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(lines[0]["groups"].size(), 3u);
  EXPECT_EQ(lines[2]["measured"], true);
  EXPECT_EQ(lines[5]["reason"], "cuGraphLaunch: CUDA_ERROR_ILLEGAL_ADDRESS (700)");
  // Without a fault: each row started (timed), started again (measured) and finished.
  const std::string p2 = temp_path("progress-rows.jsonl");
  o.progress_path = p2;
  auto ok = replay_cuda_graph(fake().graph("kernel,gemm,4,20000;kernel,relu,8,3000"), o, &probe);
  ASSERT_TRUE(ok) << ok.error().message;
  seen.clear();
  for (const auto& l : progress_lines(p2)) seen.push_back(l["event"].get<std::string>() + (l.contains("phase") ? " " + l["phase"].get<std::string>() : ""));
  EXPECT_EQ(seen, (std::vector<std::string>{"listing", "start step", "step", "start time", "start time", "start measure", "row", "start measure", "row"}));
  EXPECT_EQ(progress_lines(p2).back()["status"], "measured");
}

// A process that dies in a row's launch (the fake's "die": exit 3): its progress ends with that
// row's start, written and flushed before the launch, and read back as `started`.
TEST(GraphReplay, AProcessThatDiesLeavesTheFaultingRowStarted) {
  const std::string path = temp_path("progress-died.jsonl");
  const auto g = fake().graph("kernel,gemm,4,20000;kernel,stale_index,2,5000,die;kernel,relu,8,3000");
  auto l = list_cuda_graph(g, JOULEPROF_FAKE_CUDA);
  ASSERT_TRUE(l);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    GraphReplayOptions o = quick();
    o.progress_path = path;
    FakeProbe probe;
    (void)replay_cuda_graph(g, o, &probe);
    _exit(0);  // not reached: the fake ends the process at the launch
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  auto p = read_replay_progress(path);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->started, group(*l, "stale_index")->id);
  EXPECT_TRUE(p->rows.empty());
  ASSERT_TRUE(p->step);
  EXPECT_TRUE(p->step->measured);
  ASSERT_TRUE(p->listing);
  EXPECT_EQ(p->listing->rows.size(), 3u);
  // A torn last line (the process died writing it) is ignored; a torn line before the end is an error.
  { std::ofstream(path, std::ios::app) << "{\"event\":\"row\",\"id\":\"x"; }
  EXPECT_TRUE(read_replay_progress(path));
  { std::ofstream(path, std::ios::app) << "\n{\"event\":\"start\",\"id\":\"y\"}\n"; }
  auto bad = read_replay_progress(path);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find(": not a progress line"), std::string::npos);
  EXPECT_FALSE(read_replay_progress(temp_path("none.jsonl")));
}

// The restart: a new process (the graph captured again: other addresses) takes the rows and the
// step the first one finished, does not replay them (the fake counts launches), gives the
// faulting row "faulted" with one warning naming it, and measures the rest.
TEST(GraphReplay, ARestartTakesPriorRowsAndIsolatesTheFaultedOne) {
  const char* spec = "kernel,gemm,4,20000;kernel,add,6,1000;kernel,reads_freed,2,5000,fault;kernel,relu,8,3000";
  GraphReplayOptions o = with_progress("progress-restart.jsonl", 1.0);
  const std::string path = o.progress_path;
  FakeProbe probe;
  // First process: every row is timed before any is measured and the fault comes at reads_freed's
  // timing, so nothing but the step finished.
  auto first = replay_cuda_graph(fake().graph(spec), o, &probe);
  ASSERT_TRUE(first);
  auto p = read_replay_progress(path);
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->faulted.size(), 1u);
  EXPECT_TRUE(p->rows.empty());
  ASSERT_TRUE(p->step);
  // Second process: reads_freed faulted; everything else measured.
  o.prior = p->rows;
  o.prior_step = p->step;
  o.faulted = p->faulted;
  auto second = replay_cuda_graph(fake().graph(spec), o, &probe);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(launches("reads_freed"), 0);
  const ExactRow* bad = row(*second, "reads_freed");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, "faulted");
  EXPECT_EQ(bad->reason, "cuGraphLaunch: CUDA_ERROR_ILLEGAL_ADDRESS (700)");
  for (const char* n : {"gemm", "add", "relu"}) EXPECT_EQ(row(*second, n)->status, "measured") << n;
  EXPECT_NEAR(second->predicted_time_s, 4 * 20e-6 + 6 * 1e-6 + 8 * 3e-6, 1e-9);
  EXPECT_NEAR(second->failed_share, 2.0 / 20.0, 1e-12);
  EXPECT_NEAR(second->measured_share, 1.0, 1e-12);
  EXPECT_NEAR(second->step.time_ns, first->step.time_ns, 1e-6);  // taken, not measured again
  const std::string warning = "kernel reads_freed faulted when replayed alone (cuGraphLaunch: CUDA_ERROR_ILLEGAL_ADDRESS (700)); isolated in its "
                              "own process, the other rows were replayed without it";
  EXPECT_EQ(std::count(second->warnings.begin(), second->warnings.end(), warning), 1);
  EXPECT_EQ(second->warnings.back(), "2 of 20 replayable nodes not in the prediction (failed, faulted or not measured)");
  // A third process with every row finished replays none of them (and finds them in its progress).
  auto p2 = read_replay_progress(path);
  ASSERT_TRUE(p2);
  EXPECT_EQ(p2->rows.size(), 3u);
  o.prior = p2->rows;
  auto third = replay_cuda_graph(fake().graph(spec), o, &probe);
  ASSERT_TRUE(third);
  for (const char* n : {"gemm", "add", "relu", "reads_freed"}) EXPECT_EQ(launches(n), 0) << n;
  EXPECT_NEAR(third->predicted_energy_j, second->predicted_energy_j, 1e-15);
  EXPECT_EQ(row(*third, "gemm")->trial_time_ns, row(*second, "gemm")->trial_time_ns);
}

// Coverage counts the rows an earlier process measured: those left beyond it stay timed.
TEST(GraphReplay, PriorMeasuredRowsCountTowardsTheCoverage) {
  const char* spec = "kernel,big,10,100000;kernel,small,1,1000";
  GraphReplayOptions o = with_progress("progress-coverage.jsonl", 0.9);
  const std::string path = o.progress_path;
  FakeProbe probe;
  ASSERT_TRUE(replay_cuda_graph(fake().graph(spec), o, &probe));
  auto p = read_replay_progress(path);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->rows.size(), 2u);  // big measured, small timed (beyond the coverage): both finished
  o.prior = p->rows;
  o.progress_path.clear();
  auto again = replay_cuda_graph(fake().graph(spec), o, &probe);
  ASSERT_TRUE(again);
  EXPECT_EQ(row(*again, "big")->status, "measured");
  EXPECT_EQ(row(*again, "small")->status, "timed");
  EXPECT_NEAR(row(*again, "small")->power_w, 300, 1e-9);
  EXPECT_EQ(launches("big") + launches("small"), 0);
}

// The document of a replay that never finished, from its progress alone: the faulted row and the
// rest not_measured with the reason given.
TEST(GraphReplay, TheDocumentFromProgressAloneAfterTheLastRestart) {
  GraphReplayOptions o = with_progress("progress-alone.jsonl");
  const std::string path = o.progress_path;
  FakeProbe probe;
  ASSERT_TRUE(replay_cuda_graph(fake().graph("kernel,gemm,4,20000;kernel,reads_freed,2,5000,fault;kernel,relu,8,3000"), o, &probe));
  auto p = read_replay_progress(path);
  ASSERT_TRUE(p);
  auto r = graph_replay_from_progress(*p, {}, "not measured: 8 restarts, the limit");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->rows.size(), 3u);
  EXPECT_EQ(row(*r, "reads_freed")->status, "faulted");
  EXPECT_EQ(row(*r, "gemm")->status, "not_measured");
  EXPECT_EQ(row(*r, "gemm")->reason, "not measured: 8 restarts, the limit");
  EXPECT_EQ(r->gpu, "Fake CUDA GPU");
  EXPECT_EQ(r->predicted_energy_j, 0);
  EXPECT_NEAR(r->failed_share, 1.0, 1e-12);
  EXPECT_TRUE(r->step.measured);
  EXPECT_FALSE(graph_replay_from_progress(ReplayProgress{}, {}, "x"));
}
