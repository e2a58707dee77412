// Trace files (reading, damage, truncation), alignment, NVTX paths and kernel classes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "jouleprof/trace/format.hpp"
#include "jouleprof/trace/kernel_classes.hpp"
#include "jouleprof/trace/trace.hpp"

using namespace jouleprof;
using namespace jouleprof::trace_format;
namespace fs = std::filesystem;

namespace {

struct FileBuilder {
  std::string b;  // (a vector<char> trips GCC 12's -Wstringop-overflow here)
  FileBuilder() {
    FileHeader h{};
    std::memcpy(h.magic, kMagic, sizeof(kMagic));
    h.version = kVersion;
    h.header_size = sizeof(h);
    h.pid = 4242;
    h.ppid = 1;
    put(&h, sizeof(h));
  }
  void put(const void* p, std::size_t n) { b.append(static_cast<const char*>(p), n); }
  template <class T>
  void rec(RecordType t, const T& v) {
    RecordHeader h{static_cast<uint16_t>(t), 0, sizeof(T)};
    put(&h, sizeof(h));
    put(&v, sizeof(v));
  }
  void str(uint32_t id, const std::string& s) {
    RecordHeader h{static_cast<uint16_t>(RecordType::string), 0, static_cast<uint32_t>(4 + s.size())};
    put(&h, sizeof(h));
    put(&id, 4);
    put(s.data(), s.size());
  }
  std::string write(const std::string& dir, std::size_t cut = 0) const {
    fs::create_directories(dir);
    const std::string path = dir + "/trace-4242.jpt";
    std::ofstream(path, std::ios::binary).write(b.data(), static_cast<std::streamsize>(cut != 0 ? cut : b.size()));
    return path;
  }
};

std::string temp_dir(const std::string& name) {
  const std::string d = (fs::temp_directory_path() / ("jp-trace-" + std::to_string(getpid()) + "-" + name)).string();
  fs::remove_all(d);
  return d;
}

KernelRecord kernel(uint64_t t0, uint64_t t1, uint32_t corr, uint32_t name) {
  KernelRecord k{};
  k.start_ns = t0;
  k.end_ns = t1;
  k.correlation = corr;
  k.stream = 7;
  k.name_id = name;
  k.grid_x = 8;
  k.block_x = 128;
  return k;
}

// An NVTX range of a thread (0: a process-wide start/end range).
void add_range(TraceData& t, const char* name, int64_t start_ns, int64_t end_ns, uint64_t thread) {
  Activity r;
  r.kind = Activity::Kind::range;
  r.name = name;
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  r.thread = thread;
  t.activities.push_back(r);
}

}  // namespace

TEST(TraceFile, ReadsKernelsRangesAndDemangles) {
  FileBuilder f;
  f.str(1, "_Z6kernelPfi");
  f.str(2, "decode");
  f.rec(RecordType::kernel, kernel(1000, 2000, 5, 1));
  MarkerRecord m0{900, 11, 3, marker_start, 2, 0, 2, 0};
  MarkerRecord m1{2500, 11, 3, marker_end, 0, 0, 2, 0};
  f.rec(RecordType::marker, m0);
  f.rec(RecordType::marker, m1);
  ApiRecord api{950, 960, 5, 11, 211, 0};
  f.rec(RecordType::api, api);
  DeviceRecord d{0, 0, {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8}};
  f.rec(RecordType::device, d);
  EndRecord e{2, 0, 0, 0};
  f.rec(RecordType::end, e);
  const std::string dir = temp_dir("read");
  f.write(dir);
  auto t = read_trace_dir(dir);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->processes.size(), 1u);
  EXPECT_TRUE(t->processes[0].ended);
  EXPECT_TRUE(t->complete());
  EXPECT_EQ(t->processes[0].device_uuids.at(0), "GPU-12345678-9abc-def0-0102-030405060708");
  ASSERT_EQ(t->activities.size(), 2u);
  EXPECT_EQ(t->activities[0].name, "kernel(float*, int)");
  EXPECT_EQ(t->activities[1].kind, Activity::Kind::range);
  EXPECT_EQ(t->activities[1].end_ns, 2500);
  assign_ranges(*t);
  EXPECT_EQ(t->activities[0].path, "decode");
}

