// DCGM profiling fields without a host engine: values → window, blanks and statuses skipped.
#include <gtest/gtest.h>

#include "dcgm_abi.hpp"
#include "dcgm_window.hpp"

using namespace jouleprof::activity;
namespace dc = jouleprof::dcgm;

TEST(DcgmWindow, FieldsMapOntoTheModelsNames) {
  const auto& f = dcgm_fields();
  ASSERT_EQ(f.size(), 7u);
  EXPECT_STREQ(f[0].metric, "sm_active");
  EXPECT_EQ(f[0].id, 1002);  // DCGM_FI_PROF_SM_ACTIVE
  EXPECT_STREQ(f[2].metric, "tensor_active");
  EXPECT_EQ(f[2].id, 1004);  // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
  EXPECT_STREQ(f[3].metric, "dram_active");
  EXPECT_EQ(f[3].id, 1005);
  EXPECT_EQ(f[6].id, 1008);  // DCGM_FI_PROF_PIPE_FP16_ACTIVE
}

TEST(DcgmWindow, MeansPerFieldSkippingBlanksAndErrors) {
  const std::vector<DcgmValue> v{
      {dc::kFieldSmActive, dc::kOk, 0.9},
      {dc::kFieldSmActive, dc::kOk, 0.7},
      {dc::kFieldTensorActive, dc::kOk, 0.5},
      {dc::kFieldDramActive, dc::kOk, dc::kFp64Blank + 2},  // not supported
      {dc::kFieldFp64Active, dc::kNotSupported, 0.3},       // status says no
      {dc::kFieldFp32Active, dc::kOk, -0.1},                // nonsense
      {999, dc::kOk, 0.4}};                                 // not ours
  const Window w = dcgm_window(v, 1.0, 1.5);
  EXPECT_EQ(w.t0_s, 1.0);
  EXPECT_EQ(w.t1_s, 1.5);
  ASSERT_EQ(w.values.size(), 7u);
  EXPECT_NEAR(w.values[0], 0.8, 1e-12);
  EXPECT_EQ(w.values[1], -1.0);  // occupancy: no value
  EXPECT_NEAR(w.values[2], 0.5, 1e-12);
  EXPECT_EQ(w.values[3], -1.0);
  EXPECT_EQ(w.values[4], -1.0);
  EXPECT_EQ(w.values[5], -1.0);
}

TEST(DcgmWindow, FieldValueStructHasDcgmsLayout) {
  // dcgm_structs.h: version, fieldId, fieldType, status, then ts at 16 and the value at 24.
  EXPECT_EQ(offsetof(dc::dcgmFieldValue_v1, ts), 16u);
  EXPECT_EQ(offsetof(dc::dcgmFieldValue_v1, value), 24u);
  EXPECT_EQ(sizeof(dc::dcgmFieldValue_v1), 24u + 4096u);
  EXPECT_EQ(dc::kFieldValueVersion1, (1u << 24) | (24u + 4096u));
}
