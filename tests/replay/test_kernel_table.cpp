// Kernel tables from real PyTorch profiler traces (tests/data/replay: two-layer Llama generate,
// gzip; two-layer BLOOM forward, plain; made on an H100 with PyTorch 2.11 by
// scripts/validation/replay/hf_models.py), checked against an independent parse (nlohmann).
#include <gtest/gtest.h>
#include <zlib.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "jouleprof/replay/kernel_table.hpp"
#include "jouleprof/trace/format.hpp"

#ifdef JOULEPROF_HAVE_RAPIDCHECK
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#endif

namespace fs = std::filesystem;
using namespace jouleprof;

namespace {

const std::string kData = JOULEPROF_REPLAY_DATA;
const std::string kLlama = kData + "/llama_tiny_generate.json.gz";
const std::string kBloom = kData + "/bloom_tiny_forward.json";

std::string read_any(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files too
  std::string out;
  char buf[65536];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  return out;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("jouleprof-replay-test-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

struct Rules {
  KernelClassifier classes = KernelClassifier::load(std::string(JOULEPROF_SOURCE_DATA) + "/kernel-classes.tsv").value();
  KernelClassifier tiers = KernelClassifier::load(std::string(JOULEPROF_SOURCE_DATA) + "/replay-tiers.tsv").value();
  KernelTableOptions opts(std::size_t chunk = 16u << 20) const {
    KernelTableOptions o;
    o.classes = &classes;
    o.tiers = &tiers;
    o.chunk_bytes = chunk;
    return o;
  }
};

const Rules& rules() {
  static const Rules r;
  return r;
}

// Exact nanoseconds of a JSON number in microseconds, from its text (independent of the importer).
int64_t ns_of(const nlohmann::json& v) {
  std::string s = v.dump();
  const auto dot = s.find('.');
  std::string whole = dot == std::string::npos ? s : s.substr(0, dot);
  std::string frac = dot == std::string::npos ? "" : s.substr(dot + 1);
  frac = (frac + "000").substr(0, 3);
  return std::stoll(whole) * 1000 + std::stoll(frac);
}

struct Expected {
  uint64_t kernels = 0, memcpys = 0, memsets = 0;
  int64_t kernel_ns = 0, memcpy_ns = 0;
};

Expected independent(const std::string& path) {
  const auto j = nlohmann::json::parse(read_any(path));
  Expected e;
  for (const auto& ev : j["traceEvents"]) {
    const std::string cat = ev.value("cat", "");
    if (cat == "kernel") {
      ++e.kernels;
      e.kernel_ns += ns_of(ev["dur"]);
    } else if (cat == "gpu_memcpy") {
      ++e.memcpys;
      e.memcpy_ns += ns_of(ev["dur"]);
    } else if (cat == "gpu_memset") {
      ++e.memsets;
    }
  }
  return e;
}

Result<KernelTable> table(const std::string& path, std::size_t chunk = 16u << 20) { return read_kernel_table({path}, rules().opts(chunk)); }

}  // namespace

TEST(KernelTable, CountsAndTimesEqualTheTraceExactly) {
  for (const std::string& path : {kLlama, kBloom}) {
    SCOPED_TRACE(path);
    auto t = table(path);
    ASSERT_TRUE(t) << t.error().message;
    const Expected e = independent(path);
    EXPECT_EQ(t->kernels, e.kernels);
    EXPECT_EQ(t->memcpys, e.memcpys);
    EXPECT_EQ(t->memsets, e.memsets);
    EXPECT_EQ(t->kernel_ns, e.kernel_ns);
    EXPECT_EQ(t->memcpy_ns, e.memcpy_ns);
    uint64_t count = 0;
    int64_t ns = 0;
    for (const KernelRow& r : t->rows) {
      count += r.count;
      ns += r.total_ns;
      EXPECT_LE(r.min_ns, r.max_ns);
      EXPECT_FALSE(r.tier.empty());
    }
    EXPECT_EQ(count, e.kernels + e.memcpys + e.memsets);
    EXPECT_EQ(ns, t->gpu_ns());
    EXPECT_TRUE(t->shapes);
    EXPECT_EQ(t->gpus, std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
    EXPECT_LE(t->busy_ns, t->span_ns);
    EXPECT_GT(t->busy_ns, 0);
  }
}

TEST(KernelTable, EveryKernelFindsItsOp) {
  auto t = table(kLlama);
  ASSERT_TRUE(t);
  for (const KernelRow& r : t->rows) EXPECT_FALSE(r.op.empty()) << r.name;
}

TEST(KernelTable, GemmShapesFollowTheModelConfig) {
  // bloom-tiny: hidden 128, 4x hidden MLP, batch 2 x 32 tokens = 64 rows; every linear is an addmm.
  auto t = table(kBloom);
  ASSERT_TRUE(t);
  std::set<std::tuple<int64_t, int64_t, int64_t>> addmm;
  for (const KernelRow& r : t->rows) {
    if (r.op != "aten::addmm") continue;
    ASSERT_EQ(r.tier, "gemm");
    ASSERT_TRUE(r.gemm) << r.note;
    addmm.insert({r.gemm->m, r.gemm->n, r.gemm->k});
    EXPECT_EQ(r.gemm->dtype_a, "bf16");
    EXPECT_TRUE(r.gemm->trans_b);  // nn.Linear multiplies by the weight's transpose
    EXPECT_TRUE(r.gemm->accumulate);
  }
  const std::set<std::tuple<int64_t, int64_t, int64_t>> want = {{64, 384, 128}, {64, 128, 128}, {64, 512, 128}, {64, 128, 512}};
  EXPECT_EQ(addmm, want);
  // The attention scores: baddbmm over batch x heads = 8, 32 x 32 x (128 / 4).
  bool saw_baddbmm = false;
  for (const KernelRow& r : t->rows) {
    if (r.op == "aten::baddbmm" && r.gemm) {
      saw_baddbmm = true;
      EXPECT_EQ(r.gemm->batch, 8);
      EXPECT_EQ(r.gemm->m, 32);
      EXPECT_EQ(r.gemm->n, 32);
      EXPECT_EQ(r.gemm->k, 32);
    }
  }
  EXPECT_TRUE(saw_baddbmm);
}

TEST(KernelTable, LlamaTiersAttentionAndCopies) {
  // llama-tiny: hidden 256, 4 query / 2 KV heads of 64, prompt 16, batch 2; cuDNN SDPA.
  auto t = table(kLlama);
  ASSERT_TRUE(t);
  bool prefill = false;
  for (const KernelRow& r : t->rows) {
    if (r.kind != "kernel") {
      EXPECT_EQ(r.tier, "copy");
      EXPECT_FALSE(r.copy_kind.empty());
    }
    if (r.tier == "attention" && r.attention) {
      EXPECT_EQ(r.attention->batch, 2);
      EXPECT_EQ(r.attention->heads_q, 4);
      EXPECT_EQ(r.attention->head_dim, 64);
      if (r.attention->seq_q == 16) prefill = true;
    }
    if (r.op == "aten::mm") {
      ASSERT_TRUE(r.gemm);
      EXPECT_EQ(r.gemm->k % 256, 0);
    }
  }
  EXPECT_TRUE(prefill);
}

TEST(KernelTable, ChunkBoundariesDoNotChangeTheTable) {
  auto ref = table(kBloom);
  ASSERT_TRUE(ref);
  for (std::size_t chunk : {64u, 1000u, 4096u, 65536u}) {
    SCOPED_TRACE(chunk);
    auto t = table(kBloom, chunk);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(kernel_table_json(*t), kernel_table_json(*ref));
  }
}

TEST(KernelTable, BracesInsideStringsAndNestedArgs) {
  // Kernel names with "}, {" and nested objects in args must not cut an event.
  const std::string ev =
      R"({"ph": "X", "cat": "kernel", "name": "k}, {lambda()#1}, {", "ts": 10.5, "dur": 1.25, "args": {"External id": 1, "x": [{"a": 1}, {"b": "}, {"}], "grid": [1, 1, 1], "block": [32, 1, 1]}})";
  std::string text = R"({"traceEvents": [)";
  for (int i = 0; i < 50; ++i) text += (i > 0 ? ",\n  " : "") + ev;
  text += "], \"x\": {\"y\": [1, {\"z\": 2}]}}";
  const std::string p = temp_file("braces.json", text);
  for (std::size_t chunk : {64u, 100u, 333u, 1u << 20}) {
    auto t = table(p, chunk);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->kernels, 50u);
    EXPECT_EQ(t->kernel_ns, 50 * 1250);
    ASSERT_EQ(t->rows.size(), 1u);
    EXPECT_EQ(t->rows[0].name, "k}, {lambda()#1}, {");
  }
  fs::remove(p);
}

TEST(KernelTable, OlderKinetoKeysAndCorrelationLink) {
  // PyTorch < 1.11 style: capitalised categories, "external id"; a kernel without an External id
  // reaches its op through the runtime launch's correlation id.
  const std::string text = R"({"traceEvents": [
    {"ph": "X", "cat": "Kernel", "name": "gemm_a", "ts": 1, "dur": 2, "args": {"external id": 7, "correlation id": 11}},
    {"ph": "X", "cat": "Kernel", "name": "gemm_b", "ts": 5, "dur": 3, "args": {"correlation": 12}},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "ts": 4, "dur": 1, "args": {"correlation": 12, "External id": 8}},
    {"ph": "X", "cat": "Operator", "name": "aten::mm", "ts": 0, "dur": 9, "args": {"external id": 7, "Input dims": [[2, 3], [3, 4]], "Input type": ["float", "float"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::bmm", "ts": 3, "dur": 9, "args": {"External id": 8, "Input Dims": [[5, 2, 3], [5, 3, 4]], "Input type": ["c10::Half", "c10::Half"], "Input Strides": [[6, 3, 1], [12, 1, 3]]}}
  ]})";
  const std::string p = temp_file("old.json", text);
  auto t = table(p);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->rows.size(), 2u);
  for (const KernelRow& r : t->rows) {
    ASSERT_TRUE(r.gemm) << r.name << " " << r.note;
    EXPECT_EQ(r.gemm->m, 2);
    EXPECT_EQ(r.gemm->n, 4);
    EXPECT_EQ(r.gemm->k, 3);
    if (r.name == "gemm_b") {
      EXPECT_EQ(r.op, "aten::bmm");
      EXPECT_EQ(r.gemm->batch, 5);
      EXPECT_TRUE(r.gemm->trans_b);  // strides [12, 1, 3]: B stored transposed
      EXPECT_EQ(r.gemm->dtype_a, "fp16");
    } else {
      EXPECT_EQ(r.op, "aten::mm");
      EXPECT_EQ(r.gemm->dtype_a, "fp32");
    }
  }
  EXPECT_EQ(t->span_ns, 7000);
  EXPECT_EQ(t->busy_ns, 5000);
  fs::remove(p);
}

