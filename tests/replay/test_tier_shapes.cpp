// The conv tier from a PyTorch profiler trace (record_shapes, PyTorch >= 2.1 "Concrete Inputs"):
// cudnn_convolution's sizes, layout from the strides, groups, stride/padding/dilation and dtype;
// what cannot be read goes back to the `other` tier with a note naming the row; the plan carries
// the conv item, and the op's other kernels (cuDNN's layout transforms) ride with its replay.
// The batchnorm tier the same way: cudnn_batch_norm's x in eval mode (training from the concrete
// inputs or the kernel's name), layout and dtype, PyTorch's own BN ops replayed as cuDNN's.
// Sizes as in torchvision ResNet-50 at batch 32.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "jouleprof/replay/replay.hpp"
#include "plan_item.hpp"

namespace fs = std::filesystem;
using namespace jouleprof;
using nlohmann::json;

namespace {

// One op call (External id `ext`) and the kernels it launched, as the profiler writes them.
struct Call {
  int ext;
  std::string op, dims, types, strides, concrete;
  std::vector<std::pair<std::string, int>> kernels;  // name, duration µs
};

std::string trace(const std::vector<Call>& calls) {
  json ev = json::array();
  int ts = 0;
  for (const Call& c : calls) {
    json args = {{"External id", c.ext}, {"Input Dims", json::parse(c.dims)}, {"Input type", json::parse(c.types)}};
    if (!c.strides.empty()) args["Input Strides"] = json::parse(c.strides);
    if (!c.concrete.empty()) args["Concrete Inputs"] = json::parse(c.concrete);
    ev.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", c.op}, {"ts", ts}, {"dur", 50}, {"args", args}});
    for (const auto& [name, dur] : c.kernels) {
      ev.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", name}, {"ts", ts + 1}, {"dur", dur},
                    {"args", {{"External id", c.ext}, {"grid", {128, 1, 1}}, {"block", {256, 1, 1}}}}});
      ts += dur + 1;
    }
    ts += 2;
  }
  return json{{"traceEvents", ev}}.dump();
}

KernelTable table_of(const std::vector<Call>& calls) {
  static const KernelClassifier classes = KernelClassifier::load(std::string(JOULEPROF_SOURCE_DATA) + "/kernel-classes.tsv").value();
  static const KernelClassifier tiers = KernelClassifier::load(std::string(JOULEPROF_SOURCE_DATA) + "/replay-tiers.tsv").value();
  const fs::path p = fs::temp_directory_path() / ("jouleprof-tier-shapes-" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << trace(calls);
  KernelTableOptions o;
  o.classes = &classes;
  o.tiers = &tiers;
  auto t = read_kernel_table({p.string()}, o);
  fs::remove(p);
  EXPECT_TRUE(t) << (t ? "" : t.error().message);
  return t ? *t : KernelTable{};
}

const KernelRow* row(const KernelTable& t, const std::string& name) {
  for (const KernelRow& r : t.rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

// A cuDNN tier's row that went back to the `other` tier: its one-line note names the tier and the
// row, says why and what stands in (the op's bytes).
void expect_back_to_other(const KernelTable& t, const std::string& tier, const std::string& name, const std::string& why) {
  SCOPED_TRACE(name);
  const KernelRow* r = row(t, name);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->tier, "other");
  EXPECT_FALSE(r->conv || r->batchnorm);
  EXPECT_EQ(r->note.find(tier + " " + name.substr(0, 40)), 0u) << r->note;  // names the row
  EXPECT_NE(r->note.find(why), std::string::npos) << r->note;
  EXPECT_NE(r->note.find("memory-bound kernel moving the op's bytes"), std::string::npos) << r->note;
  EXPECT_GT(r->bytes_read, 0u);  // today's behaviour: the op's tensors' bytes
  EXPECT_EQ(r->note.find('\n'), std::string::npos);
}

// The prediction from an engine that measured the plan's one item as `engine_tier` (its own tier:
// through cuDNN; "other": as the stand-in).
ReplayPrediction predicted_with(const KernelTable& t, const json& plan, const std::string& engine_tier) {
  const json item = {{"row", plan["items"][0]["row"]}, {"tier", engine_tier}, {"status", "ok"}, {"time_ns", 40000.0}, {"time_ns_half_width", 0.0},
                     {"power_w", 500.0}, {"energy_j", 0.02}, {"energy_j_half_width", 0.0}};
  const json m = {{"schema", "jouleprof.replay_measurements"}, {"gpu", "NVIDIA H200"}, {"idle_w", 70.0}, {"gap_w", 100.0},
                  {"items", {item}}, {"not_replayed", plan["not_replayed"]}};
  auto p = predict_from_replay(t, m.dump());
  EXPECT_TRUE(p) << p.error().message;
  return p ? *p : ReplayPrediction{};
}

const std::string kConvTypes = R"(["float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar"])";

// layer2's 3x3 stride-2 convolution, NCHW fp32, called twice (two identical blocks): cuDNN's
// transform kernels around its implicit GEMM.
Call layer2_conv(int ext) {
  return {ext,
          "aten::cudnn_convolution",
          "[[32, 128, 56, 56], [128, 128, 3, 3], [], [], [], [], [], [], []]",
          kConvTypes,
          "[[401408, 3136, 56, 1], [1152, 9, 3, 1], [], [], [], [], [], [], []]",
          R"(["", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"])",
          {{"nchwToNhwcKernel", 4}, {"sm90_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc", 30}, {"nhwcToNchwKernel", 3}}};
}

