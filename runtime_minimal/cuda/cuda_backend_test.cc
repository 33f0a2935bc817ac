// The cuda profile against the fake CUDA driver (testing/fake_cuda.h), through
// the public C ABI: image choice on every architecture, one driver module per
// agate module, constants uploaded once, CUDA graph record and replay (again
// after an address changes), host and device inputs and outputs, the workspace
// parameter, the shared-memory opt-in, profiling with events, device indices,
// and every failure (out of memory, driver errors, wrong tensors, corrupt
// payload) leaving the module and executor usable and nothing leaked.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "agate/runtime.h"
#include "core/serialize/serialize_module.h"
#include "core/support/error.h"
#include "runtime_minimal/cuda/testing/cuda_test_modules.h"
#include "runtime_minimal/schema/module_generated.h"

namespace agate {
namespace {

using serialize::CudaImageKind;
using serialize::CudaImageSpec;
using serialize::ModuleSpec;
using testing::CubinAndPtxImages;
using testing::CudaAddExpected;
using testing::CudaAddSpec;
using testing::kCudaTestN;
using testing::TestCubinForArch;
using testing::TestPtx;

// Device ordinals of the fake machine.
enum Device { kSm80, kSm75, kSm86, kSm89, kSm90, kSm100, kSm120, kSm80Tiny, kNumDevices };
constexpr char kDevices[] = "80:16G,75:4G,86:16G,89:16G,90:80G,100:80G,120:32G,80:3K";

constexpr int kCudaOutOfMemory = 2;
constexpr int kCudaLaunchOutOfResources = 701;
constexpr int kCudaIllegalAddress = 700;
constexpr int kCudaUnsupportedPtxVersion = 222;

std::string Message() { return agate_last_error_message(); }

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

int64_t g_shape[1] = {kCudaTestN};

DLTensor Tensor(void* data, DLDeviceType type, int32_t device_id = 0) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{type, device_id};
  t.ndim = 1;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = g_shape;
  return t;
}

DLTensor HostTensor(float* data) { return Tensor(data, kDLCPU); }

DLTensor DeviceTensor(uint64_t address, int32_t device_id = 0) {
  return Tensor(reinterpret_cast<void*>(static_cast<uintptr_t>(address)), kDLCUDA, device_id);
}

float* Floats(uint64_t device_address) { return reinterpret_cast<float*>(static_cast<uintptr_t>(device_address)); }

std::vector<float> Input(float seed) {
  std::vector<float> x(kCudaTestN);
  for (int i = 0; i < kCudaTestN; ++i) x[i] = seed + static_cast<float>(i % 7);
  return x;
}

class CudaBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { fake_ = &testing::InstallFakeCuda(kDevices); }

  void SetUp() override {
    fake().reset();
    fake().set_kernel_hook(fake().run_test_kernel, nullptr);
    before_ = fake().Stats();
  }

  // Every test frees what it made: the fake's live counts are back where they were.
  void TearDown() override {
    Free();
    const agate_fake_cuda_stats after = fake().Stats();
    EXPECT_EQ(after.live_allocations, before_.live_allocations) << "device memory leaked";
    EXPECT_EQ(after.live_modules, before_.live_modules) << "driver module leaked";
    EXPECT_EQ(after.live_graph_execs, before_.live_graph_execs) << "graph leaked";
  }

  static const testing::FakeCuda& fake() { return *fake_; }

  agate_status_t Load(const std::vector<uint8_t>& bytes, int32_t device = kSm80) {
    agate_module_options options{sizeof(agate_module_options), device};
    return agate_module_load_from_memory_with_options(bytes.data(), bytes.size(), nullptr, &options, &module_);
  }

  agate_status_t Load(const ModuleSpec& spec, int32_t device = kSm80) {
    return Load(serialize::SerializeModule(spec), device);
  }

  agate_status_t Create() { return agate_executor_create(module_, nullptr, &executor_); }

  void LoadAndCreate(const ModuleSpec& spec, int32_t device = kSm80) {
    ASSERT_EQ(Load(spec, device), AGATE_OK) << Message();
    ASSERT_EQ(Create(), AGATE_OK) << Message();
  }

  std::vector<float> CopyOut() {
    std::vector<float> y(kCudaTestN, -1.0f);
    DLTensor out = HostTensor(y.data());
    EXPECT_EQ(agate_executor_copy_output(executor_, 0, &out), AGATE_OK) << Message();
    return y;
  }

