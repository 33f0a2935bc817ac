#include "runtime_minimal/cuda/driver.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <new>

namespace agate {
namespace rt {
namespace cu {

#define AGATE_CU_SYMBOL(member, ...) \
  { offsetof(DriverApi, member), { __VA_ARGS__ } }

// The exported names, the one cuda.h maps the function to first (checked by
// driver_api_conformance_test), then the names older drivers export.
const DriverSymbol kDriverSymbols[] = {
    AGATE_CU_SYMBOL(Init, "cuInit"),
    AGATE_CU_SYMBOL(DriverGetVersion, "cuDriverGetVersion"),
    AGATE_CU_SYMBOL(DeviceGetCount, "cuDeviceGetCount"),
    AGATE_CU_SYMBOL(DeviceGet, "cuDeviceGet"),
    AGATE_CU_SYMBOL(DeviceGetAttribute, "cuDeviceGetAttribute"),
    AGATE_CU_SYMBOL(DeviceGetName, "cuDeviceGetName"),
    AGATE_CU_SYMBOL(DeviceTotalMem, "cuDeviceTotalMem_v2"),
    AGATE_CU_SYMBOL(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    AGATE_CU_SYMBOL(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    AGATE_CU_SYMBOL(CtxSetCurrent, "cuCtxSetCurrent"),
    AGATE_CU_SYMBOL(ModuleLoadData, "cuModuleLoadData"),
    AGATE_CU_SYMBOL(ModuleUnload, "cuModuleUnload"),
    AGATE_CU_SYMBOL(ModuleGetFunction, "cuModuleGetFunction"),
    AGATE_CU_SYMBOL(FuncGetAttribute, "cuFuncGetAttribute"),
    AGATE_CU_SYMBOL(FuncSetAttribute, "cuFuncSetAttribute"),
    AGATE_CU_SYMBOL(MemAlloc, "cuMemAlloc_v2"),
    AGATE_CU_SYMBOL(MemFree, "cuMemFree_v2"),
    AGATE_CU_SYMBOL(MemGetAddressRange, "cuMemGetAddressRange_v2"),
    AGATE_CU_SYMBOL(PointerGetAttribute, "cuPointerGetAttribute"),
    AGATE_CU_SYMBOL(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    AGATE_CU_SYMBOL(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    AGATE_CU_SYMBOL(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    AGATE_CU_SYMBOL(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    AGATE_CU_SYMBOL(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    AGATE_CU_SYMBOL(StreamCreate, "cuStreamCreate"),
    AGATE_CU_SYMBOL(StreamDestroy, "cuStreamDestroy_v2"),
    AGATE_CU_SYMBOL(StreamSynchronize, "cuStreamSynchronize"),
    AGATE_CU_SYMBOL(StreamBeginCapture, "cuStreamBeginCapture_v2"),
    AGATE_CU_SYMBOL(StreamEndCapture, "cuStreamEndCapture"),
    AGATE_CU_SYMBOL(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"),
    AGATE_CU_SYMBOL(GraphLaunch, "cuGraphLaunch"),
    AGATE_CU_SYMBOL(GraphExecDestroy, "cuGraphExecDestroy"),
    AGATE_CU_SYMBOL(GraphDestroy, "cuGraphDestroy"),
    AGATE_CU_SYMBOL(EventCreate, "cuEventCreate"),
    AGATE_CU_SYMBOL(EventDestroy, "cuEventDestroy_v2"),
    AGATE_CU_SYMBOL(EventRecord, "cuEventRecord"),
    AGATE_CU_SYMBOL(EventSynchronize, "cuEventSynchronize"),
    // _v2 since CUDA 12.8; the same signature and meaning for what the runtime times.
    AGATE_CU_SYMBOL(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
    AGATE_CU_SYMBOL(LaunchKernel, "cuLaunchKernel"),
    AGATE_CU_SYMBOL(GetErrorName, "cuGetErrorName"),
    AGATE_CU_SYMBOL(GetErrorString, "cuGetErrorString"),
};
const size_t kNumDriverSymbols = sizeof(kDriverSymbols) / sizeof(kDriverSymbols[0]);
static_assert(sizeof(kDriverSymbols) / sizeof(kDriverSymbols[0]) == sizeof(DriverApi) / sizeof(void*),
              "every DriverApi member has a DriverSymbol");

#undef AGATE_CU_SYMBOL

}  // namespace cu

namespace {

constexpr size_t kSavedMessageBytes = 512;

// The process's driver: opened once; a failure is kept and repeated.
struct DriverState {
  std::once_flag once;
  cu::DriverApi api = {};
  agate_status_t status = AGATE_OK;
  char message[kSavedMessageBytes] = {};
  int32_t device_count = 0;
  // One slot per GPU, filled on first use under `mutex`.
  std::mutex mutex;
  CudaDevice* devices = nullptr;
  bool* device_ready = nullptr;
};

DriverState& State() {
  static DriverState* state = new DriverState();  // kept for the process (see driver.h)
  return *state;
}

void SaveFailure(DriverState& s, agate_status_t status) {
  s.status = status;
  strncpy(s.message, LastMessage(), sizeof(s.message) - 1);
}

const char* ErrorName(const cu::DriverApi& d, cu::Result result) {
  const char* name = nullptr;
  if (d.GetErrorName == nullptr || d.GetErrorName(result, &name) != cu::kSuccess || name == nullptr) {
    return "CUDA_ERROR_UNKNOWN_CODE";
  }
  return name;
}

const char* ErrorText(const cu::DriverApi& d, cu::Result result) {
  const char* text = nullptr;
  if (d.GetErrorString == nullptr || d.GetErrorString(result, &text) != cu::kSuccess || text == nullptr) {
    return "no description";
  }
  return text;
}

// Binds every entry point; names the first one the library lacks.
agate_status_t BindSymbols(void* library, const char* path, cu::DriverApi* api) {
  for (size_t i = 0; i < cu::kNumDriverSymbols; ++i) {
    const cu::DriverSymbol& symbol = cu::kDriverSymbols[i];
    void* address = nullptr;
    for (const char* name : symbol.names) {
      if (name == nullptr) break;
      address = dlsym(library, name);
      if (address != nullptr) break;
    }
    if (address == nullptr) {
      return Fail(AGATE_UNAVAILABLE) << "the CUDA driver '" << path << "' lacks " << symbol.names[0]
                                     << ": it is older than agate needs (a CUDA 11.4 driver or newer)";
    }
    memcpy(reinterpret_cast<char*>(api) + symbol.offset, &address, sizeof(address));
  }
  return AGATE_OK;
}

void OpenDriver(DriverState& s) {
  const char* override_path = secure_getenv(kCudaDriverVariable);
  const bool overridden = override_path != nullptr && override_path[0] != '\0';
  const char* path = overridden ? override_path : "libcuda.so.1";
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    Message m = Fail(AGATE_UNAVAILABLE);
    m << "no CUDA driver: cannot open " << path << " (" << (error != nullptr ? error : "unknown error") << ")";
    if (overridden) m << ", named by " << kCudaDriverVariable;
    m << "; CUDA modules need an NVIDIA GPU and its driver";
    SaveFailure(s, m);
    return;
  }
  agate_status_t status = BindSymbols(library, path, &s.api);
  if (status != AGATE_OK) {
    SaveFailure(s, status);
    return;
  }
  const cu::DriverApi& d = s.api;
  cu::Result r = d.Init(0);
  if (r == cu::kErrorNoDevice) {  // what the driver says on a machine without a GPU
    SaveFailure(s, Fail(AGATE_UNAVAILABLE) << "the CUDA driver is installed but sees no GPU (cuInit: "
                                           << ErrorName(d, r) << "; check CUDA_VISIBLE_DEVICES)");
    return;
  }
  if (r != cu::kSuccess) {
    SaveFailure(s, Fail(AGATE_UNAVAILABLE) << "the CUDA driver is installed but cuInit failed: " << ErrorName(d, r)
                                           << " (" << ErrorText(d, r) << "); is an NVIDIA GPU present and usable?");
    return;
  }
  int count = 0;
  r = d.DeviceGetCount(&count);
  if (r != cu::kSuccess || count <= 0) {
    SaveFailure(s, Fail(AGATE_UNAVAILABLE) << "the CUDA driver is installed but sees no GPU"
                                           << (r != cu::kSuccess ? " (cuDeviceGetCount failed)" : "")
                                           << " (check CUDA_VISIBLE_DEVICES)");
    return;
  }
  s.devices = static_cast<CudaDevice*>(calloc(static_cast<size_t>(count), sizeof(CudaDevice)));
  s.device_ready = static_cast<bool*>(calloc(static_cast<size_t>(count), sizeof(bool)));
  if (s.devices == nullptr || s.device_ready == nullptr) {
    SaveFailure(s, Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the table of " << count << " CUDA devices");
    return;
  }
  s.device_count = count;
}

agate_status_t OpenedState(DriverState** out) {
  DriverState& s = State();
  std::call_once(s.once, [&s] { OpenDriver(s); });
  if (s.status != AGATE_OK) return Fail(s.status) << s.message;
  *out = &s;
  return AGATE_OK;
}

agate_status_t Attribute(const cu::DriverApi& d, cu::Device device, cu::DeviceAttribute attribute, const char* what,
                         int32_t* out) {
  int value = 0;
  const cu::Result r = d.DeviceGetAttribute(&value, attribute, device);
  if (r != cu::kSuccess) return CudaFail(d, r, "cuDeviceGetAttribute") << " (" << what << ")";
  *out = value;
  return AGATE_OK;
}

agate_status_t InitDevice(const cu::DriverApi& d, int32_t ordinal, CudaDevice* out) {
  CudaDevice device = {};
  device.ordinal = ordinal;
  cu::Result r = d.DeviceGet(&device.device, ordinal);
  if (r != cu::kSuccess) return CudaFail(d, r, "cuDeviceGet") << " for CUDA device " << ordinal;
  int32_t major = 0;
  int32_t minor = 0;
  agate_status_t status = Attribute(d, device.device, cu::kDeviceAttributeComputeCapabilityMajor, "major", &major);
  if (status == AGATE_OK) {
    status = Attribute(d, device.device, cu::kDeviceAttributeComputeCapabilityMinor, "minor", &minor);
  }
  if (status == AGATE_OK) {
    status = Attribute(d, device.device, cu::kDeviceAttributeMaxThreadsPerBlock, "threads per block",
                       &device.max_threads_per_block);
  }
  if (status == AGATE_OK) {
    status = Attribute(d, device.device, cu::kDeviceAttributeMaxRegistersPerBlock, "registers per block",
                       &device.max_registers_per_block);
  }
  if (status == AGATE_OK) {
    status = Attribute(d, device.device, cu::kDeviceAttributeMaxSharedMemoryPerBlockOptin, "opt-in shared memory",
                       &device.max_shared_memory_optin);
  }
  if (status != AGATE_OK) return status;
  device.arch = static_cast<uint32_t>(major * 10 + minor);
  if (d.DeviceGetName(device.name, static_cast<int>(sizeof(device.name)), device.device) != cu::kSuccess) {
    strncpy(device.name, "unnamed GPU", sizeof(device.name) - 1);
  }
  device.name[sizeof(device.name) - 1] = '\0';
  r = d.DevicePrimaryCtxRetain(&device.context, device.device);
  if (r != cu::kSuccess) {
    return CudaFail(d, r, "cuDevicePrimaryCtxRetain") << " for CUDA device " << ordinal << " (" << device.name << ")";
  }
  *out = device;
  return AGATE_OK;
}

}  // namespace

agate_status_t GetCudaDriver(const cu::DriverApi** out_driver) {
  DriverState* s = nullptr;
  const agate_status_t status = OpenedState(&s);
  if (status != AGATE_OK) return status;
  *out_driver = &s->api;
  return AGATE_OK;
}

agate_status_t CudaDeviceCount(int32_t* out_count) {
  DriverState* s = nullptr;
  const agate_status_t status = OpenedState(&s);
  if (status != AGATE_OK) return status;
  *out_count = s->device_count;
  return AGATE_OK;
}

agate_status_t GetCudaDevice(int32_t ordinal, const CudaDevice** out_device) {
  DriverState* s = nullptr;
  agate_status_t status = OpenedState(&s);
  if (status != AGATE_OK) return status;
  if (ordinal < 0 || ordinal >= s->device_count) {
    return Fail(AGATE_OUT_OF_RANGE) << "CUDA device " << ordinal << " does not exist: the driver sees "
                                    << s->device_count << " GPU" << (s->device_count == 1 ? "" : "s") << " (0.."
                                    << s->device_count - 1 << ")";
  }
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (!s->device_ready[ordinal]) {
      // A failure is not kept: a later call tries again (the GPU may have been busy).
      status = InitDevice(s->api, ordinal, &s->devices[ordinal]);
      if (status != AGATE_OK) return status;
      s->device_ready[ordinal] = true;
    }
  }
  const CudaDevice& device = s->devices[ordinal];
  status = MakeCurrent(s->api, device);
  if (status != AGATE_OK) return status;
  *out_device = &device;
  return AGATE_OK;
}

agate_status_t MakeCurrent(const cu::DriverApi& driver, const CudaDevice& device) {
  const cu::Result r = driver.CtxSetCurrent(device.context);
  if (r != cu::kSuccess) return CudaFail(driver, r, "cuCtxSetCurrent") << " for CUDA device " << device.ordinal;
  return AGATE_OK;
}

agate_status_t StatusOfCudaResult(cu::Result result) {
  switch (result) {
    case cu::kSuccess: return AGATE_OK;
    case cu::kErrorOutOfMemory:
    case cu::kErrorLaunchOutOfResources: return AGATE_RESOURCE_EXHAUSTED;
    case cu::kErrorNotInitialized:
    case cu::kErrorDeinitialized:
    case cu::kErrorStubLibrary:
    case cu::kErrorInsufficientDriver:
    case cu::kErrorDeviceUnavailable:
    case cu::kErrorNoDevice:
    case cu::kErrorInvalidDevice:
    case cu::kErrorDeviceNotLicensed:
    case cu::kErrorInvalidContext:
    case cu::kErrorSystemNotReady:
    case cu::kErrorSystemDriverMismatch:
    case cu::kErrorCompatNotSupportedOnDevice: return AGATE_UNAVAILABLE;
    case cu::kErrorNoBinaryForGpu:
    case cu::kErrorInvalidPtx:
    case cu::kErrorJitCompilerNotFound:
    case cu::kErrorUnsupportedPtxVersion:
    case cu::kErrorJitCompilationDisabled:
    case cu::kErrorCallRequiresNewerDriver:
    case cu::kErrorNotSupported:
    case cu::kErrorStreamCaptureUnsupported: return AGATE_UNSUPPORTED;
    case cu::kErrorInvalidImage: return AGATE_CORRUPT;
    case cu::kErrorNotFound: return AGATE_NOT_FOUND;
    default: return AGATE_INTERNAL;
  }
}

bool IsStickyCudaError(cu::Result result) {
  switch (result) {
    case cu::kErrorIllegalAddress:
    case cu::kErrorLaunchTimeout:
    case cu::kErrorHardwareStackError:
    case cu::kErrorIllegalInstruction:
    case cu::kErrorMisalignedAddress:
    case cu::kErrorInvalidAddressSpace:
    case cu::kErrorInvalidPc:
    case cu::kErrorLaunchFailed:
    case cu::kErrorEccUncorrectable: return true;
    default: return false;
  }
}

Message CudaFail(const cu::DriverApi& driver, cu::Result result, const char* call, SourceLine where) {
  Message m = Fail(StatusOfCudaResult(result), where);
  m << call << ": " << ErrorName(driver, result) << " (" << ErrorText(driver, result) << ")";
  if (IsStickyCudaError(result)) m << " [the GPU context is unusable after this fault; restart the process]";
  return m;
}

}  // namespace rt
}  // namespace agate