const std::string kBnTypes = R"(["float", "float", "float", "float", "float", "Scalar", "Scalar", "Scalar"])";
const std::string kBnKernel = "void cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1>(float, float, cudnnTensorStruct, float const*, "
                              "cudnnTensorStruct, float*, cudnnTensorStruct, float const*, float const*, float const*, float const*, float)";

// bn1 (after the 7x7 stem convolution) in eval mode, as PyTorch 2.x's profiler records the op
// that launched cuDNN's inference kernel.
Call bn1(int ext) {
  return {ext,
          "aten::cudnn_batch_norm",
          "[[32, 64, 112, 112], [64], [64], [64], [64], [], [], []]",
          kBnTypes,
          "[[802816, 12544, 112, 1], [1], [1], [1], [1], [], [], []]",
          R"(["", "", "", "", "", "False", "0.10000000000000001", "1.0000000000000001e-05"])",
          {{kBnKernel, 75}}};
}

}  // namespace

TEST(TierShapes, BatchNormShapeFromTheOpsInputInEvalMode) {
  Call cl = bn1(3);  // channels-last fp16 activations, fp32 parameters
  cl.dims = "[[32, 256, 56, 56], [256], [256], [256], [256], [], [], []]";
  cl.types = R"(["c10::Half", "float", "float", "float", "float", "Scalar", "Scalar", "Scalar"])";
  cl.strides = "[[802816, 1, 14336, 256], [1], [1], [1], [1], [], [], []]";
  cl.kernels = {{"void cudnn::bn_fw_inf_1C11_kernel_NHWC<__half, float, true, 1>", 40}};
  Call native = {4, "aten::native_batch_norm", "[[32, 2048, 7, 7], [2048], [2048], [2048], [2048], [], [], []]", kBnTypes, "",
                 R"(["", "", "", "", "", "False", "0.1", "1e-05"])", {{"batch_norm_transform_input_channels_last_kernel", 9}}};
  Call legit = {5, "aten::_native_batch_norm_legit_no_training", "[[8, 16, 100], [16], [16], [16], [16], [], []]",
                R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "float", "float", "Scalar", "Scalar"])", "", "",
                {{"batch_norm_legit_kernel", 5}}};
  Call by_name = bn1(6);  // no concrete inputs (PyTorch < 2.1): cuDNN's kernel name says inference
  by_name.concrete.clear();
  by_name.kernels = {{"cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1> by name", 30}};
  Call outer = bn1(7);  // the kernel under the outer aten::batch_norm (its concrete inputs add cudnn_enabled)
  outer.op = "aten::batch_norm";
  outer.dims = "[[32, 64, 112, 112], [64], [64], [64], [64], [], [], [], []]";
  outer.types = R"(["float", "float", "float", "float", "float", "Scalar", "Scalar", "Scalar", "Scalar"])";
  outer.strides = "[[802816, 12544, 112, 1], [1], [1], [1], [1], [], [], [], []]";
  outer.concrete = R"(["", "", "", "", "", "False", "0.1", "1e-05", "True"])";
  outer.kernels = {{"cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1> under batch_norm", 20}};
  const KernelTable t = table_of({bn1(1), bn1(2), cl, native, legit, by_name, outer});
  const KernelRow* r = row(t, kBnKernel);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->tier, "batchnorm");
  ASSERT_TRUE(r->batchnorm) << r->note;
  EXPECT_EQ(r->batchnorm->input, (std::vector<int64_t>{32, 64, 112, 112}));
  EXPECT_FALSE(r->batchnorm->channels_last);
  EXPECT_EQ(r->batchnorm->dtype, "fp32");
  EXPECT_EQ(r->bytes_read, 32u * 64 * 112 * 112 * 4 + 4u * 64 * 4);  // x, then scale, bias, mean, variance
  EXPECT_EQ(r->bytes_written, 32u * 64 * 112 * 112 * 4);
  EXPECT_EQ(r->count, 2u);
  EXPECT_TRUE(r->note.empty()) << r->note;

  const KernelRow* c = row(t, "void cudnn::bn_fw_inf_1C11_kernel_NHWC<__half, float, true, 1>");
  ASSERT_TRUE(c && c->batchnorm) << (c ? c->note : "no row");
  EXPECT_TRUE(c->batchnorm->channels_last);
  EXPECT_EQ(c->batchnorm->dtype, "fp16");
  EXPECT_EQ(c->bytes_read, 32u * 256 * 56 * 56 * 2 + 4u * 256 * 4);

  const KernelRow* n = row(t, "batch_norm_transform_input_channels_last_kernel");
  ASSERT_TRUE(n && n->batchnorm) << (n ? n->note : "no row");
  EXPECT_EQ(n->batchnorm->input, (std::vector<int64_t>{32, 2048, 7, 7}));
  EXPECT_EQ(n->note, "PyTorch's own batch-norm kernel (aten::native_batch_norm) replayed as cuDNN's inference batch norm");
  const KernelRow* l = row(t, "batch_norm_legit_kernel");
  ASSERT_TRUE(l && l->batchnorm) << (l ? l->note : "no row");
  EXPECT_EQ(l->batchnorm->dtype, "bf16");
  EXPECT_EQ(l->batchnorm->input, (std::vector<int64_t>{8, 16, 100}));
  const KernelRow* b = row(t, "cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1> by name");
  ASSERT_TRUE(b && b->batchnorm) << (b ? b->note : "no row");
  const KernelRow* o = row(t, "cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1> under batch_norm");
  ASSERT_TRUE(o && o->batchnorm) << (o ? o->note : "no row");
  EXPECT_TRUE(o->note.empty()) << o->note;  // cuDNN's own kernel, whichever op the trace names

  const json j = json::parse(kernel_table_json(t));
  bool seen = false;
  for (const json& k : j["kernels"]) {
    if (k["name"] != r->name) continue;
    seen = true;
    EXPECT_EQ(k["tier"], "batchnorm");
    EXPECT_EQ(k["batchnorm"]["input"], json({32, 64, 112, 112}));
    EXPECT_EQ(k["batchnorm"]["dtype"], "fp32");
    EXPECT_EQ(k["bytes_written"], 32u * 64 * 112 * 112 * 4);
  }
  EXPECT_TRUE(seen);
  EXPECT_NE(kernel_table_text(t, 10).find("bn 32x64x112x112 fp32"), std::string::npos) << kernel_table_text(t, 10);
}