  void ExpectAddResult(const std::vector<float>& x) {
    const std::vector<float> y = CopyOut();
    for (int i = 0; i < kCudaTestN; ++i) ASSERT_EQ(y[i], CudaAddExpected(x[i], i)) << i;
  }

  void Free() {
    agate_executor_free(executor_);
    executor_ = nullptr;
    agate_module_free(module_);
    module_ = nullptr;
  }

  static const testing::FakeCuda* fake_;
  agate_module_t* module_ = nullptr;
  agate_executor_t* executor_ = nullptr;
  agate_fake_cuda_stats before_;
};

const testing::FakeCuda* CudaBackendTest::fake_ = nullptr;

TEST_F(CudaBackendTest, OneDriverModuleConstantsOnceAndAGraphReplayedEveryRun) {
  LoadAndCreate(CudaAddSpec(CubinAndPtxImages()));
  agate_fake_cuda_stats s = fake().Stats();
  EXPECT_EQ(s.module_loads, 1u) << "one driver module for the whole agate module";
  EXPECT_EQ(s.last_image_cubin, 1);
  EXPECT_EQ(s.last_image_arch, 80);
  EXPECT_EQ(s.htod_copies, 1u) << "the one constant, uploaded at load";
  for (int run = 0; run < 3; ++run) {
    std::vector<float> x = Input(static_cast<float>(run));
    DLTensor t = HostTensor(x.data());
    ASSERT_EQ(agate_executor_set_input(executor_, 0, &t), AGATE_OK) << Message();
    ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
    ExpectAddResult(x);
  }
  s = fake().Stats();
  EXPECT_EQ(s.htod_copies, 1u + 3u) << "constants once, the host input once per run";
  EXPECT_EQ(s.captures, 1u) << "recorded once";
  EXPECT_EQ(s.graph_instantiations, 1u);
  EXPECT_EQ(s.graph_launches, 3u) << "replayed every run";
  EXPECT_EQ(s.kernel_launches, 2u) << "kernels are launched only while recording";
  EXPECT_EQ(s.kernel_executions, 6u);
  EXPECT_EQ(s.module_loads, 1u);
  // A second executor shares the module's constants: nothing is uploaded again.
  agate_executor_t* second = nullptr;
  ASSERT_EQ(agate_executor_create(module_, nullptr, &second), AGATE_OK) << Message();
  EXPECT_EQ(fake().Stats().htod_copies, 4u);
  agate_executor_free(second);
  DLTensor view;
  ASSERT_EQ(agate_executor_get_output(executor_, 0, &view), AGATE_OK);
  EXPECT_EQ(view.device.device_type, kDLCUDA);
  EXPECT_EQ(view.device.device_id, 0);
}

TEST_F(CudaBackendTest, TheImageEachArchitectureLoads) {
  struct Case {
    int device;
    int cubin;  // expected last_image_cubin
    int arch;   // expected last_image_arch
  };
  // The compiler's pair for sm_80 (cubin sm_80, PTX compute_75).
  const Case cases[] = {{kSm80, 1, 80}, {kSm75, 0, 75}, {kSm86, 0, 75}, {kSm89, 0, 75},
                        {kSm90, 0, 75}, {kSm100, 0, 75}, {kSm120, 0, 75}};
  const std::vector<uint8_t> bytes = serialize::SerializeModule(CudaAddSpec(CubinAndPtxImages()));
  for (const Case& c : cases) {
    SCOPED_TRACE("device " + std::to_string(c.device));
    ASSERT_EQ(Load(bytes, c.device), AGATE_OK) << Message();
    EXPECT_EQ(fake().Stats().last_image_cubin, c.cubin);
    EXPECT_EQ(fake().Stats().last_image_arch, c.arch);
    ASSERT_EQ(Create(), AGATE_OK) << Message();
    std::vector<float> x = Input(1);
    DLTensor t = HostTensor(x.data());
    ASSERT_EQ(agate_executor_set_input(executor_, 0, &t), AGATE_OK) << Message();
    ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
    ExpectAddResult(x);
    DLDevice where{};
    ASSERT_EQ(agate_module_device(module_, &where), AGATE_OK);
    EXPECT_EQ(where.device_type, kDLCUDA);
    EXPECT_EQ(where.device_id, c.device);
    Free();
  }
}

