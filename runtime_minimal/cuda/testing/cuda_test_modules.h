// What the cuda profile's tests share: the fake driver installed in the test
// process, the committed test images (images/test_kernels.cu), modules built
// from them, and the kernels' host twins that the fake runs in their place.
#ifndef AGATE_RUNTIME_MINIMAL_CUDA_TESTING_CUDA_TEST_MODULES_H_
#define AGATE_RUNTIME_MINIMAL_CUDA_TESTING_CUDA_TEST_MODULES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/serialize/module_spec.h"
#include "runtime_minimal/cuda/testing/fake_cuda.h"

namespace agate {
namespace testing {

// The fake driver's control API (fake_cuda.h), bound from the library the runtime opens.
struct FakeCuda {
  int (*configure)(const char* spec);
  void (*fail_call)(const char* name, int after, int result);
  void (*reset)();
  void (*set_capture_supported)(int supported);
  void (*get_stats)(agate_fake_cuda_stats* out);
  int (*dynamic_shared_limit)(const char* entry);
  void (*set_kernel_hook)(agate_fake_cuda_kernel_fn hook, void* user);
  uint64_t (*alloc)(int device, uint64_t bytes);
  void (*free)(uint64_t address);
  agate_fake_cuda_kernel_fn run_test_kernel;  // the test kernels' host twins, a kernel hook

  agate_fake_cuda_stats Stats() const;
};

// The fake driver's path in the test's runfiles (absolute).
std::string FakeCudaPath();

// Points the runtime at the fake driver (AGATE_CUDA_DRIVER) and configures it
// with `spec` (fake_cuda.h). Call before the first runtime call of the process;
// later calls return the same fake (the spec is then ignored). Aborts the test
// binary when the fake cannot be loaded.
const FakeCuda& InstallFakeCuda(const std::string& spec);

// The committed images (embedded): PTX for compute_75 and a cubin for sm_80, both holding
// agate_cuda_add, agate_cuda_twice_via_workspace and agate_cuda_copy_via_shared.
std::vector<uint8_t> TestPtx();
std::vector<uint8_t> TestCubin();
// The cubin with its architecture field (ELF e_flags) set to `arch`: what the
// fake driver reads to decide where a cubin loads.
std::vector<uint8_t> TestCubinForArch(uint32_t arch);

constexpr int kCudaTestN = 256;  // float32 elements of every test tensor

// y = (x + c) + x: two calls of agate_cuda_add, a constant c (c[i] = i / 2), an
// arena intermediate. Format 1.1 with `images`, or (images empty) format 1.0
// with the PTX as the kernel's own image.
serialize::ModuleSpec CudaAddSpec(const std::vector<serialize::CudaImageSpec>& images);
float CudaAddExpected(float x, int i);

// y = 2 * x through a workspace (agate_cuda_twice_via_workspace).
serialize::ModuleSpec CudaWorkspaceSpec(const std::vector<serialize::CudaImageSpec>& images);

// y = reverse(x) staged through `shared_bytes` of dynamic shared memory.
serialize::ModuleSpec CudaSharedSpec(const std::vector<serialize::CudaImageSpec>& images, uint32_t shared_bytes);

// The images the compiler would write for sm_80: cubin sm_80, then PTX.
std::vector<serialize::CudaImageSpec> CubinAndPtxImages();

}  // namespace testing
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CUDA_TESTING_CUDA_TEST_MODULES_H_
