#include "runtime_minimal/cuda/cuda_backend.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <new>

#include "runtime_minimal/core/executor.h"
#include "runtime_minimal/core/message.h"
#include "runtime_minimal/core/module.h"
#include "runtime_minimal/host/device_registry.h"

namespace agate {
namespace rt {
namespace {

// The driver entry points agate uses, by their exported (versioned) names.
struct Driver {
  CUresult (*Init)(unsigned int);
  CUresult (*DeviceGetCount)(int*);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*PrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*PrimaryCtxRelease)(CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*ModuleLoadData)(CUmodule*, const void*);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*StreamCreate)(CUstream*, unsigned int);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                           void**, void**);
  CUresult (*GetErrorString)(CUresult, const char**);
  CUdevice device;
  CUcontext context;
};

struct DriverState {
  std::once_flag once;
  Driver driver;
  agate_status_t status = AGATE_OK;
  char message[256];
};

DriverState& State() {
  static DriverState* state = new DriverState();  // the driver stays loaded for the process
  return *state;
}

const char* ErrorString(const Driver& d, CUresult result) {
  const char* text = nullptr;
  if (d.GetErrorString == nullptr || d.GetErrorString(result, &text) != CUDA_SUCCESS || text == nullptr) {
    return "unknown CUDA error";
  }
  return text;
}

template <typename Fn>
bool Bind(void* library, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(library, name));
  return *out != nullptr;
}

void OpenDriver(DriverState& s) {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    s.status = Fail(AGATE_UNAVAILABLE) << "no CUDA driver: cannot open libcuda.so.1 ("
                                       << (error != nullptr ? error : "unknown") << "); CUDA modules need an NVIDIA GPU";
    strncpy(s.message, LastMessage(), sizeof(s.message) - 1);
    return;
  }
  Driver& d = s.driver;
  const bool bound =
      Bind(library, "cuInit", &d.Init) && Bind(library, "cuDeviceGetCount", &d.DeviceGetCount) &&
      Bind(library, "cuDeviceGet", &d.DeviceGet) && Bind(library, "cuDevicePrimaryCtxRetain", &d.PrimaryCtxRetain) &&
      Bind(library, "cuDevicePrimaryCtxRelease_v2", &d.PrimaryCtxRelease) &&
      Bind(library, "cuCtxSetCurrent", &d.CtxSetCurrent) && Bind(library, "cuModuleLoadData", &d.ModuleLoadData) &&
      Bind(library, "cuModuleUnload", &d.ModuleUnload) && Bind(library, "cuModuleGetFunction", &d.ModuleGetFunction) &&
      Bind(library, "cuMemAlloc_v2", &d.MemAlloc) && Bind(library, "cuMemFree_v2", &d.MemFree) &&
      Bind(library, "cuMemcpyHtoD_v2", &d.MemcpyHtoD) && Bind(library, "cuMemcpyDtoH_v2", &d.MemcpyDtoH) &&
      Bind(library, "cuMemcpyHtoDAsync_v2", &d.MemcpyHtoDAsync) && Bind(library, "cuStreamCreate", &d.StreamCreate) &&
      Bind(library, "cuStreamDestroy_v2", &d.StreamDestroy) &&
      Bind(library, "cuStreamSynchronize", &d.StreamSynchronize) &&
      Bind(library, "cuLaunchKernel", &d.LaunchKernel) && Bind(library, "cuGetErrorString", &d.GetErrorString);
  if (!bound) {
    s.status = Fail(AGATE_UNAVAILABLE) << "the CUDA driver (libcuda.so.1) lacks a driver API function agate needs";
  } else if (CUresult r = d.Init(0)) {
    s.status = Fail(AGATE_UNAVAILABLE) << "CUDA driver found but cuInit failed: " << ErrorString(d, r)
                                       << " (no usable GPU?)";
  } else {
    int count = 0;
    if (d.DeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
      s.status = Fail(AGATE_UNAVAILABLE) << "CUDA driver found but no GPU is visible";
    } else if (CUresult r2 = d.DeviceGet(&d.device, 0)) {
      s.status = Fail(AGATE_UNAVAILABLE) << "cuDeviceGet failed: " << ErrorString(d, r2);
    } else if (CUresult r3 = d.PrimaryCtxRetain(&d.context, d.device)) {
      s.status = Fail(AGATE_UNAVAILABLE) << "cannot create a CUDA context: " << ErrorString(d, r3);
    }
  }
  if (s.status != AGATE_OK) strncpy(s.message, LastMessage(), sizeof(s.message) - 1);
}

