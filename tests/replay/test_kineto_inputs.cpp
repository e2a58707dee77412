// Real-world and hostile Kineto inputs (issues 32 item 4 and 35): Triton / torch.compile args of
// unexpected types, CUDA-graph launches, negative launch values, pipes and FIFOs (opened once),
// folders and devices, long names (linear-time rules) and oversized events / gzip bombs.
#include <gtest/gtest.h>
#include <zlib.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "jouleprof/replay/kernel_table.hpp"

namespace fs = std::filesystem;
using namespace jouleprof;

namespace {

struct Rules {
  KernelClassifier classes = KernelClassifier::load(std::string(JOULEPROF_SOURCE_DATA) + "/kernel-classes.tsv").value();
  KernelClassifier tiers = KernelClassifier::load(std::string(JOULEPROF_SOURCE_DATA) + "/replay-tiers.tsv").value();
  KernelTableOptions opts() const {
    KernelTableOptions o;
    o.classes = &classes;
    o.tiers = &tiers;
    return o;
  }
};

const Rules& rules() {
  static const Rules r;
  return r;
}

class KinetoInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("jp-kineto-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }
  Result<KernelTable> table(const std::string& path) { return read_kernel_table({path}, rules().opts()); }
  fs::path dir_;
};

std::string trace(const std::string& events) { return "{\"schemaVersion\": 1, \"traceEvents\": [" + events + "]}"; }

const std::string kOp = R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 9, "args": {"External id": 1, "Input Dims": [[64, 32], [32, 16]], "Input type": ["float", "float"]}})";
std::string kernel(const std::string& name, const std::string& args, int ts = 1) {
  return R"({"ph": "X", "cat": "kernel", "name": ")" + name + R"(", "ts": )" + std::to_string(ts) + R"(, "dur": 2, "args": {)" + args + "}}";
}

bool has_warning(const KernelTable& t, const std::string& what) {
  for (const auto& w : t.warnings) {
    if (w.find(what) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_F(KinetoInputs, TritonStringGridOnAnOpIsRead) {
  // torch.compile: the Triton launcher's cpu_op carries "grid" as a string.
  const std::string triton_op =
      R"J({"ph": "X", "cat": "cpu_op", "name": "triton_poi_fused_add_0", "ts": 0, "dur": 5, "args": {"External id": 2, "grid": "grid(100,)", "stream": 0, "num_warps": 4, "kernel_file": "/tmp/x.py"}})J";
  auto t = table(write("t.json", trace(triton_op + ", " + kernel("triton_poi_fused_add_0", R"("External id": 2, "grid": [100, 1, 1], "block": [128, 1, 1])"))));
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0].op, "triton_poi_fused_add_0");
  EXPECT_EQ(t->rows[0].grid[0], 100);
  EXPECT_EQ(t->skipped_events, 0u);
}

TEST_F(KinetoInputs, UnreadableEventIsSkippedCountedAndNamed) {
  const std::string events = kOp + ", " + kernel("good", R"("External id": 1, "grid": [4, 1, 1], "block": [32, 1, 1])") + ", " +
                             kernel("bad_grid", R"J("External id": 1, "grid": "grid(4,)", "block": [32, 1, 1])J", 3) + ", " +
                             kernel("bad_regs", R"("External id": 1, "registers per thread": "many")", 4) + ", " +
                             kernel("bad_ext", R"("External id": "one", "grid": [1, 1, 1])", 5) + ", " +
                             R"({"ph": "X", "cat": "kernel", "name": 5, "ts": 6, "dur": 1, "args": {}})" + ", " +
                             R"({"ph": "X", "cat": "kernel", "name": "no_dur", "ts": 7, "args": {}})";
  for (int threads : {1, 2}) {
    KernelTableOptions o = rules().opts();
    o.threads = threads;
    auto t = read_kernel_table({write("t.json", trace(events))}, o);
    ASSERT_TRUE(t) << t.error().message;
    // good + bad_ext (kept: only its op link is lost); bad_grid, bad_regs, the numeric name and no_dur skipped.
    EXPECT_EQ(t->kernels, 2u);
    EXPECT_EQ(t->skipped_events, 4u);
    EXPECT_TRUE(has_warning(*t, "skipped 4 unreadable events (the first: a GPU event's \"grid\"")) << t->warnings.front();
    for (const auto& r : t->rows) EXPECT_NE(r.name, "bad_grid");
  }
}

TEST_F(KinetoInputs, NegativeLaunchValuesAreRefusedNotTabled) {
  const std::string events = kernel("neg_grid", R"("grid": [-1, 1, 1], "block": [32, 1, 1])") + ", " +
                             kernel("neg_regs", R"("grid": [1, 1, 1], "registers per thread": -5)", 2) + ", " +
                             kernel("huge_block", R"("grid": [1, 1, 1], "block": [4294967296, 1, 1])", 3) + ", " +
                             kernel("ok", R"("grid": [1, 1, 1], "block": [32, 1, 1], "registers per thread": 32)", 4);
  auto t = table(write("t.json", trace(events)));
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0].name, "ok");
  EXPECT_EQ(t->skipped_events, 3u);
  // Negative shapes never become a GEMM for the replay plan.
  const std::string neg_op = R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 9, "args": {"External id": 1, "Input Dims": [[-64, 32], [32, 16]], "Input type": ["float", "float"]}})";
  auto g = table(write("g.json", trace(neg_op + ", " + kernel("gemm_kernel", R"("External id": 1, "grid": [1, 1, 1])"))));
  ASSERT_TRUE(g) << g.error().message;
  ASSERT_EQ(g->rows.size(), 1u);
  EXPECT_EQ(g->rows[0].tier, "gemm");
  EXPECT_FALSE(g->rows[0].gemm.has_value());
  EXPECT_NE(g->rows[0].note.find("non-positive"), std::string::npos) << g->rows[0].note;
}

