// The injection library's NVTX tool against a stand-in for NVTX's export table: its handlers
// fill the instance's tables, record push/pop, start/end, marks, domains and registered strings
// with an anchor after each range event, and their records read back as nested ranges whose
// anchors place kernels without launch records.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "jouleprof/trace/trace.hpp"
#include "duty_cycle.hpp"
#include "nvtx/nvtx_instance.hpp"
#include "nvtx_tool.hpp"
#include "writer.hpp"

using namespace jouleprof;
namespace fs = std::filesystem;

namespace {

using fake_nvtx::Instance;
using fake_nvtx::export_table;
const void* NVTX_API no_tables(uint32_t) { return nullptr; }

// A clock and a correlation-id sequence: each anchor is an API record at the next tick.
uint64_t g_now = 0;
uint32_t g_correlation = 0;
std::vector<ProcessTrace::Launch> g_anchors;
uint64_t now() { return g_now += 10; }
uint64_t thread_id() { return 77; }
void anchor() { g_anchors.push_back({++g_correlation, 77, static_cast<int64_t>(now()), true}); }
int g_flushes = 0;
void flush() { ++g_flushes; }

// The recorded events in a trace file of their own (pid), read back; `twice`: written a second time
// (nothing more may come).
Result<TraceData> written_and_read(const std::string& dir, int pid, bool twice = false) {
  inject::TraceWriter w;
  if (!w.open(dir, pid, 1, 0, 0)) return make_error(Errc::io, w.error());
  {
    std::lock_guard<std::mutex> lock(w.lock());
    inject::write_nvtx_events(w);
    if (twice) inject::write_nvtx_events(w);
    w.commit();
    w.close(0);
  }
  return read_trace_dir(dir);
}

// The kernels of these correlation ids placed by the recorded anchors.
void place_kernels(TraceData& t, const std::vector<uint32_t>& correlations) {
  t.processes[0].launches = g_anchors;
  for (uint32_t c : correlations) {
    Activity k;
    k.kind = Activity::Kind::kernel;
    k.correlation = c;
    t.activities.push_back(k);
  }
  assign_ranges(t);
}

}  // namespace

TEST(NvtxTool, RecordsRangesWithAnchorsAndTheyPlaceKernels) {
  Instance inst;
  fake_nvtx::current = &inst;
  ASSERT_EQ(inject::install_nvtx_tool(export_table, {now, thread_id, anchor, flush}), 1);
  using PushA = int(NVTX_API*)(const char*);
  using Pop = int(NVTX_API*)();
  using StartA = nvtxRangeId_t(NVTX_API*)(const char*);
  using End = void(NVTX_API*)(nvtxRangeId_t);
  using PushEx = int(NVTX_API*)(const nvtxEventAttributes_t*);
  using MarkA = void(NVTX_API*)(const char*);
  using DomainCreate = nvtxDomainHandle_t(NVTX_API*)(const char*);
  using DomainPush = int(NVTX_API*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
  using DomainPop = int(NVTX_API*)(nvtxDomainHandle_t);
  using Register = nvtxStringHandle_t(NVTX_API*)(nvtxDomainHandle_t, const char*);
  ASSERT_NE(inst.core[NVTX_CBID_CORE_RangePushA], nullptr);
  EXPECT_EQ(inst.core[NVTX_CBID_CORE_NameOsThreadA], nullptr);  // not handled: stays a no-op

  std::vector<uint32_t> kernel_correlations;
  auto launch = [&] { kernel_correlations.push_back(++g_correlation); };
  const nvtxRangeId_t step = inst.c<StartA>(NVTX_CBID_CORE_RangeStartA)("decode");
  inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("model.layers.0");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "mlp";
  inst.c<PushEx>(NVTX_CBID_CORE_RangePushEx)(&a);
  launch();  // decode/model.layers.0/mlp
  inst.c<Pop>(NVTX_CBID_CORE_RangePop)();
  launch();  // decode/model.layers.0
  inst.c<MarkA>(NVTX_CBID_CORE_MarkA)("token");
  const nvtxDomainHandle_t dom = inst.d<DomainCreate>(NVTX_CBID_CORE2_DomainCreateA)("vllm");
  nvtxEventAttributes_t r{};
  r.version = NVTX_VERSION;
  r.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  r.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  r.message.registered = inst.d<Register>(NVTX_CBID_CORE2_DomainRegisterStringA)(dom, "attention");
  inst.d<DomainPush>(NVTX_CBID_CORE2_DomainRangePushEx)(dom, &r);
  launch();  // decode/model.layers.0/attention
  inst.d<DomainPop>(NVTX_CBID_CORE2_DomainRangePop)(dom);
  inst.c<Pop>(NVTX_CBID_CORE_RangePop)();
  inst.c<End>(NVTX_CBID_CORE_RangeEnd)(step);
  launch();  // outside every range
  EXPECT_EQ(g_anchors.size(), 8u);  // 8 range events, the mark has none

  const std::string dir = (fs::temp_directory_path() / ("jp-nvtx-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto t = written_and_read(dir, 4321, true);  // nothing twice
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->processes.size(), 1u);
  std::vector<std::string> ranges, marks;
  for (const Activity& x : t->activities) {
    if (x.kind == Activity::Kind::range) ranges.push_back(x.name + (x.domain.empty() ? "" : "@" + x.domain) + (x.complete ? "" : " open"));
    if (x.kind == Activity::Kind::mark) marks.push_back(x.name);
  }
  EXPECT_EQ(ranges, (std::vector<std::string>{"decode", "model.layers.0", "mlp", "attention@vllm"}));
  EXPECT_EQ(marks, std::vector<std::string>{"token"});

  place_kernels(*t, kernel_correlations);
  std::vector<std::string> paths, phases;
  for (const Activity& x : t->activities) {
    if (x.kind == Activity::Kind::kernel) {
      paths.push_back(x.path);
      phases.push_back(x.phase);
    }
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"model.layers.0/mlp", "model.layers.0", "model.layers.0/attention", ""}));
  EXPECT_EQ(phases, (std::vector<std::string>{"decode", "decode", "decode", ""}));
  EXPECT_EQ(t->range_assignment.method, "anchors");
  fs::remove_all(dir);
}

