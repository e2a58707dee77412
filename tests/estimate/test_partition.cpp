// The fusion partitioner on small graphs with known answers.
#include <gtest/gtest.h>

#include "jouleprof/estimate/builders.hpp"
#include "jouleprof/estimate/partition.hpp"

using namespace jouleprof::estimate;

namespace {
// x[64,128] -> linear(256, bias) -> relu -> linear(32) : 2 GEMMs with a bias+relu epilogue.
Graph mlp() {
  GraphBuilder b("mlp", DType::bf16);
  int x = b.input("x", {64, 128});
  x = b.linear("fc1", x, 256, true);
  x = b.unary("relu", "Relu", x);
  x = b.linear("fc2", x, 32, false);
  b.output(x);
  return std::move(b.finish().value());
}
}  // namespace

TEST(EstimatePartition, EpilogueFusionChargesOnlyBoundaryBytes) {
  const Graph g = mlp();
  ASSERT_EQ(g.ops.size(), 4u);
  const auto fused = partition(g, {true});
  ASSERT_EQ(fused.size(), 2u);
  EXPECT_EQ(fused[0].ops.size(), 3u);  // matmul, bias add, relu
  // fc1: reads x and both weights, writes only relu's output (the GEMM output stays on chip).
  EXPECT_DOUBLE_EQ(fused[0].input_bytes, 2.0 * 64 * 128);
  EXPECT_DOUBLE_EQ(fused[0].weight_bytes, 2.0 * (128 * 256 + 256));
  EXPECT_DOUBLE_EQ(fused[0].output_bytes, 2.0 * 64 * 256);
  EXPECT_DOUBLE_EQ(fused[1].input_bytes, 2.0 * 64 * 256);
  EXPECT_DOUBLE_EQ(fused[1].output_bytes, 2.0 * 64 * 32);
  EXPECT_EQ(fused[0].kernels, 1);
  // Eager: one kernel per op, except the bias add, which is the GEMM's epilogue (one addmm).
  const auto eager = partition(g, {false});
  ASSERT_EQ(eager.size(), 3u);
  EXPECT_EQ(eager[0].ops.size(), 2u);  // matmul + bias add
  EXPECT_EQ(eager[0].kernels, 1);
  EXPECT_EQ(eager[0].dispatched.size(), 1u);
  double fused_bytes = 0, eager_bytes = 0;
  for (const auto& s : fused) fused_bytes += s.bytes();
  for (const auto& s : eager) eager_bytes += s.bytes();
  EXPECT_DOUBLE_EQ(eager_bytes, g.unfused_bytes() - 2 * 2.0 * 64 * 256);  // the GEMM output stays on chip
  EXPECT_DOUBLE_EQ(eager_bytes - fused_bytes, 2 * 2.0 * 64 * 256);  // relu's input written and read back
}

TEST(EstimatePartition, MultiPassRowKernelsRecordTheirExtraSweeps) {
  GraphBuilder b("rows", DType::bf16);
  const int x = b.input("x", {512, 4096});
  b.softmax("sm", x);
  b.layernorm("ln", x);
  const int small = b.input("s", {512, 1024});
  b.softmax("sm_small", small);  // rows that fit one warp's registers: one sweep
  auto g = b.finish();
  ASSERT_TRUE(g);
  const auto p = partition(*g, {false});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_DOUBLE_EQ(p[0].resweep_bytes, 2 * 2.0 * 512 * 4096);  // max, sum: 2 extra reads before the final pass
  EXPECT_DOUBLE_EQ(p[1].resweep_bytes, 1 * 2.0 * 512 * 4096);  // statistics, then normalize
  EXPECT_DOUBLE_EQ(p[2].resweep_bytes, 0);
}

TEST(EstimatePartition, AttentionPatternFusesIntoOneSubgraph) {
  GraphBuilder b("attn", DType::bf16);
  const int q = b.input("q", {1, 4, 16, 8});
  const int kt = b.input("kt", {1, 4, 8, 16});
  const int v = b.input("v", {1, 4, 16, 8});
  int s = b.matmul("qk", q, kt);
  s = b.binary("scale", "Mul", s, b.weight("c", {1}));
  s = b.softmax("softmax", s);
  b.output(b.matmul("pv", s, v));
  auto g = b.finish();
  ASSERT_TRUE(g);
  const auto p = partition(*g, {true});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].anchor, OpClass::attention);
  EXPECT_DOUBLE_EQ(p[0].output_bytes, 2.0 * 4 * 16 * 8);  // the score matrix never leaves the chip
}

TEST(EstimatePartition, RowNormalizationDoesNotFuseIntoGemm) {
  GraphBuilder b("ln", DType::bf16);
  int x = b.input("x", {8, 64});
  x = b.linear("fc", x, 64, false);
  x = b.layernorm("ln", x);
  b.output(x);
  auto g = b.finish();
  ASSERT_TRUE(g);
  EXPECT_EQ(partition(*g, {true}).size(), 2u);
}

TEST(EstimatePartition, ResidualAddJoinsTheLaterProducer) {
  ModelOptions o;
  auto g = build_model("resnet18", o);
  ASSERT_TRUE(g);
  const auto p = partition(*g, {true});
  // conv(+bn+relu) per convolution plus pool/fc: every op is in exactly one subgraph.
  std::size_t ops = 0;
  for (const auto& s : p) ops += s.ops.size();
  EXPECT_EQ(ops, g->ops.size());
  std::size_t convs = 0;
  for (const Op& op : g->ops) convs += op.cls == OpClass::conv;
  EXPECT_LE(p.size(), convs + 4);
  EXPECT_TRUE(check_topological(*g));
}

TEST(EstimatePartition, ViewsCostNothing) {
  GraphBuilder b("v", DType::bf16);
  int x = b.input("x", {4, 8});
  x = b.reshape("r", x, {32});
  x = b.unary("relu", "Relu", x);
  b.output(x);
  auto g = b.finish();
  ASSERT_TRUE(g);
  const auto p = partition(*g, {true});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_DOUBLE_EQ(p[0].input_bytes, 2.0 * 32);
}
