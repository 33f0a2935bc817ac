// The cuda profile: CUDA modules through the CUDA driver API, opened at run time.
//
// Why dlopen instead of linking libcuda: the same runtime binary must start on
// machines without a GPU or driver and say so (AGATE_UNAVAILABLE naming what is
// missing) only when a CUDA module is loaded. The driver API (not the runtime
// API) loads PTX/cubin images from memory and launches kernels with explicit
// parameters, which is all a compiled module needs.
//
// A CUDA module's kernels each come with their image and launch geometry; a
// kernel's parameters are the call's arguments as CUdeviceptr values. Constants
// are copied to the device once per module; each executor owns its device arena,
// outputs, input staging buffers and a stream. Host inputs are copied in at run
// time; device inputs (kDLCUDA) are used in place.
#ifndef AGATE_RUNTIME_MINIMAL_CUDA_CUDA_BACKEND_H_
#define AGATE_RUNTIME_MINIMAL_CUDA_CUDA_BACKEND_H_

#include "runtime_minimal/core/device.h"

namespace agate {
namespace rt {

// The backend (registered with the host loader by this library's static initializer).
const DeviceBackend* CudaDeviceBackend();

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CUDA_CUDA_BACKEND_H_
