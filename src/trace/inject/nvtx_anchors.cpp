#include "nvtx_anchors.hpp"

#include <algorithm>
#include <mutex>

namespace jouleprof::inject {
namespace {

AnchorFn g_anchor = nullptr;

// CUPTI's handler for each wrapped entry, per module (the same functions in every NVTX instance).
NvtxFunctionPointer g_core[NVTX_CBID_CORE_SIZE] = {};
NvtxFunctionPointer g_core2[NVTX_CBID_CORE2_SIZE] = {};

template <class F>
F original(NvtxFunctionPointer* table, int cbid) {
  return reinterpret_cast<F>(table[cbid]);
}

void anchor() {
  if (g_anchor != nullptr) g_anchor();
}

// One wrapper per entry: CUPTI's handler (the MARKER record, timestamped), then the anchor, so
// the anchor's correlation id falls after the range opened (push/start) or closed (pop/end).
int NVTX_API push_ex(const nvtxEventAttributes_t* a) {
  const int r = original<int(NVTX_API*)(const nvtxEventAttributes_t*)>(g_core, NVTX_CBID_CORE_RangePushEx)(a);
  anchor();
  return r;
}
int NVTX_API push_a(const char* m) {
  const int r = original<int(NVTX_API*)(const char*)>(g_core, NVTX_CBID_CORE_RangePushA)(m);
  anchor();
  return r;
}
int NVTX_API push_w(const wchar_t* m) {
  const int r = original<int(NVTX_API*)(const wchar_t*)>(g_core, NVTX_CBID_CORE_RangePushW)(m);
  anchor();
  return r;
}
int NVTX_API pop() {
  const int r = original<int(NVTX_API*)()>(g_core, NVTX_CBID_CORE_RangePop)();
  anchor();
  return r;
}
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  const nvtxRangeId_t r = original<nvtxRangeId_t(NVTX_API*)(const nvtxEventAttributes_t*)>(g_core, NVTX_CBID_CORE_RangeStartEx)(a);
  anchor();
  return r;
}
nvtxRangeId_t NVTX_API start_a(const char* m) {
  const nvtxRangeId_t r = original<nvtxRangeId_t(NVTX_API*)(const char*)>(g_core, NVTX_CBID_CORE_RangeStartA)(m);
  anchor();
  return r;
}
nvtxRangeId_t NVTX_API start_w(const wchar_t* m) {
  const nvtxRangeId_t r = original<nvtxRangeId_t(NVTX_API*)(const wchar_t*)>(g_core, NVTX_CBID_CORE_RangeStartW)(m);
  anchor();
  return r;
}
void NVTX_API end(nvtxRangeId_t id) {
  original<void(NVTX_API*)(nvtxRangeId_t)>(g_core, NVTX_CBID_CORE_RangeEnd)(id);
  anchor();
}
int NVTX_API domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  const int r =
      original<int(NVTX_API*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*)>(g_core2, NVTX_CBID_CORE2_DomainRangePushEx)(d, a);
  anchor();
  return r;
}
int NVTX_API domain_pop(nvtxDomainHandle_t d) {
  const int r = original<int(NVTX_API*)(nvtxDomainHandle_t)>(g_core2, NVTX_CBID_CORE2_DomainRangePop)(d);
  anchor();
  return r;
}
nvtxRangeId_t NVTX_API domain_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  const nvtxRangeId_t r = original<nvtxRangeId_t(NVTX_API*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*)>(
      g_core2, NVTX_CBID_CORE2_DomainRangeStartEx)(d, a);
  anchor();
  return r;
}
void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  original<void(NVTX_API*)(nvtxDomainHandle_t, nvtxRangeId_t)>(g_core2, NVTX_CBID_CORE2_DomainRangeEnd)(d, id);
  anchor();
}

