// A fake CUDA driver (libcuda.so.1) for the exact replay's tests: the entry points of
// src/replay/cuda_entry_points.def over synthetic graphs, with a virtual GPU clock (each launch
// advances its stream by the nodes' nominal durations; events are reached at once), so the
// listing, grouping, trial rounds and error paths run on a CPU without sleeping.
//
// fakecuda_build_graph(spec) makes a graph: items separated by ';', each
//   KIND,NAME,COUNT,DURATION_NS[,FLAG]
// KIND kernel | memcpy | memset | host | typeN (an unknown node type N); COUNT nodes of it, chained.
// Kernels take (float* in, float* out, int n): each node gets its own device pointers (so the
// pointer-masked grouping puts them in one row) and the same n, unless FLAG is "distinct" (n = node
// index), or "hostptr" (`in` a host address of the build: each node its own row, other in each
// capture, as real steps' arguments can be). FLAG "fault": a graph of copies of it faults at launch (CUDA_ERROR_ILLEGAL_ADDRESS, sticky:
// every later call fails); "die": a graph of copies of it ends the process at launch (one stderr line
// naming CUDA_ERROR_ILLEGAL_ADDRESS, exit code 3), as a replay whose fault takes its process down;
// "oom": a graph of copies of it fails to instantiate (out of memory); "l2":
// a launch on the same input buffer as the kernel launched just before runs in half its time (its
// input still in L2), as a weight-reading kernel repeated on one layer's buffers does; "l2-shared":
// the same, and the COUNT nodes all read one input buffer (a replay that repeats one member's
// buffers, as the exact replay did before it cycled through the members, runs them from "L2").
// A step with state, as transformers' StaticCache decode step is (its write position a device
// counter the step advances): "bump" adds 1 to the fake's one counter at each launch, "reset" sets
// it to 0, and "index" asserts (CUDA_ERROR_ASSERT, sticky) when the counter is above 50, in any
// graph: a position past the cache's end.
//
// Stream-ordered allocations: KIND alloc makes COUNT mem_alloc nodes of FLAG bytes each, KIND free
// COUNT mem_free nodes. Their memory is graph-owned, at addresses cuPointerGetAttribute does not
// know, and as on the H200 a node on it cannot be added to another graph (cuGraphAdd*Node:
// CUDA_ERROR_INVALID_VALUE). FLAG "graph-owned" on a kernel, memset or memcpy puts its pointers in
// the last alloc's memory, 4 KiB apart (a kernel's in and out, a memset's dst, a copy's src and dst).
// fakecuda_launches(NAME) counts the launches of graphs of copies (not a built graph) holding NAME.
// cuMemAlloc_v2 / cuMemFree_v2 / cuMemsetD8Async keep a log the tests read (fakecuda_mem_log);
// $FAKECUDA_MEMALLOC_FAIL makes cuMemAlloc_v2 fail (out of memory). fakecuda_added / fakecuda_node
// give the pointers of the nodes added to other graphs and of a built graph's nodes.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_driver.hpp"

using namespace jouleprof::cuda;