TEST_F(CudaBackendTest, CubinsOnlyAndTheMessageWhenNothingFits) {
  // Cubins for sm_86 and sm_90 only.
  ModuleSpec spec = CudaAddSpec({CudaImageSpec{CudaImageKind::kCubin, 86, TestCubinForArch(86)},
                                 CudaImageSpec{CudaImageKind::kCubin, 90, TestCubinForArch(90)}});
  spec.target = "cuda -arch=sm_90";
  const std::vector<uint8_t> bytes = serialize::SerializeModule(spec);
  ASSERT_EQ(Load(bytes, kSm89), AGATE_OK) << Message();  // sm_86 code runs on sm_89
  EXPECT_EQ(fake().Stats().last_image_arch, 86);
  Free();
  ASSERT_EQ(Load(bytes, kSm90), AGATE_OK) << Message();
  EXPECT_EQ(fake().Stats().last_image_arch, 90);
  Free();
  for (int device : {kSm80, kSm75, kSm100, kSm120}) {
    EXPECT_EQ(Load(bytes, device), AGATE_UNSUPPORTED);
    EXPECT_TRUE(Contains(Message(), "cubin sm_86, cubin sm_90")) << Message();
    EXPECT_TRUE(Contains(Message(), "cuda -arch=sm_90")) << Message();
    EXPECT_TRUE(Contains(Message(), "no image runs on this GPU")) << Message();
    EXPECT_EQ(module_, nullptr);
  }
  EXPECT_EQ(Load(bytes, kSm80), AGATE_UNSUPPORTED);
  EXPECT_TRUE(Contains(Message(), "CUDA device 0 (agate fake GPU sm_80, sm_80)")) << Message();
  EXPECT_TRUE(Contains(Message(), "recompile with -arch=sm_80")) << Message();
}

TEST_F(CudaBackendTest, PtxTheDriverCannotCompileFallsBackToACompatibleCubin) {
  const std::vector<uint8_t> bytes = serialize::SerializeModule(CudaAddSpec(CubinAndPtxImages()));
  // On sm_86 the PTX comes first; a driver too old for it leaves the sm_80 cubin.
  fake().fail_call("cuModuleLoadData", 0, kCudaUnsupportedPtxVersion);
  ASSERT_EQ(Load(bytes, kSm86), AGATE_OK) << Message();
  EXPECT_EQ(fake().Stats().last_image_cubin, 1);
  EXPECT_EQ(fake().Stats().last_image_arch, 80);
  Free();
  // PTX alone: refused, naming the driver as the cause.
  const std::vector<uint8_t> ptx_only =
      serialize::SerializeModule(CudaAddSpec({CudaImageSpec{CudaImageKind::kPtx, 75, TestPtx()}}));
  fake().fail_call("cuModuleLoadData", 0, kCudaUnsupportedPtxVersion);
  EXPECT_EQ(Load(ptx_only, kSm90), AGATE_UNSUPPORTED);
  EXPECT_TRUE(Contains(Message(), "CUDA_ERROR_UNSUPPORTED_PTX_VERSION")) << Message();
  EXPECT_TRUE(Contains(Message(), "the driver is older than the PTX")) << Message();
  EXPECT_TRUE(Contains(Message(), "PTX compute_75")) << Message();
}

TEST_F(CudaBackendTest, FormatOnePointZeroKernelsWithTheirOwnImages) {
  const ModuleSpec spec = CudaAddSpec({});  // the kernel carries its PTX, no module images
  std::vector<uint8_t> bytes = serialize::SerializeModule(spec);
  // A module a format-1.0 compiler wrote says 1.0.
  auto* table = reinterpret_cast<flatbuffers::Table*>(const_cast<fb::Module*>(fb::GetModule(bytes.data())));
  const uint32_t minor = 0;
  std::memcpy(table->GetAddressOf(fb::Module::VT_FORMAT_MINOR), &minor, sizeof(minor));
  ASSERT_EQ(fb::GetModule(bytes.data())->format_minor(), 0u);
  ASSERT_EQ(Load(bytes, kSm80), AGATE_OK) << Message();
  EXPECT_EQ(fake().Stats().module_loads, 1u);  // one kernel, one driver module
  EXPECT_EQ(fake().Stats().last_image_cubin, 0);
  ASSERT_EQ(Create(), AGATE_OK) << Message();
  std::vector<float> x = Input(2);
  DLTensor t = HostTensor(x.data());
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &t), AGATE_OK);
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  ExpectAddResult(x);
  // The writer says the current minor (1.2: Module.cpu_features, Module.kernel_fingerprint) now.
  EXPECT_EQ(fb::GetModule(serialize::SerializeModule(spec).data())->format_minor(), 2u);
}

