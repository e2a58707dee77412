// FLOP and byte counts of standard layers and whole models against hand-computed values.
#include <gtest/gtest.h>

#include "jouleprof/estimate/builders.hpp"
#include "jouleprof/estimate/graph.hpp"

using namespace jouleprof::estimate;

TEST(EstimateGraph, MatmulFlopsAndShapes) {
  GraphBuilder b("t", DType::bf16);
  const int a = b.input("a", {4, 128, 64});
  const int w = b.weight("w", {64, 32});
  const int y = b.matmul("mm", a, w);
  auto g = b.finish();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->tensors[static_cast<std::size_t>(y)].shape, (Shape{4, 128, 32}));
  EXPECT_DOUBLE_EQ(g->ops[0].matrix_flops, 2.0 * 4 * 128 * 64 * 32);
  // unfused bytes: inputs + weight + output at 2 B/element
  EXPECT_DOUBLE_EQ(g->unfused_bytes(), 2.0 * (4 * 128 * 64 + 64 * 32 + 4 * 128 * 32));
}

TEST(EstimateGraph, ConvFlopsHandComputed) {
  // ResNet stem: 3->64, 7x7, stride 2, pad 3 on 224x224: out 112x112; MACs = 64*112*112*3*49.
  GraphBuilder b("t", DType::bf16);
  const int x = b.input("x", {2, 3, 224, 224});
  const int y = b.conv2d("c", x, 64, 7, 7, 2, 3);
  auto g = b.finish();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->tensors[static_cast<std::size_t>(y)].shape, (Shape{2, 64, 112, 112}));
  EXPECT_DOUBLE_EQ(g->ops[0].matrix_flops, 2.0 * 2 * 64 * 112 * 112 * 3 * 49);
  EXPECT_EQ(g->ops[0].gemm_m, 2 * 112 * 112);
  EXPECT_EQ(g->ops[0].gemm_n, 64);
  EXPECT_EQ(g->ops[0].gemm_k, 3 * 49);
}

TEST(EstimateGraph, DepthwiseConvRunsOnVectorUnits) {
  GraphBuilder b("t", DType::bf16);
  const int x = b.input("x", {1, 32, 56, 56});
  b.conv2d("dw", x, 32, 3, 3, 1, 1, 32);
  auto g = b.finish();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->ops[0].matrix_flops, 0);
  EXPECT_DOUBLE_EQ(g->ops[0].vector_flops, 2.0 * 32 * 56 * 56 * 9);
}

TEST(EstimateGraph, CausalAttentionCountsVisiblePairs) {
  GraphBuilder b("t", DType::bf16);
  const int q = b.input("q", {1, 8, 4, 64});
  const int k = b.input("k", {1, 2, 4, 64});  // GQA: 8 query heads on 2 KV heads
  b.attention("a", q, k, k, true);
  auto g = b.finish();
  ASSERT_TRUE(g);
  // 4 queries see 1+2+3+4 = 10 keys; QK^T and PV: 2 * 2 FLOP per pair and head dim.
  EXPECT_DOUBLE_EQ(g->ops[0].matrix_flops, 4.0 * 8 * 10 * 64);
  EXPECT_DOUBLE_EQ(g->ops[0].transcendentals, 8.0 * 10);
}

TEST(EstimateGraph, ShapeErrorsAreReported) {
  GraphBuilder b("t");
  const int a = b.input("a", {4, 5});
  const int w = b.weight("w", {6, 7});
  EXPECT_EQ(b.matmul("mm", a, w), -1);
  auto g = b.finish();
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("inner dimensions"), std::string::npos);
}

