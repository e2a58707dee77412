// Exact replay of a captured CUDA graph's own nodes (include/jouleprof/replay/graph_replay.hpp).
#include "jouleprof/replay/graph_replay.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <unordered_map>

#include "cuda_driver.hpp"
#include "graph_progress.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/core/stats.hpp"
#include "jouleprof/core/timebase.hpp"
#include "jouleprof/core/uuid.hpp"
#include "jouleprof/sensors/gpu_sensor.hpp"
#include "sensor_probe.hpp"
#include "trials.hpp"

namespace jouleprof {
namespace cuda {

std::string Api::describe(const char* call, CUresult rc) const {
  const char* name = nullptr;
  if (GetErrorName != nullptr) GetErrorName(rc, &name);
  return fmt::format("{}: {} ({})", call, name != nullptr ? name : "CUDA error", rc);
}

std::shared_ptr<const Api> load_driver(const std::string& library, std::string& error) {
  std::string lib = library;
  if (lib.empty()) {
    const char* env = std::getenv("JOULEPROF_CUDA_LIB");
    lib = env != nullptr && *env != '\0' ? env : "libcuda.so.1";
  }
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = dlerror();
    error = "cannot load the CUDA driver (" + lib + "): " + (why != nullptr ? why : "unknown reason");
    return nullptr;
  }
  auto api = std::make_shared<Api>();
  api->library = lib;
  api->handle = std::shared_ptr<void>(h, [](void* p) { dlclose(p); });
#define JP_CUDA(member, params, sym)                                           \
  api->member = reinterpret_cast<Api::member##_fn>(dlsym(h, #sym));            \
  if (api->member == nullptr) api->missing.emplace_back(#sym);
#include "cuda_entry_points.def"
#undef JP_CUDA
  for (const std::string& m : api->missing) {
    if (m != "cuFuncGetParamInfo" && m != "cuFuncGetName" && m != "cuKernelGetFunction" && m != "cuGetErrorName" &&
        m != "cuDeviceGetName" && m != "cuDeviceGetUuid" && m != "cuPointerGetAttribute") {
      error = "the CUDA driver " + lib + " lacks " + m + " (CUDA 12 or later is needed)";
      return nullptr;
    }
  }
  return api;
}

}  // namespace cuda

namespace {

using namespace cuda;
using detail::short_name;
using nlohmann::json;

std::string node_kind(int type) {
  switch (type) {
    case kNodeKernel: return "kernel";
    case kNodeMemcpy: return "memcpy";
    case kNodeMemset: return "memset";
    case kNodeHost: return "host";
    case kNodeGraph: return "child_graph";
    case kNodeEmpty: return "empty";
    case kNodeWaitEvent: return "event_wait";
    case kNodeEventRecord: return "event_record";
    case kNodeSemSignal: return "semaphore_signal";
    case kNodeSemWait: return "semaphore_wait";
    case kNodeMemAlloc: return "mem_alloc";
    case kNodeMemFree: return "mem_free";
    case kNodeBatchMemOp: return "batch_mem_op";
    case kNodeConditional: return "conditional";
    default: return fmt::format("type {}", type);
  }
}

std::string demangle(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : mangled;
  std::free(d);
  return out;
}

const char* memtype(int t) { return t == kMemoryTypeHost ? "H" : "D"; }

// A graph's stream-ordered allocations (mem_alloc nodes: cudaMallocAsync under capture). Their
// memory is graph-owned: mapped only while the owning graph runs between its alloc and free nodes,
// so a node on it cannot be re-created in another graph (cuGraphAddMemsetNode:
// CUDA_ERROR_INVALID_VALUE on the H200). The replay backs each range with a real buffer of the same
// size (RealBuffers) and moves every pointer into a range to the same offset in its buffer.
struct GraphMemory {
  struct Range {
    CUdeviceptr base = 0;
    size_t bytes = 0;
    CUdeviceptr real = 0;  ///< its real buffer (0: none, the pointers stay as they are)
  };
  std::vector<Range> ranges;  ///< sorted by base

  const Range* find(CUdeviceptr v) const {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), v, [](CUdeviceptr x, const Range& r) { return x < r.base; });
    if (it == ranges.begin()) return nullptr;
    --it;
    return v - it->base < it->bytes ? &*it : nullptr;
  }
  /// `v` at the same offset in its range's real buffer; `v` itself outside the ranges.
  CUdeviceptr remap(CUdeviceptr v) const {
    const Range* r = find(v);
    return r != nullptr && r->real != 0 ? r->real + (v - r->base) : v;
  }
};

CUfunction function_of(const Api& api, const CudaKernelNodeParams& p) {
  CUfunction f = p.func;
  if (f == nullptr && p.kern != nullptr && api.KernelGetFunction != nullptr) api.KernelGetFunction(&f, p.kern);
  return f;
}

// A kernel's arguments copied, each 8-byte aligned word (where a pointer can be) passed through
// `word` (which may rewrite it): the one walk the row key (device pointers masked) and the remap
// (graph-owned pointers moved) share. Sizes from cuFuncGetParamInfo; a kernel launched with
// `extra` (one packed buffer, as cuBLAS launches its nvjet GEMMs) is one argument: its buffer.
// Empty when neither can be read.
template <class Word>
std::vector<std::string> arguments(const Api& api, const CudaKernelNodeParams& p, Word&& word) {
  std::vector<std::string> out;
  auto walk = [&](const char* bytes, size_t size) {
    std::string& arg = out.emplace_back(bytes, size);
    for (size_t w = 0; w + 8 <= size; w += 8) {
      CUdeviceptr v = 0;
      std::memcpy(&v, arg.data() + w, 8);
      v = word(v);
      std::memcpy(arg.data() + w, &v, 8);
    }
  };
  if (p.kernelParams == nullptr) {
    const char* buffer = nullptr;
    size_t size = 0;
    for (size_t i = 0; p.extra != nullptr && i < 16 && p.extra[i] != kLaunchParamEnd; i += 2) {
      if (p.extra[i] == kLaunchParamBufferPointer) buffer = static_cast<const char*>(p.extra[i + 1]);
      if (p.extra[i] == kLaunchParamBufferSize && p.extra[i + 1] != nullptr) size = *static_cast<const size_t*>(p.extra[i + 1]);
    }
    if (buffer != nullptr && size > 0) walk(buffer, size);
    return out;
  }
  const CUfunction f = function_of(api, p);
  if (api.FuncGetParamInfo == nullptr || f == nullptr) return out;
  for (size_t a = 0; a < 4096; ++a) {
    size_t off = 0, size = 0;
    if (api.FuncGetParamInfo(f, a, &off, &size) != kSuccess) break;
    const auto* bytes = static_cast<const char*>(p.kernelParams[a]);
    if (bytes == nullptr) break;
    walk(bytes, size);
  }
  return out;
}

// What the listing keeps of each node beyond GraphNode: the handle and, for kernels, the key.
struct RawNode {
  CUgraphNode handle = nullptr;
  int type = -1;
  std::string key;
  /// Kernels: the memset nodes just before it (its dependencies) that reset its workspace (a
  /// stream-K GEMM's or a fused attention kernel's tile counters): replayed with every copy, or
  /// the copies after the first find the work done and exit at once.
  std::vector<CUgraphNode> prelude;
};

