// The NVTX injection's range anchors, against a stand-in for NVTX's export table and for CUPTI's
// NVTX handlers: CUPTI's handler runs first, then the anchor; entries CUPTI did not install are
// left as they were; a second NVTX instance is wrapped the same way.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nvtx_anchors.hpp"

using namespace jouleprof::inject;

namespace {

std::vector<std::string> g_calls;

int NVTX_API stub_push_a(const char*) {
  g_calls.push_back("nvtx-init-stub");
  return 0;
}
int NVTX_API cupti_push_a(const char* m) {
  g_calls.push_back(std::string("cupti push ") + m);
  return 1;
}
int NVTX_API cupti_pop() {
  g_calls.push_back("cupti pop");
  return 0;
}
void NVTX_API cupti_domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) { g_calls.push_back("cupti domain end " + std::to_string(id)); }
void anchor() { g_calls.push_back("anchor"); }

// One NVTX instance: its core and domain function tables (pointers to its slots).
struct Instance {
  NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE] = {};
  NvtxFunctionPointer core2[NVTX_CBID_CORE2_SIZE] = {};
  NvtxFunctionPointer* core_table[NVTX_CBID_CORE_SIZE] = {};
  NvtxFunctionPointer* core2_table[NVTX_CBID_CORE2_SIZE] = {};
  Instance() {
    for (int i = 0; i < NVTX_CBID_CORE_SIZE; ++i) core_table[i] = &core[i];
    for (int i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) core2_table[i] = &core2[i];
    core[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(stub_push_a);
    core[NVTX_CBID_CORE_RangePushW] = reinterpret_cast<NvtxFunctionPointer>(stub_push_a);  // CUPTI leaves it
  }
};
Instance* g_instance = nullptr;

int NVTX_API get_module(NvtxCallbackModule module, NvtxFunctionTable* table, unsigned* size) {
  if (module == NVTX_CB_MODULE_CORE) {
    *table = g_instance->core_table;
    *size = NVTX_CBID_CORE_SIZE;
    return 1;
  }
  if (module == NVTX_CB_MODULE_CORE2) {
    *table = g_instance->core2_table;
    *size = NVTX_CBID_CORE2_SIZE;
    return 1;
  }
  return 0;
}
const NvtxExportTableCallbacks kCallbacks = {sizeof(NvtxExportTableCallbacks), get_module};
const void* NVTX_API get_export_table(uint32_t id) { return id == NVTX_ETID_CALLBACKS ? &kCallbacks : nullptr; }

// Stand-in for CUPTI's InitializeInjectionNvtx2: installs its handlers in the instance's slots.
int NVTX_API cupti_install(NvtxGetExportTableFunc_t) {
  g_instance->core[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(cupti_push_a);
  g_instance->core[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(cupti_pop);
  g_instance->core2[NVTX_CBID_CORE2_DomainRangeEnd] = reinterpret_cast<NvtxFunctionPointer>(cupti_domain_end);
  return 1;
}
int NVTX_API cupti_fails(NvtxGetExportTableFunc_t) { return 0; }

}  // namespace

TEST(NvtxAnchors, CuptiHandlerThenAnchorInEveryInstance) {
  for (int round = 0; round < 2; ++round) {  // a program and a library, each with its own NVTX copy
    Instance inst;
    g_instance = &inst;
    std::string note;
    ASSERT_EQ(wrap_nvtx_ranges(get_export_table, cupti_install, anchor, &note), 1);
    EXPECT_EQ(note, "");
    g_calls.clear();
    reinterpret_cast<int(NVTX_API*)(const char*)>(inst.core[NVTX_CBID_CORE_RangePushA])("layer");
    reinterpret_cast<int(NVTX_API*)()>(inst.core[NVTX_CBID_CORE_RangePop])();
    reinterpret_cast<void(NVTX_API*)(nvtxDomainHandle_t, nvtxRangeId_t)>(inst.core2[NVTX_CBID_CORE2_DomainRangeEnd])(nullptr, 9);
    EXPECT_EQ(g_calls, (std::vector<std::string>{"cupti push layer", "anchor", "cupti pop", "anchor", "cupti domain end 9", "anchor"}));
    // Not installed by CUPTI: NVTX's own stub and empty slots stay as they were.
    EXPECT_EQ(inst.core[NVTX_CBID_CORE_RangePushW], reinterpret_cast<NvtxFunctionPointer>(stub_push_a));
    EXPECT_EQ(inst.core[NVTX_CBID_CORE_RangeStartA], nullptr);
    EXPECT_EQ(inst.core[NVTX_CBID_CORE_MarkA], nullptr);
  }
}

TEST(NvtxAnchors, FailedCuptiInitialisationLeavesTheTablesAlone) {
  Instance inst;
  g_instance = &inst;
  std::string note;
  EXPECT_EQ(wrap_nvtx_ranges(get_export_table, cupti_fails, anchor, &note), 0);
  EXPECT_EQ(inst.core[NVTX_CBID_CORE_RangePushA], reinterpret_cast<NvtxFunctionPointer>(stub_push_a));
  EXPECT_EQ(inst.core[NVTX_CBID_CORE_RangePop], nullptr);
}
