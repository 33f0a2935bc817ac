// The cuda profile: CUDA modules through the CUDA driver API, opened at run time.
//
// Linking //runtime_minimal/cuda registers this backend with the host loader
// (device_registry.h), so agate_module_load_* accepts CUDA modules. The pieces:
//   driver.h        the driver, opened with dlopen once per process (AGATE_UNAVAILABLE
//                   without one), its devices, its errors as statuses and messages;
//   driver_api.h    our declarations of the driver ABI (no CUDA toolkit needed to build);
//   cuda_verify.h   the CUDA payload checks (images, launch limits);
//   image_choice.h  which of a module's images (cubin / PTX per arch) a GPU loads;
//   cuda_module.h   one driver module per agate module, constants uploaded once;
//   cuda_executor.h device memory, CUDA graph record/replay, host and device I/O,
//                   profiling with CUDA events.
// Tested without a GPU against the fake driver in testing/ (fake_cuda.h).
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