struct Listed {
  GraphListing listing;
  GraphMemory memory;
  std::vector<RawNode> raw;
  std::vector<std::vector<std::size_t>> members;  ///< per group: its nodes, in graph order
  /// Per kernel group: its function and launch configuration (the key before the arguments) and
  /// its first node's arguments with device pointers masked (split_rows_warnings).
  std::vector<std::pair<std::string, std::vector<std::string>>> kernel_args;
};

// A kernel node's row key: function, launch configuration, its memset prelude's size and the
// argument bytes with device pointers masked (8-byte aligned words the driver knows as device
// memory): the same kernel and sizes on another layer's buffers is the same row. Caches the
// functions' names and the pointers' answers across the graph.
struct KernelKeys {
  const Api& api;
  const GraphMemory& memory;
  std::unordered_map<CUfunction, std::string> names;
  std::unordered_map<CUdeviceptr, bool> is_device_ptr;
  std::size_t config_end = 0;  ///< the last key's length up to its arguments (function and launch configuration)

  bool device_pointer(CUdeviceptr v) {
    if (memory.find(v) != nullptr) return true;  // graph-owned: the driver may not know it outside its graph
    if (v == 0 || api.PointerGetAttribute == nullptr) return false;
    auto it = is_device_ptr.find(v);
    if (it != is_device_ptr.end()) return it->second;
    int mt = 0;
    const bool dev = api.PointerGetAttribute(&mt, kPointerAttributeMemoryType, v) == kSuccess;
    is_device_ptr.emplace(v, dev);
    return dev;
  }

  // Fills g's name and launch configuration, `key` and `stable`; false (counted, warned): unreadable.
  bool kernel(std::size_t i, const RawNode& r, GraphNode& g, GraphListing& L, std::string& key, std::string& stable,
              std::vector<std::string>& masked) {
    CudaKernelNodeParams p{};
    if (CUresult rc = api.GraphKernelNodeGetParams(r.handle, &p); rc != kSuccess) {
      L.warnings.push_back(fmt::format("node {}: {}: not replayed", i, api.describe("cuGraphKernelNodeGetParams", rc)));
      g.kind = "kernel (unreadable)";
      L.not_replayed[g.kind]++;
      return false;
    }
    const CUfunction f = function_of(api, p);
    auto nit = names.find(f);
    if (nit == names.end()) {
      const char* mangled = nullptr;
      std::string nm;
      if (f != nullptr && api.FuncGetName != nullptr && api.FuncGetName(&mangled, f) == kSuccess && mangled != nullptr) {
        nm = demangle(mangled);
      } else {
        nm = fmt::format("kernel@{}", static_cast<const void*>(f != nullptr ? static_cast<void*>(f) : static_cast<void*>(p.kern)));
      }
      nit = names.emplace(f, nm).first;
    }
    g.name = nit->second;
    g.grid = {p.gridDimX, p.gridDimY, p.gridDimZ};
    g.block = {p.blockDimX, p.blockDimY, p.blockDimZ};
    g.shared_bytes = p.sharedMemBytes;
    // The key names the function by its address (two functions of one name are two rows); the
    // stable key (GraphGroup::id) by its name, the same in another process.
    const std::string config = fmt::format("|{},{},{}|{},{},{}|{}|{}|", p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY,
                                           p.blockDimZ, p.sharedMemBytes, r.prelude.size());
    key = fmt::format("k{}", static_cast<const void*>(f != nullptr ? static_cast<void*>(f) : static_cast<void*>(p.kern))) + config;
    std::string rest;
    for (CUgraphNode m : r.prelude) {
      CudaMemsetNodeParams ms{};
      if (api.GraphMemsetNodeGetParams(m, &ms) == kSuccess) g.bytes += static_cast<uint64_t>(ms.width) * std::max<size_t>(1, ms.height) * ms.elementSize;
    }
    if (!r.prelude.empty()) rest += fmt::format("m{}|", g.bytes);
    masked = arguments(api, p, [&](CUdeviceptr v) { return device_pointer(v) ? CUdeviceptr{0} : v; });
    for (const std::string& arg : masked) {
      rest += arg;
      rest += '\x1f';
    }
    key += rest;
    config_end = key.size() - rest.size();
    // Not the argument bytes: a word that is not device memory (a host address, a per-process
    // handle) differs from one process to the next (H200, StaticCache decode: each child saw other
    // ids). The node's place in the graph tells groups apart, as a capture of the step repeats it.
    stable = fmt::format("k{}{}@{}", g.name, config, i);
    return true;
  }
};

// GraphGroup::id: FNV-1a (64 bits) of the stable key (a kernel's name, launch configuration and
// first node's place in the graph; a copy's or memset's grouping key), 16 hex digits. The keys are
// distinct per group, so a repeated id is a hash collision: it gets "-2", "-3" ... in graph order.
std::string stable_id(const std::string& stable_key, std::unordered_map<std::string, std::size_t>& seen) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : stable_key) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  std::string id = fmt::format("{:016x}", h);
  const std::size_t n = ++seen[id];
  return n == 1 ? id : fmt::format("{}-{}", id, n);
}

// The memsets each kernel depends on join that kernel's row (RawNode::prelude); true: folded.
std::vector<bool> fold_preludes(const Api& api, const std::vector<CUgraphNode>& handles, const std::vector<int>& types, std::vector<RawNode>& raw) {
  const std::size_t n = handles.size();
  std::unordered_map<CUgraphNode, std::size_t> index_of;
  for (std::size_t i = 0; i < n; ++i) index_of.emplace(handles[i], i);
  std::vector<bool> folded(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (types[i] != kNodeKernel) continue;
    size_t nd = 0;
    if (api.GraphNodeGetDependencies(handles[i], nullptr, &nd) != kSuccess || nd == 0 || nd > 64) continue;
    std::vector<CUgraphNode> deps(nd);
    if (api.GraphNodeGetDependencies(handles[i], deps.data(), &nd) != kSuccess) continue;
    for (std::size_t d = 0; d < nd; ++d) {
      auto it = index_of.find(deps[d]);
      if (it == index_of.end() || types[it->second] != kNodeMemset || folded[it->second]) continue;
      folded[it->second] = true;
      raw[i].prelude.push_back(deps[d]);
    }
  }
  return folded;
}

// The graph-owned ranges of the mem_alloc nodes, read before any key (their pointers are masked
// there), and the mem_alloc / mem_free nodes counted in L. An unreadable one is named in a
// warning: the nodes on its memory then fail when re-created (one line each).
GraphMemory read_allocations(const Api& api, const std::vector<CUgraphNode>& handles, const std::vector<int>& types, GraphListing& L) {
  GraphMemory m;
  for (std::size_t i = 0; i < handles.size(); ++i) {
    if (types[i] == kNodeMemFree) L.mem_free_nodes++;
    if (types[i] != kNodeMemAlloc) continue;
    L.mem_alloc_nodes++;
    CudaMemAllocNodeParams p{};
    if (CUresult rc = api.GraphMemAllocNodeGetParams(handles[i], &p); rc != kSuccess) {
      L.warnings.push_back(fmt::format("node {}: {}: the nodes on its memory cannot be replayed", i, api.describe("cuGraphMemAllocNodeGetParams", rc)));
      continue;
    }
    L.mem_alloc_bytes += p.bytesize;
    if (p.bytesize > 0) m.ranges.push_back({p.dptr, p.bytesize, 0});
  }
  std::sort(m.ranges.begin(), m.ranges.end(), [](const GraphMemory::Range& a, const GraphMemory::Range& b) { return a.base < b.base; });
  return m;
}

