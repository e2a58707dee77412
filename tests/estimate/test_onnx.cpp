// ONNX import: real exports (torchvision via torch.onnx on the device machine, weights
// stripped) against the built-in builders, hand-made models built with ONNX's generated
// protobuf classes (onnx_models.hpp), shapes from ONNX's shape inference, bad input, and an MLP
// round-trip property. The loader's never-crash properties are in tests/fuzz/test_properties_onnx.cpp
// (run under ASan/UBSan by scripts/asan-fuzz.sh).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/wait.h>

#include "jouleprof/estimate/builders.hpp"
#include "jouleprof/estimate/onnx.hpp"
#include "onnx_models.hpp"
#ifdef JOULEPROF_HAVE_RAPIDCHECK
#include <rapidcheck.h>
#endif

using namespace jouleprof::estimate;
using namespace jp_onnx_test;

namespace {
std::string fixture(const char* f) { return std::string(JOULEPROF_ESTIMATE_FIXTURES) + "/" + f; }
double conv_matmul_flops(const Graph& g) {
  double f = 0;
  for (const Op& o : g.ops) f += o.matrix_flops;
  return f;
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

TEST(EstimateOnnx, ExportsWithoutDeclaredShapesGiveTheSameGraph) {
  // The fixtures carry onnx.shape_inference's value_info; without it ONNX's inference in the
  // importer must give the same graph.
  for (const char* name : {"resnet50", "mobilenet_v2", "vit_b_16"}) {
    const std::string bytes = read_file(fixture((std::string(name) + ".onnx").c_str()));
    auto with = import_onnx(bytes, name, {});
    auto without = import_onnx(without_value_info(bytes), name, {});
    ASSERT_TRUE(with) << with.error().message;
    ASSERT_TRUE(without) << name << ": " << without.error().message;
    ASSERT_EQ(with->tensors.size(), without->tensors.size()) << name;
    ASSERT_EQ(with->ops.size(), without->ops.size()) << name;
    for (std::size_t i = 0; i < with->tensors.size(); ++i) {
      EXPECT_EQ(with->tensors[i].shape, without->tensors[i].shape) << name << " " << with->tensors[i].name;
    }
    EXPECT_DOUBLE_EQ(with->total_flops(), without->total_flops()) << name;
    EXPECT_DOUBLE_EQ(with->unfused_bytes(), without->unfused_bytes()) << name;
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
  EXPECT_EQ(g->tensors[static_cast<std::size_t>(g->outputs.at(0))].shape, (Shape{32, 16}));
}

TEST(EstimateOnnx, ShapesComeFromOnnxShapeInference) {
  // Pad has no rule of its own in the importer: its output shape is ONNX's.
  auto g = import_onnx(padded(17, false), "pad.onnx", {});
  ASSERT_TRUE(g) << g.error().message;
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->tensors[static_cast<std::size_t>(g->outputs[0])].shape, (Shape{1, 2, 6, 6}));
}

TEST(EstimateOnnx, OpsetNewerThanOnnxInfersNeedsDeclaredShapes) {
  auto g = import_onnx(padded(99, false), "new.onnx", {});
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("opset 99"), std::string::npos) << g.error().message;
  EXPECT_NE(g.error().message.find("opset <= 17"), std::string::npos) << g.error().message;
  g = import_onnx(padded(99, true), "new.onnx", {});
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->tensors[static_cast<std::size_t>(g->outputs.at(0))].shape, (Shape{1, 2, 6, 6}));
}

