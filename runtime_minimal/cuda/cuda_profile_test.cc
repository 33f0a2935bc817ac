// The cuda profile on the real driver: CUDA modules (format 1.0 with
// hand-written PTX, format 1.1 with the nvcc-built test images) run on a GPU
// when there is one; without a GPU or driver the same binary refuses them with
// AGATE_UNAVAILABLE and a message naming what is missing. (Without a GPU the
// profile is tested against the fake driver: cuda_backend_test.)
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "agate/runtime.h"
#include "core/serialize/serialize_module.h"
#include "runtime_minimal/cuda/testing/cuda_test_modules.h"
#include "runtime_minimal/testing/test_modules.h"

namespace agate {
namespace {

constexpr int kN = 256;

// out[i] = a[i] + b[i] for i < 256; one thread per element.
constexpr char kAddPtx[] = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry agate_cuda_add(.param .u64 pa, .param .u64 pb, .param .u64 pout) {
  .reg .pred %p<2>;
  .reg .b32 %r<5>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<11>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pout];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  setp.ge.s32 %p1, %r4, 256;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd4, %rd1;
  cvta.to.global.u64 %rd5, %rd2;
  cvta.to.global.u64 %rd6, %rd3;
  mul.wide.s32 %rd7, %r4, 4;
  add.s64 %rd8, %rd4, %rd7;
  add.s64 %rd9, %rd5, %rd7;
  add.s64 %rd10, %rd6, %rd7;
  ld.global.f32 %f1, [%rd8];
  ld.global.f32 %f2, [%rd9];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd10], %f3;
DONE:
  ret;
}
)";

// y = (x + c) + x: two launches, an arena intermediate and a constant.
serialize::ModuleSpec CudaAddSpec() {
  serialize::ModuleSpec spec;
  spec.target = "cuda -arch=sm_75";
  spec.target_kind = serialize::TargetKind::kCuda;
  spec.inputs = {serialize::TensorSpec{"x", ir::DType::Float(32), {kN}}};
  spec.outputs = {serialize::TensorSpec{"y", ir::DType::Float(32), {kN}}};
  std::vector<float> c(kN);
  for (int i = 0; i < kN; ++i) c[i] = static_cast<float>(i) * 0.5f;
  const uint8_t* cb = reinterpret_cast<const uint8_t*>(c.data());
  spec.constants = {serialize::ConstantSpec{std::vector<uint8_t>(cb, cb + kN * 4), 64}};
  serialize::KernelSpec add{"agate_cuda_add", {kN * 4, kN * 4, kN * 4}};
  add.has_cuda = true;
  add.cuda.kind = serialize::CudaImageKind::kPtx;
  add.cuda.image.assign(kAddPtx, kAddPtx + std::strlen(kAddPtx));
  add.cuda.grid = {2, 1, 1};
  add.cuda.block = {128, 1, 1};
  spec.kernels = {add};
  spec.arena_bytes = kN * 4;
  using serialize::ArgSpec;
  spec.plan = {
      serialize::CallSpec{0, {ArgSpec::Input(0, kN * 4), ArgSpec::Constant(0, kN * 4), ArgSpec::Arena(0, kN * 4)}},
      serialize::CallSpec{0, {ArgSpec::Arena(0, kN * 4), ArgSpec::Input(0, kN * 4), ArgSpec::Output(0, kN * 4)}},
  };
  return spec;
}

TEST(CudaProfileTest, RunsOnAGpuOrSaysWhyNot) {
  const std::vector<uint8_t> bytes = serialize::SerializeModule(CudaAddSpec());
  agate_module_t* module = nullptr;
  const agate_status_t status = agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module);
  if (status == AGATE_UNAVAILABLE) {
    const std::string message = agate_last_error_message();
    EXPECT_TRUE(message.find("libcuda.so.1") != std::string::npos || message.find("GPU") != std::string::npos)
        << message;
    GTEST_SKIP() << "no GPU here: " << message;
  }
  ASSERT_EQ(status, AGATE_OK) << agate_last_error_message();
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK) << agate_last_error_message();
  std::vector<float> x(kN);
  for (int i = 0; i < kN; ++i) x[i] = static_cast<float>(i % 7);
  int64_t shape[1] = {kN};
  DLTensor t{x.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  ASSERT_EQ(agate_executor_set_input(executor, 0, &t), AGATE_OK) << agate_last_error_message();
  for (int run = 0; run < 3; ++run) {
    ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << agate_last_error_message();
    std::vector<float> y(kN);
    DLTensor out{y.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
    ASSERT_EQ(agate_executor_copy_output(executor, 0, &out), AGATE_OK) << agate_last_error_message();
    for (int i = 0; i < kN; ++i) ASSERT_EQ(y[i], 2 * x[i] + i * 0.5f) << i;
  }
  DLTensor view;
  ASSERT_EQ(agate_executor_get_output(executor, 0, &view), AGATE_OK);
  EXPECT_EQ(view.device.device_type, kDLCUDA);
  agate_executor_free(executor);
  agate_module_free(module);
}

// Format 1.1: the image for the machine's GPU (cubin sm_80 or PTX compute_75),
// recorded as a CUDA graph and replayed, then profiled with CUDA events.
TEST(CudaProfileTest, ModuleWideImagesRunOnAGpuOrSayWhyNot) {
  const std::vector<uint8_t> bytes =
      serialize::SerializeModule(testing::CudaAddSpec(testing::CubinAndPtxImages()));
  agate_module_t* module = nullptr;
  const agate_status_t status = agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module);
  if (status == AGATE_UNAVAILABLE) GTEST_SKIP() << "no GPU here: " << agate_last_error_message();
  ASSERT_EQ(status, AGATE_OK) << agate_last_error_message();
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK) << agate_last_error_message();
  std::vector<float> x(kN);
  for (int i = 0; i < kN; ++i) x[i] = static_cast<float>(i % 5);
  int64_t shape[1] = {kN};
  DLTensor t{x.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  ASSERT_EQ(agate_executor_set_input(executor, 0, &t), AGATE_OK) << agate_last_error_message();
  for (int run = 0; run < 3; ++run) {  // recorded as a CUDA graph, then replayed
    ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << agate_last_error_message();
    std::vector<float> y(kN);
    DLTensor out{y.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
    ASSERT_EQ(agate_executor_copy_output(executor, 0, &out), AGATE_OK) << agate_last_error_message();
    for (int i = 0; i < kN; ++i) ASSERT_EQ(y[i], testing::CudaAddExpected(x[i], i)) << i;
  }
  DLTensor view;
  ASSERT_EQ(agate_executor_get_output(executor, 0, &view), AGATE_OK);
  EXPECT_EQ(view.device.device_type, kDLCUDA);
  uint64_t ns[2] = {0, 0};
  ASSERT_EQ(agate_executor_run_profiled(executor, ns, 2), AGATE_OK) << agate_last_error_message();
  EXPECT_GT(ns[0] + ns[1], 0u);
  agate_executor_free(executor);
  agate_module_free(module);
}

}  // namespace
}  // namespace agate
