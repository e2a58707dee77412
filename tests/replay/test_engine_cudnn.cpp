// jouleprof-replay's convolution and batch-norm tiers against the fake cuDNN (fakes/cudnn): the
// library found through $JOULEPROF_CUDNN_LIB, the descriptors the traced shape gives (layout, groups,
// padding, 1-D as 2-D; a batch norm's x/y and 1xCx1x1 parameters, its mode), PyTorch's algorithm
// choice with benchmark off (the heuristic's first that succeeds within the workspace), the math
// type per dtype, and errors as one message naming the call (the engine's stand-in line).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "cudnn_batchnorm.hpp"
#include "cudnn_conv.hpp"

using namespace jouleprof::replay;

namespace {

struct Fake {
  void* h = dlopen(JOULEPROF_FAKE_CUDNN, RTLD_NOW | RTLD_LOCAL);
  std::string log() const { return reinterpret_cast<const char* (*)()>(dlsym(h, "fakecudnn_log"))(); }
  void reset() const { reinterpret_cast<void (*)()>(dlsym(h, "fakecudnn_reset"))(); }
  void fail(const char* call, int status) const { reinterpret_cast<void (*)(const char*, int)>(dlsym(h, "fakecudnn_fail"))(call, status); }
  Fake() {
    setenv("JOULEPROF_CUDNN_LIB", JOULEPROF_FAKE_CUDNN, 1);
    reset();
  }
  ~Fake() {
    unsetenv("JOULEPROF_CUDNN_LIB");
    dlclose(h);
  }
};

// ResNet-50's layer2 3x3 convolution at batch 32: 128 → 128 channels, 56x56 → 28x28 (stride 2).
Item resnet_conv(const std::string& dtype, bool channels_last) {
  Item it;
  it.tier = "conv";
  it.dtype = dtype;
  it.conv_input = {32, 128, 56, 56};
  it.conv_weight = {128, 128, 3, 3};
  it.conv_output = {32, 128, 28, 28};
  it.conv_stride = {2, 2};
  it.conv_padding = {1, 1};
  it.conv_dilation = {1, 1};
  it.channels_last = channels_last;
  return it;
}

// A batch norm of x (N C spatial..), as the plan's batchnorm item gives it.
Item bn(const std::string& dtype, std::vector<int64_t> x, bool channels_last) {
  Item it;
  it.tier = "batchnorm";
  it.dtype = dtype;
  it.bn_input = std::move(x);
  it.channels_last = channels_last;
  return it;
}

auto* const kStream = reinterpret_cast<cudnn::Stream>(0x1234);

bool has(const std::string& log, const std::string& line) { return log.find(line) != std::string::npos; }

}  // namespace

TEST(EngineCudnn, ChannelsLastConvGetsNhwcDescriptorsAndTheFirstAlgorithmThatFits) {
  Fake fake;
  ASSERT_NE(fake.h, nullptr);
  cudnn::Session s;
  ASSERT_EQ(s.open(kStream), "");
  EXPECT_EQ(s.version(), "9.10.2");
  cudnn::Conv c;
  ASSERT_EQ(c.plan(s, resnet_conv("fp32", true), size_t{4} << 30), "");
  const std::string log = fake.log();
  EXPECT_TRUE(has(log, "cudnnSetStream stream=0x1234")) << log;
  // NHWC strides of [32,128,56,56]: C=1, W=128, H=128·56, N=128·56·56.
  EXPECT_TRUE(has(log, "cudnnSetTensorNdDescriptor dt=0 dims=32,128,56,56 strides=401408,1,7168,128")) << log;
  EXPECT_TRUE(has(log, "cudnnSetFilterNdDescriptor dt=0 format=1 dims=128,128,3,3")) << log;
  EXPECT_TRUE(has(log, "cudnnSetConvolutionNdDescriptor pad=1,1 stride=2,2 dilation=1,1 mode=1 compute=0")) << log;
  EXPECT_TRUE(has(log, "cudnnSetTensorNdDescriptor dt=0 dims=32,128,28,28 strides=100352,1,3584,128")) << log;
  // Algorithm 7 is unsupported, 6 needs 64 GiB: 1 is chosen, with the math type the heuristic gave (TF32 allowed).
  EXPECT_EQ(c.algo, 1);
  EXPECT_EQ(c.math_type, cudnn::kTensorOpMath);
  EXPECT_EQ(c.workspace_bytes, size_t{1} << 20);
  EXPECT_EQ(c.input_bytes, size_t{32} * 128 * 56 * 56 * 4);
  EXPECT_EQ(c.weight_bytes, size_t{128} * 128 * 9 * 4);
  EXPECT_EQ(c.output_bytes, size_t{32} * 128 * 28 * 28 * 4);
  int x = 0, w = 0, y = 0, ws = 0;
  EXPECT_EQ(c.run(&x, &w, &y, &ws), "");
  EXPECT_TRUE(has(fake.log(), "cudnnConvolutionForward algo=1 math=1 groups=1 workspace=1048576 stream=0x1234 buffers=set")) << fake.log();
}

