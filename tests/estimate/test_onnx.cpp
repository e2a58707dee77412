// ONNX import: real exports (torchvision via torch.onnx on the device machine, weights
// stripped) against the built-in builders, hand-made models, bad input, and property tests of
// the protobuf reader.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "jouleprof/estimate/builders.hpp"
#include "jouleprof/estimate/onnx.hpp"
#ifdef JOULEPROF_HAVE_RAPIDCHECK
#include <rapidcheck.h>
#endif

using namespace jouleprof::estimate;
using detail::PbWriter;

namespace {
std::string fixture(const char* f) { return std::string(JOULEPROF_ESTIMATE_FIXTURES) + "/" + f; }
double conv_matmul_flops(const Graph& g) {
  double f = 0;
  for (const Op& o : g.ops) f += o.matrix_flops;
  return f;
}

// --- a tiny ONNX writer for hand-made models ---
PbWriter value_info(const std::string& name, const std::vector<int64_t>& dims, const std::vector<std::string>& params = {}) {
  PbWriter shape;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    PbWriter d;
    if (i < params.size() && !params[i].empty()) d.bytes(2, params[i]);
    else d.varint(1, static_cast<uint64_t>(dims[i]));
    shape.message(1, d);
  }
  PbWriter tt;
  tt.varint(1, 1);  // FLOAT
  tt.message(2, shape);
  PbWriter type;
  type.message(1, tt);
  PbWriter vi;
  vi.bytes(1, name);
  vi.message(2, type);
  return vi;
}
PbWriter initializer(const std::string& name, const std::vector<int64_t>& dims) {
  PbWriter t;
  t.packed_varints(1, dims);
  t.varint(2, 1);
  t.bytes(8, name);
  return t;
}
PbWriter node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out) {
  PbWriter n;
  for (const auto& i : in) n.bytes(1, i);
  for (const auto& o : out) n.bytes(2, o);
  n.bytes(3, op + "_" + out[0]);
  n.bytes(4, op);
  return n;
}
std::string model(const PbWriter& graph) {
  PbWriter m;
  m.varint(1, 8);
  m.message(7, graph);
  return m.data();
}
// x[B,K0] -> MatMul W0[K0,K1] -> Relu -> MatMul W1[K1,K2] ...
std::string mlp(const std::vector<int64_t>& widths, int64_t batch, const std::string& batch_param = "") {
  PbWriter g;
  g.bytes(2, "mlp");
  g.message(11, value_info("x", {batch, widths[0]}, {batch_param}));
  std::string cur = "x";
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    const std::string w = "w" + std::to_string(i), y = "y" + std::to_string(i), r = "r" + std::to_string(i);
    g.message(5, initializer(w, {widths[i], widths[i + 1]}));
    g.message(1, node("MatMul", {cur, w}, {y}));
    g.message(1, node("Relu", {y}, {r}));
    cur = r;
  }
  g.message(12, value_info(cur, {batch, widths.back()}));
  return model(g);
}
}  // namespace

TEST(EstimateOnnx, TorchvisionExportsMatchTheBuilders) {
  OnnxOptions o;
  ModelOptions mo;
  for (const char* name : {"resnet50", "mobilenet_v2", "vit_b_16"}) {
    auto imported = import_onnx_file(fixture((std::string(name) + ".onnx").c_str()), o);
    ASSERT_TRUE(imported) << name << ": " << imported.error().message;
    auto built = build_model(name, mo);
    ASSERT_TRUE(built);
    const double a = conv_matmul_flops(*imported), b = conv_matmul_flops(*built);
    EXPECT_NEAR(a / b, 1.0, 0.002) << name << " imported " << a << " built " << b;
    EXPECT_NEAR(imported->weight_bytes() / built->weight_bytes(), 1.0, 0.02) << name;
  }
}

TEST(EstimateOnnx, HandMadeMlpFlopsAndBytes) {
  auto g = import_onnx(mlp({64, 128, 32}, 8), "mlp.onnx", {});
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_DOUBLE_EQ(conv_matmul_flops(*g), 2.0 * 8 * (64 * 128 + 128 * 32));
  EXPECT_DOUBLE_EQ(g->weight_bytes(), 2.0 * (64 * 128 + 128 * 32));  // costed at bf16
}