TEST(TierShapes, TrainingAndUnreadableBatchNormsGoBackToTheOtherTierWithANote) {
  Call training = bn1(1);
  training.concrete = R"(["", "", "", "", "", "True", "0.1", "1e-05"])";
  training.kernels = {{"bn_training", 10}};
  Call train_by_name = bn1(2);
  train_by_name.concrete.clear();
  train_by_name.kernels = {{"cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>", 10}};
  Call unknown = bn1(3);
  unknown.concrete.clear();
  unknown.kernels = {{"bn_flag_unknown", 10}};
  Call int64 = bn1(4);
  int64.types = R"(["long int", "float", "float", "float", "float", "Scalar", "Scalar", "Scalar"])";
  int64.kernels = {{"bn_int64", 10}};
  Call six_d = bn1(5);
  six_d.dims = "[[2, 4, 3, 3, 3, 3], [4], [4], [4], [4], [], [], []]";
  six_d.strides.clear();
  six_d.kernels = {{"bn_6d", 10}};
  const KernelTable t = table_of({training, train_by_name, unknown, int64, six_d});
  const std::vector<std::pair<std::string, std::string>> want = {
      {"bn_training", "a training batch norm is not replayed through cuDNN (inference is)"},
      {"cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>", "a training batch norm is not replayed through cuDNN"},
      {"bn_flag_unknown", "the op's training flag is neither in its concrete inputs nor in the kernel's name"},
      {"bn_int64", "dtype long int is not replayed through cuDNN"},
      {"bn_6d", "the op's input shape is missing or not 2- to 5-dimensional"}};
  for (const auto& [name, why] : want) expect_back_to_other(t, "batchnorm", name, "(aten::cudnn_batch_norm) not replayed through cuDNN: " + why);
}