TEST_F(CudaBackendTest, DeviceInputsAreReadInPlaceAndANewAddressIsRecordedAgain) {
  LoadAndCreate(CudaAddSpec(CubinAndPtxImages()));
  const uint64_t a = fake().alloc(0, kCudaTestN * 4);
  const uint64_t b = fake().alloc(0, kCudaTestN * 4);
  const std::vector<float> xa = Input(3), xb = Input(5);
  std::memcpy(Floats(a), xa.data(), kCudaTestN * 4);
  std::memcpy(Floats(b), xb.data(), kCudaTestN * 4);
  const uint64_t copies = fake().Stats().htod_copies;
  DLTensor ta = DeviceTensor(a);
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &ta), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  ExpectAddResult(xa);
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  EXPECT_EQ(fake().Stats().htod_copies, copies) << "a device input is never copied";
  EXPECT_EQ(fake().Stats().captures, 1u);
  // Another address: recorded again. `a` is freed first, so replaying the old
  // graph would read freed memory (the fake faults with an illegal address).
  fake().free(a);
  DLTensor tb = DeviceTensor(b);
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &tb), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  ExpectAddResult(xb);
  EXPECT_EQ(fake().Stats().captures, 2u);
  EXPECT_EQ(fake().Stats().graph_launches, 3u);
  // Back to a host input: the staging buffer's address, recorded again; copied in.
  std::vector<float> xh = Input(7);
  DLTensor th = HostTensor(xh.data());
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &th), AGATE_OK);
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  ExpectAddResult(xh);
  EXPECT_EQ(fake().Stats().captures, 3u);
  EXPECT_EQ(fake().Stats().htod_copies, copies + 1);
  fake().free(b);
}

TEST_F(CudaBackendTest, OutputsWrittenIntoTheCallersDeviceMemory) {
  LoadAndCreate(CudaAddSpec(CubinAndPtxImages()));
  std::vector<float> x = Input(1);
  DLTensor t = HostTensor(x.data());
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &t), AGATE_OK);
  const uint64_t y = fake().alloc(0, kCudaTestN * 4);
  DLTensor ty = DeviceTensor(y);
  ASSERT_EQ(agate_executor_set_output(executor_, 0, &ty), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  for (int i = 0; i < kCudaTestN; ++i) ASSERT_EQ(Floats(y)[i], CudaAddExpected(x[i], i)) << i;
  DLTensor view;
  ASSERT_EQ(agate_executor_get_output(executor_, 0, &view), AGATE_OK);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(view.data), y);
  ExpectAddResult(x);  // copy_output reads the bound memory
  // Device to device copy.
  const uint64_t z = fake().alloc(0, kCudaTestN * 4);
  DLTensor tz = DeviceTensor(z);
  ASSERT_EQ(agate_executor_copy_output(executor_, 0, &tz), AGATE_OK) << Message();
  EXPECT_EQ(std::memcmp(Floats(z), Floats(y), kCudaTestN * 4), 0);
  EXPECT_EQ(fake().Stats().dtod_copies, 1u);
  // Host memory cannot be an output of a CUDA module.
  std::vector<float> host(kCudaTestN);
  DLTensor th = HostTensor(host.data());
  EXPECT_EQ(agate_executor_set_output(executor_, 0, &th), AGATE_INVALID_ARGUMENT);
  EXPECT_TRUE(Contains(Message(), "agate_executor_copy_output")) << Message();
  // Unbound: the executor's own memory again (and the graph recorded again).
  ASSERT_EQ(agate_executor_set_output(executor_, 0, nullptr), AGATE_OK);
  ASSERT_EQ(agate_executor_get_output(executor_, 0, &view), AGATE_OK);
  EXPECT_NE(reinterpret_cast<uintptr_t>(view.data), y);
  fake().free(y);
  fake().free(z);
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  ExpectAddResult(x);
  EXPECT_EQ(fake().Stats().captures, 2u);
}