TEST(KernelTable, NoShapesSaysWhichTiersFallBack) {
  const std::string text = R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_64x8", "ts": 1, "dur": 2, "args": {"External id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 9, "args": {"External id": 1}}]})";
  const std::string p = temp_file("noshapes.json", text);
  auto t = table(p);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_FALSE(t->shapes);
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0].tier, "gemm");
  EXPECT_FALSE(t->rows[0].gemm);
  EXPECT_NE(t->rows[0].note.find("proxy"), std::string::npos);
  bool warned = false;
  for (const auto& w : t->warnings) warned |= w.find("record_shapes") != std::string::npos;
  EXPECT_TRUE(warned);
  fs::remove(p);
}

TEST(KernelTable, BadInputsAreOneLineErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty file"},
      {"[1, 2]", "not a Kineto"},
      {"{}", "no \"traceEvents\""},
      {"{\"a\": 1}", "no \"traceEvents\""},
      {"{\"traceEvents\": [{\"cat\": \"kernel\", \"ts\": 1, \"dur\": 2}", "truncated"},
      {"{\"traceEvents\": [{\"cat\": \"kernel\", \"ts\": 1, \"dur\": x}]}", "byte"},
      {"not json at all", "not a Kineto"},
  };
  for (const auto& [text, want] : cases) {
    SCOPED_TRACE(text);
    const std::string p = temp_file("bad.json", text);
    auto t = table(p);
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message.find(want), std::string::npos) << t.error().message;
    EXPECT_EQ(t.error().message.find('\n'), std::string::npos);
    fs::remove(p);
  }
  auto missing = table("/nonexistent/trace.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::not_found);
}