TEST(TierShapes, PlanCarriesTheBatchNormItemAndTheEngineTierDecidesFaithfulness) {
  const KernelTable t = table_of({bn1(1), bn1(2)});
  ReplayOptions o;
  o.coverage = 1.0;
  const json plan = json::parse(replay_plan_json(t, o));
  ASSERT_EQ(plan["items"].size(), 1u) << plan.dump();
  const json& it = plan["items"][0];
  EXPECT_EQ(it["tier"], "batchnorm");
  EXPECT_EQ(it["input"], json({32, 64, 112, 112}));
  EXPECT_EQ(it["channels_last"], false);
  EXPECT_EQ(it["dtype"], "fp32");
  EXPECT_EQ(it["bytes_read"], 32u * 64 * 112 * 112 * 4 + 4u * 64 * 4);  // the engine's stand-in without cuDNN
  EXPECT_EQ(it["bytes_written"], 32u * 64 * 112 * 112 * 4);
  EXPECT_EQ(it["grid"], json({128, 1, 1}));
  // The engine ran it through cuDNN (tier batchnorm): a faithful replay; as its stand-in (tier other): not.
  for (const std::string engine_tier : {"batchnorm", "other"}) {
    SCOPED_TRACE(engine_tier);
    EXPECT_EQ(predicted_with(t, plan, engine_tier).rows[it["row"].get<std::size_t>()].proxy, engine_tier == "other");
  }
}