// The driver, opened once per process; the failure message is repeated per call.
agate_status_t GetDriver(const Driver** out) {
  DriverState& s = State();
  std::call_once(s.once, [&s] { OpenDriver(s); });
  if (s.status != AGATE_OK) return Fail(s.status) << s.message;
  const CUresult r = s.driver.CtxSetCurrent(s.driver.context);
  if (r != CUDA_SUCCESS) return Fail(AGATE_UNAVAILABLE) << "cuCtxSetCurrent failed: " << ErrorString(s.driver, r);
  *out = &s.driver;
  return AGATE_OK;
}

struct CudaModule {
  CUmodule* modules = nullptr;      // one per kernel
  CUfunction* functions = nullptr;  // one per kernel
  CUdeviceptr* constants = nullptr; // one per constant
  uint32_t num_kernels = 0;
  uint32_t num_constants = 0;
};

void FreeCudaModule(const Driver* d, CudaModule* cm) {
  if (cm == nullptr) return;
  for (uint32_t k = 0; k < cm->num_kernels; ++k) {
    if (d != nullptr && cm->modules[k] != nullptr) d->ModuleUnload(cm->modules[k]);
  }
  for (uint32_t c = 0; c < cm->num_constants; ++c) {
    if (d != nullptr && cm->constants[c] != 0) d->MemFree(cm->constants[c]);
  }
  free(cm->modules);
  free(cm->functions);
  free(cm->constants);
  delete cm;
}

