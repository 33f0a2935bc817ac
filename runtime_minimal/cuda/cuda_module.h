// A CUDA module loaded onto one GPU: its kernels in one driver module and its
// constants in device memory.
//
// Why one driver module (CUmodule) per agate module: loading an image costs
// milliseconds (PTX: a JIT compile), so format 1.1 puts every kernel in one
// image per architecture and the loader picks one (image_choice.h). Format-1.0
// modules, whose kernels carry their own images, load one driver module per
// kernel as they always did.
//
// Constants are uploaded once, at load, into one allocation (each at a 256-byte
// aligned offset, like cuMemAlloc's own alignment), shared read-only by every
// executor of the module. Each kernel is checked against the device at load
// (threads per block its registers allow, shared memory), and kernels wanting
// more than 48 KiB of shared memory per block get the opt-in attribute, so a
// launch never fails for a reason known at load.
//
// Ownership: the state belongs to the agate_module (module->device_state) and is
// freed by UnloadCudaModule; the device and driver are the process's (driver.h).
#ifndef AGATE_RUNTIME_MINIMAL_CUDA_CUDA_MODULE_H_
#define AGATE_RUNTIME_MINIMAL_CUDA_CUDA_MODULE_H_

#include <stdint.h>

#include "runtime_minimal/core/module.h"
#include "runtime_minimal/cuda/driver.h"

namespace agate {
namespace rt {

struct CudaModuleState {
  const cu::DriverApi* driver;
  const CudaDevice* device;
  cu::Module* driver_modules;   // 1 (format 1.1) or one per kernel (1.0)
  uint32_t num_driver_modules;
  cu::Function* functions;      // one per module kernel
  cu::DevicePtr constants_block;
  cu::DevicePtr* constants;     // one per module constant (inside constants_block)
  int32_t image_index;          // the Module.cuda_images entry loaded; -1 for per-kernel images
};

// Loads module->fb onto device module->device_id and sets module->device_state.
agate_status_t LoadCudaModule(agate_module* module);

// Frees what LoadCudaModule allocated (every executor must be gone).
void UnloadCudaModule(agate_module* module);

// Rounds up to the 256-byte alignment cuMemAlloc itself gives, so every buffer
// suballocated from one block is aligned like a block of its own.
inline uint64_t AlignDevice(uint64_t bytes) { return (bytes + 255) & ~uint64_t{255}; }

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CUDA_CUDA_MODULE_H_