struct Entry {
  int cbid;
  NvtxFunctionPointer wrapper;
};
const Entry kCore[] = {
    {NVTX_CBID_CORE_RangePushEx, reinterpret_cast<NvtxFunctionPointer>(push_ex)},
    {NVTX_CBID_CORE_RangePushA, reinterpret_cast<NvtxFunctionPointer>(push_a)},
    {NVTX_CBID_CORE_RangePushW, reinterpret_cast<NvtxFunctionPointer>(push_w)},
    {NVTX_CBID_CORE_RangePop, reinterpret_cast<NvtxFunctionPointer>(pop)},
    {NVTX_CBID_CORE_RangeStartEx, reinterpret_cast<NvtxFunctionPointer>(start_ex)},
    {NVTX_CBID_CORE_RangeStartA, reinterpret_cast<NvtxFunctionPointer>(start_a)},
    {NVTX_CBID_CORE_RangeStartW, reinterpret_cast<NvtxFunctionPointer>(start_w)},
    {NVTX_CBID_CORE_RangeEnd, reinterpret_cast<NvtxFunctionPointer>(end)},
};
const Entry kCore2[] = {
    {NVTX_CBID_CORE2_DomainRangePushEx, reinterpret_cast<NvtxFunctionPointer>(domain_push)},
    {NVTX_CBID_CORE2_DomainRangePop, reinterpret_cast<NvtxFunctionPointer>(domain_pop)},
    {NVTX_CBID_CORE2_DomainRangeStartEx, reinterpret_cast<NvtxFunctionPointer>(domain_start)},
    {NVTX_CBID_CORE2_DomainRangeEnd, reinterpret_cast<NvtxFunctionPointer>(domain_end)},
};

struct Module {
  NvtxCallbackModule id;
  const Entry* entries;
  std::size_t count;
  NvtxFunctionPointer* originals;
  const char* name;
};

std::mutex g_lock;  // NVTX instances may initialise on different threads

}  // namespace

int wrap_nvtx_ranges(NvtxGetExportTableFunc_t get, int (*install)(NvtxGetExportTableFunc_t), AnchorFn anchor_fn,
                     std::string* note) {
  const auto* callbacks = get != nullptr ? static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS)) : nullptr;
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return install != nullptr ? install(get) : 0;
  const Module modules[] = {{NVTX_CB_MODULE_CORE, kCore, std::size(kCore), g_core, "core"},
                            {NVTX_CB_MODULE_CORE2, kCore2, std::size(kCore2), g_core2, "domain"}};
  // The entries before CUPTI installs its handlers: NVTX's initialisation stubs, never wrapped.
  struct Slots {
    NvtxFunctionTable table = nullptr;
    unsigned size = 0;
    NvtxFunctionPointer before[std::max<int>(NVTX_CBID_CORE_SIZE, NVTX_CBID_CORE2_SIZE)] = {};
  } slots[2];
  for (std::size_t m = 0; m < 2; ++m) {
    Slots& s = slots[m];
    if (callbacks->GetModuleFunctionTable(modules[m].id, &s.table, &s.size) == 0 || s.table == nullptr) s.table = nullptr;
    for (std::size_t e = 0; s.table != nullptr && e < modules[m].count; ++e) {
      const auto cbid = static_cast<unsigned>(modules[m].entries[e].cbid);
      if (cbid < s.size && s.table[cbid] != nullptr) s.before[cbid] = *s.table[cbid];
    }
  }
  const int rc = install != nullptr ? install(get) : 0;
  if (rc == 0) return rc;
  std::lock_guard<std::mutex> lock(g_lock);
  g_anchor = anchor_fn;
  for (std::size_t m = 0; m < 2; ++m) {
    const Slots& s = slots[m];
    for (std::size_t e = 0; s.table != nullptr && e < modules[m].count; ++e) {
      const auto cbid = static_cast<unsigned>(modules[m].entries[e].cbid);
      if (cbid >= s.size || s.table[cbid] == nullptr) continue;
      NvtxFunctionPointer& slot = *s.table[cbid];
      if (slot == nullptr || slot == s.before[cbid] || slot == modules[m].entries[e].wrapper) continue;
      NvtxFunctionPointer& saved = modules[m].originals[cbid];
      if (saved != nullptr && saved != slot) {
        if (note != nullptr && note->empty()) {
          *note = std::string("an NVTX instance's ") + modules[m].name +
                  " range handlers differ from the first instance's; its ranges are not anchored";
        }
        continue;
      }
      saved = slot;
      slot = modules[m].entries[e].wrapper;
    }
  }
  return rc;
}

}  // namespace jouleprof::inject