TEST(TierShapes, ConvShapeFromTheOpsSizesStridesAndConcreteInputs) {
  Call cl = {3, "aten::cudnn_convolution", "[[32, 64, 56, 56], [256, 64, 1, 1], [], [], [], [], [], [], []]",
             R"(["c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar"])",
             "[[200704, 1, 3584, 64], [64, 1, 64, 64], [], [], [], [], [], [], []]",  // channels-last input and weight
             R"(["", "", "[0]", "[1]", "[1]", "1", "False", "False", "True"])",     // one-element lists: every spatial dimension
             {{"sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc", 12}}};
  Call grouped = {4, "aten::_convolution", "[[32, 256, 28, 28], [256, 8, 3, 3], [256], [], [], [], [], [], [], [], [], [], []]",
                  R"(["c10::Half", "c10::Half", "c10::Half", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"])",
                  "", R"(["", "", "", "[1, 1]", "[2, 2]", "[2, 2]", "False", "[0, 0]", "32", "False", "False", "True", "False"])",
                  {{"grouped_conv_kernel", 9}}};
  const KernelTable t = table_of({layer2_conv(1), layer2_conv(2), cl, grouped});
  const KernelRow* r = row(t, "sm90_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->tier, "conv");
  ASSERT_TRUE(r->conv) << r->note;
  EXPECT_EQ(r->conv->output, (std::vector<int64_t>{32, 128, 28, 28}));
  EXPECT_EQ(r->conv->stride, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(r->conv->padding, (std::vector<int64_t>{1, 1}));
  EXPECT_FALSE(r->conv->channels_last);
  EXPECT_TRUE(r->conv->allow_tf32);
  EXPECT_EQ(r->conv->dtype, "fp32");
  EXPECT_DOUBLE_EQ(r->conv->flops(), 2.0 * 32 * 128 * 28 * 28 * 128 * 9);
  EXPECT_EQ(r->bytes_read, (32u * 128 * 56 * 56 + 128u * 128 * 9) * 4);
  EXPECT_EQ(r->bytes_written, 32u * 128 * 28 * 28 * 4);
  EXPECT_EQ(r->count, 2u);
  EXPECT_TRUE(r->note.empty()) << r->note;
  EXPECT_EQ(row(t, "nchwToNhwcKernel")->tier, "conv");  // cuDNN's own transforms, launched by the same op

  const KernelRow* c = row(t, "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc");
  ASSERT_TRUE(c && c->conv) << (c ? c->note : "no row");
  EXPECT_TRUE(c->conv->channels_last);
  EXPECT_EQ(c->conv->dtype, "bf16");
  EXPECT_EQ(c->conv->padding, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(c->conv->output, (std::vector<int64_t>{32, 256, 56, 56}));

  const KernelRow* g = row(t, "grouped_conv_kernel");
  ASSERT_TRUE(g && g->conv) << (g ? g->note : "no row");
  EXPECT_EQ(g->conv->groups, 32);
  EXPECT_EQ(g->conv->dilation, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(g->conv->output, (std::vector<int64_t>{32, 256, 28, 28}));  // (28 + 4 - 2·2 - 1)/1 + 1
  EXPECT_FALSE(g->conv->allow_tf32);
  EXPECT_EQ(g->conv->dtype, "fp16");

  const json j = json::parse(kernel_table_json(t));
  bool seen = false;
  for (const json& k : j["kernels"]) {
    if (k["name"] != r->name) continue;
    seen = true;
    EXPECT_EQ(k["conv"]["groups"], 1);
    EXPECT_EQ(k["concrete_inputs"][3], "[2, 2]");
  }
  EXPECT_TRUE(seen);
}

TEST(TierShapes, UnreadableConvsGoBackToTheOtherTierWithANoteNamingTheRow) {
  Call no_concrete = layer2_conv(1);  // PyTorch < 2.1, or concrete inputs switched off
  no_concrete.concrete.clear();
  no_concrete.kernels = {{"conv_without_concrete", 10}};
  Call transposed = {2, "aten::convolution", "[[8, 64, 14, 14], [64, 32, 2, 2], [], [], [], [], [], [], []]",
                     R"(["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"])", "",
                     R"(["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"])", {{"conv_transposed", 10}}};
  Call int8 = layer2_conv(3);
  int8.types = R"(["signed char", "signed char", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar"])";
  int8.kernels = {{"conv_int8", 10}};
  Call bad_groups = layer2_conv(4);
  bad_groups.concrete = R"(["", "", "[1, 1]", "[2, 2]", "[1, 1]", "3", "False", "False", "True"])";
  bad_groups.kernels = {{"conv_bad_groups", 10}};
  Call no_output = layer2_conv(5);
  no_output.dims = "[[32, 128, 2, 2], [128, 128, 5, 5], [], [], [], [], [], [], []]";
  no_output.kernels = {{"conv_no_output", 10}};
  Call not_array = layer2_conv(6);  // "Concrete Inputs" of another type: read as absent, the shapes kept
  not_array.concrete = R"("[1, 1]")";
  not_array.kernels = {{"conv_concrete_not_array", 10}};
  const KernelTable t = table_of({no_concrete, transposed, int8, bad_groups, no_output, not_array});
  EXPECT_FALSE(row(t, "conv_concrete_not_array")->input_dims.empty());
  const std::vector<std::pair<std::string, std::string>> want = {
      {"conv_without_concrete", "the op's stride is not in its concrete inputs"},
      {"conv_concrete_not_array", "the op's stride is not in its concrete inputs"},
      {"conv_transposed", "a transposed convolution is not replayed through cuDNN"},
      {"conv_int8", "dtype signed char is not replayed through cuDNN"},
      {"conv_bad_groups", "input channels 128, weight 128x128 and groups 3 do not make a convolution"},
      {"conv_no_output", "spatial dimension 0 gives no output"}};
  for (const auto& [name, why] : want) expect_back_to_other(t, "conv", name, why);
}

TEST(TierShapes, PlanCarriesTheConvItemAndTheTransformsRideWithIt) {
  const KernelTable t = table_of({layer2_conv(1), layer2_conv(2)});
  ReplayOptions o;
  o.coverage = 1.0;
  const json plan = json::parse(replay_plan_json(t, o));
  ASSERT_EQ(plan["items"].size(), 1u) << plan.dump();  // the transforms are in the fprop row's replay
  const json& it = plan["items"][0];
  EXPECT_EQ(t.rows[it["row"].get<std::size_t>()].name, "sm90_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc");
  EXPECT_EQ(it["tier"], "conv");
  EXPECT_EQ(it["input"], json({32, 128, 56, 56}));
  EXPECT_EQ(it["weight"], json({128, 128, 3, 3}));
  EXPECT_EQ(it["output"], json({32, 128, 28, 28}));
  EXPECT_EQ(it["stride"], json({2, 2}));
  EXPECT_EQ(it["padding"], json({1, 1}));
  EXPECT_EQ(it["dilation"], json({1, 1}));
  EXPECT_EQ(it["groups"], 1);
  EXPECT_EQ(it["channels_last"], false);
  EXPECT_EQ(it["dtype"], "fp32");
  EXPECT_GT(it["bytes_read"].get<uint64_t>(), 0u);  // the engine's fallback without cuDNN
  EXPECT_EQ(it["grid"], json({128, 1, 1}));

  // The engine ran it through cuDNN (tier conv): a faithful replay; as its stand-in (tier other): not.
  for (const std::string engine_tier : {"conv", "other"}) {
    SCOPED_TRACE(engine_tier);
    const ReplayPrediction p = predicted_with(t, plan, engine_tier);
    ASSERT_EQ(p.rows.size(), t.rows.size());
    const std::size_t r = it["row"].get<std::size_t>();
    EXPECT_EQ(p.rows[r].proxy, engine_tier == "other");
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
      if (i != r) {
        EXPECT_EQ(p.rows[i].status, "with_row") << t.rows[i].name;
      }
    }
  }
}