TEST(EstimateGraph, BroadcastAndReshape) {
  EXPECT_EQ(broadcast_shapes({4, 1, 3}, {5, 1}), (Shape{4, 5, 3}));
  EXPECT_FALSE(broadcast_shapes({4, 2}, {3}));
  GraphBuilder b("t");
  const int x = b.input("x", {2, 3, 4});
  const int y = b.reshape("r", x, {0, -1});
  auto g = b.finish();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->tensors[static_cast<std::size_t>(y)].shape, (Shape{2, 12}));
  EXPECT_EQ(g->ops[0].cls, OpClass::view);
  EXPECT_EQ(g->unfused_bytes(), 0);
}

namespace {
double params_bf16(const Graph& g) {
  double p = 0;
  for (const Tensor& t : g.tensors) {
    if (t.is_weight && t.dtype == DType::bf16) p += static_cast<double>(numel(t.shape));
  }
  return p;
}
}  // namespace

// Published MAC counts (torchvision model docs / fvcore at 224x224, batch 1).
TEST(EstimateModels, CnnMacsMatchPublishedCounts) {
  ModelOptions o;
  struct Case {
    const char* name;
    double gmacs, tol;
  } cases[] = {{"resnet18", 1.814, 0.01}, {"resnet50", 4.089, 0.01}, {"mobilenet_v2", 0.300, 0.03},
               {"efficientnet_b0", 0.386, 0.05}, {"vit_b_16", 17.56, 0.02}};
  for (const auto& c : cases) {
    auto g = build_model(c.name, o);
    ASSERT_TRUE(g) << c.name << ": " << g.error().message;
    double m = 0;
    for (const Op& op : g->ops) {
      m += op.matrix_flops / 2;
      if (op.cls == OpClass::conv && op.matrix_flops == 0) m += op.vector_flops / 2;  // depthwise (no bias here)
    }
    EXPECT_NEAR(m / 1e9, c.gmacs, c.gmacs * c.tol) << c.name;
  }
}

TEST(EstimateModels, CnnParameterCounts) {
  ModelOptions o;
  // torchvision: resnet50 25.557M, resnet18 11.690M, mobilenet_v2 3.505M (our BN has 2 vectors, torchvision 2 learnable)
  struct Case {
    const char* name;
    double mparams;
  } cases[] = {{"resnet18", 11.690}, {"resnet50", 25.557}, {"mobilenet_v2", 3.505}, {"vit_b_16", 86.57}};
  for (const auto& c : cases) {
    auto g = build_model(c.name, o);
    ASSERT_TRUE(g);
    EXPECT_NEAR(params_bf16(*g) / 1e6, c.mparams, c.mparams * 0.01) << c.name;
  }
}

TEST(EstimateModels, LlamaParametersAndDecodeFlops) {
  ModelOptions o;
  o.phase = "decode";
  o.context = 1024;
  auto g = build_model("llama-3.2-1b", o);
  ASSERT_TRUE(g) << g.error().message;
  // Llama-3.2-1B: 1,235,814,400 parameters (tied embeddings).
  EXPECT_NEAR(params_bf16(*g), 1235814400.0, 1235814400.0 * 1e-4);
  // Decode of one token: 2 FLOP per non-embedding parameter (plus the tied LM head),
  // plus attention over the cache: 4 * layers * heads * (C+1) * head_dim.
  const double linear = 2.0 * (1235814400.0 - 128256.0 * 2048 + 128256.0 * 2048 - 16 * 2 * 2048 - 2048);
  const double attn = 4.0 * 16 * 32 * 1025 * 64;
  EXPECT_NEAR(g->total_matrix_flops(), linear + attn, (linear + attn) * 1e-3);
  auto g8 = build_model("llama-3.1-8b", o);
  ASSERT_TRUE(g8);
  EXPECT_NEAR(params_bf16(*g8), 8030261248.0, 8030261248.0 * 1e-4);
}