TEST(EstimateOnnx, UnsupportedOpsAreListedOrEstimatedByFallback) {
  onnx::GraphProto g;
  *g.add_input() = value_info("x", {4, 4});
  *g.add_node() = node("FancyOp", {"x"}, {"y"});
  *g.add_node() = node("FancyOp", {"y"}, {"z"});
  *g.add_node() = node("OtherOp", {"z"}, {"w"});
  *g.add_value_info() = value_info("y", {4, 4});
  *g.add_value_info() = value_info("z", {4, 4});
  *g.add_output() = value_info("w", {4, 4});
  const std::string m = model(g);
  auto r = import_onnx(m, "u.onnx", {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, jouleprof::Errc::unsupported);
  EXPECT_NE(r.error().message.find("FancyOp (2)"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("OtherOp (1)"), std::string::npos);
  OnnxOptions o;
  o.fallback = true;
  r = import_onnx(m, "u.onnx", o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ops.size(), 3u);
}

TEST(EstimateOnnx, InputsThatCrashOnnx112AreErrors) {
  // A custom op without a declared output shape followed by Shape: ONNX 1.12's Shape data
  // propagator dereferences the missing type.
  onnx::GraphProto g;
  *g.add_input() = value_info("x", {4, 4});
  *g.add_node() = node("FancyOp", {"x"}, {"y"});
  *g.add_node() = node("Shape", {"y"}, {"s"});
  *g.add_node() = node("Reshape", {"x", "s"}, {"z"});
  *g.add_output() = value_info("z", {4, 4});
  auto r = import_onnx(model(g), "custom.onnx", {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("FancyOp (1)"), std::string::npos) << r.error().message;
  // A zero stride: ONNX 1.12's Conv inference divides by it.
  onnx::GraphProto c;
  *c.add_input() = value_info("x", {1, 3, 8, 8});
  *c.add_initializer() = initializer("w", {4, 3, 3, 3});
  onnx::NodeProto conv = node("Conv", {"x", "w"}, {"y"});
  auto* st = conv.add_attribute();
  st->set_name("strides");
  st->set_type(onnx::AttributeProto::INTS);
  st->add_ints(0);
  st->add_ints(1);
  *c.add_node() = conv;
  r = import_onnx(model(c), "stride.onnx", {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("must be positive"), std::string::npos) << r.error().message;
}

TEST(EstimateOnnx, LargeModelsAndExternalData) {
  // Over protobuf's old 64 MB default limit: one 72 MB weight carried inline.
  onnx::GraphProto g;
  *g.add_input() = value_info("x", {1, 4096});
  onnx::TensorProto w = initializer("w", {4096, 4375});
  w.set_raw_data(std::string(std::size_t{4096} * 4375 * 4, '\0'));
  *g.add_initializer() = std::move(w);
  // A weight in an external data file: only its shape is used, the file is never opened.
  onnx::TensorProto e = initializer("e", {4375, 16});
  e.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = e.add_external_data();
  loc->set_key("location");
  loc->set_value("weights.bin");
  *g.add_initializer() = e;
  *g.add_node() = node("MatMul", {"x", "w"}, {"y"});
  *g.add_node() = node("MatMul", {"y", "e"}, {"z"});
  *g.add_output() = value_info("z", {1, 16});
  const std::string bytes = model(g);
  ASSERT_GT(bytes.size(), 64u << 20);
  auto r = import_onnx(bytes, "big.onnx", {});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_DOUBLE_EQ(conv_matmul_flops(*r), 2.0 * 4096 * 4375 + 2.0 * 4375 * 16);
}

TEST(EstimateOnnx, MalformedInputIsAnErrorNotACrash) {
  EXPECT_FALSE(import_onnx("", "e.onnx", {}));
  EXPECT_FALSE(import_onnx("\x3a\xff\xff\xff\xff\x0f", "t.onnx", {}));  // graph field longer than the file
  EXPECT_FALSE(import_onnx("not an onnx file at all\n", "text.onnx", {}));
  std::string m = mlp({8, 8}, 2);
  auto r = import_onnx(m.substr(0, m.size() / 2), "half.onnx", {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, jouleprof::Errc::parse);
  EXPECT_NE(r.error().message.find("half.onnx: malformed ONNX"), std::string::npos) << r.error().message;

  onnx::GraphProto g;  // a node reading an undefined tensor
  *g.add_input() = value_info("x", {2, 2});
  *g.add_node() = node("Relu", {"nope"}, {"y"});
  r = import_onnx(model(g), "undef.onnx", {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'nope'"), std::string::npos);
  EXPECT_FALSE(import_onnx_file("/nonexistent.onnx", {}));

  onnx::ModelProto no_opset;  // every model names its opset
  no_opset.set_ir_version(8);
  *no_opset.mutable_graph()->add_input() = value_info("x", {2, 2});
  *no_opset.mutable_graph()->add_node() = node("Relu", {"x"}, {"y"});
  r = import_onnx(no_opset.SerializeAsString(), "noopset.onnx", {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("opset"), std::string::npos) << r.error().message;

  onnx::GraphProto bad_raw;  // raw_data shorter than its shape (ONNX would read past it)
  *bad_raw.add_input() = value_info("x", {1, 2, 4, 4});
  onnx::TensorProto pads = int_tensor("pads", {});
  pads.clear_dims();
  pads.add_dims(8);
  pads.set_raw_data(std::string(9, '\1'));
  *bad_raw.add_initializer() = pads;
  *bad_raw.add_node() = node("Pad", {"x", "pads"}, {"y"});
  r = import_onnx(model(bad_raw), "raw.onnx", {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("9 bytes of raw_data"), std::string::npos) << r.error().message;

  onnx::GraphProto neg;  // a negative dimension
  *neg.add_input() = value_info("x", {2, 2});
  *neg.add_initializer() = initializer("w", {2, -2});
  *neg.add_node() = node("MatMul", {"x", "w"}, {"y"});
  r = import_onnx(model(neg), "neg.onnx", {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("invalid shape"), std::string::npos) << r.error().message;

  onnx::GraphProto clash;  // a declared shape that contradicts ONNX's inference
  *clash.add_input() = value_info("x", {2, 8});
  *clash.add_node() = node("Relu", {"x"}, {"y"});
  *clash.add_output() = value_info("y", {3, 8});
  r = import_onnx(model(clash), "clash.onnx", {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("ONNX shape inference failed"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
}

TEST(EstimateOnnx, BadInputPrintsNothing) {
  // protobuf logs to stderr by default and ONNX may too: nothing may reach fd 2.
  std::fflush(stderr);
  const int saved = dup(2);
  std::FILE* tmp = std::tmpfile();
  ASSERT_NE(tmp, nullptr);
  dup2(fileno(tmp), 2);
  const std::string base = read_file(fixture("mobilenet_v2.onnx"));
  int errors = 0;
  for (std::size_t i = 0; i < 400; ++i) {
    std::string m = base;
    m[(i * 7919) % m.size()] = static_cast<char>(i * 31);
    errors += import_onnx(m, "flip.onnx", {}).ok() ? 0 : 1;
    errors += import_onnx(base.substr(0, (i * 104729) % base.size()), "cut.onnx", {}).ok() ? 0 : 1;
  }
  errors += import_onnx(padded(17, false).substr(3), "shift.onnx", {}).ok() ? 0 : 1;
  std::fflush(stderr);
  std::cerr.flush();
  dup2(saved, 2);
  close(saved);
  std::fseek(tmp, 0, SEEK_END);
  const long printed = std::ftell(tmp);
  std::string text(static_cast<std::size_t>(std::min<long>(printed, 2000)), '\0');
  std::rewind(tmp);
  const std::size_t got = std::fread(text.data(), 1, text.size(), tmp);
  text.resize(got);
  std::fclose(tmp);
  EXPECT_EQ(printed, 0) << text;
  EXPECT_GT(errors, 0);
}

TEST(EstimateOnnx, CliGivesOneLineErrors) {
  const auto dir = std::filesystem::temp_directory_path() / ("jouleprof-onnx-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string vit = read_file(fixture("vit_b_16.onnx"));
  struct Case {
    std::string file, bytes, args;
    std::string pattern;
  } cases[] = {
      {"cut.onnx", vit.substr(0, vit.size() / 3), "", "malformed ONNX"},
      {"text.onnx", "hello\n", "", "malformed ONNX"},
      {"dyn.onnx", mlp({16, 16}, 1, "batch"), "", "--dim batch=VALUE"},
      {"new.onnx", padded(99, false), "", "opset 99"},
  };
  for (const auto& c : cases) {
    const auto path = (dir / c.file).string();
    std::ofstream(path, std::ios::binary) << c.bytes;
    const std::string cmd = std::string("JOULEPROF_DATA_DIR=") + JOULEPROF_DATA + " " + JOULEPROF_CLI +
                            " estimate --hw h100-sxm --model " + path + " " + c.args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string text;
    std::array<char, 4096> buf{};
    while (fgets(buf.data(), buf.size(), p)) text += buf.data();
    const int st = pclose(p);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0) << c.file << ": " << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << c.file << ": " << text;
    EXPECT_NE(text.find("jouleprof: error:"), std::string::npos) << text;
    EXPECT_NE(text.find(c.pattern), std::string::npos) << c.file << ": " << text;
  }
  std::filesystem::remove_all(dir);
}

#ifdef JOULEPROF_HAVE_RAPIDCHECK
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