// Fused attention: is_causal and scale from the op's concrete inputs (PyTorch's schemas), the
// guess seq_q == seq_kv only where the trace has none; BSHD for the *_attention_forward ops; a
// mask/bias said to be left out. Sizes: BERT-base at 512 tokens and a Llama-style GQA prefill.
TEST(TierShapes, AttentionCausalAndScaleFromTheOpsConcreteInputs) {
  const std::string bf16x3 = R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", "Scalar"])";
  // BERT's encoder: seq_q == seq_kv but is_causal False (the guess would say causal), scale given.
  Call bert = {1, "aten::_scaled_dot_product_flash_attention", "[[32, 12, 512, 64], [32, 12, 512, 64], [32, 12, 512, 64], [], [], [], []]",
               bf16x3, "", R"(["", "", "", "0.", "False", "False", "0.2"])", {{"pytorch_flash::flash_fwd_kernel<bert>", 300}}};
  // No concrete inputs (PyTorch < 2.1): the guess, said so.
  Call old = {2, "aten::_scaled_dot_product_flash_attention", "[[2, 8, 128, 64], [2, 8, 128, 64], [2, 8, 128, 64], [], [], [], []]", bf16x3, "",
              "", {{"pytorch_flash::flash_fwd_kernel<old>", 20}}};
  // The memory-efficient op with an attention bias, not causal; fp16.
  Call eff = {3, "aten::_scaled_dot_product_efficient_attention",
              "[[4, 16, 256, 64], [4, 16, 256, 64], [4, 16, 256, 64], [4, 16, 256, 256], [], [], [], []]",
              R"(["c10::Half", "c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar", "Scalar", "Scalar"])", "",
              R"(["", "", "", "", "False", "0.", "False", ""])", {{"fmha_cutlassF_f16_aligned_64x64_rf_sm80", 50}}};
  // xformers' forward: [B, S, H, D], custom_mask_type 1 (causal from the top left), GQA 32/8.
  Call xf = {4, "aten::_efficient_attention_forward", "[[1, 2048, 32, 128], [1, 2048, 8, 128], [1, 2048, 8, 128], [], [], [], [], [], [], [], [], []]",
             R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "", "", "", "Scalar", "Scalar", "Scalar", "Scalar"])", "",
             R"(["", "", "", "", "", "", "", "", "0.", "1", "False", ""])", {{"fmha_cutlassF_bf16_aligned_64x128_rf_sm80<xf>", 900}}};
  const KernelTable t = table_of({bert, old, eff, xf});
  const KernelRow* b = row(t, "pytorch_flash::flash_fwd_kernel<bert>");
  ASSERT_TRUE(b && b->attention) << (b ? b->note : "no row");
  EXPECT_FALSE(b->attention->causal);
  EXPECT_EQ(b->attention->causal_from, "is_causal");
  ASSERT_TRUE(b->attention->scale);
  EXPECT_DOUBLE_EQ(*b->attention->scale, 0.2);
  EXPECT_EQ(b->attention->heads_q, 12);
  EXPECT_EQ(b->attention->seq_kv, 512);
  EXPECT_NE(b->note.find("replayed through cuDNN's fused SDPA forward, else unfused"), std::string::npos) << b->note;
  EXPECT_NE(b->note.find("not causal (is_causal), scale 0.2 (the op's)"), std::string::npos) << b->note;
  const KernelRow* o = row(t, "pytorch_flash::flash_fwd_kernel<old>");
  ASSERT_TRUE(o && o->attention);
  EXPECT_TRUE(o->attention->causal);
  EXPECT_EQ(o->attention->causal_from, "guessed from seq_q == seq_kv");
  EXPECT_FALSE(o->attention->scale);
  EXPECT_NE(o->note.find("causal (guessed from seq_q == seq_kv), scale 1/sqrt(d)"), std::string::npos) << o->note;
  const KernelRow* e = row(t, "fmha_cutlassF_f16_aligned_64x64_rf_sm80");
  ASSERT_TRUE(e && e->attention);
  EXPECT_FALSE(e->attention->causal);
  EXPECT_EQ(e->attention->dtype, "fp16");
  EXPECT_TRUE(e->attention->masked);
  EXPECT_FALSE(e->attention->scale);  // None
  EXPECT_NE(e->note.find("the op's attention mask/bias is not replayed"), std::string::npos) << e->note;
  const KernelRow* x = row(t, "fmha_cutlassF_bf16_aligned_64x128_rf_sm80<xf>");
  ASSERT_TRUE(x && x->attention);
  EXPECT_EQ(x->attention->heads_q, 32);
  EXPECT_EQ(x->attention->heads_kv, 8);
  EXPECT_EQ(x->attention->seq_q, 2048);
  EXPECT_TRUE(x->attention->causal);
  EXPECT_EQ(x->attention->causal_from, "custom_mask_type");
  EXPECT_FALSE(x->attention->masked);
}