TEST_F(CudaBackendTest, WrongInputsAreRefusedAndTheExecutorStaysUsable) {
  LoadAndCreate(CudaAddSpec(CubinAndPtxImages()));
  std::vector<float> x = Input(1);
  DLTensor good = HostTensor(x.data());
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &good), AGATE_OK);
  const uint64_t on_other_gpu = fake().alloc(kSm86, kCudaTestN * 4);
  const uint64_t too_small = fake().alloc(0, kCudaTestN * 2);
  const uint64_t fine = fake().alloc(0, kCudaTestN * 4 + 64);
  struct Case {
    DLTensor tensor;
    const char* says;
  };
  std::vector<Case> cases = {
      {Tensor(x.data(), kDLOpenCL), "DLPack device type 4"},
      {DeviceTensor(fine, 1), "is on CUDA device 1; the module is loaded on CUDA device 0"},
      {DeviceTensor(reinterpret_cast<uintptr_t>(x.data())), "the driver does not know its address"},
      {DeviceTensor(on_other_gpu), "memory belongs to CUDA device 2"},
      {DeviceTensor(too_small), "needs 1024 bytes, but its allocation holds 512"},
      {DeviceTensor(fine + 4), "not 16-byte aligned"},
  };
  cases.push_back({DeviceTensor(fine), "has dtype"});
  cases.back().tensor.dtype = DLDataType{kDLInt, 32, 1};
  for (const Case& c : cases) {
    EXPECT_EQ(agate_executor_set_input(executor_, 0, &c.tensor), AGATE_INVALID_ARGUMENT) << c.says;
    EXPECT_TRUE(Contains(Message(), c.says)) << Message();
    EXPECT_TRUE(Contains(Message(), "input 0 'x'")) << Message();
  }
  // The good binding stayed.
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  ExpectAddResult(x);
  // Outputs are checked the same way.
  DLTensor bad_output = DeviceTensor(on_other_gpu);
  EXPECT_EQ(agate_executor_set_output(executor_, 0, &bad_output), AGATE_INVALID_ARGUMENT);
  EXPECT_TRUE(Contains(Message(), "output 0 'y' memory belongs to CUDA device 2")) << Message();
  std::vector<float> y(kCudaTestN);
  DLTensor wrong_copy = Tensor(y.data(), kDLVulkan);
  EXPECT_EQ(agate_executor_copy_output(executor_, 0, &wrong_copy), AGATE_INVALID_ARGUMENT);
  ExpectAddResult(x);
  for (uint64_t a : {on_other_gpu, too_small, fine}) fake().free(a);
}

TEST_F(CudaBackendTest, TheWorkspaceIsTheLastKernelParameter) {
  LoadAndCreate(testing::CudaWorkspaceSpec(CubinAndPtxImages()));
  std::vector<float> x = Input(4);
  DLTensor t = HostTensor(x.data());
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &t), AGATE_OK);
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  const std::vector<float> y = CopyOut();
  for (int i = 0; i < kCudaTestN; ++i) ASSERT_EQ(y[i], 2 * x[i]) << i;
}

TEST_F(CudaBackendTest, SharedMemoryAbove48KiBIsOptedIn) {
  for (uint32_t bytes : {40u * 1024, 64u * 1024, 160u * 1024}) {
    SCOPED_TRACE(bytes);
    LoadAndCreate(testing::CudaSharedSpec(CubinAndPtxImages(), bytes));
    EXPECT_EQ(fake().dynamic_shared_limit("agate_cuda_copy_via_shared"), bytes > 48 * 1024 ? int(bytes) : 0);
    std::vector<float> x = Input(1);
    DLTensor t = HostTensor(x.data());
    ASSERT_EQ(agate_executor_set_input(executor_, 0, &t), AGATE_OK);
    ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();  // the fake refuses a launch not opted in
    const std::vector<float> y = CopyOut();
    for (int i = 0; i < kCudaTestN; ++i) ASSERT_EQ(y[i], x[kCudaTestN - 1 - i]) << i;
    Free();
  }
  // More than the GPU offers (sm_86: 99 KiB) is refused at load, naming both.
  EXPECT_EQ(Load(testing::CudaSharedSpec(CubinAndPtxImages(), 160 * 1024), kSm86), AGATE_UNSUPPORTED);
  EXPECT_TRUE(Contains(Message(), "needs 0 + 163840 bytes of shared memory per block")) << Message();
  EXPECT_TRUE(Contains(Message(), "offers 101376")) << Message();
}

