#include "runtime_minimal/cuda/cuda_module.h"

#include <stdlib.h>
#include <string.h>

#include <new>

#include "runtime_minimal/core/message.h"
#include "runtime_minimal/core/verify.h"
#include "runtime_minimal/cuda/cuda_verify.h"
#include "runtime_minimal/cuda/image_choice.h"

namespace agate {
namespace rt {
namespace {

// Without the opt-in attribute a block may use this much shared memory in all.
constexpr uint64_t kDefaultSharedMemoryLimit = 48 * 1024;

void FreeState(CudaModuleState* s) {
  if (s == nullptr) return;
  const cu::DriverApi& d = *s->driver;
  for (uint32_t i = 0; i < s->num_driver_modules; ++i) {
    if (s->driver_modules[i] != nullptr) d.ModuleUnload(s->driver_modules[i]);
  }
  if (s->constants_block != 0) d.MemFree(s->constants_block);
  free(s->driver_modules);
  free(s->functions);
  free(s->constants);
  free(s);
}

// The image as the driver reads it: PTX is text read up to a NUL, which the
// module does not store; a cubin is an ELF file (the copy is 16-byte aligned).
agate_status_t LoadImage(const cu::DriverApi& d, const flatbuffers::Vector<uint8_t>& image, cu::Module* out,
                         cu::Result* out_result) {
  *out = nullptr;
  *out_result = cu::kSuccess;
  char* copy = static_cast<char*>(malloc(image.size() + 1));
  if (copy == nullptr) return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot copy a CUDA image of " << image.size() << " bytes";
  memcpy(copy, image.data(), image.size());
  copy[image.size()] = '\0';
  *out_result = d.ModuleLoadData(out, copy);
  free(copy);
  if (*out_result != cu::kSuccess) *out = nullptr;
  return AGATE_OK;
}

// A result after which the loader tries the next candidate image: the driver
// cannot run this one on this GPU, but another image may do.
bool TryNextImage(cu::Result r) {
  return r == cu::kErrorNoBinaryForGpu || r == cu::kErrorInvalidPtx || r == cu::kErrorUnsupportedPtxVersion ||
         r == cu::kErrorJitCompilerNotFound || r == cu::kErrorJitCompilationDisabled || r == cu::kErrorInvalidImage;
}

// "the CUDA module 'cuda -arch=sm_90' (cubin sm_90, PTX compute_90) ... CUDA device 0 (NAME, sm_80)"
void AppendModuleAndDevice(Message& m, const fb::Module& fbm, const CudaImageRef* refs, uint32_t count,
                           const CudaDevice& device) {
  m << "module for '" << fbm.target()->c_str() << "' (";
  AppendCudaImageList(m, refs, count);
  m << ") on CUDA device " << device.ordinal << " (" << device.name << ", sm_" << device.arch << ")";
}

// Format 1.1: one image for every kernel, chosen for the device (image_choice.h).
agate_status_t LoadModuleImage(const fb::Module& fbm, CudaModuleState* s) {
  const cu::DriverApi& d = *s->driver;
  const CudaDevice& device = *s->device;
  const auto& images = *fbm.cuda_images();
  CudaImageRef refs[kMaxCudaImages];
  uint32_t order[kMaxCudaImages];
  const uint32_t count = images.size();
  for (uint32_t i = 0; i < count; ++i) {
    refs[i].cubin = images.Get(i)->kind() == fb::CudaImageKind::Cubin;
    refs[i].arch = images.Get(i)->arch();
  }
  const uint32_t candidates = OrderCudaImages(refs, count, device.arch, order);
  if (candidates == 0) {
    Message m = Fail(AGATE_UNSUPPORTED);
    m << "the ";
    AppendModuleAndDevice(m, fbm, refs, count, device);
    return m << ": no image runs on this GPU (a cubin runs on its own architecture or a newer minor of the same "
                "major, PTX on its own or a newer one); recompile with -arch=sm_"
             << device.arch;
  }
  s->driver_modules = static_cast<cu::Module*>(calloc(1, sizeof(cu::Module)));
  if (s->driver_modules == nullptr) return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the CUDA module";
  s->num_driver_modules = 1;
  cu::Result first_failure = cu::kSuccess;
  uint32_t first_failed = 0;
  for (uint32_t c = 0; c < candidates; ++c) {
    const fb::CudaImage& image = *images.Get(order[c]);
    if (Fnv1a64(image.image()->data(), image.image()->size()) != image.fnv1a64()) {
      return Fail(AGATE_CORRUPT) << "CUDA image " << order[c] << " (" << (refs[order[c]].cubin ? "cubin sm_" : "PTX compute_")
                                 << image.arch() << ") does not match its checksum (corrupt module)";
    }
    cu::Result r = cu::kSuccess;
    agate_status_t status = LoadImage(d, *image.image(), &s->driver_modules[0], &r);
    if (status != AGATE_OK) return status;
    if (r == cu::kSuccess) {
      s->image_index = static_cast<int32_t>(order[c]);
      return AGATE_OK;
    }
    if (!TryNextImage(r)) {
      return CudaFail(d, r, "cuModuleLoadData") << " loading CUDA image " << order[c] << " ("
                                                << (refs[order[c]].cubin ? "cubin sm_" : "PTX compute_")
                                                << image.arch() << ") on CUDA device " << device.ordinal;
    }
    if (first_failure == cu::kSuccess) {
      first_failure = r;
      first_failed = order[c];
    }
  }
  Message m = CudaFail(d, first_failure, "cuModuleLoadData");
  m << " for " << (refs[first_failed].cubin ? "cubin sm_" : "PTX compute_") << refs[first_failed].arch << ": the ";
  AppendModuleAndDevice(m, fbm, refs, count, device);
  m << " has no image this driver can load";
  if (first_failure == cu::kErrorUnsupportedPtxVersion) m << " (the driver is older than the PTX: update it)";
  return m;
}

// Format 1.0: each kernel's own image in a driver module of its own.
agate_status_t LoadKernelImages(const fb::Module& fbm, CudaModuleState* s) {
  const cu::DriverApi& d = *s->driver;
  const uint32_t num_kernels = fbm.kernels()->size();
  s->driver_modules = static_cast<cu::Module*>(calloc(num_kernels + 1, sizeof(cu::Module)));
  if (s->driver_modules == nullptr) return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the CUDA module";
  s->num_driver_modules = num_kernels;
  for (uint32_t k = 0; k < num_kernels; ++k) {
    const fb::Kernel& kernel = *fbm.kernels()->Get(k);
    const fb::CudaKernel& cuda = *kernel.cuda();
    if (Fnv1a64(cuda.image()->data(), cuda.image()->size()) != cuda.fnv1a64()) {
      return Fail(AGATE_CORRUPT) << "kernel " << k << " '" << kernel.name()->c_str()
                                 << "' CUDA image does not match its checksum (corrupt module)";
    }
    cu::Result r = cu::kSuccess;
    agate_status_t status = LoadImage(d, *cuda.image(), &s->driver_modules[k], &r);
    if (status != AGATE_OK) return status;
    if (r != cu::kSuccess) {
      return CudaFail(d, r, "cuModuleLoadData") << " for kernel " << k << " '" << kernel.name()->c_str() << "' ("
                                                << (cuda.kind() == fb::CudaImageKind::Cubin ? "cubin" : "PTX")
                                                << ", module for '" << fbm.target()->c_str() << "') on CUDA device "
                                                << s->device->ordinal << " (sm_" << s->device->arch << ")";
    }
  }
  return AGATE_OK;
}

int32_t FunctionAttribute(const cu::DriverApi& d, cu::Function f, cu::FunctionAttribute attribute, int32_t fallback) {
  int value = 0;
  return d.FuncGetAttribute(&value, attribute, f) == cu::kSuccess ? value : fallback;
}

// The kernel's launch fits the device: its threads per block within what its
// registers allow, its shared memory within the block's opt-in limit (set
// above 48 KiB: cuFuncSetAttribute).
agate_status_t PrepareKernel(const CudaModuleState& s, const fb::Kernel& kernel, uint32_t k, cu::Function f) {
  const cu::DriverApi& d = *s.driver;
  const CudaDevice& device = *s.device;
  const fb::CudaKernel& cuda = *kernel.cuda();
  const uint64_t threads = uint64_t{cuda.block()->x()} * cuda.block()->y() * cuda.block()->z();
  const int32_t max_threads = FunctionAttribute(d, f, cu::kFuncAttributeMaxThreadsPerBlock, device.max_threads_per_block);
  if (threads > static_cast<uint64_t>(max_threads)) {
    return Fail(AGATE_UNSUPPORTED) << "kernel " << k << " '" << kernel.name()->c_str() << "' launches " << threads
                                   << " threads per block, but with "
                                   << FunctionAttribute(d, f, cu::kFuncAttributeNumRegs, 0)
                                   << " registers per thread at most " << max_threads << " fit on CUDA device "
                                   << device.ordinal << " (sm_" << device.arch << ")";
  }
  const uint64_t dynamic_bytes = cuda.shared_memory_bytes();
  const uint64_t static_bytes = static_cast<uint64_t>(FunctionAttribute(d, f, cu::kFuncAttributeSharedSizeBytes, 0));
  if (static_bytes + dynamic_bytes <= kDefaultSharedMemoryLimit) return AGATE_OK;
  if (static_bytes + dynamic_bytes > static_cast<uint64_t>(device.max_shared_memory_optin)) {
    return Fail(AGATE_UNSUPPORTED) << "kernel " << k << " '" << kernel.name()->c_str() << "' needs " << static_bytes
                                   << " + " << dynamic_bytes << " bytes of shared memory per block; CUDA device "
                                   << device.ordinal << " (sm_" << device.arch << ") offers "
                                   << device.max_shared_memory_optin;
  }
  const cu::Result r =
      d.FuncSetAttribute(f, cu::kFuncAttributeMaxDynamicSharedSizeBytes, static_cast<int>(dynamic_bytes));
  if (r != cu::kSuccess) {
    return CudaFail(d, r, "cuFuncSetAttribute") << " (" << dynamic_bytes << " bytes of dynamic shared memory) for kernel "
                                                << k << " '" << kernel.name()->c_str() << "'";
  }
  return AGATE_OK;
}

agate_status_t ResolveFunctions(const fb::Module& fbm, CudaModuleState* s) {
  const cu::DriverApi& d = *s->driver;
  for (uint32_t k = 0; k < fbm.kernels()->size(); ++k) {
    const fb::Kernel& kernel = *fbm.kernels()->Get(k);
    const cu::Module holder = s->image_index >= 0 ? s->driver_modules[0] : s->driver_modules[k];
    const cu::Result r = d.ModuleGetFunction(&s->functions[k], holder, kernel.name()->c_str());
    if (r != cu::kSuccess) {
      Message m = CudaFail(d, r, "cuModuleGetFunction");
      m << ": kernel " << k << " '" << kernel.name()->c_str() << "' is not in its CUDA image";
      if (s->image_index >= 0) {
        const fb::CudaImage& image = *fbm.cuda_images()->Get(static_cast<uint32_t>(s->image_index));
        m << " (" << (image.kind() == fb::CudaImageKind::Cubin ? "cubin sm_" : "PTX compute_") << image.arch() << ")";
      }
      return m;
    }
    agate_status_t status = PrepareKernel(*s, kernel, k, s->functions[k]);
    if (status != AGATE_OK) return status;
  }
  return AGATE_OK;
}

agate_status_t UploadConstants(const fb::Module& fbm, CudaModuleState* s) {
  const cu::DriverApi& d = *s->driver;
  const uint32_t count = fbm.constants() != nullptr ? fbm.constants()->size() : 0;
  s->constants = static_cast<cu::DevicePtr*>(calloc(count + 1, sizeof(cu::DevicePtr)));
  if (s->constants == nullptr) return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the constant table";
  uint64_t total = 0;
  for (uint32_t c = 0; c < count; ++c) total += AlignDevice(fbm.constants()->Get(c)->data()->size());
  if (total == 0) return AGATE_OK;
  cu::Result r = d.MemAlloc(&s->constants_block, static_cast<size_t>(total));
  if (r != cu::kSuccess) {
    s->constants_block = 0;
    return CudaFail(d, r, "cuMemAlloc") << " of " << total << " bytes for the module's " << count
                                        << " constants on CUDA device " << s->device->ordinal;
  }
  uint64_t offset = 0;
  for (uint32_t c = 0; c < count; ++c) {
    const auto& data = *fbm.constants()->Get(c)->data();
    s->constants[c] = s->constants_block + offset;
    if (data.size() != 0 && (r = d.MemcpyHtoD(s->constants[c], data.data(), data.size())) != cu::kSuccess) {
      return CudaFail(d, r, "cuMemcpyHtoD") << " of constant " << c << " (" << data.size() << " bytes)";
    }
    offset += AlignDevice(data.size());
  }
  return AGATE_OK;
}

}  // namespace

agate_status_t LoadCudaModule(agate_module* module) {
  const fb::Module& fbm = *module->fb;
  agate_status_t status = VerifyCudaPayload(fbm);
  if (status != AGATE_OK) return status;
  const cu::DriverApi* driver = nullptr;
  const CudaDevice* device = nullptr;
  if ((status = GetCudaDriver(&driver)) != AGATE_OK) return status;
  if ((status = GetCudaDevice(module->device_id, &device)) != AGATE_OK) return status;
  CudaModuleState* s = static_cast<CudaModuleState*>(calloc(1, sizeof(CudaModuleState)));
  if (s == nullptr) return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the CUDA module";
  s->driver = driver;
  s->device = device;
  s->image_index = -1;
  s->functions = static_cast<cu::Function*>(calloc(fbm.kernels()->size() + 1, sizeof(cu::Function)));
  if (s->functions == nullptr) status = Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the CUDA module";
  const bool module_images = fbm.cuda_images() != nullptr && fbm.cuda_images()->size() != 0;
  if (status == AGATE_OK) status = module_images ? LoadModuleImage(fbm, s) : LoadKernelImages(fbm, s);
  if (status == AGATE_OK) status = ResolveFunctions(fbm, s);
  if (status == AGATE_OK) status = UploadConstants(fbm, s);
  if (status != AGATE_OK) {
    FreeState(s);
    return status;
  }
  module->device_state = s;
  return AGATE_OK;
}

void UnloadCudaModule(agate_module* module) {
  CudaModuleState* s = static_cast<CudaModuleState*>(module->device_state);
  if (s == nullptr) return;
  MakeCurrent(*s->driver, *s->device);  // best effort: the frees below say nothing either way
  FreeState(s);
  module->device_state = nullptr;
}

}  // namespace rt
}  // namespace agate
