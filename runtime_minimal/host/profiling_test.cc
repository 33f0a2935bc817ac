// Profiling [host] (ABI 1.1): agate_module_num_calls, agate_module_call_kernel_name and
// agate_executor_run_profiled against the plan the module was built from, and their
// refusals (NULL handles, a wrong count, an index past the plan) with status and message.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "agate/runtime.h"
#include "core/serialize/serialize_module.h"
#include "runtime_minimal/testing/test_kernels.h"
#include "runtime_minimal/testing/test_modules.h"

namespace agate {
namespace {

using serialize::TargetKind;

std::string Message() { return agate_last_error_message(); }

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class ProfilingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_ = testing::MlpSpec(TargetKind::kHostCpu);
    bytes_ = serialize::SerializeModule(spec_);
    ASSERT_EQ(agate_module_load_from_memory(bytes_.data(), bytes_.size(), nullptr, &module_), AGATE_OK) << Message();
    agate_executor_options serial = {sizeof(agate_executor_options), 1};
    ASSERT_EQ(agate_executor_create(module_, &serial, &executor_), AGATE_OK) << Message();
    x_ = testing::MlpInput(7);
    DLTensor t = testing::MatrixTensor(x_.data(), shape_);
    ASSERT_EQ(agate_executor_set_input(executor_, 0, &t), AGATE_OK) << Message();
  }
  void TearDown() override {
    agate_executor_free(executor_);
    agate_module_free(module_);
  }

  std::vector<float> Output() {
    std::vector<float> y(AGATE_TEST_VEC);
    int64_t shape[2];
    DLTensor out = testing::MatrixTensor(y.data(), shape);
    EXPECT_EQ(agate_executor_copy_output(executor_, 0, &out), AGATE_OK) << Message();
    return y;
  }

  serialize::ModuleSpec spec_;
  std::vector<uint8_t> bytes_;
  agate_module_t* module_ = nullptr;
  agate_executor_t* executor_ = nullptr;
  std::vector<float> x_;
  int64_t shape_[2];
};

TEST_F(ProfilingTest, CountsAndNamesMatchThePlan) {
  uint32_t n = 0;
  ASSERT_EQ(agate_module_num_calls(module_, &n), AGATE_OK) << Message();
  ASSERT_EQ(n, spec_.plan.size());
  ASSERT_GE(n, 3u);  // matmul, add, relu
  for (uint32_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    ASSERT_EQ(agate_module_call_kernel_name(module_, i, &name), AGATE_OK) << Message();
    ASSERT_NE(name, nullptr);
    EXPECT_EQ(std::string(name), spec_.kernels[spec_.plan[i].kernel].name) << "call " << i;
  }
}

TEST_F(ProfilingTest, AProfiledRunFillsEveryCallAndComputesWhatARunDoes) {
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  const std::vector<float> plain = Output();
  ASSERT_EQ(plain, testing::MlpReference(x_));

  uint32_t n = 0;
  ASSERT_EQ(agate_module_num_calls(module_, &n), AGATE_OK);
  const uint64_t kUnwritten = UINT64_MAX;
  for (int repeat = 0; repeat < 3; ++repeat) {
    std::vector<uint64_t> ns(n, kUnwritten);
    ASSERT_EQ(agate_executor_run_profiled(executor_, ns.data(), n), AGATE_OK) << Message();
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; ++i) {
      EXPECT_NE(ns[i], kUnwritten) << "call " << i << " has no time";
      EXPECT_LT(ns[i], uint64_t{60} * 1000000000u) << "call " << i;  // a plausible duration, not garbage
      total += ns[i];
    }
    EXPECT_GT(total, 0u);
    EXPECT_EQ(Output(), plain) << "repeat " << repeat;
  }
}

TEST_F(ProfilingTest, KernelsWithAWorkspaceAreProfiledToo) {
  const std::vector<uint8_t> bytes = serialize::SerializeModule(testing::WorkspaceSpec(TargetKind::kHostCpu));
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_OK) << Message();
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK) << Message();
  std::vector<float> x = testing::MlpInput(3);
  int64_t shape[2];
  DLTensor t = testing::MatrixTensor(x.data(), shape);
  ASSERT_EQ(agate_executor_set_input(executor, 0, &t), AGATE_OK) << Message();
  uint32_t n = 0;
  ASSERT_EQ(agate_module_num_calls(module, &n), AGATE_OK);
  std::vector<uint64_t> ns(n);
  ASSERT_EQ(agate_executor_run_profiled(executor, ns.data(), n), AGATE_OK) << Message();
  std::vector<float> y(AGATE_TEST_VEC);
  DLTensor out = testing::MatrixTensor(y.data(), shape);
  ASSERT_EQ(agate_executor_copy_output(executor, 0, &out), AGATE_OK) << Message();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 2 * x[i]) << i;
  agate_executor_free(executor);
  agate_module_free(module);
}