TEST_F(KinetoInputs, CudaGraphLaunchesAreRead) {
  // Kernels replayed by a CUDA graph share the cudaGraphLaunch's correlation id and carry "graph id".
  const std::string events =
      R"({"ph": "X", "cat": "cpu_op", "name": "CUDAGraph::replay", "ts": 0, "dur": 20, "args": {"External id": 9}}, )"
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 1, "dur": 3, "args": {"External id": 9, "correlation": 77}}, )" +
      kernel("graph_k1", R"("External id": 0, "correlation": 77, "grid": [8, 1, 1], "block": [64, 1, 1], "graph id": 3, "graph node id": 11)", 5) + ", " +
      kernel("graph_k2", R"("correlation": 77, "grid": [8, 1, 1], "block": [64, 1, 1], "graph id": 3, "graph node id": 12)", 8);
  auto t = table(write("t.json", trace(events)));
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->graph_kernels, 2u);
  for (const auto& r : t->rows) {
    EXPECT_EQ(r.op, "CUDAGraph::replay") << r.name;
    EXPECT_EQ(r.graph, 3) << r.name;
  }
  EXPECT_NE(kernel_table_json(*t).find("\"graph_id\": 3"), std::string::npos);
}

TEST_F(KinetoInputs, PipeIsOpenedOnceAndRead) {
  // /dev/stdin or <(cat t.json): the first bytes must not be lost to a separate sniffing open().
  const std::string text = trace(kOp + ", " + kernel("k", R"("External id": 1, "grid": [1, 1, 1])"));
  for (bool gz : {false, true}) {
    std::string bytes = text;
    if (gz) {
      const std::string p = (dir_ / "t.json.gz").string();
      gzFile f = gzopen(p.c_str(), "wb");
      gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
      gzclose(f);
      std::ifstream in(p, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::thread writer([&] {
      std::size_t off = 0;
      while (off < bytes.size()) {
        const ssize_t n = ::write(fds[1], bytes.data() + off, std::min<std::size_t>(7, bytes.size() - off));  // small writes
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
      ::close(fds[1]);
    });
    auto t = table("/proc/self/fd/" + std::to_string(fds[0]));
    writer.join();
    ::close(fds[0]);
    ASSERT_TRUE(t) << (gz ? "gzip: " : "plain: ") << t.error().message;
    EXPECT_EQ(t->kernels, 1u);
    EXPECT_EQ(t->rows[0].op, "aten::mm");
  }
}

TEST_F(KinetoInputs, FifoWithoutWriterDoesNotHang) {
  const std::string p = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  auto t = table(p);  // the old reader blocked forever in open()
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("empty"), std::string::npos) << t.error().message;
}

TEST_F(KinetoInputs, FoldersAndDevicesAreRefusedInOneLine) {
  fs::create_directories(dir_ / "empty");
  auto e = table((dir_ / "empty").string());
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("no jouleprof trace files"), std::string::npos) << e.error().message;
  auto z = table("/dev/zero");
  ASSERT_FALSE(z);
  EXPECT_NE(z.error().message.find("character device"), std::string::npos) << z.error().message;
  EXPECT_EQ(z.error().message.find('\n'), std::string::npos);
  // Rules files: a folder or a device is not a rules file.
  for (const std::string& p : {(dir_ / "empty").string(), std::string("/dev/zero")}) {
    auto k = KernelClassifier::load(p);
    ASSERT_FALSE(k) << p;
    EXPECT_EQ(k.error().message.find('\n'), std::string::npos);
  }
}

TEST_F(KinetoInputs, LongNamesAreClassifiedInLinearTime) {
  // std::regex recursed per character: a 40 000-character name overflowed the stack (SIGSEGV).
  const std::string name40k(40000, 'x');
  auto t = table(write("t.json", trace(kernel(name40k, R"("grid": [1, 1, 1])"))));
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0].kclass, "other");
  // Megabyte names: linear (std::regex took ~1 s per MB, RE2 milliseconds).
  const std::string big = std::string(4u << 20, 'y') + "gemm";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(rules().classes.classify(big), "gemm");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  // A name over 1 MiB makes its event unreadable: skipped and counted.
  auto l = table(write("l.json", trace(kernel(std::string((1u << 20) + 1, 'z'), R"("grid": [1, 1, 1])") + ", " +
                                      kernel("short", R"("grid": [1, 1, 1])", 2))));
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->kernels, 1u);
  EXPECT_TRUE(has_warning(*l, "longer than 1 MiB"));
}