// Every proper prefix of a real trace is refused as truncated (never a crash, never a table that
// silently lost events); damaged bytes give an error or a table, never a crash.
TEST(KernelTable, TruncatedAndCorruptedTracesNeverCrash) {
  const std::string text = read_any(kBloom);
  std::mt19937 rng(18);
  for (int i = 0; i < 60; ++i) {
    const std::size_t cut = std::uniform_int_distribution<std::size_t>(0, text.size() - 3)(rng);
    std::string prefix = text.substr(0, cut);
    while (!prefix.empty() && std::isspace(static_cast<unsigned char>(prefix.back())) != 0) prefix.pop_back();
    if (!prefix.empty() && prefix.back() == '}' && prefix.size() + 3 >= text.size()) continue;  // the whole object
    const std::string p = temp_file("cut.json", prefix);
    auto t = table(p, 4096);
    EXPECT_FALSE(t) << "cut at " << cut;
    if (!t) {
      const std::string& m = t.error().message;
      EXPECT_TRUE(m.find("truncated") != std::string::npos || m.find("empty") != std::string::npos ||
                  m.find("invalid") != std::string::npos || m.find("traceEvents") != std::string::npos)
          << m;
    }
    fs::remove(p);
  }
  for (int i = 0; i < 60; ++i) {
    std::string bad = text;
    for (int k = 0; k < 4; ++k) {
      bad[std::uniform_int_distribution<std::size_t>(0, bad.size() - 1)(rng)] = static_cast<char>(rng() & 0xff);
    }
    const std::string p = temp_file("flip.json", bad);
    auto t = table(p, 4096);
    if (t) {
      EXPECT_LE(t->kernels, 200u);
    }
    fs::remove(p);
  }
}