TEST(EngineCudnn, Fp32WithoutTf32StaysOnFmaMathAndNchwIsPacked) {
  Fake fake;
  cudnn::Session s;
  ASSERT_EQ(s.open(kStream), "");
  Item it = resnet_conv("fp32", false);
  it.allow_tf32 = false;
  cudnn::Conv c;
  ASSERT_EQ(c.plan(s, it, size_t{4} << 30), "");
  EXPECT_TRUE(has(fake.log(), "strides=401408,3136,56,1")) << fake.log();
  EXPECT_TRUE(has(fake.log(), "format=0 dims=128,128,3,3")) << fake.log();
  EXPECT_EQ(c.math_type, cudnn::kFmaMath);
  EXPECT_TRUE(has(fake.log(), "cudnnGetConvolutionForwardWorkspaceSize algo=1 math=3")) << fake.log();
}

TEST(EngineCudnn, GroupedBf16AndOneDimensionalConvs) {
  Fake fake;
  cudnn::Session s;
  ASSERT_EQ(s.open(kStream), "");
  Item dw = resnet_conv("bf16", false);  // depthwise: groups = channels
  dw.conv_weight = {128, 1, 3, 3};
  dw.groups = 128;
  cudnn::Conv c;
  ASSERT_EQ(c.plan(s, dw, size_t{4} << 30), "");
  EXPECT_TRUE(has(fake.log(), "cudnnSetConvolutionGroupCount 128")) << fake.log();
  EXPECT_TRUE(has(fake.log(), "cudnnSetFilterNdDescriptor dt=9 format=0 dims=128,1,3,3")) << fake.log();
  EXPECT_EQ(c.weight_bytes, size_t{128} * 9 * 2);
  fake.reset();
  Item one;  // conv1d(x[8, 16, 100], w[32, 16, 5], stride 1, padding 2) → [8, 32, 100], run as 2-D of width 1
  one.tier = "conv";
  one.dtype = "fp16";
  one.conv_input = {8, 16, 100};
  one.conv_weight = {32, 16, 5};
  one.conv_output = {8, 32, 100};
  one.conv_stride = {1};
  one.conv_padding = {2};
  one.conv_dilation = {1};
  cudnn::Conv c1;
  ASSERT_EQ(c1.plan(s, one, size_t{4} << 30), "");
  EXPECT_TRUE(has(fake.log(), "cudnnSetTensorNdDescriptor dt=2 dims=8,16,100,1 strides=1600,100,1,1")) << fake.log();
  EXPECT_TRUE(has(fake.log(), "pad=2,0 stride=1,1 dilation=1,1")) << fake.log();
}