TEST_F(CudaBackendTest, OutOfMemoryAnywhereLeavesNothingAllocatedAndTheModuleUsable) {
  const ModuleSpec spec = CudaAddSpec(CubinAndPtxImages());
  // Loading: the constants' allocation fails.
  fake().fail_call("cuMemAlloc_v2", 0, kCudaOutOfMemory);
  EXPECT_EQ(Load(spec), AGATE_RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Contains(Message(), "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)")) << Message();
  EXPECT_TRUE(Contains(Message(), "constants")) << Message();
  EXPECT_EQ(module_, nullptr);
  ASSERT_EQ(Load(spec), AGATE_OK) << Message();
  // Creating an executor: each of its three allocations (arena, outputs, staging) in turn.
  const char* const what[] = {"arena", "outputs", "input staging"};
  for (int n = 0; n < 3; ++n) {
    const uint64_t live = fake().Stats().live_allocations;
    fake().fail_call("cuMemAlloc_v2", n, kCudaOutOfMemory);
    EXPECT_EQ(Create(), AGATE_RESOURCE_EXHAUSTED);
    EXPECT_TRUE(Contains(Message(), what[n])) << Message();
    EXPECT_EQ(executor_, nullptr);
    EXPECT_EQ(fake().Stats().live_allocations, live) << "allocation " << n;
  }
  ASSERT_EQ(Create(), AGATE_OK) << Message();
  // Recording the graph: instantiation runs out of memory; the next run records it.
  std::vector<float> x = Input(1);
  DLTensor t = HostTensor(x.data());
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &t), AGATE_OK);
  fake().fail_call("cuGraphInstantiateWithFlags", 0, kCudaOutOfMemory);
  EXPECT_EQ(agate_executor_run(executor_), AGATE_RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Contains(Message(), "cuGraphInstantiateWithFlags")) << Message();
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  ExpectAddResult(x);
  Free();
  // A GPU whose memory is actually full: 3 KiB holds the module but not an executor.
  ASSERT_EQ(Load(spec, kSm80Tiny), AGATE_OK) << Message();
  EXPECT_EQ(Create(), AGATE_RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Contains(Message(), "CUDA device 7")) << Message();
}

TEST_F(CudaBackendTest, DriverErrorsBecomeStatusesNamingTheCallAndKernel) {
  LoadAndCreate(CudaAddSpec(CubinAndPtxImages()));
  std::vector<float> x = Input(1);
  DLTensor t = HostTensor(x.data());
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &t), AGATE_OK);
  // The second launch fails while the graph is recorded.
  fake().fail_call("cuLaunchKernel", 1, kCudaLaunchOutOfResources);
  EXPECT_EQ(agate_executor_run(executor_), AGATE_RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Contains(Message(), "cuLaunchKernel: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")) << Message();
  EXPECT_TRUE(Contains(Message(), "kernel 'agate_cuda_add' (plan call 1) on CUDA device 0")) << Message();
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();  // usable: recorded now
  ExpectAddResult(x);
  // A copy fails.
  fake().fail_call("cuMemcpyHtoDAsync_v2", 0, 1);
  EXPECT_EQ(agate_executor_run(executor_), AGATE_INTERNAL);
  EXPECT_TRUE(Contains(Message(), "cuMemcpyHtoDAsync: CUDA_ERROR_INVALID_VALUE")) << Message();
  EXPECT_TRUE(Contains(Message(), "input 0 'x'")) << Message();
  // A kernel faults: reported at synchronization, named sticky.
  fake().fail_call("cuStreamSynchronize", 0, kCudaIllegalAddress);
  EXPECT_EQ(agate_executor_run(executor_), AGATE_INTERNAL);
  EXPECT_TRUE(Contains(Message(), "cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS")) << Message();
  EXPECT_TRUE(Contains(Message(), "unusable")) << Message();
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  // Loading: a kernel the image lacks.
  Free();
  ModuleSpec missing = CudaAddSpec(CubinAndPtxImages());
  missing.kernels[0].name = "agate_cuda_missing";
  EXPECT_EQ(Load(missing), AGATE_NOT_FOUND);
  EXPECT_TRUE(Contains(Message(), "kernel 0 'agate_cuda_missing' is not in its CUDA image (cubin sm_80)")) << Message();
}

TEST_F(CudaBackendTest, ADriverThatCannotCaptureLaunchesKernelByKernel) {
  fake().set_capture_supported(0);
  LoadAndCreate(CudaAddSpec(CubinAndPtxImages()));
  std::vector<float> x = Input(1);
  DLTensor t = HostTensor(x.data());
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &t), AGATE_OK);
  for (int run = 0; run < 2; ++run) {
    ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
    ExpectAddResult(x);
  }
  EXPECT_EQ(fake().Stats().captures, 0u);
  EXPECT_EQ(fake().Stats().kernel_launches, 4u);
}