#ifdef JOULEPROF_HAVE_RAPIDCHECK
namespace {
std::string pad3(int v) {
  std::string s = std::to_string(v);
  return std::string(3 - s.size(), '0') + s;
}
}  // namespace

RC_GTEST_PROP(KernelTable, SyntheticTracesCountExactly, ()) {
  const int n = *rc::gen::inRange(0, 300);
  const auto chunk = static_cast<std::size_t>(*rc::gen::inRange(64, 5000));
  std::string text = "{\"schemaVersion\": 1, \"traceEvents\": [";
  int64_t want_ns = 0;
  uint64_t want = 0;
  for (int i = 0; i < n; ++i) {
    const int dur = *rc::gen::inRange(0, 100000);
    const bool kernel = *rc::gen::arbitrary<bool>();
    const std::string ws = std::string(static_cast<std::size_t>(*rc::gen::inRange(0, 4)), *rc::gen::element(' ', '\n', '\t'));
    if (i > 0) text += "," + ws;
    text += "{\"ph\": \"X\", \"cat\": \"" + std::string(kernel ? "kernel" : "cpu_op") + "\", \"name\": \"k" + std::to_string(i % 7) +
            "}, {\\\"\", \"ts\": " + std::to_string(i * 200) + ".5, \"dur\": " + std::to_string(dur / 1000) + "." +
            pad3(dur % 1000) + ", \"args\": {\"External id\": " + std::to_string(i + 1) + "}}";
    if (kernel) {
      ++want;
      want_ns += dur;
    }
  }
  text += "]}";
  const std::string p = temp_file("prop.json", text);
  auto t = table(p, chunk);
  fs::remove(p);
  if (!t) RC_FAIL(t.error().message);
  RC_ASSERT(t->kernels == want);
  RC_ASSERT(t->kernel_ns == want_ns);
}
#endif