// Rows of one kernel and launch configuration kept apart by argument words that are not device
// pointers the driver knows: a scalar that differs (a layer index, a size), or an address the
// driver does not report (a host address, a per-process handle: such rows would otherwise be one,
// each layer's instance on its own buffers). One warning for each of the 3 kernels split into the
// most rows, with the first two rows' differing words, so a listing shows which it is.
void split_rows_warnings(const Listed& out, GraphListing& L) {
  std::map<std::string, std::vector<std::size_t>> by_config;
  for (std::size_t g = 0; g < out.kernel_args.size(); ++g) {
    if (!out.kernel_args[g].first.empty()) by_config[out.kernel_args[g].first].push_back(g);
  }
  std::vector<const std::vector<std::size_t>*> split;
  for (const auto& [config, groups] : by_config) {
    if (groups.size() > 1) split.push_back(&groups);
  }
  std::stable_sort(split.begin(), split.end(), [](const auto* a, const auto* b) { return a->size() > b->size(); });
  for (std::size_t k = 0; k < std::min<std::size_t>(split.size(), 3); ++k) {
    const std::vector<std::size_t>& groups = *split[k];
    const auto& a = out.kernel_args[groups[0]].second;
    const auto& b = out.kernel_args[groups[1]].second;
    std::vector<std::string> words;
    std::size_t differing = 0;
    for (std::size_t arg = 0; arg < std::min(a.size(), b.size()); ++arg) {
      const std::size_t size = std::min(a[arg].size(), b[arg].size());
      for (std::size_t w = 0; w < size; w += 8) {  // 8-byte words, a shorter last one (an int)
        uint64_t x = 0, y = 0;
        std::memcpy(&x, a[arg].data() + w, std::min<std::size_t>(8, size - w));
        std::memcpy(&y, b[arg].data() + w, std::min<std::size_t>(8, size - w));
        if (x == y) continue;
        if (++differing <= 4) words.push_back(fmt::format("argument {} byte {}: {:#x} / {:#x}", arg, w, x, y));
      }
    }
    if (differing > words.size()) words.push_back(fmt::format("{} more", differing - words.size()));
    L.warnings.push_back(fmt::format("{} rows of {} share its launch configuration; their arguments differ in {} word{} the driver does not "
                                     "know as device memory (rows {} and {}: {})",
                                     groups.size(), short_name(L.groups[groups[0]].name), differing, differing == 1 ? "" : "s",
                                     L.groups[groups[0]].id, L.groups[groups[1]].id, fmt::join(words, "; ")));
  }
}

Result<Listed> list_graph(const Api& api, CUgraph graph) {
  if (graph == nullptr) return make_error(Errc::invalid_argument, "no CUDA graph (null handle)");
  size_t n = 0;
  if (CUresult rc = api.GraphGetNodes(graph, nullptr, &n); rc != kSuccess) {
    return make_error(Errc::invalid_argument, "not a CUDA graph: " + api.describe("cuGraphGetNodes", rc));
  }
  std::vector<CUgraphNode> handles(n);
  if (n > 0) {
    if (CUresult rc = api.GraphGetNodes(graph, handles.data(), &n); rc != kSuccess) {
      return make_error(Errc::io, api.describe("cuGraphGetNodes", rc));
    }
    handles.resize(n);
  }
  Listed out;
  GraphListing& L = out.listing;
  L.nodes.resize(n);
  out.raw.resize(n);
  std::vector<int> types(n, -1);
  for (std::size_t i = 0; i < n; ++i) api.GraphNodeGetType(handles[i], &types[i]);
  const std::vector<bool> folded = fold_preludes(api, handles, types, out.raw);
  out.memory = read_allocations(api, handles, types, L);
  std::unordered_map<std::string, std::size_t> group_of;
  std::unordered_map<std::string, std::size_t> ids_seen;
  KernelKeys keys{api, out.memory, {}, {}};
  if (api.FuncGetParamInfo == nullptr) L.warnings.push_back("this CUDA driver has no cuFuncGetParamInfo (CUDA < 12.4): nodes are grouped without their argument bytes");
  for (std::size_t i = 0; i < n; ++i) {
    GraphNode& g = L.nodes[i];
    RawNode& r = out.raw[i];
    r.handle = handles[i];
    if (CUresult rc = api.GraphNodeGetType(handles[i], &r.type); rc != kSuccess) {
      g.kind = "unreadable";
      L.not_replayed[g.kind]++;
      continue;
    }
    g.kind = node_kind(r.type);
    if (folded[i]) {
      g.kind = "memset (with its kernel)";
      continue;
    }
    std::string key, stable;
    std::vector<std::string> masked;
    if (r.type == kNodeKernel) {
      if (!keys.kernel(i, r, g, L, key, stable, masked)) continue;
    } else if (r.type == kNodeMemcpy) {
      CudaMemcpy3D c{};
      if (CUresult rc = api.GraphMemcpyNodeGetParams(handles[i], &c); rc != kSuccess) {
        g.kind = "memcpy (unreadable)";
        L.not_replayed[g.kind]++;
        continue;
      }
      g.bytes = static_cast<uint64_t>(c.WidthInBytes) * std::max<size_t>(1, c.Height) * std::max<size_t>(1, c.Depth);
      g.name = fmt::format("memcpy {}to{}", memtype(c.srcMemoryType), memtype(c.dstMemoryType));
      key = fmt::format("c{}|{}", g.name, g.bytes);
    } else if (r.type == kNodeMemset) {
      CudaMemsetNodeParams s{};
      if (CUresult rc = api.GraphMemsetNodeGetParams(handles[i], &s); rc != kSuccess) {
        g.kind = "memset (unreadable)";
        L.not_replayed[g.kind]++;
        continue;
      }
      g.bytes = static_cast<uint64_t>(s.width) * std::max<size_t>(1, s.height) * s.elementSize;
      g.name = "memset";
      key = fmt::format("s|{}|{}", g.bytes, s.elementSize);
    } else {
      // Empty nodes do nothing; mem_alloc / mem_free are counted (read_allocations) and their
      // memory backed by real buffers at replay; the rest are named in one warning.
      if (r.type != kNodeEmpty && r.type != kNodeMemAlloc && r.type != kNodeMemFree) L.not_replayed[g.kind]++;
      continue;
    }
    r.key = key;
    auto [it, inserted] = group_of.emplace(key, L.groups.size());
    if (inserted) {
      GraphGroup gr;
      gr.id = stable_id(r.type == kNodeKernel ? stable : key, ids_seen);
      gr.kind = g.kind;
      gr.name = g.name;
      gr.grid = g.grid;
      gr.block = g.block;
      gr.shared_bytes = g.shared_bytes;
      gr.bytes = g.bytes;
      gr.first_node = i;
      gr.argument_bytes = key.size();
      L.groups.push_back(gr);
      out.members.emplace_back();
      out.kernel_args.emplace_back(r.type == kNodeKernel ? key.substr(0, keys.config_end) : std::string{}, std::move(masked));
    }
    out.members[it->second].push_back(i);
    L.groups[it->second].count++;
    g.group = it->second;
  }
  for (const auto& [kind, count] : L.not_replayed) {
    L.warnings.push_back(fmt::format("{} node{} of type {} not replayed (the replay re-creates kernel, memcpy and memset nodes)", count,
                                     count == 1 ? "" : "s", kind));
  }
  split_rows_warnings(out, L);
  return out;
}