TEST(EstimateOnnx, DynamicDimensionNeedsAValue) {
  const std::string m = mlp({16, 16}, 1, "batch");
  auto g = import_onnx(m, "dyn.onnx", {});
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("--dim batch=VALUE"), std::string::npos) << g.error().message;
  OnnxOptions o;
  o.dims["batch"] = 32;
  g = import_onnx(m, "dyn.onnx", o);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_DOUBLE_EQ(conv_matmul_flops(*g), 2.0 * 32 * 16 * 16);
}

TEST(EstimateOnnx, UnsupportedOpsAreListedOrEstimatedByFallback) {
  PbWriter g;
  g.message(11, value_info("x", {4, 4}));
  g.message(1, node("FancyOp", {"x"}, {"y"}));
  g.message(1, node("FancyOp", {"y"}, {"z"}));
  g.message(1, node("OtherOp", {"z"}, {"w"}));
  g.message(13, value_info("y", {4, 4}));
  g.message(13, value_info("z", {4, 4}));
  g.message(12, value_info("w", {4, 4}));
  const std::string m = model(g);
  auto r = import_onnx(m, "u.onnx", {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("FancyOp (2)"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("OtherOp (1)"), std::string::npos);
  OnnxOptions o;
  o.fallback = true;
  r = import_onnx(m, "u.onnx", o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ops.size(), 3u);
}

TEST(EstimateOnnx, MalformedInputIsAnErrorNotACrash) {
  EXPECT_FALSE(import_onnx("", "e.onnx", {}));
  EXPECT_FALSE(import_onnx("\x3a\xff\xff\xff\xff\x0f", "t.onnx", {}));  // graph field longer than the file
  std::string m = mlp({8, 8}, 2);
  EXPECT_FALSE(import_onnx(m.substr(0, m.size() / 2), "half.onnx", {}));
  PbWriter g;  // a node reading an undefined tensor
  g.message(11, value_info("x", {2, 2}));
  g.message(1, node("Relu", {"nope"}, {"y"}));
  auto r = import_onnx(model(g), "undef.onnx", {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'nope'"), std::string::npos);
  EXPECT_FALSE(import_onnx_file("/nonexistent.onnx", {}));
}

#ifdef JOULEPROF_HAVE_RAPIDCHECK
TEST(EstimateOnnx, PropertyRandomBytesNeverCrash) {
  const bool ok = rc::check("import_onnx on arbitrary bytes returns a value or an error", [](const std::string& bytes) {
    auto r = import_onnx(bytes, "fuzz.onnx", {});
    const bool fine = r.ok() || !r.error().message.empty();  // (RC_ASSERT does not short-circuit ||)
    RC_ASSERT(fine);
  });
  EXPECT_TRUE(ok);
}

TEST(EstimateOnnx, PropertyMutatedModelsNeverCrash) {
  const std::string base = mlp({16, 32, 8}, 4);
  const bool ok = rc::check("byte flips in a valid model give a value or an error", [&](std::size_t pos, uint8_t v) {
    std::string m = base;
    m[pos % m.size()] = static_cast<char>(v);
    auto r = import_onnx(m, "mut.onnx", {});
    const bool fine = r.ok() || !r.error().message.empty();
    RC_ASSERT(fine);
  });
  EXPECT_TRUE(ok);
}

TEST(EstimateOnnx, PropertyMlpRoundTrip) {
  const bool ok = rc::check("an MLP written as ONNX imports with 2*B*sum(K*N) FLOPs", [] {
    const auto widths = *rc::gen::container<std::vector<int64_t>>(*rc::gen::inRange<std::size_t>(2, 6), rc::gen::inRange<int64_t>(1, 300));
    const int64_t batch = *rc::gen::inRange<int64_t>(1, 64);
    auto g = import_onnx(mlp(widths, batch), "rt.onnx", {});
    RC_ASSERT(g.ok());
    double expect = 0;
    for (std::size_t i = 0; i + 1 < widths.size(); ++i) expect += 2.0 * static_cast<double>(batch * widths[i] * widths[i + 1]);
    RC_ASSERT(conv_matmul_flops(*g) == expect);
  });
  EXPECT_TRUE(ok);
}
#endif
