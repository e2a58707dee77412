// Fuzz properties of the ONNX loader (issue 22): arbitrary bytes, byte flips, truncations and
// structural mutations (op types, attributes, wiring, shapes, opset) of valid models, built here
// with ONNX's generated classes or taken from the estimate fixtures. Whatever the input, the
// loader returns a graph or a one-line error: no crash, abort or hang. The inputs that crashed
// ONNX or the loader are kept in tests/fuzz/corpus/onnx and replayed every run. Run under
// ASan/UBSan by scripts/asan-fuzz.sh.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <filesystem>
#include <string>
#include <vector>

#include "estimate/onnx_models.hpp"
#include "jouleprof/estimate/onnx.hpp"

using namespace jouleprof::estimate;
using namespace jp_onnx_test;

namespace {

std::string fixture(const char* f) { return std::string(JOULEPROF_SOURCE_DIR) + "/tests/estimate/fixtures/" + f; }

// Uniform over [lo, hi) from the first case on (inRange alone starts small and grows with
// rapidcheck's size: positions near the start of the file, the first model only).
std::size_t uniform(std::size_t lo, std::size_t hi) { return *rc::gen::resize(100, rc::gen::inRange<std::size_t>(lo, hi)); }

}  // namespace

TEST(OnnxFuzz, PropertyRandomBytesNeverCrash) {
  const bool ok = rc::check("import_onnx on arbitrary bytes returns a value or a one-line error", [](const std::string& bytes) {
    RC_ASSERT(error_or_graph(import_onnx(bytes, "fuzz.onnx", {})));
  });
  EXPECT_TRUE(ok);
}

TEST(OnnxFuzz, PropertyMutatedModelsNeverCrash) {
  const std::vector<std::string> bases = {mlp({16, 32, 8}, 4), padded(17, false), read_file(fixture("mobilenet_v2.onnx")),
                                          read_file(fixture("vit_b_16.onnx"))};
  const bool ok = rc::check("byte flips in a valid model give a value or an error", [&] {
    std::string m = bases[uniform(0, bases.size())];
    const std::size_t flips = uniform(1, 4);
    for (std::size_t i = 0; i < flips; ++i) m[uniform(0, m.size())] = static_cast<char>(uniform(0, 256));
    RC_ASSERT(error_or_graph(import_onnx(m, "mut.onnx", {})));
  });
  EXPECT_TRUE(ok);
}

TEST(OnnxFuzz, PropertyTruncatedModelsNeverCrash) {
  const std::vector<std::string> bases = {mlp({16, 32, 8}, 4), read_file(fixture("vit_b_16.onnx"))};
  const bool ok = rc::check("a truncated model gives a value or an error", [&] {
    const std::string& m = bases[uniform(0, bases.size())];
    RC_ASSERT(error_or_graph(import_onnx(m.substr(0, uniform(0, m.size())), "cut.onnx", {})));
  });
  EXPECT_TRUE(ok);
}

TEST(OnnxFuzz, PropertyStructurallyMutatedModelsNeverCrash) {
  // Byte flips mostly break names; these mutate what ONNX's inference functions read: op types,
  // attribute values (0 and negative included), wiring, weight and declared shapes, the opset.
  const std::vector<std::string> bases = {mlp({16, 32, 8}, 4), padded(17, false), read_file(fixture("mobilenet_v2.onnx")),
                                          without_value_info(read_file(fixture("vit_b_16.onnx")))};
  std::vector<std::string> ops = onnx_supported_ops();
  for (const char* extra : {"TopK", "ConvTranspose", "InstanceNormalization", "If", "Scan", "Einsum", "NonZero"}) ops.emplace_back(extra);
  const std::vector<std::string> attrs = {"axis", "axes", "perm", "pads", "strides", "kernel_shape", "dilations", "group",
                                          "keepdims", "to", "split", "transA", "transB", "auto_pad", "ceil_mode", "start",
                                          "end", "allowzero", "value_ints", "value_int", "value"};
  const bool ok = rc::check("structural mutations give a value or an error", [&] {
    onnx::ModelProto m;
    RC_ASSERT(m.ParseFromString(bases[uniform(0, bases.size())]));
    auto* g = m.mutable_graph();
    const auto small = [] { return static_cast<int64_t>(uniform(0, 12)) - 4; };
    for (std::size_t k = uniform(1, 5); k > 0; --k) {
      auto* n = g->mutable_node(static_cast<int>(uniform(0, static_cast<std::size_t>(g->node_size()))));
      switch (uniform(0, 7)) {
        case 0: n->set_op_type(ops[uniform(0, ops.size())]); break;
        case 1: {
          auto* a = n->add_attribute();
          a->set_name(attrs[uniform(0, attrs.size())]);
          if (uniform(0, 2)) {
            a->set_type(onnx::AttributeProto::INT);
            a->set_i(small());
          } else {
            a->set_type(onnx::AttributeProto::INTS);
            for (std::size_t j = uniform(0, 6); j > 0; --j) a->add_ints(small());
          }
          break;
        }
        case 2:
          if (n->input_size() > 0) {
            const auto& src = g->node(static_cast<int>(uniform(0, static_cast<std::size_t>(g->node_size()))));
            if (src.output_size() > 0) n->set_input(static_cast<int>(uniform(0, static_cast<std::size_t>(n->input_size()))), src.output(0));
          }
          break;
        case 3:
          if (uniform(0, 2) && n->input_size() > 0) n->mutable_input()->RemoveLast();
          else if (n->output_size() > 0) n->mutable_output()->RemoveLast();
          break;
        case 4:
          if (g->initializer_size() > 0) {
            auto* t = g->mutable_initializer(static_cast<int>(uniform(0, static_cast<std::size_t>(g->initializer_size()))));
            if (t->dims_size() > 0) t->set_dims(static_cast<int>(uniform(0, static_cast<std::size_t>(t->dims_size()))), small());
          }
          break;
        case 5: {
          auto* sh = g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
          if (sh->dim_size() > 0) sh->mutable_dim(static_cast<int>(uniform(0, static_cast<std::size_t>(sh->dim_size()))))->set_dim_value(small());
          break;
        }
        default: m.mutable_opset_import(0)->set_version(static_cast<int64_t>(uniform(0, 20))); break;
      }
    }
    RC_ASSERT(error_or_graph(import_onnx(m.SerializeAsString(), "mut.onnx", {})));
  });
  EXPECT_TRUE(ok);
}

TEST(OnnxFuzz, EveryKeptInputGivesAGraphOrAOneLineError) {
  namespace fs = std::filesystem;
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(JOULEPROF_SOURCE_DIR) / "tests/fuzz/corpus/onnx")) {
    if (!e.is_regular_file()) continue;
    EXPECT_TRUE(error_or_graph(import_onnx(read_file(e.path().string()), e.path().filename().string(), {}))) << e.path();
    ++n;
  }
  EXPECT_GE(n, 2u);
}