TEST(EngineCudnn, DisagreementsAndErrorsAreOneMessageNamingTheCall) {
  Fake fake;
  cudnn::Session s;
  ASSERT_EQ(s.open(kStream), "");
  Item wrong = resnet_conv("fp32", false);
  wrong.conv_output = {32, 128, 56, 56};  // as if the stride were 1
  cudnn::Conv c;
  EXPECT_EQ(c.plan(s, wrong, size_t{4} << 30), "cuDNN's output 32x128x28x28 differs from the op's 32x128x56x56");
  EXPECT_EQ(c.plan(s, resnet_conv("int8", false), size_t{4} << 30), "dtype int8 is not replayed through cuDNN (bf16, fp16, fp32, fp64 are)");
  EXPECT_EQ(c.plan(s, resnet_conv("fp32", false), size_t{512} << 10),
            "cuDNN has no forward algorithm for this convolution within 0.5 MiB of workspace (3 tried)");
  ASSERT_EQ(c.plan(s, resnet_conv("fp32", false), size_t{4} << 30), "");
  fake.fail("cudnnConvolutionForward", 3000);
  int b = 0;
  EXPECT_EQ(c.run(&b, &b, &b, &b), "cudnnConvolutionForward: CUDNN_STATUS_NOT_SUPPORTED (3000)");
  fake.fail("cudnnSetConvolutionGroupCount", 2000);
  EXPECT_EQ(c.plan(s, resnet_conv("fp32", false), size_t{4} << 30), "cudnnSetConvolutionGroupCount: CUDNN_STATUS_BAD_PARAM (2000)");
}

TEST(EngineCudnn, MissingLibraryIsKeptAndNamesTheVariable) {
  setenv("JOULEPROF_CUDNN_LIB", "/nonexistent/libcudnn.so.9", 1);
  cudnn::Session s;
  const std::string why = s.open(kStream);
  unsetenv("JOULEPROF_CUDNN_LIB");
  EXPECT_NE(why.find("cannot load cuDNN (/nonexistent/libcudnn.so.9)"), std::string::npos) << why;
  EXPECT_NE(why.find("JOULEPROF_CUDNN_LIB"), std::string::npos) << why;
  EXPECT_EQ(s.open(kStream), why);  // not retried per convolution
  cudnn::Conv c;
  EXPECT_EQ(c.plan(s, resnet_conv("fp32", false), size_t{4} << 30), "cuDNN is not open");
}

// ResNet-50's bn1 at batch 32 (fp32, NCHW): cuDNN's bn_fw_inf_1C11_kernel_NCHW in the trace.
TEST(EngineCudnn, BatchNormGetsTheTracedXAndFp32ParametersOfItsChannels) {
  Fake fake;
  cudnn::Session s;
  ASSERT_EQ(s.open(kStream), "");
  cudnn::BatchNorm b;
  ASSERT_EQ(b.plan(s, bn("fp32", {32, 64, 112, 112}, false)), "");
  EXPECT_TRUE(has(fake.log(), "cudnnSetTensorNdDescriptor dt=0 dims=32,64,112,112 strides=802816,12544,112,1")) << fake.log();
  EXPECT_TRUE(has(fake.log(), "cudnnSetTensorNdDescriptor dt=0 dims=1,64,1,1 strides=64,1,1,1")) << fake.log();
  EXPECT_EQ(b.mode, cudnn::kBatchNormSpatial);
  EXPECT_EQ(b.data_bytes, size_t{32} * 64 * 112 * 112 * 4);
  EXPECT_EQ(b.param_bytes, size_t{64} * 4);
  char params[4 * 256] = {};
  int x = 0, y = 0;
  EXPECT_EQ(b.run(&x, &y, params, 256), "");
  EXPECT_TRUE(has(fake.log(),
                  "cudnnBatchNormalizationForwardInference mode=1 x=dt0:32,64,112,112/802816,12544,112,1 y=x params=dt0:1,64,1,1 eps=1e-05 "
                  "stream=0x1234 scalars=set buffers=set offsets=256,512,768"))
      << fake.log();
}

