// NVTX range anchors: the injection library is also the process's NVTX injection
// (NVTX_INJECTION64_PATH). It lets CUPTI install its NVTX handlers (which write the MARKER
// records), then wraps the range entries — push/pop, start/end, plain and per domain — so that
// each, after CUPTI's handler, calls one cheap driver function whose API record is enabled alone.
// That record's correlation id marks where the range opened or closed in the process's sequence
// of launches, so kernels are tied to their NVTX range without a record per launch (which cost
// ~+13% on a launch-bound program; docs/validation/trace.md).
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <string>

namespace jouleprof::inject {

using AnchorFn = void (*)();

/// The NVTX instance's initialisation, as NVTX's InitializeInjectionNvtx2 sees it:
/// `install` is CUPTI's InitializeInjectionNvtx2 (called first, with `get`); the range entries it
/// installed are then wrapped to call `anchor` after CUPTI's handler. Entries CUPTI left alone are
/// not touched (they hold NVTX's own initialisation stubs). Several NVTX instances (a program and
/// each library with its own copy of the NVTX headers) each call this; an instance whose CUPTI
/// handlers differ from the first instance's is left unwrapped and `note` says so.
/// Returns what `install` returned (non-zero: success).
int wrap_nvtx_ranges(NvtxGetExportTableFunc_t get, int (*install)(NvtxGetExportTableFunc_t), AnchorFn anchor,
                     std::string* note);

}  // namespace jouleprof::inject
