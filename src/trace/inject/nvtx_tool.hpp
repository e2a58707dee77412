// The NVTX tool: the injection library is also the process's NVTX injection
// (NVTX_INJECTION64_PATH). It records range push/pop, start/end and marks itself — into a buffer
// per thread, written to the trace file in batches — and after each range event calls one cheap
// driver function whose API record alone is enabled: that record's correlation id is the range's
// anchor in the process's sequence of launches, so kernels are tied to their NVTX range without a
// record per launch. CUPTI's own NVTX recording cost ~10 µs per range event and the per-launch
// records ~+13% on a launch-bound program (docs/validation/trace.md).
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace jouleprof::inject {

class TraceWriter;

struct NvtxHooks {
  uint64_t (*now_ns)() = nullptr;     ///< the timestamp of an event (CUPTI's clock)
  uint64_t (*thread_id)() = nullptr;  ///< the id CUPTI gives the calling thread in its API records
  void (*anchor)() = nullptr;         ///< called after each range event (null: no anchors)
  /// Takes a full per-thread batch of events (a thread writes its own once it holds 1024).
  void (*flush)() = nullptr;
  /// While false, no anchors (sampled mode's off phases record no kernel to tie); null: always.
  const std::atomic<bool>* anchoring = nullptr;
  /// Switches the anchor call's record for the calling thread: called from the program's own
  /// thread at its first range event after `anchoring` changed (CUPTI keeps the switch per thread;
  /// an enabled record costs on the thread's other driver calls too). Null: never switched.
  void (*anchor_record)(bool on) = nullptr;
  /// While false (jouleprof_trace_pause), no range events and no anchors: only each thread's
  /// push/pop nesting is kept, so that a range pushed before the pause still closes; null: always.
  const std::atomic<bool>* recording = nullptr;
};

/// Installs the tool's handlers in the NVTX instance's function tables (`get` is what NVTX passes
/// InitializeInjectionNvtx2). Several instances (a program and each library with its own copy of
/// the NVTX headers) each call it. Returns 1 (NVTX's success) or 0 when `get` has no tables.
int install_nvtx_tool(NvtxGetExportTableFunc_t get, const NvtxHooks& hooks);

/// Writes every thread's pending events as MARKER records, names interned (caller holds
/// w.lock(); w must be open). Events recorded before the file opened are kept until then.
void write_nvtx_events(TraceWriter& w);

/// Forgets pending events (a forked child's copy of the parent's).
void discard_nvtx_events();

}  // namespace jouleprof::inject