TEST(TraceFile, TruncatedFileKeepsRecordsBeforeTheCut) {
  FileBuilder f;
  f.str(1, "k");
  f.rec(RecordType::kernel, kernel(1000, 2000, 1, 1));
  const std::size_t good = f.b.size();
  f.rec(RecordType::kernel, kernel(3000, 4000, 2, 1));
  const std::string dir = temp_dir("trunc");
  f.write(dir, good + 20);  // cut inside the second record
  auto t = read_trace_dir(dir);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->activities.size(), 1u);
  EXPECT_FALSE(t->processes[0].ended);
  EXPECT_NE(t->processes[0].damage.find("offset " + std::to_string(good)), std::string::npos) << t->processes[0].damage;
  EXPECT_FALSE(t->complete());
  bool warned = false;
  for (const auto& w : t->warnings) warned |= w.find("cut off") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(TraceFile, CorruptRecordReportsItsOffset) {
  FileBuilder f;
  f.str(1, "k");
  f.rec(RecordType::kernel, kernel(1000, 2000, 1, 1));
  const std::size_t at = f.b.size();
  RecordHeader bad{77, 0, 5000000};
  f.put(&bad, sizeof(bad));
  const std::string dir = temp_dir("corrupt");
  f.write(dir);
  auto t = read_trace_dir(dir);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->activities.size(), 1u);
  EXPECT_EQ(t->processes[0].damage, "corrupt record (type 77, size 5000000) at offset " + std::to_string(at));
}

TEST(TraceFile, NotATraceIsAnErrorAndIsSkippedInADirectory) {
  const std::string dir = temp_dir("notrace");
  fs::create_directories(dir);
  std::ofstream(dir + "/trace-1.jpt") << "hello, world, this is not a trace file at all....";
  TraceData t;
  auto r = read_trace_file(dir + "/trace-1.jpt", t);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not a jouleprof trace file"), std::string::npos);
  auto d = read_trace_dir(dir);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->processes.empty());
  EXPECT_EQ(d->warnings.size(), 1u);
  EXPECT_FALSE(read_trace_dir(dir + "/missing"));
}

TEST(TraceFile, DroppedRecordsAreCounted) {
  FileBuilder f;
  DroppedRecord d{17, 0, 3};
  f.rec(RecordType::dropped, d);
  EndRecord e{0, 17, 0, 0};
  f.rec(RecordType::end, e);
  const std::string dir = temp_dir("dropped");
  f.write(dir);
  auto t = read_trace_dir(dir);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->dropped(), 17u);
  EXPECT_FALSE(t->complete());
}

TEST(TraceFile, AnchorApiRecordsAreMarked) {
  FileBuilder f;
  f.rec(RecordType::api, ApiRecord{100, 101, 5, 7, kAnchorDriverCbid, 1});
  f.rec(RecordType::api, ApiRecord{102, 110, 6, 7, 211, 0});  // a runtime launch
  f.rec(RecordType::api, ApiRecord{112, 113, 7, 7, kAnchorDriverCbid, 0});  // runtime domain: not the anchor
  const std::string dir = temp_dir("anchors");
  TraceData t;
  ASSERT_TRUE(read_trace_file(f.write(dir), t));
  ASSERT_EQ(t.processes.at(0).launches.size(), 3u);
  EXPECT_TRUE(t.processes[0].launches[0].anchor);
  EXPECT_FALSE(t.processes[0].launches[1].anchor);
  EXPECT_FALSE(t.processes[0].launches[2].anchor);
  fs::remove_all(dir);
}