TEST_F(KinetoInputs, OversizedEventInAGzipIsRefusedEarly) {
  // A small gzip holding one huge name: refused once the event passes 64 MiB, not read whole.
  const std::string p = (dir_ / "bomb.json.gz").string();
  gzFile f = gzopen(p.c_str(), "wb1");
  const std::string head = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": ")";
  gzwrite(f, head.data(), static_cast<unsigned>(head.size()));
  const std::string block(1u << 20, 'x');
  for (int i = 0; i < 80; ++i) gzwrite(f, block.data(), static_cast<unsigned>(block.size()));
  gzclose(f);
  EXPECT_LT(fs::file_size(p), 1u << 20);
  auto t = table(p);
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("larger than 64 MiB"), std::string::npos) << t.error().message;
}

#ifdef JOULEPROF_HAVE_RAPIDCHECK
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

// Any arg value of any type on any event: the file is read (events skipped and counted) and the
// table never holds a negative launch value.
RC_GTEST_PROP(KinetoInputsProperty, HostileArgValuesAreSkippedNeverTabled, ()) {
  static const std::vector<std::string> values = {R"J("grid(100,)")J", "-1", "1.5", "1e400", "null", "true", "[]", "[1, 2]", "[-1, 1, 1]",
                                                  R"([1, "a", 1])", "{}", R"({"a": [1]})", "9223372036854775808", "4294967296", "7"};
  static const std::vector<std::string> fields = {"grid", "block", "registers per thread", "shared memory", "External id",
                                                  "correlation", "device", "bytes", "graph id", "Input Dims", "Input type"};
  static const std::vector<std::string> cats = {"kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "gpu_memset", "user_annotation"};
  const int n = *rc::gen::inRange(1, 30);
  std::string events;
  for (int i = 0; i < n; ++i) {
    const std::string cat = cats[*rc::gen::inRange<std::size_t>(0, cats.size())];
    std::string args;
    const int m = *rc::gen::inRange(0, 4);
    for (int a = 0; a < m; ++a) {
      args += (a ? ", \"" : "\"") + fields[*rc::gen::inRange<std::size_t>(0, fields.size())] + "\": " +
              values[*rc::gen::inRange<std::size_t>(0, values.size())];
    }
    events += (i ? ", " : "") + std::string(R"({"ph": "X", "cat": ")") + cat + R"(", "name": "e)" + std::to_string(i) +
              R"(", "ts": )" + std::to_string(i) + R"(, "dur": 1, "args": {)" + args + "}}";
  }
  const fs::path p = fs::temp_directory_path() / ("jp-kineto-prop-" + std::to_string(getpid()) + ".json");
  std::ofstream(p, std::ios::binary) << trace(events);
  auto t = read_kernel_table({p.string()}, rules().opts());
  fs::remove(p);
  if (!t) RC_FAIL(t.error().message);
  for (const auto& r : t->rows) {
    for (int d = 0; d < 3; ++d) RC_ASSERT(r.grid[d] >= 0 && r.block[d] >= 0);
  }
  RC_ASSERT(t->kernels + t->memcpys + t->memsets + t->skipped_events <= static_cast<uint64_t>(n));
}
#endif