namespace {

struct FFunc {
  std::string name, flag;
  double ns = 0;
};
struct FNode {
  int type = 0;
  FFunc* func = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {128, 1, 1};
  // kernel arguments: in, out, n
  CUdeviceptr in = 0, out = 0;
  int n = 0;
  void* params[3] = {&in, &out, &n};
  // FLAG "...+extra": its arguments read back as one packed buffer (`extra`, no kernelParams), as
  // cuBLAS launches its nvjet GEMMs.
  bool packed = false;
  char buffer[24] = {};
  std::size_t buffer_size = 20;
  void* extra[5] = {};
  CudaMemcpy3D copy{};
  CudaMemsetNodeParams set{};
  CUdeviceptr dptr = 0;  // mem_alloc: its graph-owned range
  std::size_t bytesize = 0;
  double ns = 0;
  struct FGraph* owner = nullptr;
  std::size_t pos = 0;
};
struct FGraph {
  std::vector<FNode*> nodes;
  std::vector<std::unique_ptr<FNode>> owned;  // the nodes added by cuGraphAdd*Node (freed with the graph)
  bool original = false;
};
struct FExec {
  FGraph* g = nullptr;
};
struct FStream {
  double gpu_ns = 0;
};
struct FEvent {
  double t = 0;
};

std::deque<FFunc> funcs;
std::deque<FNode> nodes;
std::deque<FGraph> graphs;
std::deque<FExec> execs;
std::deque<FStream> streams;
std::deque<FEvent> events;
std::deque<uint64_t> host_words;  // "hostptr" kernels' host addresses (a deque: they stay put)
CUresult sticky = kSuccess;
CUdeviceptr last_in = 0;  // the input of the kernel launched last (the "L2" of flag "l2")
long counter = 0;         // the state of flags "bump", "reset" and "index"
constexpr long kCounterLimit = 50;
CUdeviceptr next_ptr = 0x7f0000000000ULL;
constexpr CUdeviceptr kDeviceLo = 0x7f0000000000ULL, kDeviceHi = 0x7f8000000000ULL;
int ctx_dummy = 0;

// Graph-owned memory (mem_alloc nodes), above the range cuPointerGetAttribute answers for.
struct Range {
  CUdeviceptr base = 0;
  std::size_t bytes = 0;
};
std::vector<Range> owned;
CUdeviceptr next_owned = 0x7f9000000000ULL, owned_cursor = 0;
bool is_owned(CUdeviceptr p) {
  for (const Range& r : owned) {
    if (p - r.base < r.bytes) return true;
  }
  return false;
}
// The next 4 KiB of the last alloc's memory (wrapping).
CUdeviceptr owned_ptr() {
  if (owned.empty()) return 0;
  const Range& r = owned.back();
  const CUdeviceptr p = r.base + owned_cursor % r.bytes;
  owned_cursor += 4096;
  return p;
}

// cuMemAlloc_v2's buffers, and the nodes added to graphs (first 65536 after a reset: the tests').
struct MemEntry {
  CUdeviceptr ptr = 0;
  std::size_t bytes = 0;
  bool zeroed = false, freed = false;
};
std::vector<MemEntry> mem_log;
struct Added {
  int type = 0;
  CUdeviceptr a = 0, b = 0;
};
std::vector<Added> added;
std::map<std::string, long> launches;  // per function name: launches of graphs of copies holding it

// The pointers of a node: kernel (in, out), memset (dst, 0), memcpy (src, dst).
Added pointers_of(const FNode& x) {
  if (x.type == kNodeKernel) return {x.type, x.in, x.out};
  if (x.type == kNodeMemset) return {x.type, x.set.dst, 0};
  if (x.type == kNodeMemcpy) return {x.type, x.copy.srcDevice, x.copy.dstDevice};
  return {x.type, 0, 0};
}

CUdeviceptr alloc(std::size_t bytes) {
  const CUdeviceptr p = next_ptr;
  next_ptr += (bytes + 0xfff) & ~std::size_t{0xfff};
  return p;
}

FNode* node_of(CUgraphNode h) { return reinterpret_cast<FNode*>(h); }
FGraph* graph_of(CUgraph h) { return reinterpret_cast<FGraph*>(h); }

}  // namespace

#define FAKE extern "C" __attribute__((visibility("default")))