// Mean and 95% half-width over a trial round (core/stats: the Student-t interval every figure uses).
Summary stat(const std::vector<double>& v) { return summarize(v); }

// The replay::Device the trial rounds drive: one instantiated graph on its own stream.
class GraphDevice final : public replay::Device {
 public:
  explicit GraphDevice(const Api& api) : api_(api) {}
  ~GraphDevice() override { release(); }
  std::string open() {
    if (CUresult rc = api_.StreamCreate(&stream_, 1 /* non-blocking */); rc != kSuccess) return api_.describe("cuStreamCreate", rc);
    events_.assign(replay::kPaceSlot0 + replay::kPaceSlots, nullptr);
    for (CUevent& e : events_) {
      if (CUresult rc = api_.EventCreate(&e, 0); rc != kSuccess) return api_.describe("cuEventCreate", rc);
    }
    return "";
  }
  /// Uses `exec` for launch() (owned by the caller).
  void use(CUgraphExec exec) { exec_ = exec; }
  std::string name() const override { return "cuda"; }
  std::string prepare(const replay::Item&, int) override { return "not used"; }
  int reps() const override { return 1; }
  std::string prepare_units(const std::vector<replay::Item>&, std::vector<std::string>&) override { return "not used"; }
  void call_unit(int) override {}
  void launch(int graphs) override {
    for (int i = 0; i < graphs && error_.empty(); ++i) check(api_.GraphLaunch(exec_, stream_), "cuGraphLaunch");
  }
  void mark(int slot) override { check(api_.EventRecord(events_.at(static_cast<std::size_t>(slot)), stream_), "cuEventRecord"); }
  void synchronize() override { check(api_.StreamSynchronize(stream_), "cuStreamSynchronize"); }
  bool reached(int slot) override {
    if (!error_.empty()) return true;  // nothing more will run: never wait on it
    const CUresult rc = api_.EventQuery(events_.at(static_cast<std::size_t>(slot)));
    if (rc == kNotReady) return false;
    check(rc, "cuEventQuery");
    return true;
  }
  double elapsed_ms(int from, int to) override {
    float ms = 0;
    if (!error_.empty()) return 0;
    check(api_.EventElapsedTime(&ms, events_.at(static_cast<std::size_t>(from)), events_.at(static_cast<std::size_t>(to))), "cuEventElapsedTime");
    return ms;
  }
  void gap_pattern(double, double) override {}
  void release() override {
    for (CUevent& e : events_) {
      if (e != nullptr) api_.EventDestroy(e);
      e = nullptr;
    }
    if (stream_ != nullptr) api_.StreamDestroy(stream_);
    stream_ = nullptr;
  }
  std::string error() const override { return error_; }
  void clear_error() { error_.clear(); }
  CUstream stream() const { return stream_; }

 private:
  void check(CUresult rc, const char* call) {
    if (rc != kSuccess && error_.empty()) error_ = api_.describe(call, rc);
  }
  const Api& api_;
  CUstream stream_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<CUevent> events_;
  std::string error_;
};

// jouleprof's GPU sensor as the rounds' probe (sensor_probe.hpp), on a sensor of its own.
class OwnSensorProbe final : public replay::SensorProbe {
 public:
  /// The samples' times are on the TimeBase the sensor was opened with: this one's own. The sensor
  /// of the CUDA device (`cuda_uuid`, else the ordinal `index`: sensor_of_cuda_device, whose
  /// `warning` says when no UUID matched).
  static Result<std::unique_ptr<OwnSensorProbe>> open(const GpuSelection& sel, std::size_t index, const std::string& cuda_uuid,
                                                      std::string& warning) {
    auto p = std::unique_ptr<OwnSensorProbe>(new OwnSensorProbe());
    auto gpus = open_gpus(sel, *p->tb_);
    if (!gpus) return gpus.error();
    if (gpus->gpus.empty()) return make_error(Errc::unavailable, "no GPU sensor");
    p->set_ = std::move(*gpus);
    const std::size_t at = sensor_of_cuda_device(p->set_, index, cuda_uuid, warning);
    GpuSensor& s = *p->set_.gpus.at(at);
    if (!s.supports(Metric::power_sample_w)) return make_error(Errc::unavailable, "the GPU's driver gives no power samples");
    p->attach(s, *p->tb_);
    return p;
  }

 private:
  OwnSensorProbe() : tb_(std::make_unique<TimeBase>()) {}
  std::unique_ptr<TimeBase> tb_;
  GpuSet set_;
};

// A graph of `copies` copies of a group's node, each depending on the one before (they run in
// order, as the program's nodes did), instantiated. Copy i is the group's member i mod n: each
// layer's instance on its own buffers, so a layer's weights are not still in L2 from the copy
// before, as they are not in the program (a node repeated on one buffer set can run from L2 where
// the program's ran from memory). Repeating the first member was the design before and measured
// further from the step on the H100 (docs/validation/replay.md); the fake CUDA's "l2" flag tests it.
struct Copies {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  const Api* api = nullptr;
  Copies() = default;
  Copies(const Copies&) = delete;
  Copies& operator=(const Copies&) = delete;
  ~Copies() {
    if (exec != nullptr) api->GraphExecDestroy(exec);
    if (graph != nullptr) api->GraphDestroy(graph);
  }
};

// One member's parameters as read back from the captured graph.
struct NodeParams {
  int type = -1;
  CUgraphNode handle = nullptr;
  CudaKernelNodeParams kernel{};
  CudaMemcpy3D copy{};
  CudaMemsetNodeParams set{};
  std::vector<CudaMemsetNodeParams> prelude;
  /// A kernel's arguments with graph-owned pointers moved (kernel.kernelParams or .extra points into them).
  std::vector<std::string> args;
  std::vector<void*> arg_ptrs;  ///< kernelParams, or the `extra` array of a packed buffer
  size_t extra_size = 0;
};