TEST_F(ProfilingTest, NullHandlesAreRefusedByName) {
  uint32_t n = 0;
  EXPECT_EQ(agate_module_num_calls(nullptr, &n), AGATE_INVALID_ARGUMENT);
  EXPECT_TRUE(Contains(Message(), "module")) << Message();
  EXPECT_EQ(agate_module_num_calls(module_, nullptr), AGATE_INVALID_ARGUMENT);
  EXPECT_TRUE(Contains(Message(), "out_count is NULL")) << Message();

  const char* name = nullptr;
  EXPECT_EQ(agate_module_call_kernel_name(nullptr, 0, &name), AGATE_INVALID_ARGUMENT);
  EXPECT_TRUE(Contains(Message(), "module")) << Message();
  EXPECT_EQ(agate_module_call_kernel_name(module_, 0, nullptr), AGATE_INVALID_ARGUMENT);
  EXPECT_TRUE(Contains(Message(), "out_name is NULL")) << Message();

  ASSERT_EQ(agate_module_num_calls(module_, &n), AGATE_OK);
  std::vector<uint64_t> ns(n);
  EXPECT_EQ(agate_executor_run_profiled(nullptr, ns.data(), n), AGATE_INVALID_ARGUMENT);
  EXPECT_TRUE(Contains(Message(), "executor")) << Message();
  EXPECT_EQ(agate_executor_run_profiled(executor_, nullptr, n), AGATE_INVALID_ARGUMENT);
  EXPECT_TRUE(Contains(Message(), "out_call_ns is NULL")) << Message();
}

TEST_F(ProfilingTest, AnIndexPastThePlanIsOutOfRange) {
  uint32_t n = 0;
  ASSERT_EQ(agate_module_num_calls(module_, &n), AGATE_OK);
  const char* name = "untouched";
  EXPECT_EQ(agate_module_call_kernel_name(module_, n, &name), AGATE_OUT_OF_RANGE);
  EXPECT_TRUE(Contains(Message(), "call " + std::to_string(n) + " of " + std::to_string(n))) << Message();
  EXPECT_STREQ(name, "untouched");
  EXPECT_EQ(agate_module_call_kernel_name(module_, UINT32_MAX, &name), AGATE_OUT_OF_RANGE);
  EXPECT_TRUE(Contains(Message(), std::to_string(UINT32_MAX))) << Message();
}

TEST_F(ProfilingTest, AWrongCountIsRefusedBeforeAnythingRuns) {
  uint32_t n = 0;
  ASSERT_EQ(agate_module_num_calls(module_, &n), AGATE_OK);
  std::vector<uint64_t> ns(n + 1, 0);
  for (uint32_t count : {n - 1, n + 1, 0u}) {
    EXPECT_EQ(agate_executor_run_profiled(executor_, ns.data(), count), AGATE_INVALID_ARGUMENT) << count;
    EXPECT_TRUE(Contains(Message(), "holds " + std::to_string(count) + " entries")) << Message();
    EXPECT_TRUE(Contains(Message(), "the plan has " + std::to_string(n) + " calls")) << Message();
  }
  for (uint64_t v : ns) EXPECT_EQ(v, 0u);  // nothing was written
}

TEST(ProfilingUnboundTest, AnUnboundInputIsRefusedAsInARun) {
  const std::vector<uint8_t> bytes = serialize::SerializeModule(testing::MlpSpec(TargetKind::kHostCpu));
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_OK) << Message();
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK) << Message();
  uint32_t n = 0;
  ASSERT_EQ(agate_module_num_calls(module, &n), AGATE_OK);
  std::vector<uint64_t> ns(n);
  EXPECT_EQ(agate_executor_run_profiled(executor, ns.data(), n), AGATE_INVALID_ARGUMENT);
  EXPECT_TRUE(Contains(Message(), "is not bound")) << Message();
  agate_executor_free(executor);
  agate_module_free(module);
}

}  // namespace
}  // namespace agate
