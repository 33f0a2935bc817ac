#include "runtime_minimal/cuda/cuda_backend.h"

#include "runtime_minimal/cuda/cuda_executor.h"
#include "runtime_minimal/cuda/cuda_module.h"
#include "runtime_minimal/cuda/driver.h"
#include "runtime_minimal/host/device_registry.h"

namespace agate {
namespace rt {
namespace {

const DeviceBackend kCudaBackend = {
    "CUDA",          kDLCUDA,      LoadCudaModule, UnloadCudaModule, CreateCudaExecutor, FreeCudaExecutor,
    RunCudaExecutor, SetCudaInput, SetCudaOutput,  CopyCudaOutput,   CudaDeviceCount,
};

// Linking the cuda profile makes the host loader accept CUDA modules.
const bool kRegistered = (RegisterCudaBackend(&kCudaBackend), true);

}  // namespace

const DeviceBackend* CudaDeviceBackend() { return &kCudaBackend; }

}  // namespace rt
}  // namespace agate