TEST_F(CudaBackendTest, ProfiledRunsTimeEachKernelWithEvents) {
  LoadAndCreate(CudaAddSpec(CubinAndPtxImages()));
  std::vector<float> x = Input(1);
  DLTensor t = HostTensor(x.data());
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &t), AGATE_OK);
  uint32_t calls = 0;
  ASSERT_EQ(agate_module_num_calls(module_, &calls), AGATE_OK);
  ASSERT_EQ(calls, 2u);
  uint64_t ns[2] = {0, 0};
  ASSERT_EQ(agate_executor_run_profiled(executor_, ns, 2), AGATE_OK) << Message();
  // The fake's clock: 1000 ns + 10 ns per block (2 blocks).
  EXPECT_EQ(ns[0], 1020u);
  EXPECT_EQ(ns[1], 1020u);
  ExpectAddResult(x);
  EXPECT_EQ(fake().Stats().events_recorded, 3u);
  EXPECT_EQ(fake().Stats().captures, 0u) << "profiled runs launch directly";
  EXPECT_EQ(agate_executor_run_profiled(executor_, ns, 1), AGATE_INVALID_ARGUMENT);
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_run_profiled(executor_, ns, 2), AGATE_OK) << Message();
  EXPECT_EQ(fake().Stats().events_recorded, 6u);
}

TEST_F(CudaBackendTest, ProfilingEventsThatCannotBeCreatedAreRetriedNextTime) {
  LoadAndCreate(CudaAddSpec(CubinAndPtxImages()));
  std::vector<float> x = Input(1);
  DLTensor t = HostTensor(x.data());
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &t), AGATE_OK);
  uint64_t ns[2] = {0, 0};
  fake().fail_call("cuEventCreate", 1, kCudaOutOfMemory);  // the second of three events
  EXPECT_EQ(agate_executor_run_profiled(executor_, ns, 2), AGATE_RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Contains(Message(), "cuEventCreate: CUDA_ERROR_OUT_OF_MEMORY")) << Message();
  ASSERT_EQ(agate_executor_run_profiled(executor_, ns, 2), AGATE_OK) << Message();
  EXPECT_EQ(ns[0], 1020u);
  ExpectAddResult(x);
}

TEST_F(CudaBackendTest, DeviceIndices) {
  int32_t count = 0;
  ASSERT_EQ(agate_runtime_device_count(kDLCUDA, &count), AGATE_OK) << Message();
  EXPECT_EQ(count, kNumDevices);
  ASSERT_EQ(agate_runtime_device_count(kDLCPU, &count), AGATE_OK);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(agate_runtime_device_count(kDLVulkan, &count), AGATE_UNSUPPORTED);
  const std::vector<uint8_t> bytes = serialize::SerializeModule(CudaAddSpec(CubinAndPtxImages()));
  EXPECT_EQ(Load(bytes, 8), AGATE_OUT_OF_RANGE);
  EXPECT_TRUE(Contains(Message(), "CUDA device 8 does not exist: the driver sees 8 GPUs (0..7)")) << Message();
  EXPECT_EQ(Load(bytes, -1), AGATE_INVALID_ARGUMENT);
  // The core profile's in-place loader runs CPU kernels only.
  alignas(64) static uint8_t memory[4096];
  std::vector<uint8_t> aligned(bytes.size() + 4096);
  uint8_t* at = aligned.data() + (4096 - reinterpret_cast<uintptr_t>(aligned.data()) % 4096) % 4096;
  std::memcpy(at, bytes.data(), bytes.size());
  agate_module_t* in_place = nullptr;
  EXPECT_EQ(agate_module_load_in_place(at, bytes.size(), nullptr, memory, sizeof(memory), &in_place),
            AGATE_UNAVAILABLE);
  EXPECT_TRUE(Contains(Message(), "CUDA modules load with agate_module_load_from_file")) << Message();
  // An old caller's smaller struct reads the device as 0.
  agate_module_options old{sizeof(uint32_t), 5};
  ASSERT_EQ(agate_module_load_from_memory_with_options(bytes.data(), bytes.size(), nullptr, &old, &module_), AGATE_OK);
  DLDevice where{};
  ASSERT_EQ(agate_module_device(module_, &where), AGATE_OK);
  EXPECT_EQ(where.device_id, 0);
  Free();
  ASSERT_EQ(Load(bytes, kSm90), AGATE_OK);
  ASSERT_EQ(Create(), AGATE_OK);
  DLTensor view;
  ASSERT_EQ(agate_executor_get_output(executor_, 0, &view), AGATE_OK);
  EXPECT_EQ(view.device.device_id, kSm90);
  // Memory of device 4 is accepted on device 4.
  const uint64_t a = fake().alloc(kSm90, kCudaTestN * 4);
  std::vector<float> x = Input(1);
  std::memcpy(Floats(a), x.data(), kCudaTestN * 4);
  DLTensor ta = DeviceTensor(a, kSm90);
  ASSERT_EQ(agate_executor_set_input(executor_, 0, &ta), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_run(executor_), AGATE_OK) << Message();
  ExpectAddResult(x);
  fake().free(a);
}

