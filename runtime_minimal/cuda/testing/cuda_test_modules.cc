#include "runtime_minimal/cuda/testing/cuda_test_modules.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

// The images, embedded by :embed_test_images.
extern const unsigned char agate_test_ptx[];
extern const unsigned long agate_test_ptx_size;
extern const unsigned char agate_test_cubin[];
extern const unsigned long agate_test_cubin_size;

namespace agate {
namespace testing {
namespace {

using serialize::ArgSpec;
using serialize::CallSpec;
using serialize::CudaImageKind;
using serialize::CudaImageSpec;
using serialize::KernelSpec;
using serialize::ModuleSpec;
using serialize::TensorSpec;

constexpr uint64_t kBytes = kCudaTestN * 4;

template <typename Fn>
void Bind(void* library, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(library, name));
  if (*out == nullptr) {
    std::fprintf(stderr, "the fake CUDA driver lacks %s\n", name);
    std::abort();
  }
}

ModuleSpec Base(const std::vector<CudaImageSpec>& images) {
  ModuleSpec spec;
  spec.target = "cuda -arch=sm_80";
  spec.target_kind = serialize::TargetKind::kCuda;
  spec.inputs = {TensorSpec{"x", ir::DType::Float(32), {kCudaTestN}}};
  spec.outputs = {TensorSpec{"y", ir::DType::Float(32), {kCudaTestN}}};
  spec.cuda_images = images;
  return spec;
}

KernelSpec Kernel(const std::string& name, std::vector<uint64_t> params, const std::vector<CudaImageSpec>& images,
                  serialize::Dim3 grid, serialize::Dim3 block) {
  KernelSpec k{name, std::move(params)};
  k.has_cuda = true;
  if (images.empty()) {  // format 1.0: the kernel's own image
    k.cuda.kind = CudaImageKind::kPtx;
    k.cuda.image = TestPtx();
  }
  k.cuda.grid = grid;
  k.cuda.block = block;
  return k;
}

}  // namespace

agate_fake_cuda_stats FakeCuda::Stats() const {
  agate_fake_cuda_stats stats;
  get_stats(&stats);
  return stats;
}

std::string FakeCudaPath() {
  char resolved[PATH_MAX];
  const std::string relative = "runtime_minimal/cuda/testing/libagate_fake_cuda.so";
  if (realpath(relative.c_str(), resolved) == nullptr) {
    throw std::runtime_error("cannot find " + relative + " (a data dependency of the test)");
  }
  return resolved;
}

const FakeCuda& InstallFakeCuda(const std::string& spec) {
  static FakeCuda* fake = [&spec] {
    const std::string path = FakeCudaPath();
    setenv("AGATE_CUDA_DRIVER", path.c_str(), 1);
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // the handle the runtime gets too
    if (library == nullptr) {
      std::fprintf(stderr, "cannot open the fake CUDA driver %s: %s\n", path.c_str(), dlerror());
      std::abort();
    }
    FakeCuda* f = new FakeCuda();
    Bind(library, "agate_fake_cuda_configure", &f->configure);
    Bind(library, "agate_fake_cuda_fail_call", &f->fail_call);
    Bind(library, "agate_fake_cuda_reset", &f->reset);
    Bind(library, "agate_fake_cuda_set_capture_supported", &f->set_capture_supported);
    Bind(library, "agate_fake_cuda_get_stats", &f->get_stats);
    Bind(library, "agate_fake_cuda_dynamic_shared_limit", &f->dynamic_shared_limit);
    Bind(library, "agate_fake_cuda_set_kernel_hook", &f->set_kernel_hook);
    Bind(library, "agate_fake_cuda_alloc", &f->alloc);
    Bind(library, "agate_fake_cuda_free", &f->free);
    Bind(library, "agate_fake_cuda_run_test_kernel", &f->run_test_kernel);
    if (f->configure(spec.c_str()) != 0) {
      std::fprintf(stderr, "the fake CUDA driver refused the configuration '%s'\n", spec.c_str());
      std::abort();
    }
    return f;
  }();
  return *fake;
}

std::vector<uint8_t> TestPtx() { return std::vector<uint8_t>(agate_test_ptx, agate_test_ptx + agate_test_ptx_size); }

std::vector<uint8_t> TestCubin() {
  return std::vector<uint8_t>(agate_test_cubin, agate_test_cubin + agate_test_cubin_size);
}

std::vector<uint8_t> TestCubinForArch(uint32_t arch) {
  std::vector<uint8_t> cubin = TestCubin();
  // ELF ABI version 8 (CUDA 12.8+): the arch is the second byte of e_flags (offset 48).
  if (cubin.size() < 64 || cubin[8] < 8) throw std::runtime_error("unexpected cubin header");
  cubin[49] = static_cast<uint8_t>(arch);
  return cubin;
}

std::vector<CudaImageSpec> CubinAndPtxImages() {
  return {CudaImageSpec{CudaImageKind::kCubin, 80, TestCubin()}, CudaImageSpec{CudaImageKind::kPtx, 75, TestPtx()}};
}

ModuleSpec CudaAddSpec(const std::vector<CudaImageSpec>& images) {
  ModuleSpec spec = Base(images);
  std::vector<float> c(kCudaTestN);
  for (int i = 0; i < kCudaTestN; ++i) c[i] = static_cast<float>(i) * 0.5f;
  const uint8_t* cb = reinterpret_cast<const uint8_t*>(c.data());
  spec.constants = {serialize::ConstantSpec{std::vector<uint8_t>(cb, cb + kBytes), 64}};
  spec.kernels = {Kernel("agate_cuda_add", {kBytes, kBytes, kBytes}, images, {2, 1, 1}, {128, 1, 1})};
  spec.arena_bytes = kBytes;
  spec.plan = {
      CallSpec{0, {ArgSpec::Input(0, kBytes), ArgSpec::Constant(0, kBytes), ArgSpec::Arena(0, kBytes)}},
      CallSpec{0, {ArgSpec::Arena(0, kBytes), ArgSpec::Input(0, kBytes), ArgSpec::Output(0, kBytes)}},
  };
  return spec;
}

float CudaAddExpected(float x, int i) { return (x + static_cast<float>(i) * 0.5f) + x; }

ModuleSpec CudaWorkspaceSpec(const std::vector<CudaImageSpec>& images) {
  ModuleSpec spec = Base(images);
  KernelSpec k = Kernel("agate_cuda_twice_via_workspace", {kBytes, kBytes}, images, {2, 1, 1}, {128, 1, 1});
  k.workspace_bytes = kBytes;
  spec.kernels = {k};
  spec.plan = {CallSpec{0, {ArgSpec::Input(0, kBytes), ArgSpec::Output(0, kBytes)}}};
  return spec;
}

ModuleSpec CudaSharedSpec(const std::vector<CudaImageSpec>& images, uint32_t shared_bytes) {
  ModuleSpec spec = Base(images);
  KernelSpec k = Kernel("agate_cuda_copy_via_shared", {kBytes, kBytes}, images, {1, 1, 1}, {256, 1, 1});
  k.cuda.shared_memory_bytes = shared_bytes;
  spec.kernels = {k};
  spec.plan = {CallSpec{0, {ArgSpec::Input(0, kBytes), ArgSpec::Output(0, kBytes)}}};
  return spec;
}

}  // namespace testing
}  // namespace agate
