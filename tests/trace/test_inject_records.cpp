// The injection library's record handling with replayed CUPTI buffers: CUPTI's own structs laid
// out in a buffer, walked by a stand-in for cuptiActivityGetNextRecord, written by the
// TraceWriter and read back by the reader.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "jouleprof/trace/trace.hpp"
#include "records.hpp"
#include "writer.hpp"

using namespace jouleprof;
namespace fs = std::filesystem;

namespace {

// A recorded buffer: records back to back, each prefixed by its size (our replay format).
struct Recorded {
  std::vector<uint8_t> bytes;
  template <class T>
  void add(const T& r) {
    const uint32_t n = sizeof(T);
    const auto* s = reinterpret_cast<const uint8_t*>(&n);
    bytes.insert(bytes.end(), s, s + 4);
    bytes.insert(bytes.end(), 4, 0);  // keep 8-byte alignment
    const auto* p = reinterpret_cast<const uint8_t*>(&r);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
};

size_t g_offset = 0;
CUptiResult replay_next(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (*record == nullptr) g_offset = 0;
  if (g_offset + 8 > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  uint32_t n = 0;
  std::memcpy(&n, buffer + g_offset, 4);
  *record = reinterpret_cast<CUpti_Activity*>(buffer + g_offset + 8);
  g_offset += 8 + n;
  return CUPTI_SUCCESS;
}

// The recorded buffer converted by the TraceWriter into process `pid`'s file (with `dropped`
// records reported dropped) and read back; `converted`: the activities convert_buffer counted.
Result<TraceData> through_a_file(Recorded& buf, int64_t pid, uint64_t dropped, std::size_t& converted) {
  const std::string dir = (fs::temp_directory_path() / fmt::format("jp-inject-{}-{}", pid, getpid())).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  inject::TraceWriter w;
  if (!w.open(dir, pid, 1, 0, CUPTI_API_VERSION)) return make_error(Errc::io, w.error());
  {
    std::lock_guard<std::mutex> lock(w.lock());
    converted = inject::convert_buffer(buf.bytes.data(), buf.bytes.size(), replay_next, w);
    if (dropped > 0) w.count_dropped(dropped);
    w.commit();
    w.close(0);
  }
  auto t = read_trace_dir(dir);
  fs::remove_all(dir);
  return t;
}

}  // namespace

TEST(InjectRecords, ReplayedCuptiBufferBecomesATraceFile) {
  Recorded buf;
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1000;
  k.end = 5000;
  k.deviceId = 1;
  k.streamId = 13;
  k.correlationId = 77;
  k.gridX = 132;
  k.blockX = 256;
  k.registersPerThread = 96;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 4096;
  k.name = "_Z13ncclDevKernelv";
  buf.add(k);
  k.start = 6000;
  k.end = 7000;
  k.correlationId = 78;
  buf.add(k);  // same name: interned once
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.bytes = 1 << 20;
  m.start = 100;
  m.end = 900;
  m.deviceId = 1;
  buf.add(m);
  CUpti_ActivityMemset4 s{};
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 4096;
  s.start = 950;
  s.end = 960;
  buf.add(s);
  CUpti_ActivityMarker2 mk{};
  mk.kind = CUPTI_ACTIVITY_KIND_MARKER;
  mk.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  mk.timestamp = 500;
  mk.id = 4;
  mk.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  mk.objectId.pt.threadId = 99;
  mk.name = "model.layers.0.mlp";
  mk.domain = "";
  buf.add(mk);
  mk.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  mk.timestamp = 8000;
  mk.name = nullptr;
  buf.add(mk);
  CUpti_ActivityAPI api{};
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  api.start = 600;
  api.end = 650;
  api.threadId = 99;
  api.correlationId = 77;
  buf.add(api);
  CUpti_ActivitySynchronization2 sy{};
  sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sy.start = 7000;
  sy.end = 7100;
  buf.add(sy);
  CUpti_ActivityDevice5 dev{};
  dev.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  dev.id = 1;
  dev.name = "NVIDIA H100 80GB HBM3";
  for (int i = 0; i < 16; ++i) dev.uuid.bytes[i] = static_cast<char>(i);
  buf.add(dev);
  CUpti_Activity other{};
  other.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;  // not kept
  buf.add(other);

  std::size_t n = 0;
  auto t = through_a_file(buf, 4321, 3, n);
  ASSERT_TRUE(t) << t.error().message;
  // 10 records: 2 kernels, a copy, a memset, 2 markers, a launch, a sync (8 activities), and a
  // device and an overhead record (not activities).
  EXPECT_EQ(n, 8u);
  ASSERT_EQ(t->processes.size(), 1u);
  const ProcessTrace& p = t->processes[0];
  EXPECT_EQ(p.pid, 4321);
  EXPECT_TRUE(p.ended);
  EXPECT_EQ(p.dropped, 3u);
  EXPECT_EQ(p.device_uuids.at(1), "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
  ASSERT_EQ(p.launches.size(), 1u);
  EXPECT_EQ(p.launches[0].thread, 99u);
  int kernels = 0, copies = 0, sets = 0, ranges = 0, syncs = 0;
  for (const Activity& a : t->activities) {
    switch (a.kind) {
      case Activity::Kind::kernel:
        ++kernels;
        EXPECT_EQ(a.name, "ncclDevKernel()");
        EXPECT_EQ(a.registers, 96u);
        EXPECT_EQ(a.dynamic_shared_bytes, 4096u);
        EXPECT_EQ(a.device, 1u);
        break;
      case Activity::Kind::memcpy:
        ++copies;
        EXPECT_EQ(a.name, "memcpy HtoD");
        EXPECT_EQ(a.bytes, 1u << 20);
        break;
      case Activity::Kind::memset: ++sets; break;
      case Activity::Kind::range:
        ++ranges;
        EXPECT_EQ(a.name, "model.layers.0.mlp");
        EXPECT_EQ(a.end_ns, 8000);
        EXPECT_EQ(a.thread, 99u);
        break;
      case Activity::Kind::sync:
        ++syncs;
        EXPECT_EQ(a.name, "stream synchronize");
        break;
      default: break;
    }
  }
  EXPECT_EQ(kernels, 2);
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(sets, 1);
  EXPECT_EQ(ranges, 1);
  EXPECT_EQ(syncs, 1);
  assign_ranges(*t);
  for (const Activity& a : t->activities) {
    if (a.kind == Activity::Kind::kernel && a.correlation == 77) {
      EXPECT_EQ(a.path, "model.layers.0.mlp");
    }
  }
}

// A graph-level record (CUPTI_ACTIVITY_KIND_GRAPH_TRACE: one launch of a whole CUDA graph) is a
// kernel activity named by its graph, with the graph's id and the launch's correlation.
TEST(InjectRecords, AGraphLaunchRecordIsOneActivityNamedByItsGraph) {
  Recorded buf;
  CUpti_ActivityGraphTrace2 g{};
  g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
  g.start = 2000;
  g.end = 9000;
  g.deviceId = 0;
  g.streamId = 7;
  g.correlationId = 41;
  g.graphId = 12;
  buf.add(g);
  std::size_t n = 0;
  auto t = through_a_file(buf, 4322, 0, n);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(n, 1u);
  ASSERT_EQ(t->activities.size(), 1u);
  const Activity& a = t->activities[0];
  EXPECT_EQ(a.kind, Activity::Kind::kernel);
  EXPECT_EQ(a.name, "CUDA graph 12");
  EXPECT_EQ(a.graph_id, 12u);
  EXPECT_EQ(a.correlation, 41u);
  EXPECT_EQ(a.end_ns - a.start_ns, 7000);
}

TEST(InjectRecords, WriterReportsAnUnwritableDirectory) {
  inject::TraceWriter w;
  EXPECT_FALSE(w.open("/nonexistent/dir", 1, 1, 0, 0));
  EXPECT_NE(w.error().find("cannot create"), std::string::npos);
}
