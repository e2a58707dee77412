// Decode plans: the table of measured defaults and the --variant words of each plan.
#include <gtest/gtest.h>

#include "host/decode_plan.hpp"
#include "host/engine.hpp"

using namespace jouleprof::llm;

namespace {
std::vector<PlanKind> table(int sm, int batch, int context, int hidden) {
  return default_plans(PlanSituation{sm, batch, context, hidden});
}
}  // namespace

TEST(DecodePlanTable, DataflowForOneBAtBatchOneOnHopper) {
  // Llama-3.2-1B (hidden 2048) at batch 1 on sm_90: dataflow, then cluster, then separate.
  EXPECT_EQ(table(9, 1, 256, 2048), (std::vector<PlanKind>{PlanKind::dataflow, PlanKind::cluster, PlanKind::separate}));
  EXPECT_EQ(table(9, 1, 8192, 2048).front(), PlanKind::dataflow);
  // Past the longest measured context, or a larger model (more energy per token there): cluster first.
  EXPECT_EQ(table(9, 1, 8256, 2048).front(), PlanKind::cluster);
  EXPECT_EQ(table(9, 1, 256, 4096), (std::vector<PlanKind>{PlanKind::cluster, PlanKind::separate}));
}

TEST(DecodePlanTable, SeparateKernelsElsewhere) {
  EXPECT_EQ(table(9, 2, 256, 2048), std::vector<PlanKind>{PlanKind::separate});
  EXPECT_EQ(table(9, 32, 256, 4096), std::vector<PlanKind>{PlanKind::separate});
  // sm_80: neither clusters nor bulk copies.
  EXPECT_EQ(table(8, 1, 256, 2048), std::vector<PlanKind>{PlanKind::separate});
  // A GPU newer than the measured one: the cluster kernel runs there, the dataflow default waits for a measurement.
  EXPECT_EQ(table(10, 1, 256, 2048), (std::vector<PlanKind>{PlanKind::cluster, PlanKind::separate}));
}

TEST(DecodePlanVariant, EmptyAndAutoLeaveTheChoiceToTheTable) {
  for (const char* v : {"", "auto", "auto+nopdl", "nopdl"}) {
    auto r = parse_variant(v);
    ASSERT_TRUE(r) << v;
    EXPECT_TRUE(r->plan.automatic) << v;
  }
  auto r = parse_variant("auto+nopdl");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->pdl);
}

// Issue 31: CUDA graphs and sampling have one spelling each, the flags --no-graphs and --top-k;
// the variant words that said the same are errors that name the flag.
TEST(DecodePlanVariant, GraphsAndTopKAreFlagsNotWords) {
  for (const char* v : {"auto+nograph", "separate+cublas+nograph", "topk5", "dataflow+release+topk40"}) {
    auto r = parse_variant(v);
    ASSERT_FALSE(r) << v;
    const std::string& msg = r.error().message;
    EXPECT_TRUE(msg.find("--no-graphs") != std::string::npos || msg.find("--top-k") != std::string::npos) << msg;
  }
}

TEST(DecodePlanVariant, EachPlanTakesItsOwnOptions) {
  auto s = parse_variant("separate+cublas");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->plan.automatic);
  EXPECT_EQ(s->plan.kind, PlanKind::separate);
  EXPECT_EQ(s->plan.separate.matvec, SeparateOptions::Matvec::cublas);

  auto c = parse_variant("cluster+ctas8");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->plan.kind, PlanKind::cluster);
  EXPECT_EQ(c->plan.cluster.ctas, 8);

  auto d = parse_variant("dataflow");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->plan.kind, PlanKind::dataflow);
  // The defaults are the measured best form: 4 slots, 32 KiB chunks, L2 asked 4 chunks ahead in
  // dependency waits, automatic splits, bulk-store hand-overs.
  EXPECT_EQ(d->plan.dataflow.slots, 4);
  EXPECT_EQ(d->plan.dataflow.chunk_kb, 32);
  EXPECT_EQ(d->plan.dataflow.l2_wait, 4);
  EXPECT_EQ(d->plan.dataflow.span, 0);
  EXPECT_TRUE(d->plan.dataflow.bulk_handover);
  auto d2 = parse_variant("dataflow+slots2+chunk1+l2wait0+span64+release");
  ASSERT_TRUE(d2);
  EXPECT_EQ(d2->plan.dataflow.slots, 2);
  EXPECT_EQ(d2->plan.dataflow.chunk_kb, 1);
  EXPECT_EQ(d2->plan.dataflow.l2_wait, 0);
  EXPECT_EQ(d2->plan.dataflow.span, 64);
  EXPECT_FALSE(d2->plan.dataflow.bulk_handover);
}

TEST(DecodePlanVariant, AWordOfAnotherPlanNamesThePlansOptions) {
  auto r = parse_variant("cluster+slots4");
  ASSERT_FALSE(r);
  const std::string& m = r.error().message;
  EXPECT_NE(m.find("'slots4' is not an option of the cluster plan"), std::string::npos) << m;
  EXPECT_NE(m.find("ctasN"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
  auto s = parse_variant("separate+ctas4");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("gemv, cublas"), std::string::npos) << s.error().message;
  // A plan option without its plan: the automatic choice takes only the common options.
  auto a = parse_variant("slots4");
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("dataflow+slots4"), std::string::npos) << a.error().message;
}

TEST(DecodePlanVariant, RetiredWordsAreErrors) {
  // Forms measured slower or no faster are gone from the product (docs/validation/bench-llm.md).
  for (const char* w : {"mega", "ahead4", "flowmlp", "flowlm", "flowk1", "flowa8", "flowp100", "ksd2", "flash-pf", "pfo",
                        "u4", "bps2", "fused", "gemm", "fqa", "nofqa", "flow", "flowr"}) {
    auto r = parse_variant(w);
    ASSERT_FALSE(r) << w;
    EXPECT_NE(r.error().message.find(w), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(parse_variant("dataflow+mega"));
}

TEST(DecodePlanVariant, NumbersOutOfRangeAndMisplacedPlansAreOneLineErrors) {
  for (const char* v : {"cluster+ctas1", "cluster+ctas17", "dataflow+slots1", "dataflow+slots33", "dataflow+chunk0",
                        "dataflow+chunk65", "dataflow+l2wait257", "dataflow+span0", "topk100000",
                        "dataflow+span99999999999999999999", "separate+cluster", "nograph+dataflow"}) {
    auto r = parse_variant(v);
    ASSERT_FALSE(r) << v;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
  }
}

TEST(DecodePlanVariant, AppliedToEngineOptions) {
  EngineOptions e;
  ASSERT_TRUE(apply_variant("dataflow+slots2+nopdl", e));
  EXPECT_FALSE(e.plan.automatic);
  EXPECT_EQ(e.plan.kind, PlanKind::dataflow);
  EXPECT_EQ(e.plan.dataflow.slots, 2);
  EXPECT_FALSE(e.pdl);
  EXPECT_TRUE(e.graphs);  // --no-graphs, not a word
  EXPECT_EQ(e.sampling.top_k, 0);  // --top-k, not a word
  EngineOptions bad;
  EXPECT_FALSE(apply_variant("dataflow+turbo", bad));
}