// The plan's attention item, read as the engine reads it (plan_item.cpp); the engine's tier decides
// faithfulness: "attention" (cuDNN's SDPA ran) is the op, "attention_unfused" a stand-in.
TEST(TierShapes, PlanCarriesTheAttentionItemAndTheEngineTierDecidesFaithfulness) {
  const KernelTable t = table_of({{1, "aten::_scaled_dot_product_cudnn_attention",
                                   "[[2, 32, 1024, 128], [2, 8, 1024, 128], [2, 8, 1024, 128], [], [], [], [], [], []]",
                                   R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"])", "",
                                   R"(["", "", "", "", "False", "0.", "True", "False", "0.088"])",
                                   {{"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x128x128_4x1x1_kernel0_0", 500}}}});
  ASSERT_EQ(t.rows.size(), 1u);
  ASSERT_TRUE(t.rows[0].attention) << t.rows[0].note;
  ReplayOptions o;
  o.coverage = 1.0;
  const json plan = json::parse(replay_plan_json(t, o));
  ASSERT_EQ(plan["items"].size(), 1u);
  const replay::Item it = replay::item_of(plan["items"][0]);
  EXPECT_EQ(it.tier, "attention");
  EXPECT_EQ(it.dtype, "bf16");
  EXPECT_EQ(it.batch, 2);
  EXPECT_EQ(it.heads_q, 32);
  EXPECT_EQ(it.heads_kv, 8);
  EXPECT_EQ(it.seq_q, 1024);
  EXPECT_EQ(it.seq_kv, 1024);
  EXPECT_EQ(it.head_dim, 128);
  EXPECT_TRUE(it.causal);
  EXPECT_DOUBLE_EQ(it.scale, 0.088);
  EXPECT_EQ(plan["items"][0]["causal_from"], "is_causal");
  EXPECT_FALSE(predicted_with(t, plan, "attention").rows[0].proxy);
  EXPECT_TRUE(predicted_with(t, plan, "attention_unfused").rows[0].proxy);
}