TEST(Align, ClockOffsetDriftAndRealtimeSteps) {
  TraceData t;
  ProcessTrace p;
  // CUPTI's clock 1 ms behind realtime at the start, 1.1 ms at the end (10 s later): 10 ppm.
  p.clocks = {{1'000'000'000'000, 1'000'001'000'000, 50}, {1'010'000'000'000, 1'010'001'100'000, 50}};
  t.processes.push_back(p);
  Activity a;
  a.start_ns = 1'005'000'000'000;
  a.end_ns = 1'005'001'000'000;
  t.activities.push_back(a);
  // The run started at realtime 1'000'000'000'000 ns; at 3 s the wall clock stepped +2 ms.
  std::vector<TimeBase::Calibration> cal = {{0.0, 500, 10}, {3.0, 2'000'500, 10}};
  align_trace(t, 1'000'000'000'000, cal);
  // realtime = cupti + 1.05 ms; run time = realtime - origin - step.
  EXPECT_NEAR(t.activities[0].t0_s, 5.0 + 1.05e-3 - 2e-3, 1e-9);
  // The offset is interpolated, so durations are CLOCK_REALTIME durations: a CUPTI millisecond on
  // a clock that falls behind by 10 ppm lasted 1.00001 realtime milliseconds.
  EXPECT_NEAR(t.activities[0].duration_s(), 1e-3 * (1 + 10e-6), 1e-12);
  EXPECT_NEAR(t.processes[0].clock_drift_ppm, 10.0, 1e-6);
  EXPECT_NEAR(t.processes[0].clock_offset_start_ns, 1e6, 1e-3);
}

TEST(Ranges, NestedPushPopPathsPerThreadAndStartEndPhases) {
  TraceData t;
  ProcessTrace p;
  p.launches = {{1, 7, 150}, {2, 7, 260}, {3, 8, 270}, {4, 7, 400}};
  t.processes.push_back(p);
  auto range = [&](const char* name, int64_t a, int64_t b, uint64_t thread) { add_range(t, name, a, b, thread); };
  range("decode", 100, 300, 7);
  range("layers.0", 120, 200, 7);
  range("mlp", 140, 180, 7);
  range("layers.1", 250, 290, 7);
  range("step", 0, 1000, 0);  // nvtxRangeStart/End: process-wide
  for (uint32_t c = 1; c <= 4; ++c) {
    Activity k;
    k.kind = Activity::Kind::kernel;
    k.correlation = c;
    t.activities.push_back(k);
  }
  assign_ranges(t);
  EXPECT_EQ(t.activities[5].path, "decode/layers.0/mlp");
  EXPECT_EQ(t.activities[6].path, "decode/layers.1");
  EXPECT_EQ(t.activities[7].path, "");  // another thread, no ranges
  EXPECT_EQ(t.activities[8].path, "");
  EXPECT_EQ(t.activities[5].phase, "step");
  EXPECT_EQ(t.activities[2].depth, 2);
}

// Without launch records: each kernel takes the range state of the latest anchor (taken after
// each push/pop/start/end) before its correlation id.
TEST(Ranges, AnchorsPlaceKernelsWithoutLaunchRecords) {
  TraceData t;
  ProcessTrace p;
  // Anchors on thread 7 right after: push decode (110), push mlp (150), pop mlp (181), pop decode (301);
  // and after nvtxRangeStart "step" (5). Correlation ids grow with every call.
  p.launches = {{1, 7, 5, true}, {10, 7, 110, true}, {20, 7, 150, true}, {30, 7, 181, true}, {40, 7, 301, true}};
  t.processes.push_back(p);
  auto range = [&](const char* name, int64_t a, int64_t b, uint64_t thread) { add_range(t, name, a, b, thread); };
  range("decode", 100, 300, 7);
  range("mlp", 140, 180, 7);
  range("step", 0, 1000, 0);
  // Kernels launched (correlation) between the anchors; their GPU times come later.
  for (uint32_t c : {0u, 11u, 21u, 22u, 31u, 41u}) {
    Activity k;
    k.kind = Activity::Kind::kernel;
    k.correlation = c;
    k.start_ns = 5000;
    t.activities.push_back(k);
  }
  assign_ranges(t);
  EXPECT_EQ(t.activities[3].path, "");  // before any anchor
  EXPECT_EQ(t.activities[4].path, "decode");
  EXPECT_EQ(t.activities[5].path, "decode/mlp");
  EXPECT_EQ(t.activities[6].path, "decode/mlp");
  EXPECT_EQ(t.activities[7].path, "decode");
  EXPECT_EQ(t.activities[8].path, "");  // after the last pop
  EXPECT_EQ(t.activities[4].phase, "step");
  EXPECT_EQ(t.range_assignment.method, "anchors");
  EXPECT_EQ(t.range_assignment.assigned, 5u);
  EXPECT_EQ(t.range_assignment.checked, 0u);
}

