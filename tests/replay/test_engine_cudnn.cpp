// jouleprof-replay's convolution tier against the fake cuDNN (fakes/cudnn): the library found
// through $JOULEPROF_CUDNN_LIB, the descriptors the traced shape gives (layout, groups, padding,
// 1-D as 2-D), PyTorch's algorithm choice with benchmark off (the heuristic's first that succeeds
// within the workspace), the math type per dtype, and errors as one message naming the call.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

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
