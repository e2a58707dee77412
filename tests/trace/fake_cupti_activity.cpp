// A fake libcupti with the activity API the injection library uses (src/trace/inject/
// cupti_entry_points.def), for the pause/resume end-to-end test: kinds and driver-API records are
// enabled and disabled as asked, a "launch" (fake_cupti_launch, called by the probe program) makes
// one kernel record while CONCURRENT_KERNEL is enabled (a graph launch, fake_cupti_graph_launch,
// one graph-level record or one per node), and a flush hands the queued records to the
// registered buffer callbacks. Its clock is a counter (1 µs a reading), not the host's. It is also
// the driver ($JOULEPROF_CUDA_DRIVER_LIB) for the sampled mode's switch per context: one device
// whose primary context is active, whose kinds are switched apart from the global ones.
#include <cupti.h>

#include <cstring>
#include <mutex>
#include <set>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

std::mutex g_mu;
CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
std::set<int> g_kinds;        // enabled activity kinds
std::set<int> g_context_kinds;  // enabled for the one context (cuptiActivityEnableContext)
int g_context_switches = 0;     // per-context enables and disables of CONCURRENT_KERNEL
int g_global_switches = 0;      // global ones
bool g_kernels_ever_global = false;
int g_context_token = 0;        // the primary context's handle points here
std::set<uint32_t> g_driver;  // driver API callback ids whose records are enabled
int g_anchor_calls = 0;       // cuDriverGetVersion calls: the NVTX handlers' anchors
std::vector<CUpti_ActivityKernel10> g_queued;
uint64_t g_clock = 1'000'000'000'000;
uint32_t g_correlation = 0;

// One kernel record of the current correlation, 1 µs long (g_mu held).
void queue_kernel(const char* name, uint32_t graph_id) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = g_clock += 1000;
  k.end = g_clock += 1000;
  k.correlationId = g_correlation;
  k.graphId = graph_id;
  k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
  k.name = name;  // a string literal of the caller: lives as long as the process
  g_queued.push_back(k);
}

}  // namespace

FAKE_EXPORT CUptiResult cuptiGetVersion(uint32_t* v) {
  *v = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* t) {
  std::lock_guard<std::mutex> lock(g_mu);
  *t = g_clock += 1000;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                       CUpti_BuffersCallbackCompleteFunc complete) {
  g_request = request;
  g_complete = complete;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_kinds.insert(static_cast<int>(k));
  g_kernels_ever_global = g_kernels_ever_global || k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  g_global_switches += k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? 1 : 0;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind k) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_global_switches += k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? 1 : 0;
  g_kinds.erase(static_cast<int>(k));
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t on) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (on != 0) {
    g_driver.insert(cbid);
  } else {
    g_driver.erase(cbid);
  }
  return CUPTI_SUCCESS;
}