TEST(NvtxTool, AFullBatchAsksForAFlushAndOtherThreadsKeepTheirOwnBuffers) {
  Instance inst;
  fake_nvtx::current = &inst;
  ASSERT_EQ(inject::install_nvtx_tool(export_table, {now, thread_id, nullptr, flush}), 1);
  using MarkA = void(NVTX_API*)(const char*);
  g_flushes = 0;
  std::thread other([&] {
    for (int i = 0; i < 1500; ++i) inst.c<MarkA>(NVTX_CBID_CORE_MarkA)("tick");
  });
  other.join();
  EXPECT_EQ(g_flushes, 1);  // at 1024 events; the flush hook itself writes nothing here
  inject::discard_nvtx_events();
}

// NVTX push/pop stacks are per domain: a library's range left open (NCCL's, closed on another
// thread) must not take the program's next pop.
TEST(NvtxTool, PopsCloseTheirOwnDomainsRange) {
  Instance inst;
  fake_nvtx::current = &inst;
  ASSERT_EQ(inject::install_nvtx_tool(export_table, {now, thread_id, nullptr, flush}), 1);
  using PushA = int(NVTX_API*)(const char*);
  using Pop = int(NVTX_API*)();
  using DomainCreate = nvtxDomainHandle_t(NVTX_API*)(const char*);
  using DomainPush = int(NVTX_API*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
  inject::discard_nvtx_events();
  const nvtxDomainHandle_t nccl = inst.d<DomainCreate>(NVTX_CBID_CORE2_DomainCreateA)("NCCL");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "AllReduce";
  inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("prefill");
  inst.d<DomainPush>(NVTX_CBID_CORE2_DomainRangePushEx)(nccl, &a);  // never popped here
  EXPECT_EQ(inst.c<Pop>(NVTX_CBID_CORE_RangePop)(), 0);             // closes "prefill"
  EXPECT_EQ(inst.c<Pop>(NVTX_CBID_CORE_RangePop)(), -1);            // unbalanced: nothing to close
  inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("decode");
  inst.c<Pop>(NVTX_CBID_CORE_RangePop)();
  const std::string dir = (fs::temp_directory_path() / ("jp-nvtx-dom-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto t = written_and_read(dir, 4322);
  ASSERT_TRUE(t) << t.error().message;
  std::vector<std::string> ranges;
  for (const Activity& x : t->activities) {
    if (x.kind == Activity::Kind::range) ranges.push_back(x.name + (x.complete ? "" : " open"));
  }
  EXPECT_EQ(ranges, (std::vector<std::string>{"prefill", "AllReduce open", "decode"}));
  fs::remove_all(dir);
}

// Sampled mode: the off phase records the ranges without anchors; the switch on anchors once from
// the timer thread, so the window's kernels launched before their thread's next range event get no
// path instead of the range open when the previous window closed.
TEST(NvtxTool, OffPhasesRecordRangesWithoutAnchors) {
  Instance inst;
  fake_nvtx::current = &inst;
  std::atomic<bool> anchoring{true};
  inject::NvtxHooks hooks{now, thread_id, anchor, flush};
  hooks.anchoring = &anchoring;
  ASSERT_EQ(inject::install_nvtx_tool(export_table, hooks), 1);
  inject::discard_nvtx_events();
  g_anchors.clear();
  const std::string dir = (fs::temp_directory_path() / ("jp-nvtx-off-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  inject::SampleLog log;
  ASSERT_TRUE(log.open(dir, 4323, inject::duty_cycle_from("10", "1000")));
  inject::SwitchHooks sw;
  int64_t mono = 0;
  sw.cupti_now = [] { return now(); };
  sw.mono_ns = [&] { return mono += 1000; };
  sw.set_kinds = [](bool) {};
  sw.set_api_records = [](bool) {};
  sw.anchor = [] { g_anchors.push_back({++g_correlation, 99, static_cast<int64_t>(now()), true}); };  // the timer thread
  sw.flush = [] {};
  using PushA = int(NVTX_API*)(const char*);
  using Pop = int(NVTX_API*)();
  std::vector<uint32_t> kernels;
  auto launch = [&] { kernels.push_back(++g_correlation); };
  inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("layer.0");
  launch();
  inject::switch_tracing(false, sw, log, anchoring);  // inside layer.0
  const std::size_t anchors_before_off = g_anchors.size();
  inst.c<Pop>(NVTX_CBID_CORE_RangePop)();
  inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("layer.1");
  inst.c<Pop>(NVTX_CBID_CORE_RangePop)();
  inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("layer.2");
  EXPECT_EQ(g_anchors.size(), anchors_before_off);  // four range events, no anchor
  inject::switch_tracing(true, sw, log, anchoring);
  EXPECT_EQ(g_anchors.size(), anchors_before_off + 1);
  launch();  // before this thread's next range event
  inst.c<Pop>(NVTX_CBID_CORE_RangePop)();
  inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("layer.3");
  launch();
  inst.c<Pop>(NVTX_CBID_CORE_RangePop)();

  auto t = written_and_read(dir, 4323);
  ASSERT_TRUE(t) << t.error().message;
  std::vector<std::string> ranges;
  for (const Activity& x : t->activities) {
    if (x.kind == Activity::Kind::range) ranges.push_back(x.name);
  }
  EXPECT_EQ(ranges, (std::vector<std::string>{"layer.0", "layer.1", "layer.2", "layer.3"}));  // every range kept
  place_kernels(*t, kernels);
  std::vector<std::string> paths;
  for (const Activity& x : t->activities) {
    if (x.kind == Activity::Kind::kernel) paths.push_back(x.path);
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"layer.0", "", "layer.3"}));
  fs::remove_all(dir);
}

// Off phases switch the anchor call's record off from the program's own thread, at its first range
// event (an enabled record costs on every driver call of that thread), and on again before the
// first anchor of the next window; events in between switch nothing.
std::vector<std::string> g_record_log;
TEST(NvtxTool, OffPhasesSwitchTheAnchorRecordFromTheProgramsThread) {
  Instance inst;
  fake_nvtx::current = &inst;
  std::atomic<bool> anchoring{true};
  inject::NvtxHooks hooks{now, thread_id, [] { g_record_log.push_back("anchor"); }, flush};
  hooks.anchoring = &anchoring;
  hooks.anchor_record = [](bool on) { g_record_log.push_back(on ? "record on" : "record off"); };
  ASSERT_EQ(inject::install_nvtx_tool(export_table, hooks), 1);
  inject::discard_nvtx_events();
  using PushA = int(NVTX_API*)(const char*);
  using Pop = int(NVTX_API*)();
  std::thread program([&] {
    g_record_log.clear();
    inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("layer.0");
    anchoring = false;  // the timer thread's switch to an off phase
    inst.c<Pop>(NVTX_CBID_CORE_RangePop)();
    inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("layer.1");
    inst.c<Pop>(NVTX_CBID_CORE_RangePop)();
    anchoring = true;
    inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("layer.2");
    inst.c<Pop>(NVTX_CBID_CORE_RangePop)();
  });
  program.join();
  EXPECT_EQ(g_record_log, (std::vector<std::string>{"anchor", "record off", "record on", "anchor", "anchor"}));
  inject::discard_nvtx_events();
}

// Paused (jouleprof_trace_pause): no range event, no mark, no anchor; a range pushed before the
// pause still closes (its end alone recorded), and a range opened while paused is not recorded, nor
// its end after the resume (push/pop and start/end alike); after the resume everything records.
TEST(NvtxTool, PausedRecordsNoRangesAndKeepsTheNesting) {
  Instance inst;
  fake_nvtx::current = &inst;
  std::atomic<bool> anchoring{true}, recording{true};
  inject::NvtxHooks hooks{now, thread_id, anchor, flush};
  hooks.anchoring = &anchoring;
  hooks.recording = &recording;
  ASSERT_EQ(inject::install_nvtx_tool(export_table, hooks), 1);
  inject::discard_nvtx_events();
  g_anchors.clear();
  using PushA = int(NVTX_API*)(const char*);
  using Pop = int(NVTX_API*)();
  using StartA = nvtxRangeId_t(NVTX_API*)(const char*);
  using End = void(NVTX_API*)(nvtxRangeId_t);
  using MarkA = void(NVTX_API*)(const char*);
  inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("before");
  const nvtxRangeId_t step = inst.c<StartA>(NVTX_CBID_CORE_RangeStartA)("step");
  EXPECT_EQ(g_anchors.size(), 2u);
  anchoring = false;  // what a pause does (RecordingControl::pause)
  recording = false;
  EXPECT_EQ(inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("paused.push"), 1);  // the nesting is kept
  const nvtxRangeId_t hidden = inst.c<StartA>(NVTX_CBID_CORE_RangeStartA)("paused.start");
  inst.c<MarkA>(NVTX_CBID_CORE_MarkA)("paused.mark");
  EXPECT_EQ(inst.c<Pop>(NVTX_CBID_CORE_RangePop)(), 1);  // closes "paused.push": nothing recorded
  EXPECT_EQ(inst.c<Pop>(NVTX_CBID_CORE_RangePop)(), 0);  // closes "before": its end recorded
  inst.c<End>(NVTX_CBID_CORE_RangeEnd)(step);
  inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("paused.open");
  EXPECT_EQ(g_anchors.size(), 2u);  // no anchor while paused
  anchoring = true;
  recording = true;
  inst.c<End>(NVTX_CBID_CORE_RangeEnd)(hidden);  // opened while paused: not recorded
  EXPECT_EQ(inst.c<Pop>(NVTX_CBID_CORE_RangePop)(), 0);  // "paused.open": not recorded
  inst.c<PushA>(NVTX_CBID_CORE_RangePushA)("after");
  inst.c<Pop>(NVTX_CBID_CORE_RangePop)();
  EXPECT_EQ(g_anchors.size(), 4u);

  const std::string dir = (fs::temp_directory_path() / ("jp-nvtx-paused-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto t = written_and_read(dir, 4324);
  ASSERT_TRUE(t) << t.error().message;
  std::vector<std::string> ranges, marks;
  for (const Activity& x : t->activities) {
    if (x.kind == Activity::Kind::range) ranges.push_back(x.name + (x.complete ? "" : " open"));
    if (x.kind == Activity::Kind::mark) marks.push_back(x.name);
  }
  EXPECT_EQ(ranges, (std::vector<std::string>{"before", "step", "after"}));
  EXPECT_TRUE(marks.empty());
  fs::remove_all(dir);
}

TEST(NvtxTool, NoExportTableIsRefused) {
  EXPECT_EQ(inject::install_nvtx_tool(no_tables, {now, thread_id, anchor, flush}), 0);
  EXPECT_EQ(inject::install_nvtx_tool(nullptr, {now, thread_id, anchor, flush}), 0);
}
