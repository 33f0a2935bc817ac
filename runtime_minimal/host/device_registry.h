// Where the cuda profile registers its backend for the host loader.
//
// Why a registry: the host profile must build and run without CUDA headers or
// libraries; linking the cuda profile (alwayslink) adds the backend, and a host
// build without it refuses CUDA modules with AGATE_UNSUPPORTED.
#ifndef AGATE_RUNTIME_MINIMAL_HOST_DEVICE_REGISTRY_H_
#define AGATE_RUNTIME_MINIMAL_HOST_DEVICE_REGISTRY_H_

#include "runtime_minimal/core/device.h"

namespace agate {
namespace rt {

// The registered CUDA backend, or NULL.
const DeviceBackend* CudaBackend();
// Called once by the cuda profile's static initializer.
void RegisterCudaBackend(const DeviceBackend* backend);

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_HOST_DEVICE_REGISTRY_H_