// The queued records, one buffer per flush, to the registered callbacks.
FAKE_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t) {
  std::vector<CUpti_ActivityKernel10> records;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    records.swap(g_queued);
  }
  if (g_request == nullptr || g_complete == nullptr) return CUPTI_SUCCESS;
  uint8_t* buffer = nullptr;
  size_t size = 0, max_records = 0;
  g_request(&buffer, &size, &max_records);
  const size_t bytes = records.size() * sizeof(CUpti_ActivityKernel10);
  if (buffer == nullptr || size < bytes) return CUPTI_ERROR_UNKNOWN;
  if (bytes > 0) std::memcpy(buffer, records.data(), bytes);
  g_complete(nullptr, 0, buffer, size, bytes);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid,
                                                   CUpti_Activity** record) {
  uint8_t* next = *record == nullptr
                      ? buffer
                      : reinterpret_cast<uint8_t*>(*record) + sizeof(CUpti_ActivityKernel10);
  if (next + sizeof(CUpti_ActivityKernel10) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType) {
  return CUPTI_SUCCESS;
}

namespace {
// A kind switched for the one context (g_mu held).
CUptiResult switch_context_kind(CUcontext ctx, CUpti_ActivityKind k, bool on) {
  if (ctx != reinterpret_cast<CUcontext>(&g_context_token)) return CUPTI_ERROR_INVALID_CONTEXT;
  if (on) {
    g_context_kinds.insert(static_cast<int>(k));
  } else {
    g_context_kinds.erase(static_cast<int>(k));
  }
  g_context_switches += k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? 1 : 0;
  return CUPTI_SUCCESS;
}
}  // namespace

FAKE_EXPORT CUptiResult cuptiActivityEnableContext(CUcontext ctx, CUpti_ActivityKind k) {
  std::lock_guard<std::mutex> lock(g_mu);
  return switch_context_kind(ctx, k, true);
}

FAKE_EXPORT CUptiResult cuptiActivityDisableContext(CUcontext ctx, CUpti_ActivityKind k) {
  std::lock_guard<std::mutex> lock(g_mu);
  return switch_context_kind(ctx, k, false);
}

// The driver's primary-context calls.
FAKE_EXPORT CUresult cuDeviceGetCount(int* n) {
  *n = 1;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  *dev = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice, unsigned* flags, int* active) {
  *flags = 0;
  *active = 1;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice) {
  *ctx = reinterpret_cast<CUcontext>(&g_context_token);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice) { return CUDA_SUCCESS; }

/// A kernel launch: recorded only while CONCURRENT_KERNEL is enabled (globally or for the context).
FAKE_EXPORT void fake_cupti_launch(const char* name) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_correlation;
  if (g_kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 0 && g_context_kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 0) return;
  queue_kernel(name, 0);
}

/// Kernel records switched so far (enables and disables), per context and globally, and whether
/// they were ever enabled globally.
FAKE_EXPORT int fake_cupti_context_switches() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_context_switches;
}
FAKE_EXPORT int fake_cupti_global_switches() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_global_switches;
}
FAKE_EXPORT int fake_cupti_kernels_ever_global() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_kernels_ever_global ? 1 : 0;
}

/// A CUDA graph launch of `nodes` kernels named `name`: one graph-level record while GRAPH_TRACE is
/// enabled (CUPTI then records no node of a graph, seen on an H200), else one kernel record per
/// node while CONCURRENT_KERNEL is. A record lies in a kernel record's slot of the buffer.
FAKE_EXPORT void fake_cupti_graph_launch(uint32_t graph_id, int nodes, const char* name) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_correlation;
  const uint64_t start = g_clock += 1000;
  if (g_kinds.count(CUPTI_ACTIVITY_KIND_GRAPH_TRACE) != 0) {
    CUpti_ActivityGraphTrace2 g{};
    g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
    g.start = start;
    g.end = g_clock += 1000 * static_cast<uint64_t>(nodes);
    g.correlationId = g_correlation;
    g.graphId = graph_id;
    CUpti_ActivityKernel10 slot{};
    static_assert(sizeof(g) <= sizeof(slot));
    std::memcpy(&slot, &g, sizeof(g));
    g_queued.push_back(slot);
    return;
  }
  if (g_kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 0) return;
  for (int i = 0; i < nodes; ++i) queue_kernel(name, graph_id);
}

/// Whether an activity kind is enabled now.
FAKE_EXPORT int fake_cupti_kind_on(int kind) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_kinds.count(kind) != 0 ? 1 : 0;
}

/// Whether kernel records and the anchor's driver-API records are enabled now.
FAKE_EXPORT int fake_cupti_kernels_on() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != 0 ? 1 : 0;
}
/// The driver's cuDriverGetVersion, the anchor call of the injection's NVTX handlers: counted.
FAKE_EXPORT CUresult cuDriverGetVersion(int* v) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_anchor_calls;
  *v = 13000;
  return CUDA_SUCCESS;
}
FAKE_EXPORT int fake_cupti_anchor_calls() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_anchor_calls;
}
FAKE_EXPORT int fake_cupti_anchor_on() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_driver.count(CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion) != 0 ? 1 : 0;
}
