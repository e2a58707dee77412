// A stand-in for one NVTX instance: the function tables NVTX hands an injected tool through its
// export table (NvtxGetExportTableFunc_t), so the injection library's NVTX tool can be installed
// and called without libnvToolsExt (tests/trace/test_nvtx_tool.cpp, bench/nvtx/).
#pragma once

#include <nvtx3/nvToolsExt.h>

namespace jouleprof::fake_nvtx {

struct Instance {
  NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE] = {};
  NvtxFunctionPointer core2[NVTX_CBID_CORE2_SIZE] = {};
  NvtxFunctionPointer* core_table[NVTX_CBID_CORE_SIZE] = {};
  NvtxFunctionPointer* core2_table[NVTX_CBID_CORE2_SIZE] = {};
  Instance() {
    for (int i = 0; i < NVTX_CBID_CORE_SIZE; ++i) core_table[i] = &core[i];
    for (int i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) core2_table[i] = &core2[i];
  }
  /// The handler a tool installed in a core slot (NVTX_CBID_CORE_*), as type F.
  template <class F>
  F c(int cbid) const {
    return reinterpret_cast<F>(core[cbid]);
  }
  /// The same for a domain slot (NVTX_CBID_CORE2_*).
  template <class F>
  F d(int cbid) const {
    return reinterpret_cast<F>(core2[cbid]);
  }
};

/// The instance `export_table` hands out (set before installing a tool).
inline Instance* current = nullptr;

inline int NVTX_API module_table(NvtxCallbackModule module, NvtxFunctionTable* table, unsigned* size) {
  if (module == NVTX_CB_MODULE_CORE) {
    *table = current->core_table;
    *size = NVTX_CBID_CORE_SIZE;
    return 1;
  }
  if (module == NVTX_CB_MODULE_CORE2) {
    *table = current->core2_table;
    *size = NVTX_CBID_CORE2_SIZE;
    return 1;
  }
  return 0;
}
inline const NvtxExportTableCallbacks kCallbacks = {sizeof(NvtxExportTableCallbacks), module_table};
/// What NVTX passes InitializeInjectionNvtx2: the export table of `current`.
inline const void* NVTX_API export_table(uint32_t id) { return id == NVTX_ETID_CALLBACKS ? &kCallbacks : nullptr; }

}  // namespace jouleprof::fake_nvtx
