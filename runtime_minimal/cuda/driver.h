// The CUDA driver as the cuda profile sees it: opened once per process, its
// devices, and its errors turned into agate statuses and messages.
//
// Why dlopen instead of linking libcuda: the same runtime binary must start on
// machines without a GPU or driver and say so (AGATE_UNAVAILABLE naming what is
// missing) only when a CUDA module is loaded.
//
// Lifetime: the library, its entry points and every device's primary context
// are acquired on first use and kept until the process exits (a primary context
// is shared with every other user of the GPU in the process, such as PyTorch,
// and releasing it from a static destructor races the driver's own teardown).
// Everything returned here stays valid for the process's lifetime.
//
// Test-only override: when the environment variable AGATE_CUDA_DRIVER names a
// file, that library is opened instead of libcuda.so.1 (tests point it at the
// fake driver in runtime_minimal/cuda/testing). It is read with secure_getenv,
// so set-user-ID programs ignore it; it grants nothing LD_LIBRARY_PATH does not.
#ifndef AGATE_RUNTIME_MINIMAL_CUDA_DRIVER_H_
#define AGATE_RUNTIME_MINIMAL_CUDA_DRIVER_H_

#include <stdint.h>

#include "agate/status.h"
#include "runtime_minimal/core/message.h"
#include "runtime_minimal/cuda/driver_api.h"

namespace agate {
namespace rt {

// The environment variable naming the driver library (test-only override).
constexpr const char kCudaDriverVariable[] = "AGATE_CUDA_DRIVER";

// One GPU, as the runtime uses it.
struct CudaDevice {
  int32_t ordinal;
  cu::Device device;
  cu::Context context;       // the device's primary context
  uint32_t arch;             // compute capability as major * 10 + minor (80 for sm_80)
  int32_t max_threads_per_block;
  int32_t max_registers_per_block;
  int32_t max_shared_memory_optin;  // bytes of shared memory a block may opt in to
  char name[64];
};

// The driver's entry points; AGATE_UNAVAILABLE (with the reason) when there is
// no driver, it lacks an entry point, or cuInit fails.
agate_status_t GetCudaDriver(const cu::DriverApi** out_driver);

// The number of GPUs the driver sees; AGATE_UNAVAILABLE without a driver or GPU.
agate_status_t CudaDeviceCount(int32_t* out_count);

// Device `ordinal`, its primary context made current on the calling thread.
// AGATE_UNAVAILABLE without a driver or GPU, AGATE_OUT_OF_RANGE for an ordinal
// the driver does not have.
agate_status_t GetCudaDevice(int32_t ordinal, const CudaDevice** out_device);

// Makes the device's context current on the calling thread (every backend entry
// point calls it: a context is current per thread).
agate_status_t MakeCurrent(const cu::DriverApi& driver, const CudaDevice& device);

// The status a driver result maps to: out of memory and launch resources ->
// AGATE_RESOURCE_EXHAUSTED; no driver, device or context -> AGATE_UNAVAILABLE;
// an image the GPU or driver cannot run (no binary, PTX too new, JIT missing) ->
// AGATE_UNSUPPORTED; a malformed image -> AGATE_CORRUPT; a missing entry ->
// AGATE_NOT_FOUND; anything else (faults in kernels, misuse) -> AGATE_INTERNAL.
agate_status_t StatusOfCudaResult(cu::Result result);

// True for errors after which the context is unusable (a kernel fault): every
// later call on the device fails until the process exits.
bool IsStickyCudaError(cu::Result result);

// Starts the message of a failed driver call:
//   "<call>: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
// with StatusOfCudaResult's status; the caller streams where it happened after it.
Message CudaFail(const cu::DriverApi& driver, cu::Result result, const char* call,
                 SourceLine where = SourceLine::Current());

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CUDA_DRIVER_H_