TEST_F(CudaBackendTest, CorruptOrInconsistentCudaPayloadIsRefused) {
  // A flipped bit in the image the device would load.
  std::vector<uint8_t> bytes = serialize::SerializeModule(CudaAddSpec(CubinAndPtxImages()));
  const fb::Module* m = fb::GetModule(bytes.data());
  const size_t at = static_cast<size_t>(m->cuda_images()->Get(0)->image()->data() - bytes.data()) + 100;
  bytes[at] ^= 0x10;
  EXPECT_EQ(Load(bytes), AGATE_CORRUPT);
  EXPECT_TRUE(Contains(Message(), "CUDA image 0 (cubin sm_80) does not match its checksum")) << Message();

  struct Case {
    std::function<void(ModuleSpec&)> edit;
    agate_status_t status;
    const char* says;
  };
  const std::vector<Case> cases = {
      {[](ModuleSpec& s) { s.cuda_images.clear(); s.kernels[0].cuda.image.clear(); }, AGATE_NOT_FOUND,
       "has no CUDA image: neither its own (format 1.0) nor the module's (1.1)"},
      {[](ModuleSpec& s) { s.kernels[0].cuda.image = TestPtx(); }, AGATE_CORRUPT,
       "has its own CUDA image although the module carries module-wide images"},
      {[](ModuleSpec& s) { s.cuda_images[0].arch = 5; }, AGATE_CORRUPT, "is for arch 5, which is no compute capability"},
      {[](ModuleSpec& s) { s.cuda_images[1] = s.cuda_images[0]; }, AGATE_CORRUPT,
       "CUDA images 0 and 1 are both cubin sm_80"},
      {[](ModuleSpec& s) { s.cuda_images[0].image.clear(); }, AGATE_CORRUPT, "CUDA image 0 is empty"},
      {[](ModuleSpec& s) { s.kernels[0].cuda.block = {64, 32, 1}; }, AGATE_CORRUPT, "beyond CUDA's limits"},
      {[](ModuleSpec& s) { s.kernels[0].cuda.grid = {1, 70000, 1}; }, AGATE_CORRUPT, "beyond CUDA's limits"},
      {[](ModuleSpec& s) { s.kernels[0].cuda.registers_per_thread = 300; }, AGATE_CORRUPT, "300 registers per thread"},
      {[](ModuleSpec& s) { s.kernels[0].has_cuda = false; }, AGATE_NOT_FOUND, "has no CUDA launch description"},
      {[](ModuleSpec& s) {
         s.arena_bytes += 8;
         s.plan[1].args[0].offset = 8;
       },
       AGATE_CORRUPT, "arena offset 8, not 16-byte aligned"},
  };
  for (const Case& c : cases) {
    ModuleSpec spec = CudaAddSpec(CubinAndPtxImages());
    c.edit(spec);
    // The writer refuses to write it; the loader refuses to load it.
    EXPECT_THROW(serialize::SerializeModule(spec), Error) << c.says;
    EXPECT_EQ(Load(serialize::SerializeModuleUnverifiedForTesting(spec)), c.status) << c.says;
    EXPECT_TRUE(Contains(Message(), c.says)) << Message();
  }
  // CUDA images in a CPU module.
  ModuleSpec host = CudaAddSpec(CubinAndPtxImages());
  host.target_kind = serialize::TargetKind::kMicro;
  host.target = "c";
  for (auto& k : host.kernels) k.has_cuda = false;
  EXPECT_THROW(serialize::SerializeModule(host), Error);
}

TEST_F(CudaBackendTest, ExecutorsRunInParallelOnTheirOwnStreams) {
  ASSERT_EQ(Load(CudaAddSpec(CubinAndPtxImages())), AGATE_OK) << Message();
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t, &failures] {
      agate_executor_t* e = nullptr;
      if (agate_executor_create(module_, nullptr, &e) != AGATE_OK) {
        ++failures[t];
        return;
      }
      std::vector<float> x = Input(static_cast<float>(t));
      DLTensor in = HostTensor(x.data());
      for (int run = 0; run < 20; ++run) {
        std::vector<float> y(kCudaTestN);
        DLTensor out = HostTensor(y.data());
        if (agate_executor_set_input(e, 0, &in) != AGATE_OK || agate_executor_run(e) != AGATE_OK ||
            agate_executor_copy_output(e, 0, &out) != AGATE_OK) {
          ++failures[t];
          continue;
        }
        for (int i = 0; i < kCudaTestN; ++i) failures[t] += y[i] != CudaAddExpected(x[i], i);
      }
      agate_executor_free(e);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace agate