TEST(KernelTable, JouleprofTraceFiles) {
  using namespace trace_format;
  std::string buf;
  auto add = [&](RecordType type, const void* p, uint32_t n) {
    RecordHeader h{static_cast<uint16_t>(type), 0, n};
    buf.append(reinterpret_cast<const char*>(&h), sizeof h);
    buf.append(static_cast<const char*>(p), n);
  };
  FileHeader fh{};
  std::copy(kMagic, kMagic + 8, fh.magic);
  fh.version = kVersion;
  fh.header_size = sizeof fh;
  fh.pid = 42;
  buf.append(reinterpret_cast<const char*>(&fh), sizeof fh);
  const std::string name = "ampere_bf16_gemm_kernel";
  std::string s(4, '\0');
  const uint32_t id = 1;
  std::memcpy(s.data(), &id, 4);
  s += name;
  add(RecordType::string, s.data(), static_cast<uint32_t>(s.size()));
  for (int i = 0; i < 5; ++i) {
    KernelRecord k{};
    k.start_ns = 1000 + static_cast<uint64_t>(i) * 100;
    k.end_ns = k.start_ns + 40 + static_cast<uint64_t>(i);
    k.grid_x = k.grid_y = k.grid_z = k.block_x = k.block_y = k.block_z = 1;
    k.name_id = 1;
    add(RecordType::kernel, &k, sizeof k);
  }
  EndRecord e{};
  e.records = 5;
  add(RecordType::end, &e, sizeof e);
  const std::string p = temp_file("trace-42.jpt", buf);
  auto t = table(p);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, "jouleprof");
  EXPECT_EQ(t->kernels, 5u);
  EXPECT_EQ(t->kernel_ns, 5 * 40 + 10);
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0].tier, "gemm");
  EXPECT_FALSE(t->rows[0].gemm);  // no ops: a time-matched proxy, said so
  EXPECT_FALSE(t->rows[0].note.empty());
  fs::remove(p);
}

namespace {
std::string run_cli(const std::string& args, int& rc) {
  const std::string cmd = std::string(JOULEPROF_CLI) + " " + args + " 2>&1";
  std::FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  char b[4096];
  std::size_t n = 0;
  while ((n = std::fread(b, 1, sizeof b, f)) > 0) out.append(b, n);
  rc = WEXITSTATUS(pclose(f));
  return out;
}
}  // namespace

TEST(KernelsCli, JsonCsvAndErrors) {
  int rc = 0;
  const std::string json = run_cli("kernels " + kLlama + " -q --json -", rc);
  ASSERT_EQ(rc, 0) << json;
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["schema"], "jouleprof.kernels");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["totals"]["kernels"].get<uint64_t>(), independent(kLlama).kernels);
  EXPECT_FALSE(j["kernels"].empty());
  const std::string csv = run_cli("kernels " + kBloom + " -q --csv -", rc);
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(csv.rfind("name,kind,class,tier", 0), 0u);
  const std::string text = run_cli("kernels " + kBloom, rc);
  ASSERT_EQ(rc, 0);
  EXPECT_NE(text.find("gemm"), std::string::npos);
  const std::string missing = run_cli("kernels /nonexistent.json", rc);
  EXPECT_EQ(rc, 2);
  EXPECT_EQ(missing.rfind("jouleprof: error: ", 0), 0u) << missing;
  const std::string p = temp_file("cli-bad.json", "{\"traceEvents\": [{\"cat\": \"kernel\"");
  const std::string bad = run_cli("kernels " + p, rc);
  EXPECT_EQ(rc, 2) << bad;
  EXPECT_NE(bad.find("truncated"), std::string::npos) << bad;
  EXPECT_EQ(std::count(bad.begin(), bad.end(), '\n'), 1) << bad;
  fs::remove(p);
}

TEST(KernelTable, GuessInsideAStringFallsBackToExactCuts) {
  const std::string p = temp_file("one.json", R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k0}, {\"", "ts": 0.5, "dur": 0.001, "args": {"External id": 1}}]})");
  for (std::size_t chunk : {64u, 100u, 1u << 20}) {
    auto t = table(p, chunk);
    ASSERT_TRUE(t) << chunk << ": " << t.error().message;
    EXPECT_EQ(t->kernels, 1u);
    EXPECT_EQ(t->kernel_ns, 1);
  }
  fs::remove(p);
}