// Graph-owned pointers moved into their real buffers (GraphMemory): the memsets' dst, the copies'
// ends and the kernel's argument words. Without cuFuncGetParamInfo a kernel's arguments cannot be
// walked: it keeps them (and fails, with one line, if they are graph-owned).
void remap(const Api& api, const GraphMemory& m, NodeParams& p) {
  if (m.ranges.empty()) return;
  p.set.dst = m.remap(p.set.dst);
  for (CudaMemsetNodeParams& s : p.prelude) s.dst = m.remap(s.dst);
  p.copy.srcDevice = m.remap(p.copy.srcDevice);
  p.copy.dstDevice = m.remap(p.copy.dstDevice);
  if (p.type != kNodeKernel) return;
  p.args = arguments(api, p.kernel, [&](CUdeviceptr v) { return m.remap(v); });
  if (p.args.empty()) return;
  if (p.kernel.kernelParams == nullptr) {  // the packed buffer, rewritten, in a new `extra`
    p.extra_size = p.args.front().size();
    p.arg_ptrs = {kLaunchParamBufferPointer, p.args.front().data(), kLaunchParamBufferSize, &p.extra_size, kLaunchParamEnd};
    p.kernel.extra = p.arg_ptrs.data();
    return;
  }
  for (std::string& a : p.args) p.arg_ptrs.push_back(a.data());
  p.kernel.kernelParams = p.arg_ptrs.data();
}

std::string read_params(const Api& api, const GraphMemory& memory, const RawNode& node, NodeParams& p) {
  p.type = node.type;
  p.handle = node.handle;
  CUresult rc = kSuccess;
  if (node.type == kNodeKernel) rc = api.GraphKernelNodeGetParams(node.handle, &p.kernel);
  if (node.type == kNodeMemcpy) rc = api.GraphMemcpyNodeGetParams(node.handle, &p.copy);
  if (node.type == kNodeMemset) rc = api.GraphMemsetNodeGetParams(node.handle, &p.set);
  if (rc != kSuccess) return api.describe("reading the node's parameters", rc);
  p.prelude.resize(node.prelude.size());
  for (std::size_t m = 0; m < node.prelude.size(); ++m) {
    if (rc = api.GraphMemsetNodeGetParams(node.prelude[m], &p.prelude[m]); rc != kSuccess) return api.describe("reading a memset's parameters", rc);
  }
  remap(api, memory, p);
  return "";
}

// Appends one copy of `p` after `prev` (null: first); `prev` becomes the copy's last node.
std::string add_copy(const Api& api, CUgraph graph, CUcontext ctx, const NodeParams& p, CUgraphNode& prev) {
  CUgraphNode added = nullptr;
  const CUgraphNode* deps = prev != nullptr ? &prev : nullptr;
  size_t ndeps = prev != nullptr ? 1 : 0;
  CUresult rc = kSuccess;
  if (p.type == kNodeKernel) {
    // Its memsets first (each copy resets the kernel's workspace as the step did).
    for (const CudaMemsetNodeParams& m : p.prelude) {
      CUgraphNode set = nullptr;
      if (rc = api.GraphAddMemsetNode(&set, graph, deps, ndeps, &m, ctx); rc != kSuccess) return api.describe("cuGraphAddMemsetNode", rc);
      prev = set;
      deps = &prev;
      ndeps = 1;
    }
    if (rc = api.GraphAddKernelNode(&added, graph, deps, ndeps, &p.kernel); rc != kSuccess) return api.describe("cuGraphAddKernelNode", rc);
    // Its launch attributes too (a CUTLASS/cuDNN kernel's cluster dimensions, priority ...).
    if (rc = api.GraphKernelNodeCopyAttributes(added, p.handle); rc != kSuccess) return api.describe("cuGraphKernelNodeCopyAttributes", rc);
  } else if (p.type == kNodeMemcpy) {
    if (rc = api.GraphAddMemcpyNode(&added, graph, deps, ndeps, &p.copy, ctx); rc != kSuccess) return api.describe("cuGraphAddMemcpyNode", rc);
  } else {
    if (rc = api.GraphAddMemsetNode(&added, graph, deps, ndeps, &p.set, ctx); rc != kSuccess) return api.describe("cuGraphAddMemsetNode", rc);
  }
  prev = added;
  return "";
}

std::string build_copies(const Api& api, const GraphMemory& memory, const std::vector<const RawNode*>& members, std::size_t copies, Copies& out) {
  out.api = &api;
  if (CUresult rc = api.GraphCreate(&out.graph, 0); rc != kSuccess) return api.describe("cuGraphCreate", rc);
  CUcontext ctx = nullptr;
  api.CtxGetCurrent(&ctx);
  std::vector<NodeParams> params(std::min(members.size(), copies));
  for (std::size_t m = 0; m < params.size(); ++m) {
    if (std::string e = read_params(api, memory, *members[m], params[m]); !e.empty()) return e;
  }
  CUgraphNode prev = nullptr;
  for (std::size_t i = 0; i < copies; ++i) {
    if (std::string e = add_copy(api, out.graph, ctx, params[i % params.size()], prev); !e.empty()) return e;
  }
  if (CUresult rc = api.GraphInstantiateWithFlags(&out.exec, out.graph, 0); rc != kSuccess) return api.describe("cuGraphInstantiate", rc);
  return "";
}

// Times one launch of `exec` (after `warm` launches): ms.
double time_launch(GraphDevice& dev, CUgraphExec exec, int warm) {
  dev.use(exec);
  dev.launch(warm);
  dev.mark(0);
  dev.launch(1);
  dev.mark(1);
  dev.synchronize();
  return dev.error().empty() ? dev.elapsed_ms(0, 1) : 0.0;
}

struct Measured {
  replay::Round round;
  double first_ci = -1;
  std::string error;
};

// Settling, short trials, and long trials while the energy CI misses the target (kernels ≥ ci_min_ns).
Measured measure(GraphDevice& dev, replay::Probe& probe, const GraphReplayOptions& o, double graph_ms, double calls_per_graph,
                 const replay::CounterRules& rules) {
  auto round = [&](int n, double seconds) {
    replay::RoundPlan rp;
    rp.graph_s = graph_ms / 1e3;
    rp.settle_graphs = std::max(1, static_cast<int>(std::ceil(o.settle_s * 1e3 / graph_ms)));
    rp.trial_graphs = std::max(1, static_cast<int>(std::ceil(seconds * 1e3 / graph_ms)));
    rp.trials = n;
    rp.calls_per_graph = calls_per_graph;
    replay::Round rd = replay::run_round(dev, probe, rp, rules);
    rd.seconds = seconds;
    return rd;
  };
  Measured m;
  m.round = round(o.trials, o.trial_s);
  if (!dev.error().empty()) {
    m.error = dev.error();
    return m;
  }
  auto rel_ci = [](const replay::Round& x) {
    const Summary e = stat(x.energy_j);
    return e.mean > 0 ? e.ci95_half_width / e.mean : 1.0;
  };
  m.first_ci = rel_ci(m.round);
  if (m.round.energy_j.size() >= 2 && stat(m.round.time_ns).mean >= o.ci_min_ns && m.first_ci > o.ci_target) {
    replay::Round lng;
    lng.seconds = o.long_trial_s;
    double spent = 0;
    while (static_cast<int>(lng.energy_j.size()) < o.max_trials && spent + 4 * o.long_trial_s <= o.row_cap_s) {
      const int n = std::min(4, o.max_trials - static_cast<int>(lng.energy_j.size()));
      lng.append(round(n, o.long_trial_s));
      if (!dev.error().empty()) break;
      spent += n * o.long_trial_s + o.settle_s;
      if (lng.energy_j.size() >= 3 && rel_ci(lng) <= o.ci_target) break;
    }
    if (lng.energy_j.size() >= 2 && rel_ci(lng) < m.first_ci) m.round = lng;
  }
  m.error = dev.error();
  return m;
}