FAKE void* fakecuda_build_graph(const char* spec) {
  FGraph& g = graphs.emplace_back();
  g.original = true;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ';')) {
    std::stringstream f(item);
    std::string kind, name, count, dur, flag;
    std::getline(f, kind, ',');
    std::getline(f, name, ',');
    std::getline(f, count, ',');
    std::getline(f, dur, ',');
    std::getline(f, flag, ',');
    FFunc* fn = nullptr;
    if (kind == "kernel") fn = &funcs.emplace_back(FFunc{name, flag, std::atof(dur.c_str())});
    const long n = std::atol(count.c_str());
    const CUdeviceptr shared_in = flag == "l2-shared" ? alloc(4096) : 0;
    const bool on_owned = flag.rfind("graph-owned", 0) == 0;
    for (long i = 0; i < n; ++i) {
      FNode& x = nodes.emplace_back();
      x.ns = std::atof(dur.c_str());
      if (kind == "kernel") {
        x.type = kNodeKernel;
        x.func = fn;
        // "hostptr": `in` a host address of this build, not device memory (so not masked), as a
        // PyTorch kernel's arguments can hold: other in each node and in each capture.
        x.in = flag == "hostptr" ? reinterpret_cast<CUdeviceptr>(&host_words.emplace_back())
               : on_owned        ? owned_ptr()
               : shared_in != 0  ? shared_in
                                 : alloc(4096);
        x.out = on_owned ? owned_ptr() : alloc(4096);
        x.n = flag == "distinct" ? static_cast<int>(i) : 1024;
        x.packed = flag.find("+extra") != std::string::npos;
        x.grid[0] = 8;
      } else if (kind == "memcpy") {
        x.type = kNodeMemcpy;
        x.copy.srcMemoryType = kMemoryTypeDevice;
        x.copy.dstMemoryType = kMemoryTypeDevice;
        x.copy.WidthInBytes = 1 << 20;
        x.copy.Height = 1;
        x.copy.Depth = 1;
        if (on_owned) {
          x.copy.srcDevice = owned_ptr();
          x.copy.dstDevice = owned_ptr();
        }
        x.ns = static_cast<double>(x.copy.WidthInBytes) / 1000.0;
      } else if (kind == "memset") {
        x.type = kNodeMemset;
        x.set.elementSize = 4;
        x.set.width = 1 << 18;
        x.set.height = 1;
        if (on_owned) x.set.dst = owned_ptr();
        x.ns = static_cast<double>(x.set.width * x.set.elementSize) / 2000.0;
      } else if (kind == "alloc") {
        x.type = kNodeMemAlloc;
        x.bytesize = static_cast<std::size_t>(std::atoll(flag.c_str()));
        x.dptr = next_owned;
        next_owned += (x.bytesize + 0xffff) & ~std::size_t{0xffff};
        owned.push_back({x.dptr, x.bytesize});
        owned_cursor = 0;
      } else if (kind == "free") {
        x.type = kNodeMemFree;
      } else if (kind == "host") {
        x.type = kNodeHost;
      } else if (kind.rfind("type", 0) == 0) {
        x.type = std::atoi(kind.c_str() + 4);
      }
      x.owner = &g;
      x.pos = g.nodes.size();
      g.nodes.push_back(&x);
    }
  }
  return &g;
}

/// Clears the sticky error (a fresh process, as far as the tests are concerned).
FAKE void fakecuda_reset() {
  sticky = kSuccess;
  last_in = 0;
  counter = 0;
  mem_log.clear();
  added.clear();
  launches.clear();
}

/// Launches of graphs of copies (not a built graph) that hold the function NAME, since the last reset.
FAKE long fakecuda_launches(const char* name) {
  auto it = launches.find(name);
  return it == launches.end() ? 0 : it->second;
}

/// Entry i of cuMemAlloc_v2's log since the last reset; 0 past the end.
FAKE int fakecuda_mem_log(std::size_t i, CUdeviceptr* ptr, std::size_t* bytes, int* zeroed, int* freed) {
  if (i >= mem_log.size()) return 0;
  *ptr = mem_log[i].ptr;
  *bytes = mem_log[i].bytes;
  *zeroed = mem_log[i].zeroed ? 1 : 0;
  *freed = mem_log[i].freed ? 1 : 0;
  return 1;
}
/// The i-th node added to a graph since the last reset: its type and pointers (pointers_of); 0 past the end.
FAKE int fakecuda_added(std::size_t i, int* type, CUdeviceptr* a, CUdeviceptr* b) {
  if (i >= added.size()) return 0;
  *type = added[i].type;
  *a = added[i].a;
  *b = added[i].b;
  return 1;
}
/// Node i of a built graph: its type and pointers (pointers_of; mem_alloc: its range); 0 past the end.
FAKE int fakecuda_node(void* graph, std::size_t i, int* type, CUdeviceptr* a, CUdeviceptr* b) {
  const FGraph* g = static_cast<const FGraph*>(graph);
  if (i >= g->nodes.size()) return 0;
  Added x = pointers_of(*g->nodes[i]);
  if (x.type == kNodeMemAlloc) x = {x.type, g->nodes[i]->dptr, g->nodes[i]->dptr + g->nodes[i]->bytesize};
  *type = x.type;
  *a = x.a;
  *b = x.b;
  return 1;
}