TEST(EngineCudnn, BatchNormLayoutsDtypesAndModes) {
  Fake fake;
  cudnn::Session s;
  ASSERT_EQ(s.open(kStream), "");
  cudnn::BatchNorm b;
  // channels-last fp16: NHWC strides for x, the parameters still fp32 (as PyTorch gives cuDNN)
  ASSERT_EQ(b.plan(s, bn("fp16", {32, 256, 56, 56}, true)), "");
  EXPECT_TRUE(has(fake.log(), "dt=2 dims=32,256,56,56 strides=802816,1,14336,256")) << fake.log();
  EXPECT_TRUE(has(fake.log(), "dt=0 dims=1,256,1,1")) << fake.log();
  EXPECT_EQ(b.data_bytes, size_t{32} * 256 * 56 * 56 * 2);
  fake.reset();
  ASSERT_EQ(b.plan(s, bn("bf16", {8, 16, 100}, false)), "");  // 1-D: x as 4-D with a trailing 1, spatial mode
  EXPECT_TRUE(has(fake.log(), "dt=9 dims=8,16,100,1 strides=1600,100,1,1")) << fake.log();
  EXPECT_EQ(b.mode, cudnn::kBatchNormSpatial);
  fake.reset();
  ASSERT_EQ(b.plan(s, bn("fp64", {32, 2048}, false)), "");  // BatchNorm1d on [N, C]: per activation, fp64 parameters
  EXPECT_TRUE(has(fake.log(), "dt=1 dims=32,2048,1,1 strides=2048,1,1,1")) << fake.log();
  EXPECT_TRUE(has(fake.log(), "dt=1 dims=1,2048,1,1")) << fake.log();
  EXPECT_EQ(b.mode, cudnn::kBatchNormPerActivation);
  EXPECT_EQ(b.param_bytes, size_t{2048} * 8);
  char p[4 * 2048 * 8] = {};
  EXPECT_EQ(b.run(p, p, p, 2048 * 8), "");
  EXPECT_TRUE(has(fake.log(), "cudnnBatchNormalizationForwardInference mode=0 x=dt1:32,2048,1,1/2048,1,1,1")) << fake.log();
}

// The engine's error path: what cuDNN answers becomes the one line of the row's stand-in.
TEST(EngineCudnn, BatchNormErrorsAreOneMessageAndTheStandInLineSaysWhy) {
  Fake fake;
  cudnn::BatchNorm b;
  cudnn::Session closed;
  setenv("JOULEPROF_CUDNN_LIB", "/nonexistent/libcudnn.so.9", 1);
  ASSERT_NE(closed.open(kStream), "");
  setenv("JOULEPROF_CUDNN_LIB", JOULEPROF_FAKE_CUDNN, 1);
  EXPECT_EQ(b.plan(closed, bn("fp32", {32, 64, 112, 112}, false)), "cuDNN is not open");
  cudnn::Session s;
  ASSERT_EQ(s.open(kStream), "");
  EXPECT_EQ(b.plan(s, bn("int8", {32, 64, 112, 112}, false)), "dtype int8 is not replayed through cuDNN (bf16, fp16, fp32, fp64 are)");
  EXPECT_EQ(b.plan(s, bn("fp32", {32}, false)), "the batchnorm item's input is not a 2- to 5-D tensor");
  EXPECT_EQ(b.plan(s, bn("fp32", {32, 0, 7, 7}, false)), "the batchnorm item's input is not a 2- to 5-D tensor");
  ASSERT_EQ(b.plan(s, bn("fp32", {32, 2048, 7, 7}, false)), "");
  fake.fail("cudnnBatchNormalizationForwardInference", 3000);
  char p[4 * 8192] = {};
  const std::string why = b.run(p, p, p, 8192);
  EXPECT_EQ(why, "cudnnBatchNormalizationForwardInference: CUDNN_STATUS_NOT_SUPPORTED (3000)");
  EXPECT_EQ(cudnn::detail::stand_in("batchnorm", "not run through cuDNN", why),
            "batchnorm not run through cuDNN (cudnnBatchNormalizationForwardInference: CUDNN_STATUS_NOT_SUPPORTED (3000)): a memory-bound "
            "kernel moving the op's bytes stands in");
  fake.fail("cudnnSetTensorNdDescriptor", 2000);
  EXPECT_EQ(b.plan(s, bn("fp32", {32, 2048, 7, 7}, false)), "cudnnSetTensorNdDescriptor: CUDNN_STATUS_BAD_PARAM (2000)");
}