bool sticky(const std::string& error) {
  // Errors after which the CUDA context is unusable (a kernel fault): nothing more can run.
  for (const char* s : {"ILLEGAL_ADDRESS", "LAUNCH_FAILED", "ILLEGAL_INSTRUCTION", "MISALIGNED_ADDRESS", "INVALID_PC", "HARDWARE_STACK_ERROR",
                        "ASSERT", "(700)", "(719)", "(715)", "(716)", "(718)", "(714)", "(710)"}) {
    if (error.find(s) != std::string::npos) return true;
  }
  return false;
}


}  // namespace

Result<GraphListing> list_cuda_graph(std::uintptr_t graph, const std::string& cuda_library) {
  std::string err;
  auto api = load_driver(cuda_library, err);
  if (!api) return make_error(Errc::unavailable, err);
  auto l = list_graph(*api, reinterpret_cast<CUgraph>(graph));
  if (!l) return l.error();
  return std::move(l->listing);
}

namespace {

// One group on its way through the replay: its row, the nodes its copies cycle through, and the
// copies graph while it is measured.
struct Work {
  ExactRow row;
  std::vector<const RawNode*> members;
  std::unique_ptr<Copies> copies;
  bool reported = false;  ///< its "row" (or "fault") progress event written, or taken from an earlier process
  /// Its share of the step's node time (count × time per call): the rows' measuring order.
  double node_time() const { return row.time_ns * static_cast<double>(row.group.count); }
};

// One real buffer per stream-ordered allocation (GraphMemory::Range::real), for the replay's
// lifetime. They start zeroed: graph-owned memory holds at replay whatever the step left there,
// which is not kept, so zero is a choice (a GEMM's workspace or tile counters start from it; the
// result of the whole graph replayed is not affected). One that cannot be allocated stays
// unbacked: the nodes on it fail with one line each, the rest goes on.
class RealBuffers {
 public:
  RealBuffers(const Api& api, GraphMemory& m, CUstream stream, GraphReplay& R) : api_(api), m_(m) {
    std::size_t backed = 0;
    uint64_t bytes = 0;
    for (GraphMemory::Range& r : m.ranges) {
      const char* call = "cuMemAlloc";
      CUresult rc = api.MemAlloc(&r.real, r.bytes);
      if (rc == kSuccess) {
        call = "cuMemsetD8Async";
        rc = api.MemsetD8Async(r.real, 0, r.bytes, stream);
      }
      if (rc == kSuccess) {
        call = "cuStreamSynchronize";
        rc = api.StreamSynchronize(stream);
      }
      if (rc != kSuccess) {
        R.warnings.push_back(fmt::format("a stream-ordered allocation of {}: {}: the nodes on it cannot be replayed", format_bytes(uint64_t{r.bytes}),
                                         api.describe(call, rc)));
        if (r.real != 0) api.MemFree(r.real);
        r.real = 0;
        continue;
      }
      ++backed;
      bytes += r.bytes;
    }
    R.mem_alloc_backed = backed;
    if (backed > 0) {
      R.warnings.push_back(fmt::format("{} stream-ordered allocation{} ({}) backed by real buffers, zeroed (not the contents the step left)",
                                       backed, backed == 1 ? "" : "s", format_bytes(bytes)));
    }
  }
  ~RealBuffers() {
    for (GraphMemory::Range& r : m_.ranges) {
      if (r.real != 0) api_.MemFree(r.real);
      r.real = 0;
    }
  }
  RealBuffers(const RealBuffers&) = delete;
  RealBuffers& operator=(const RealBuffers&) = delete;

 private:
  const Api& api_;
  GraphMemory& m_;
};

// Everything the steps below share: the driver, the device, the probe and what was lost.
struct Replayer {
  const Api& api;
  const GraphMemory& memory;
  const GraphReplayOptions& o;
  GraphDevice& dev;
  replay::Probe& probe;
  replay::CounterRules rules;
  std::function<double()> temperature;
  GraphReplay& R;
  detail::ProgressLog& log;
  std::string lost_when;  // set once a fault left the context unusable: what faulted ("KERNEL faulted")
  std::string lost() const { return "not measured: the CUDA context was lost when " + lost_when; }
  // The whole graph, kept after measure_step: each row starts from the state one step leaves
  // (restore()). Destroyed by release_step().
  CUgraphExec step_exec = nullptr;

  void fail(Work& w, const std::string& why) {
    w.row.status = "failed";
    w.row.reason = fmt::format("{} {}: {}", w.row.group.kind, short_name(w.row.group.name), why);  // a warning too (assemble_prediction)
    if (sticky(why)) {
      lost_when = short_name(w.row.group.name) + " faulted";
      log.fault(w.row, why);  // not finished: a new process replays the others without it
      w.reported = true;
    } else {
      report(w);
    }
    dev.clear_error();
  }

  // The row's "row" progress event, once.
  void report(Work& w) {
    if (w.reported) return;
    log.row(w.row);
    w.reported = true;
  }

  // A row an earlier process finished (o.prior) or that faulted there (o.faulted): true, not replayed.
  bool from_earlier(Work& w) {
    if (auto it = o.prior.find(w.row.group.id); it != o.prior.end()) {
      GraphGroup group = std::move(w.row.group);  // this process's listing (count, name) stays
      w.row = it->second;
      w.row.group = std::move(group);
    } else if (auto f = o.faulted.find(w.row.group.id); f != o.faulted.end()) {
      w.row.status = "faulted";
      w.row.reason = f->second;
    } else {
      return false;
    }
    w.reported = true;
    return true;
  }

  // The whole graph as captured: warm-up (a stable temperature) and the step's own figures.
  void measure_step(CUgraph graph) {
    if (CUresult rc = api.GraphInstantiateWithFlags(&step_exec, graph, 0); rc != kSuccess) {
      R.step.reason = api.describe("cuGraphInstantiate of the whole graph", rc);
      R.warnings.push_back("the whole graph: " + R.step.reason);
      step_exec = nullptr;
      return;
    }
    log.start("step", "step");
    const double step_ms = std::max(time_launch(dev, step_exec, 1), 1e-3);
    dev.use(step_exec);
    const auto t_end = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.warmup_s);
    while (dev.error().empty() && std::chrono::steady_clock::now() < t_end) {
      dev.launch(std::max(1, static_cast<int>(50 / step_ms)));
      dev.synchronize();
      probe.drain();
    }
    if (o.prior_step) {
      R.step = *o.prior_step;  // an earlier process measured it
    } else if (o.measure_step && dev.error().empty()) {
      Measured m = measure(dev, probe, o, step_ms, 1, rules);
      if (m.error.empty() && m.round.energy_j.size() >= 2) {
        const Summary t = stat(m.round.time_ns), p = stat(m.round.power_w), e = stat(m.round.energy_j);
        R.step = {true, "", t.mean, t.ci95_half_width, p.mean, e.mean, e.ci95_half_width};
      } else {
        R.step.reason = m.error.empty() ? "fewer than two trials had power samples" : m.error;
      }
    }
    if (!dev.error().empty()) {
      R.step.reason = dev.error();
      return;
    }
    if (o.measure_step && !o.prior_step) log.step(R.step);
  }

