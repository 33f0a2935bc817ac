// Without a usable driver or GPU, loading a CUDA module fails with
// AGATE_UNAVAILABLE and a message naming what is missing, never a crash; CPU
// modules still load and run in the same process. The scenario is the first
// argument (one process each: the driver is opened once per process):
//   no_driver   AGATE_CUDA_DRIVER names a library that does not exist
//   no_gpu      the fake driver with no devices
//   init_fails  the fake driver whose cuInit fails (CUDA_ERROR_NO_DEVICE... 999)
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "agate/runtime.h"
#include "core/serialize/serialize_module.h"
#include "runtime_minimal/cuda/testing/cuda_test_modules.h"
#include "runtime_minimal/testing/test_modules.h"

namespace agate {
namespace {

std::string g_scenario;

std::string Message() { return agate_last_error_message(); }

// What the scenario's message must say.
std::string Expected() {
  if (g_scenario == "no_driver") return "no CUDA driver: cannot open /nonexistent/libcuda.so.1";
  if (g_scenario == "no_gpu") return "the CUDA driver is installed but sees no GPU";
  return "cuInit failed: CUDA_ERROR_UNKNOWN (unknown error)";
}

TEST(CudaUnavailableTest, CudaModulesAreRefusedWithTheReason) {
  const std::vector<uint8_t> bytes =
      serialize::SerializeModule(testing::CudaAddSpec(testing::CubinAndPtxImages()));
  for (int attempt = 0; attempt < 2; ++attempt) {  // the same answer every time
    agate_module_t* module = nullptr;
    EXPECT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_UNAVAILABLE);
    EXPECT_EQ(module, nullptr);
    EXPECT_NE(Message().find(Expected()), std::string::npos) << Message();
  }
  int32_t count = -1;
  EXPECT_EQ(agate_runtime_device_count(kDLCUDA, &count), AGATE_UNAVAILABLE);
  EXPECT_NE(Message().find(Expected()), std::string::npos) << Message();
  EXPECT_EQ(count, -1);
}

TEST(CudaUnavailableTest, CpuModulesStillRun) {
  const std::vector<uint8_t> bytes = serialize::SerializeModule(testing::MlpSpec(serialize::TargetKind::kHostCpu));
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_OK) << Message();
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK) << Message();
  std::vector<float> x = testing::MlpInput(3);
  int64_t shape[2];
  DLTensor t = testing::MatrixTensor(x.data(), shape);
  ASSERT_EQ(agate_executor_set_input(executor, 0, &t), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << Message();
  agate_executor_free(executor);
  agate_module_free(module);
}

}  // namespace
}  // namespace agate

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  agate::g_scenario = argc > 1 ? argv[1] : "";
  if (agate::g_scenario == "no_driver") {
    setenv("AGATE_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  } else if (agate::g_scenario == "no_gpu") {
    agate::testing::InstallFakeCuda("none");
  } else if (agate::g_scenario == "init_fails") {
    agate::testing::InstallFakeCuda("80:1G;init=999");
  } else {
    fprintf(stderr, "usage: %s no_driver|no_gpu|init_fails\n", argv[0]);
    return 2;
  }
  return RUN_ALL_TESTS();
}