TEST(EstimateModels, LlamaPrefillIsCausalAndLastLogitOnly) {
  ModelOptions o;
  o.prompt = 128;
  o.batch = 2;
  auto g = build_model("llama-3.2-1b", o);
  ASSERT_TRUE(g);
  double lm = 0, attn = 0;
  for (const Op& op : g->ops) {
    if (op.name == "lm_head") lm = op.matrix_flops;
    if (op.cls == OpClass::attention) attn += op.matrix_flops;
  }
  EXPECT_DOUBLE_EQ(lm, 2.0 * 2 * 1 * 2048 * 128256);
  EXPECT_DOUBLE_EQ(attn, 16 * 4.0 * 2 * 32 * (128.0 * 129 / 2) * 64);
}

TEST(EstimateModels, BertLstmAndMicroGraphsBuild) {
  ModelOptions o;
  for (const char* m : {"bert_base", "lstm", "gemm:64x32x16", "copy:1000", "softmax:8x16", "attention:1,2,8,8,16,causal"}) {
    auto g = build_model(m, o);
    ASSERT_TRUE(g) << m << ": " << g.error().message;
    EXPECT_GT(g->total_flops() + g->unfused_bytes(), 0) << m;
  }
  auto g = build_model("gemm:64x32x16", o);
  EXPECT_DOUBLE_EQ(g->total_matrix_flops(), 2.0 * 64 * 32 * 16);
}

TEST(EstimateModels, UnknownModelSuggestsCloseNames) {
  auto g = build_model("resnet5", {});
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("did you mean resnet50"), std::string::npos) << g.error().message;
  EXPECT_FALSE(build_model("gemm:12x3", {}));
  EXPECT_FALSE(build_model("gemm:0x3x4", {}));
}

// Framework module calls recorded by the builders (eager host overhead is charged per call):
// the counts follow torchvision's and transformers' module structure.
TEST(EstimateModels, ModuleCallsFollowTheFrameworkModules) {
  auto calls = [](const char* model, ModelOptions o) {
    auto g = build_model(model, o);
    EXPECT_TRUE(g) << model;
    double n = 0;
    for (const Op& op : g->ops) n += op.module_calls;
    return n;
  };
  // ResNet-50: ResNet, conv1/bn1/relu/maxpool, 4 layers, 16 Bottlenecks with 3 conv + 3 bn +
  // 3 relu calls each, 4 downsample Sequentials with conv and bn, avgpool, fc.
  EXPECT_DOUBLE_EQ(calls("resnet50", {}), 1 + 4 + 4 + 16 * 10 + 4 * 3 + 2);
  // ViT-B/16: VisionTransformer, conv_proj, encoder, dropout, layers; 11 per EncoderBlock; ln, heads, head.
  EXPECT_DOUBLE_EQ(calls("vit_b_16", {}), 5 + 12 * 11 + 3);
  // Llama: CausalLM, model, embed_tokens, rotary_emb; 13 per decoder layer; norm, lm_head.
  ModelOptions o;
  o.phase = "decode";
  EXPECT_DOUBLE_EQ(calls("llama-3.2-1b", o), 4 + 16 * 13 + 2);
  // No module call is lost on a view or an epilogue: every one sits on an op that launches a kernel.
  auto g = build_model("vit_b_16", {});
  ASSERT_TRUE(g);
  for (const Op& op : g->ops) {
    if (op.module_calls > 0) {
      EXPECT_NE(op.cls, OpClass::view) << op.name;
      EXPECT_FALSE(op.eager_epilogue) << op.name;
    }
  }
}

TEST(EstimateGraph, RowPassesAndBiasEpilogue) {
  GraphBuilder b("t", DType::bf16);
  const int x = b.input("x", {8, 4096});
  b.softmax("sm", x);
  b.layernorm("ln", x);
  b.linear("fc", x, 16, true);
  auto g = b.finish();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->ops[0].row_passes, 3);
  EXPECT_EQ(g->ops[1].row_passes, 2);
  EXPECT_EQ(g->ops[2].row_passes, 1);
  EXPECT_FALSE(g->ops[2].eager_epilogue);  // the GEMM
  EXPECT_TRUE(g->ops[3].eager_epilogue);   // its bias add
}