agate_status_t Load(agate_module* module) {
  const Driver* d = nullptr;
  agate_status_t status = GetDriver(&d);
  if (status != AGATE_OK) return status;
  const fb::Module& m = *module->fb;
  CudaModule* cm = new (std::nothrow) CudaModule();
  if (cm == nullptr) return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the CUDA module";
  cm->num_kernels = m.kernels()->size();
  cm->num_constants = m.constants() != nullptr ? m.constants()->size() : 0;
  cm->modules = static_cast<CUmodule*>(calloc(cm->num_kernels + 1, sizeof(CUmodule)));
  cm->functions = static_cast<CUfunction*>(calloc(cm->num_kernels + 1, sizeof(CUfunction)));
  cm->constants = static_cast<CUdeviceptr*>(calloc(cm->num_constants + 1, sizeof(CUdeviceptr)));
  if (cm->modules == nullptr || cm->functions == nullptr || cm->constants == nullptr) {
    FreeCudaModule(d, cm);
    return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the CUDA module";
  }
  for (uint32_t k = 0; k < cm->num_kernels && status == AGATE_OK; ++k) {
    const fb::Kernel& kernel = *m.kernels()->Get(k);
    const auto& image = *kernel.cuda()->image();
    if (Fnv1a64(image.data(), image.size()) != kernel.cuda()->fnv1a64()) {
      status = Fail(AGATE_CORRUPT) << "kernel " << k << " '" << kernel.name()->c_str()
                                   << "' CUDA image does not match its checksum (corrupt module)";
      break;
    }
    // PTX is text the driver reads up to a NUL; the module stores it without one.
    char* copy = static_cast<char*>(malloc(image.size() + 1));
    if (copy == nullptr) {
      status = Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot copy CUDA image of kernel '" << kernel.name()->c_str() << "'";
      break;
    }
    memcpy(copy, image.data(), image.size());
    copy[image.size()] = '\0';
    CUresult r = d->ModuleLoadData(&cm->modules[k], copy);
    free(copy);
    if (r != CUDA_SUCCESS) {
      cm->modules[k] = nullptr;
      status = Fail(AGATE_UNSUPPORTED) << "the GPU cannot load the CUDA image of kernel '" << kernel.name()->c_str()
                                       << "': " << ErrorString(*d, r) << " (built for '" << m.target()->c_str()
                                       << "')";
    } else if ((r = d->ModuleGetFunction(&cm->functions[k], cm->modules[k], kernel.name()->c_str())) != CUDA_SUCCESS) {
      status = Fail(AGATE_NOT_FOUND) << "kernel " << k << " '" << kernel.name()->c_str()
                                     << "' is not in its CUDA image: " << ErrorString(*d, r);
    }
  }
  for (uint32_t c = 0; c < cm->num_constants && status == AGATE_OK; ++c) {
    const auto& data = *m.constants()->Get(c)->data();
    CUresult r = d->MemAlloc(&cm->constants[c], data.size() == 0 ? 1 : data.size());
    if (r == CUDA_SUCCESS && data.size() != 0) r = d->MemcpyHtoD(cm->constants[c], data.data(), data.size());
    if (r != CUDA_SUCCESS) {
      status = Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot copy constant " << c << " (" << data.size()
                                              << " bytes) to the GPU: " << ErrorString(*d, r);
    }
  }
  if (status != AGATE_OK) {
    FreeCudaModule(d, cm);
    return status;
  }
  module->device_state = cm;
  return AGATE_OK;
}

// The driver for releasing device memory, or nullptr when it is unavailable (then nothing was
// allocated on the device). Sets the thread's last error message as GetDriver does.
const Driver* DriverForRelease() {
  const Driver* d = nullptr;
  return GetDriver(&d) == AGATE_OK ? d : nullptr;
}

void Unload(agate_module* module) {
  FreeCudaModule(DriverForRelease(), static_cast<CudaModule*>(module->device_state));
  module->device_state = nullptr;
}

// An executor's module as loaded: the module, its FlatBuffer and its device half (CudaModule).
struct LoadedModule {
  const agate_module& module;
  const fb::Module& fb;
  const CudaModule& cuda;
};

LoadedModule LoadedModuleOf(const agate_executor& e) {
  return {*e.module, *e.module->fb, *static_cast<const CudaModule*>(e.module->device_state)};
}

struct CudaExecutor {
  CUstream stream = nullptr;
  CUdeviceptr arena = 0;
  CUdeviceptr* outputs = nullptr;      // one per output
  CUdeviceptr* input_buffers = nullptr;  // staging for host inputs, one per input
  void** params = nullptr;             // params[i] = &executor->args[i]
  uint32_t num_outputs = 0;
  uint32_t num_inputs = 0;
};

void FreeCudaExecutor(const Driver* d, CudaExecutor* ce) {
  if (ce == nullptr) return;
  if (d != nullptr) {
    if (ce->arena != 0) d->MemFree(ce->arena);
    for (uint32_t o = 0; o < ce->num_outputs; ++o) {
      if (ce->outputs[o] != 0) d->MemFree(ce->outputs[o]);
    }
    for (uint32_t i = 0; i < ce->num_inputs; ++i) {
      if (ce->input_buffers[i] != 0) d->MemFree(ce->input_buffers[i]);
    }
    if (ce->stream != nullptr) d->StreamDestroy(ce->stream);
  }
  free(ce->outputs);
  free(ce->input_buffers);
  free(ce->params);
  delete ce;
}

agate_status_t DeviceAlloc(const Driver& d, uint64_t bytes, const char* what, CUdeviceptr* out) {
  const CUresult r = d.MemAlloc(out, bytes == 0 ? 1 : static_cast<size_t>(bytes));
  if (r != CUDA_SUCCESS) {
    *out = 0;
    return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate " << bytes << " bytes of GPU memory for the " << what
                                          << ": " << ErrorString(d, r);
  }
  return AGATE_OK;
}

agate_status_t CreateExecutor(agate_executor* e) {
  const Driver* d = nullptr;
  agate_status_t status = GetDriver(&d);
  if (status != AGATE_OK) return status;
  const auto [module, m, cm] = LoadedModuleOf(*e);
  CudaExecutor* ce = new (std::nothrow) CudaExecutor();
  if (ce == nullptr) return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the CUDA executor";
  ce->num_outputs = m.outputs()->size();
  ce->num_inputs = m.inputs()->size();
  ce->outputs = static_cast<CUdeviceptr*>(calloc(ce->num_outputs + 1, sizeof(CUdeviceptr)));
  ce->input_buffers = static_cast<CUdeviceptr*>(calloc(ce->num_inputs + 1, sizeof(CUdeviceptr)));
  ce->params = static_cast<void**>(calloc(module.facts.total_args + 1, sizeof(void*)));
  if (ce->outputs == nullptr || ce->input_buffers == nullptr || ce->params == nullptr) {
    FreeCudaExecutor(d, ce);
    return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the CUDA executor";
  }
  CUresult r = d->StreamCreate(&ce->stream, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) status = Fail(AGATE_UNAVAILABLE) << "cannot create a CUDA stream: " << ErrorString(*d, r);
  if (status == AGATE_OK) status = DeviceAlloc(*d, m.arena_bytes(), "arena", &ce->arena);
  for (uint32_t o = 0; o < ce->num_outputs && status == AGATE_OK; ++o) {
    status = DeviceAlloc(*d, TensorBytes(*m.outputs()->Get(o)), "outputs", &ce->outputs[o]);
  }
  for (uint32_t i = 0; i < ce->num_inputs && status == AGATE_OK; ++i) {
    status = DeviceAlloc(*d, TensorBytes(*m.inputs()->Get(i)), "inputs", &ce->input_buffers[i]);
  }
  if (status != AGATE_OK) {
    FreeCudaExecutor(d, ce);
    return status;
  }
  // The argument slots hold CUdeviceptr values; each kernel parameter points at its slot.
  void** slot = e->args;
  for (uint32_t c = 0; c < module.facts.num_calls; ++c) {
    for (const fb::Arg* arg : *m.plan()->Get(c)->args()) {
      CUdeviceptr value = 0;
      switch (arg->kind()) {
        case fb::ArgKind::Input: value = ce->input_buffers[arg->index()]; break;
        case fb::ArgKind::Output: value = ce->outputs[arg->index()]; break;
        case fb::ArgKind::Arena: value = ce->arena + arg->offset(); break;
        case fb::ArgKind::Constant: value = cm.constants[arg->index()]; break;
      }
      static_assert(sizeof(CUdeviceptr) == sizeof(void*), "argument slots hold device pointers");
      memcpy(slot, &value, sizeof(value));
      ce->params[slot - e->args] = slot;
      ++slot;
    }
  }
  for (uint32_t o = 0; o < ce->num_outputs; ++o) e->outputs[o] = reinterpret_cast<uint8_t*>(ce->outputs[o]);
  e->arena = reinterpret_cast<uint8_t*>(ce->arena);
  e->device_state = ce;
  return AGATE_OK;
}

void FreeExecutor(agate_executor* e) {
  FreeCudaExecutor(DriverForRelease(), static_cast<CudaExecutor*>(e->device_state));
  e->device_state = nullptr;
}

agate_status_t Run(agate_executor* e) {
  const Driver* d = nullptr;
  agate_status_t status = GetDriver(&d);
  if (status != AGATE_OK) return status;
  const auto [module, m, cm] = LoadedModuleOf(*e);
  CudaExecutor& ce = *static_cast<CudaExecutor*>(e->device_state);
  for (uint32_t i = 0; i < ce.num_inputs; ++i) {
    if (e->inputs[i] == nullptr) {
      return Fail(AGATE_INVALID_ARGUMENT) << "input " << i << " '" << m.inputs()->Get(i)->name()->c_str()
                                          << "' is not bound (agate_executor_set_input)";
    }
  }
  // Point input slots at the device copy (host inputs) or the caller's device memory.
  void** slot = e->args;
  for (uint32_t c = 0; c < module.facts.num_calls; ++c) {
    for (const fb::Arg* arg : *m.plan()->Get(c)->args()) {
      if (arg->kind() == fb::ArgKind::Input) {
        const uint32_t i = arg->index();
        const CUdeviceptr value = e->input_on_device[i] ? reinterpret_cast<CUdeviceptr>(e->inputs[i])
                                                        : ce.input_buffers[i];
        memcpy(slot, &value, sizeof(value));
      }
      ++slot;
    }
  }
  for (uint32_t i = 0; i < ce.num_inputs; ++i) {
    if (e->input_on_device[i]) continue;
    const CUresult r = d->MemcpyHtoDAsync(ce.input_buffers[i], e->inputs[i],
                                          static_cast<size_t>(TensorBytes(*m.inputs()->Get(i))), ce.stream);
    if (r != CUDA_SUCCESS) return Fail(AGATE_INTERNAL) << "copying input " << i << " to the GPU failed: " << ErrorString(*d, r);
  }
  for (uint32_t c = 0; c < module.facts.num_calls; ++c) {
    const fb::Call& call = *m.plan()->Get(c);
    const fb::CudaKernel& k = *m.kernels()->Get(call.kernel())->cuda();
    void** params = ce.params + (e->calls[c].args - e->args);
    const CUresult r = d->LaunchKernel(cm.functions[call.kernel()], k.grid()->x(), k.grid()->y(), k.grid()->z(),
                                       k.block()->x(), k.block()->y(), k.block()->z(), k.shared_memory_bytes(),
                                       ce.stream, params, nullptr);
    if (r != CUDA_SUCCESS) {
      return Fail(AGATE_INTERNAL) << "CUDA kernel '" << m.kernels()->Get(call.kernel())->name()->c_str()
                                  << "' (plan call " << c << ") failed to launch: " << ErrorString(*d, r);
    }
  }
  const CUresult r = d->StreamSynchronize(ce.stream);
  if (r != CUDA_SUCCESS) return Fail(AGATE_INTERNAL) << "CUDA run failed: " << ErrorString(*d, r);
  return AGATE_OK;
}

agate_status_t CopyOutput(agate_executor* e, uint32_t index, void* host_dst) {
  const Driver* d = nullptr;
  agate_status_t status = GetDriver(&d);
  if (status != AGATE_OK) return status;
  const CudaExecutor& ce = *static_cast<const CudaExecutor*>(e->device_state);
  const size_t bytes = static_cast<size_t>(TensorBytes(*e->module->fb->outputs()->Get(index)));
  if (bytes == 0) return AGATE_OK;  // a zero-element output: the host side may have no storage
  const CUresult r = d->MemcpyDtoH(host_dst, ce.outputs[index], bytes);
  if (r != CUDA_SUCCESS) return Fail(AGATE_INTERNAL) << "copying output " << index << " from the GPU failed: " << ErrorString(*d, r);
  return AGATE_OK;
}

const DeviceBackend kCudaBackend = {
    "CUDA", kDLCUDA, Load, Unload, CreateExecutor, FreeExecutor, Run, CopyOutput,
};

// Linking the cuda profile makes the host loader accept CUDA modules.
const bool kRegistered = (RegisterCudaBackend(&kCudaBackend), true);

}  // namespace

const DeviceBackend* CudaDeviceBackend() { return &kCudaBackend; }

}  // namespace rt
}  // namespace agate