// Launch records and anchors together: the launch records decide, the anchors are checked
// against them (a kernel launched on another thread than the ranges' is where they differ).
TEST(Ranges, LaunchRecordsDecideAndCheckTheAnchors) {
  TraceData t;
  ProcessTrace p;
  p.launches = {{10, 7, 110, true}, {11, 7, 120, false}, {12, 8, 125, false}, {20, 7, 201, true}, {21, 7, 210, false}};
  t.processes.push_back(p);
  add_range(t, "forward", 100, 200, 7);
  for (uint32_t c : {11u, 12u, 21u}) {
    Activity k;
    k.kind = Activity::Kind::kernel;
    k.correlation = c;
    t.activities.push_back(k);
  }
  assign_ranges(t);
  EXPECT_EQ(t.activities[1].path, "forward");
  EXPECT_EQ(t.activities[2].path, "");  // launched by thread 8, outside any of its ranges
  EXPECT_EQ(t.activities[3].path, "");
  EXPECT_EQ(t.range_assignment.method, "launch records");
  EXPECT_EQ(t.range_assignment.checked, 3u);
  EXPECT_EQ(t.range_assignment.agreed, 2u);  // the anchors put thread 8's kernel in "forward"
}

TEST(Ranges, ALibrarysRangeLeftOpenStaysOutOfPaths) {
  TraceData t;
  ProcessTrace p;
  p.launches = {{1, 7, 150, false}};
  t.processes.push_back(p);
  add_range(t, "ncclCommInitRankConfig", 100, 1000, 7);
  t.activities.back().domain = "NCCL";
  t.activities.back().complete = false;  // never popped on this thread
  add_range(t, "outer", 90, 1000, 7);
  t.activities.back().complete = false;  // the program's own range, cut off by the end: kept
  add_range(t, "decode", 120, 200, 7);
  Activity k;
  k.kind = Activity::Kind::kernel;
  k.correlation = 1;
  t.activities.push_back(k);
  assign_ranges(t);
  EXPECT_EQ(t.activities.back().path, "outer/decode");
}

TEST(Ranges, PhaseInPathIsTheOutermostPrefillOrDecode) {
  EXPECT_EQ(phase_in_path("decode/model.layers.3/mlp"), "decode");
  EXPECT_EQ(phase_in_path("ncclCommInitRankConfig/prefill/layers.2"), "prefill");  // under NCCL's open range
  EXPECT_EQ(phase_in_path("prefill/decode/layers.0"), "prefill");
  EXPECT_EQ(phase_in_path("model.layers.3/decoder"), "");
  EXPECT_EQ(phase_in_path(""), "");
  EXPECT_EQ(phase_in_path("decode"), "decode");
}

TEST(KernelClasses, BuiltInRulesAndUserRulesFirst) {
  auto k = KernelClassifier::load(default_kernel_classes_path());
  ASSERT_TRUE(k) << k.error().message;
  EXPECT_EQ(k->classify("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"), "gemm");
  EXPECT_EQ(k->classify("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"), "communication");
  EXPECT_EQ(k->classify("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>"), "attention");
  EXPECT_EQ(k->classify("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>"), "normalization");
  EXPECT_EQ(k->classify("void at::native::vectorized_elementwise_kernel<4, at::native::silu_kernel>"), "elementwise");
  EXPECT_EQ(k->classify("memcpy HtoD"), "copy");
  EXPECT_EQ(k->classify("memset"), "elementwise");  // a fill, not a copy (cuBLAS's before each GEMM)
  EXPECT_EQ(k->classify("stream_copy_kernel(float4 const*, float4*, unsigned long)"), "copy");
  EXPECT_EQ(k->classify("my_custom_thing"), "other");
  auto user = KernelClassifier::parse("attention\tmy_custom\n# comment\n", "user.tsv");
  ASSERT_TRUE(user);
  k->prepend(*user);
  EXPECT_EQ(k->classify("my_custom_thing"), "attention");
}

TEST(KernelClasses, BadRulesAreErrorsWithTheLine) {
  auto a = KernelClassifier::parse("gemm gemm\n", "x.tsv");
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("x.tsv:1"), std::string::npos);
  auto b = KernelClassifier::parse("# ok\ngemm\t(unclosed\n", "y.tsv");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("y.tsv:2"), std::string::npos);
  EXPECT_FALSE(KernelClassifier::load("/nonexistent/rules.tsv"));
}