FAKE CUresult cuInit(unsigned) { return kSuccess; }
FAKE CUresult cuGetErrorName(CUresult rc, const char** s) {
  *s = rc == 700 ? "CUDA_ERROR_ILLEGAL_ADDRESS" : rc == 710 ? "CUDA_ERROR_ASSERT" : rc == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : rc == 1 ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_UNKNOWN";
  return kSuccess;
}
FAKE CUresult cuCtxGetCurrent(CUcontext* c) {
  *c = std::getenv("FAKECUDA_NO_CONTEXT") != nullptr ? nullptr : reinterpret_cast<CUcontext>(&ctx_dummy);
  return kSuccess;
}
FAKE CUresult cuCtxGetDevice(CUdevice* d) {
  *d = 0;
  return kSuccess;
}
FAKE CUresult cuDeviceGetName(char* name, int len, CUdevice) {
  std::strncpy(name, "Fake CUDA GPU", static_cast<std::size_t>(len));
  return kSuccess;
}
// The device's UUID: $JOULEPROF_FAKE_CUDA_UUID (32 hex digits, dashes allowed), else the fake
// NVML's GPU 0 (GPU-fa4e0000-0000-4000-8000-000000000000): the replay picks the sensor by it.
FAKE CUresult cuDeviceGetUuid(CudaUuid* u, CUdevice) {
  const char* e = std::getenv("JOULEPROF_FAKE_CUDA_UUID");
  std::string hex;
  for (const char* c = e != nullptr ? e : "fa4e0000-0000-4000-8000-000000000000"; *c != 0; ++c) {
    if (*c != '-') hex.push_back(*c);
  }
  if (hex.size() != 32) return kInvalidValue;
  for (int i = 0; i < 16; ++i) u->bytes[i] = static_cast<unsigned char>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return kSuccess;
}
FAKE CUresult cuGraphGetNodes(CUgraph g, CUgraphNode* out, size_t* n) {
  if (g == nullptr) return kInvalidValue;
  FGraph* fg = graph_of(g);
  if (out == nullptr) {
    *n = fg->nodes.size();
    return kSuccess;
  }
  const size_t k = std::min(*n, fg->nodes.size());
  for (size_t i = 0; i < k; ++i) out[i] = reinterpret_cast<CUgraphNode>(fg->nodes[i]);
  *n = k;
  return kSuccess;
}
// Nodes of a built graph are chained: each depends on the one before it.
FAKE CUresult cuGraphNodeGetDependencies(CUgraphNode h, CUgraphNode* out, size_t* n) {
  const FNode* x = node_of(h);
  if (x->owner == nullptr) return kInvalidValue;
  if (out == nullptr) {
    *n = x->pos > 0 ? 1 : 0;
  } else if (x->pos > 0 && *n >= 1) {
    out[0] = reinterpret_cast<CUgraphNode>(x->owner->nodes[x->pos - 1]);
    *n = 1;
  }
  return kSuccess;
}
FAKE CUresult cuGraphNodeGetType(CUgraphNode h, int* type) {
  *type = node_of(h)->type;
  return kSuccess;
}
FAKE CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode h, CudaKernelNodeParams* p) {
  FNode* x = node_of(h);
  if (x->type != kNodeKernel) return kInvalidValue;
  *p = CudaKernelNodeParams{};
  p->func = reinterpret_cast<CUfunction>(x->func);
  p->gridDimX = x->grid[0];
  p->gridDimY = x->grid[1];
  p->gridDimZ = x->grid[2];
  p->blockDimX = x->block[0];
  p->blockDimY = x->block[1];
  p->blockDimZ = x->block[2];
  p->kernelParams = x->params;
  if (x->packed) {
    std::memcpy(x->buffer, &x->in, 8);
    std::memcpy(x->buffer + 8, &x->out, 8);
    std::memcpy(x->buffer + 16, &x->n, 4);
    x->extra[0] = kLaunchParamBufferPointer;
    x->extra[1] = x->buffer;
    x->extra[2] = kLaunchParamBufferSize;
    x->extra[3] = &x->buffer_size;
    x->extra[4] = kLaunchParamEnd;
    p->kernelParams = nullptr;
    p->extra = x->extra;
  }
  return kSuccess;
}
FAKE CUresult cuGraphMemcpyNodeGetParams(CUgraphNode h, CudaMemcpy3D* p) {
  *p = node_of(h)->copy;
  return node_of(h)->type == kNodeMemcpy ? kSuccess : kInvalidValue;
}
FAKE CUresult cuGraphMemsetNodeGetParams(CUgraphNode h, CudaMemsetNodeParams* p) {
  *p = node_of(h)->set;
  return node_of(h)->type == kNodeMemset ? kSuccess : kInvalidValue;
}
FAKE CUresult cuGraphMemAllocNodeGetParams(CUgraphNode h, CudaMemAllocNodeParams* p) {
  const FNode* x = node_of(h);
  if (x->type != kNodeMemAlloc) return kInvalidValue;
  *p = CudaMemAllocNodeParams{};
  p->bytesize = x->bytesize;
  p->dptr = x->dptr;
  return kSuccess;
}
FAKE CUresult cuKernelGetFunction(CUfunction* f, CUkernel k) {
  *f = reinterpret_cast<CUfunction>(k);
  return kSuccess;
}
FAKE CUresult cuFuncGetName(const char** name, CUfunction f) {
  *name = reinterpret_cast<FFunc*>(f)->name.c_str();
  return kSuccess;
}
FAKE CUresult cuFuncGetParamInfo(CUfunction, size_t index, size_t* offset, size_t* size) {
  static const size_t off[] = {0, 8, 16}, sz[] = {8, 8, 4};
  if (index >= 3) return kInvalidValue;
  *offset = off[index];
  *size = sz[index];
  return kSuccess;
}
FAKE CUresult cuPointerGetAttribute(void* data, int attr, CUdeviceptr p) {
  if (attr != kPointerAttributeMemoryType || p < kDeviceLo || p >= kDeviceHi) return kInvalidValue;
  *static_cast<int*>(data) = kMemoryTypeDevice;
  return kSuccess;
}
FAKE CUresult cuGraphCreate(CUgraph* g, unsigned) {
  *g = reinterpret_cast<CUgraph>(&graphs.emplace_back());
  return kSuccess;
}
FAKE CUresult cuGraphDestroy(CUgraph g) {
  graph_of(g)->nodes.clear();
  graph_of(g)->owned.clear();
  return kSuccess;
}
static CUresult add_node(CUgraphNode* out, CUgraph g, const FNode& x) {
  if (sticky != kSuccess) return sticky;
  // Graph-owned memory is mapped only inside its own graph (the H200's answer).
  const Added p = pointers_of(x);
  if (is_owned(p.a) || is_owned(p.b)) return kInvalidValue;
  if (added.size() < 65536) added.push_back(p);
  FNode& n = *graph_of(g)->owned.emplace_back(std::make_unique<FNode>(x));
  n.params[0] = &n.in;
  n.params[1] = &n.out;
  n.params[2] = &n.n;
  n.owner = graph_of(g);
  n.pos = n.owner->nodes.size();
  graph_of(g)->nodes.push_back(&n);
  *out = reinterpret_cast<CUgraphNode>(&n);
  return kSuccess;
}
FAKE CUresult cuGraphAddKernelNode_v2(CUgraphNode* out, CUgraph g, const CUgraphNode*, size_t, const CudaKernelNodeParams* p) {
  FNode x;
  x.type = kNodeKernel;
  x.func = reinterpret_cast<FFunc*>(p->func);
  x.grid[0] = p->gridDimX;
  x.block[0] = p->blockDimX;
  if (p->kernelParams != nullptr) {
    std::memcpy(&x.in, p->kernelParams[0], 8);
    std::memcpy(&x.out, p->kernelParams[1], 8);
    std::memcpy(&x.n, p->kernelParams[2], 4);
  } else {  // a packed buffer: in, out, n
    const char* b = nullptr;
    for (int i = 0; p->extra != nullptr && p->extra[i] != kLaunchParamEnd; i += 2) {
      if (p->extra[i] == kLaunchParamBufferPointer) b = static_cast<const char*>(p->extra[i + 1]);
    }
    if (b == nullptr) return kInvalidValue;
    std::memcpy(&x.in, b, 8);
    std::memcpy(&x.out, b + 8, 8);
    std::memcpy(&x.n, b + 16, 4);
    x.packed = true;
  }
  x.ns = x.func->ns;
  return add_node(out, g, x);
}
FAKE CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src) {
  return node_of(dst)->type == kNodeKernel && node_of(src)->type == kNodeKernel ? kSuccess : kInvalidValue;
}
FAKE CUresult cuGraphAddMemcpyNode(CUgraphNode* out, CUgraph g, const CUgraphNode*, size_t, const CudaMemcpy3D* p, CUcontext) {
  FNode x;
  x.type = kNodeMemcpy;
  x.copy = *p;
  x.ns = static_cast<double>(p->WidthInBytes) / 1000.0;
  return add_node(out, g, x);
}
FAKE CUresult cuGraphAddMemsetNode(CUgraphNode* out, CUgraph g, const CUgraphNode*, size_t, const CudaMemsetNodeParams* p, CUcontext) {
  FNode x;
  x.type = kNodeMemset;
  x.set = *p;
  x.ns = static_cast<double>(p->width * p->elementSize) / 2000.0;
  return add_node(out, g, x);
}
FAKE CUresult cuGraphInstantiateWithFlags(CUgraphExec* e, CUgraph g, unsigned long long) {
  if (sticky != kSuccess) return sticky;
  FGraph* fg = graph_of(g);
  for (FNode* n : fg->nodes) {
    if (!fg->original && n->func != nullptr && n->func->flag == "oom") return 2;
  }
  *e = reinterpret_cast<CUgraphExec>(&execs.emplace_back(FExec{fg}));
  return kSuccess;
}
FAKE CUresult cuGraphExecDestroy(CUgraphExec) { return kSuccess; }
FAKE CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
  if (sticky != kSuccess) return sticky;
  FExec* x = reinterpret_cast<FExec*>(e);
  if (!x->g->original) {
    std::map<std::string, bool> held;
    for (const FNode* n : x->g->nodes) {
      if (n->func != nullptr) held[n->func->name] = true;
    }
    for (const auto& [name, yes] : held) launches[name]++;
  }
  for (FNode* n : x->g->nodes) {
    if (!x->g->original && n->func != nullptr && n->func->flag == "fault") {
      sticky = 700;
      return sticky;
    }
    if (!x->g->original && n->func != nullptr && n->func->flag == "die") {
      std::fprintf(stderr, "fakecuda: kernel %s: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access, the process ends\n", n->func->name.c_str());
      std::fflush(stderr);
      _exit(3);
    }
    if (n->func != nullptr) {
      const std::string& f = n->func->flag;
      counter = f == "reset" ? 0 : f == "bump" ? counter + 1 : counter;
      if (f == "index" && counter > kCounterLimit) {
        sticky = 710;
        return sticky;
      }
    }
    double ns = n->ns;
    if (n->type == kNodeKernel) {
      if (n->func != nullptr && n->func->flag.rfind("l2", 0) == 0 && n->in == last_in) ns /= 2;
      last_in = n->in;
    }
    if (n->type == kNodeKernel || n->type == kNodeMemcpy || n->type == kNodeMemset) reinterpret_cast<FStream*>(s)->gpu_ns += ns;
  }
  return kSuccess;
}
FAKE CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  if (std::getenv("FAKECUDA_MEMALLOC_FAIL") != nullptr) return 2;
  if (bytes == 0) return kInvalidValue;
  *p = alloc(bytes);
  mem_log.push_back({*p, bytes, false, false});
  return kSuccess;
}
FAKE CUresult cuMemFree_v2(CUdeviceptr p) {
  for (MemEntry& m : mem_log) {
    if (m.ptr == p && !m.freed) {
      m.freed = true;
      return kSuccess;
    }
  }
  return kInvalidValue;
}
// Marks a whole live buffer zeroed when the value is 0 and the size its own.
FAKE CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char value, size_t n, CUstream) {
  for (MemEntry& m : mem_log) {
    if (m.ptr == p && !m.freed && n <= m.bytes) {
      m.zeroed = value == 0 && n == m.bytes;
      return kSuccess;
    }
  }
  return kInvalidValue;
}
FAKE CUresult cuStreamCreate(CUstream* s, unsigned) {
  *s = reinterpret_cast<CUstream>(&streams.emplace_back());
  return kSuccess;
}
FAKE CUresult cuStreamDestroy_v2(CUstream) { return kSuccess; }
FAKE CUresult cuStreamSynchronize(CUstream) { return sticky; }
FAKE CUresult cuEventCreate(CUevent* e, unsigned) {
  *e = reinterpret_cast<CUevent>(&events.emplace_back());
  return kSuccess;
}
FAKE CUresult cuEventDestroy_v2(CUevent) { return kSuccess; }
FAKE CUresult cuEventRecord(CUevent e, CUstream s) {
  if (sticky != kSuccess) return sticky;
  reinterpret_cast<FEvent*>(e)->t = reinterpret_cast<FStream*>(s)->gpu_ns;
  return kSuccess;
}
FAKE CUresult cuEventQuery(CUevent) { return sticky; }
FAKE CUresult cuEventElapsedTime(float* ms, CUevent a, CUevent b) {
  if (sticky != kSuccess) return sticky;
  *ms = static_cast<float>((reinterpret_cast<FEvent*>(b)->t - reinterpret_cast<FEvent*>(a)->t) / 1e6);
  return kSuccess;
}

// The signatures above are those of the table (a mismatch does not compile).
#define JP_CUDA(member, params, sym) [[maybe_unused]] static const Api::member##_fn check_##member = &sym;
#include "cuda_entry_points.def"
#undef JP_CUDA