  // One launch of the whole step before a row: its nodes' inputs are then what the step leaves
  // them (a temporary another row overwrote, a position counter another row advanced), as they
  // were when the program ran it. A fault here loses the context as a row's would.
  void restore() {
    if (step_exec == nullptr || !lost_when.empty()) return;
    dev.use(step_exec);
    dev.launch(1);
    dev.synchronize();
    if (!dev.error().empty() && sticky(dev.error())) lost_when = "the whole step was replayed before a row";
    dev.clear_error();
  }

  void release_step() {
    if (step_exec != nullptr) api.GraphExecDestroy(step_exec);
    step_exec = nullptr;
  }

  // A group's time: 8 copies, then as many as make ~0.2 ms (at most 256: the launch overhead
  // shared out); the graph for the energy trials is built for the rows measured (measure_row).
  void time_group(Work& w) {
    if (from_earlier(w)) return;
    if (!lost_when.empty()) {
      w.row.status = "not_measured";
      w.row.reason = lost();
      return;
    }
    log.start(w.row.group.id, "time");
    restore();
    Copies probe_copies;
    if (std::string e = build_copies(api, memory, w.members, 8, probe_copies); !e.empty()) return fail(w, e);
    const double ms8 = time_launch(dev, probe_copies.exec, 1);
    if (!dev.error().empty()) return fail(w, dev.error());
    const std::size_t n_time = std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(0.2 / std::max(ms8 / 8, 1e-6) - 1e-6)), 8, 256);
    double ms = ms8;
    if (n_time != 8) {
      Copies timing;
      if (std::string e = build_copies(api, memory, w.members, n_time, timing); !e.empty()) return fail(w, e);
      ms = time_launch(dev, timing.exec, 1);
      if (!dev.error().empty()) return fail(w, dev.error());
    }
    w.row.time_ns = ms * 1e6 / static_cast<double>(n_time);
    w.row.status = "timed";
  }

  // A timed group's energy: ~graph_ms of copies in paced trials (measure()).
  void measure_row(Work& w) {
    log.start(w.row.group.id, "measure");
    restore();
    w.row.copies = std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(o.graph_ms * 1e6 / std::max(w.row.time_ns, 1.0) - 1e-6)), 1, o.max_copies);
    w.copies = std::make_unique<Copies>();
    if (std::string e = build_copies(api, memory, w.members, w.row.copies, *w.copies); !e.empty()) {
      w.copies.reset();
      return fail(w, e);
    }
    dev.use(w.copies->exec);
    w.row.temperature_c = temperature();
    const double graph_ms = std::max(w.row.time_ns * static_cast<double>(w.row.copies) / 1e6, 1e-3);
    Measured m = measure(dev, probe, o, graph_ms, static_cast<double>(w.row.copies), rules);
    w.copies.reset();
    if (!m.error.empty()) return fail(w, m.error);
    if (m.round.energy_j.size() < 2) {
      w.row.reason = "fewer than two trials had power samples: time only";
      return report(w);
    }
    const Summary t = stat(m.round.time_ns), p = stat(m.round.power_w), e = stat(m.round.energy_j);
    ExactRow& r = w.row;
    r.status = "measured";
    r.time_ns = t.mean;
    r.time_half_width_ns = t.ci95_half_width;
    r.power_w = p.mean;
    r.power_half_width_w = p.ci95_half_width;
    r.energy_j = e.mean;
    r.energy_half_width_j = e.ci95_half_width;
    r.short_trials_ci = m.first_ci;
    r.trial_s = m.round.seconds;
    r.trial_power_w = m.round.power_w;
    r.trial_time_ns = m.round.time_ns;
    report(w);
  }

  // Longest (count × time) first, until `coverage` of the node time or `max_rows`.
  void measure_rows(std::vector<Work>& work, const std::vector<std::size_t>& order) {
    double total = 0, covered = 0;
    for (std::size_t i : order) total += work[i].node_time();
    std::size_t measured_rows = 0;
    for (std::size_t i : order) {
      Work& w = work[i];
      if (w.reported && w.row.status == "measured") {  // measured by an earlier process: counts as measured here
        covered += w.node_time();
        ++measured_rows;
      }
      if (w.row.status != "timed" || w.reported) continue;
      if (!lost_when.empty()) {
        w.row.status = "not_measured";
        w.row.reason = lost();
        continue;
      }
      if (measured_rows >= o.max_rows || (total > 0 && covered >= o.coverage * total)) break;
      covered += w.node_time();
      ++measured_rows;
      measure_row(w);
    }
    // Beyond the coverage: timed, finished (their power is the measured rows' mean, at the end).
    for (Work& w : work) {
      if (w.row.status == "timed" && lost_when.empty()) report(w);
    }
  }
};

}  // namespace