// llama-tiny's cuDNN SDPA trace (PyTorch 2.x, concrete inputs): prefill is_causal True, decode False.
TEST(TierShapes, LlamaTraceAttentionCausalFromItsOps) {
  static const KernelClassifier classes = KernelClassifier::load(std::string(JOULEPROF_SOURCE_DATA) + "/kernel-classes.tsv").value();
  static const KernelClassifier tiers = KernelClassifier::load(std::string(JOULEPROF_SOURCE_DATA) + "/replay-tiers.tsv").value();
  KernelTableOptions o;
  o.classes = &classes;
  o.tiers = &tiers;
  auto t = read_kernel_table({std::string(JOULEPROF_REPLAY_DATA) + "/llama_tiny_generate.json.gz"}, o);
  ASSERT_TRUE(t) << t.error().message;
  int prefill = 0, decode = 0;
  for (const KernelRow& r : t->rows) {
    if (r.tier != "attention" || !r.attention) continue;
    EXPECT_EQ(r.attention->causal_from, "is_causal") << r.op;
    ASSERT_TRUE(r.attention->scale);
    EXPECT_DOUBLE_EQ(*r.attention->scale, 0.125);
    if (r.attention->seq_q == 16) prefill += r.attention->causal ? 1 : -100;
    if (r.attention->seq_q == 1) decode += r.attention->causal ? -100 : 1;
  }
  EXPECT_GT(prefill, 0);
  EXPECT_GT(decode, 0);
}