Result<GraphReplay> replay_cuda_graph(std::uintptr_t graph_handle, const GraphReplayOptions& o, replay::Probe* probe_in) {
  std::string err;
  auto api_p = load_driver(o.cuda_library, err);
  if (!api_p) return make_error(Errc::unavailable, err);
  const Api& api = *api_p;
  CUcontext ctx = nullptr;
  if (api.CtxGetCurrent(&ctx) != kSuccess || ctx == nullptr) {
    return make_error(Errc::unavailable, "no current CUDA context on this thread: call from the thread that ran the graph's CUDA work");
  }
  auto listed = list_graph(api, reinterpret_cast<CUgraph>(graph_handle));
  if (!listed) return listed.error();
  GraphListing& L = listed->listing;
  GraphReplay R;
  R.nodes = L.nodes.size();
  R.not_replayed = L.not_replayed;
  R.warnings = L.warnings;
  R.mem_alloc_nodes = L.mem_alloc_nodes;
  R.mem_free_nodes = L.mem_free_nodes;
  R.mem_alloc_bytes = L.mem_alloc_bytes;
  std::string cuda_uuid;  // "GPU-…", as NVML names the same board
  {
    CUdevice dev = 0;
    char name[256] = {0};
    CudaUuid u{};
    if (api.CtxGetDevice(&dev) == kSuccess && api.DeviceGetName != nullptr && api.DeviceGetName(name, sizeof name, dev) == kSuccess) R.gpu = name;
    if (api.CtxGetDevice(&dev) == kSuccess && api.DeviceGetUuid != nullptr && api.DeviceGetUuid(&u, dev) == kSuccess) {
      cuda_uuid = gpu_uuid_text(u.bytes);
    }
  }
  std::unique_ptr<OwnSensorProbe> own;
  if (probe_in == nullptr) {
    GpuSelection sel;
    sel.backend = o.sensor;
    apply_gpu_environment(sel);  // CUDA_VISIBLE_DEVICES and $JOULEPROF_NVML_LIB, as every command reads them
    CUdevice dev = 0;
    api.CtxGetDevice(&dev);
    std::string warning;
    auto p = OwnSensorProbe::open(sel, static_cast<std::size_t>(std::max(dev, 0)), cuda_uuid, warning);
    if (!p) return p.error();
    if (!warning.empty()) R.warnings.push_back(warning);
    own = std::move(*p);
    if (R.gpu.empty()) R.gpu = own->sensor().info().name;
    R.gpu_uuid = own->sensor().info().uuid;
  }
  replay::Probe& probe = probe_in != nullptr ? *probe_in : *own;
  detail::ProgressLog log;
  if (std::string e = log.open(o.progress_path); !e.empty()) return make_error(Errc::io, e);
  GraphDevice dev(api);
  if (std::string e = dev.open(); !e.empty()) return make_error(Errc::unavailable, e);
  RealBuffers buffers(api, listed->memory, dev.stream(), R);
  Replayer rp{api, listed->memory, o, dev, probe, {}, [&]() -> double {
                if (!own || !own->sensor().supports(Metric::temperature_c)) return -1;
                auto t = own->sensor().read(Metric::temperature_c);
                return t ? *t : -1;
              },
              R, log, ""};
  probe.drain();
  {
    const double t0 = probe.now();
    rp.rules.update_s = replay::counter_update_period(probe, 0.5);
    probe.drain();
    R.idle_w = probe.mean_power(t0 + 0.2, probe.now()).first;
  }
  // Rows off: no group is timed or measured alone; the prediction is the whole step's only.
  std::vector<Work> work(o.rows ? L.groups.size() : 0);
  {
    std::vector<ExactRow> listing(work.size());
    for (std::size_t g = 0; g < work.size(); ++g) {
      work[g].row.group = L.groups[g];
      for (std::size_t i : listed->members[g]) work[g].members.push_back(&listed->raw[i]);
      listing[g] = {L.groups[g], "not_measured", "not reached", 0, 0, 0, 0, 0, 0, 0, -1, 0, -1, {}, {}};
    }
    log.listing(R, listing);
  }
  rp.measure_step(reinterpret_cast<CUgraph>(graph_handle));
  if (!dev.error().empty() && sticky(dev.error())) {
    rp.release_step();
    return make_error(Errc::io, "the captured graph itself failed on replay: " + dev.error() +
                                    " (replayed back to back, a step must be the same step each time: state it advances, such as"
                                    " transformers' StaticCache write position, must be reset inside the step; docs/replay.md)");
  }
  dev.clear_error();
  if (!o.rows) R.warnings.push_back("rows off: the whole step only, no node replayed alone");
  for (Work& w : work) rp.time_group(w);
  std::vector<std::size_t> order(work.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return work[a].node_time() > work[b].node_time(); });
  rp.measure_rows(work, order);
  rp.release_step();
  // In-process (no progress file: no parent restarts us), the caller's own CUDA work fails from
  // here; say so once, with the way past it.
  if (!rp.lost_when.empty() && o.progress_path.empty()) {
    R.warnings.push_back(std::string(kContextLostWarning) + " (" + rp.lost_when +
                         "): CUDA calls in this process fail from here; replay the step in a child process to get past it "
                         "(jouleprof.replay.replay_step_isolated; C++: GraphReplayOptions::progress_path and a restart, docs/replay.md)");
  }
  for (Work& w : work) w.copies.reset();
  dev.release();
  std::vector<ExactRow> rows;
  rows.reserve(work.size());
  for (std::size_t i : order) rows.push_back(std::move(work[i].row));
  detail::assemble_prediction(std::move(rows), R);
  return R;
}

namespace {

// The whole step against Σ its nodes alone: (energy, time) factors, when both were measured.
std::optional<std::pair<double, double>> context_factors(const GraphReplay& r) {
  if (!r.step.measured || r.predicted_energy_j <= 0 || r.predicted_time_s <= 0) return std::nullopt;
  return std::make_pair(r.step.energy_j / r.predicted_energy_j, r.step.time_ns * 1e-9 / r.predicted_time_s);
}

}  // namespace

std::string graph_replay_json(const GraphReplay& r) {
  json rows = json::array();
  for (const ExactRow& x : r.rows) rows.push_back(detail::exact_row_json(x));
  const json step = detail::step_json(r.step);
  json j = {{"schema", "jouleprof.exact_replay"},
            {"schema_version", 1},
            {"gpu", r.gpu},
            {"gpu_uuid", r.gpu_uuid},
            {"idle_power_w", r.idle_w},
            {"nodes", r.nodes},
            {"not_replayed", r.not_replayed},
            {"stream_ordered_allocations",
             {{"mem_alloc_nodes", r.mem_alloc_nodes}, {"mem_free_nodes", r.mem_free_nodes}, {"bytes", r.mem_alloc_bytes}, {"backed", r.mem_alloc_backed}}},
            {"rows", rows},
            {"step", step},
            {"prediction",
             {{"time_s", r.predicted_time_s},
              {"energy_j", r.predicted_energy_j},
              {"energy_half_width_j", r.predicted_energy_half_width_j},
              {"measured_share", r.measured_share},
              {"timed_share", r.timed_share},
              {"failed_node_share", r.failed_share}}},
            {"warnings", r.warnings}};
  // The step replayed whole against its nodes replayed alone: a kernel draws another power among
  // its neighbours than alone (docs/validation/replay.md). Rows' shares × the step's figures is
  // the prediction when the whole step replayed (docs/replay.md, "Exact replay").
  if (auto c = context_factors(r)) j["prediction"]["context"] = {{"energy_factor", c->first}, {"time_factor", c->second}};
  return j.dump(1) + "\n";
}

std::string graph_replay_text(const GraphReplay& r, std::size_t top) {
  std::string out = fmt::format("exact replay on {}: {} nodes, {} rows; idle {:.1f} W\n", r.gpu, r.nodes, r.rows.size(), r.idle_w);
  out += fmt::format("one step, Σ rows: {:.4f} ms, {:.4f} J ± {:.4f} (measured rows {:.1f}% of the energy, timed {:.1f}%)\n",
                     r.predicted_time_s * 1e3, r.predicted_energy_j, r.predicted_energy_half_width_j, 100 * r.measured_share, 100 * r.timed_share);
  if (r.step.measured) {
    out += fmt::format("the whole graph replayed: {:.4f} ms, {:.4f} J ± {:.4f} at {:.1f} W\n", r.step.time_ns * 1e-6, r.step.energy_j,
                       r.step.energy_half_width_j, r.step.power_w);
    if (auto c = context_factors(r)) {
      out += fmt::format("context: the whole step {:+.1f}% energy, {:+.1f}% time against its nodes alone (the prediction uses the step)\n",
                         100 * (c->first - 1), 100 * (c->second - 1));
    }
  }
  out += fmt::format("{:<12} {:>6} {:>10} {:>8} {:>10} {:>6}  {}\n", "status", "count", "us/call", "W", "J", "±%", "node");
  for (std::size_t i = 0; i < r.rows.size() && i < top; ++i) {
    const ExactRow& x = r.rows[i];
    out += fmt::format("{:<12} {:>6} {:>10.2f} {:>8.1f} {:>10.4f} {:>6}  {}\n", x.status, x.group.count, x.time_ns * 1e-3, x.power_w,
                       x.energy_j * static_cast<double>(x.group.count),
                       x.status == "measured" && x.energy_j > 0 ? fmt::format("{:.1f}", 100 * x.energy_half_width_j / x.energy_j) : "-",
                       short_name(x.group.name));
  }
  for (const std::string& w : r.warnings) out += "warning: " + w + "\n";
  return out;
}

}  // namespace jouleprof
