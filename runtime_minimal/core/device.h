// Hooks through which a device profile (cuda) runs modules the CPU core cannot.
//
// Why hooks instead of #ifdefs: the core stays the same object in every profile;
// the cuda profile registers its backend at load time, and the host profile
// without it reports "unavailable" for CUDA modules instead of failing to link.
//
// Division of work: the core checks handles and indices and hands every tensor
// of a device module to the backend, which checks it (shape, dtype, which
// device) and records the binding in the executor's tables (inputs,
// input_on_device, outputs); the backend owns everything on the
// device. So the core profile, which microcontrollers link, carries no device
// logic.
#ifndef AGATE_RUNTIME_MINIMAL_CORE_DEVICE_H_
#define AGATE_RUNTIME_MINIMAL_CORE_DEVICE_H_

#include "agate/runtime.h"

namespace agate {
namespace rt {

struct DeviceBackend {
  const char* name;    // "CUDA"
  int32_t device_type; // the DLDeviceType of its tensors
  // Loads the kernels and constants of a verified module onto device
  // module->device_id; sets module->device_state. On failure nothing stays allocated.
  agate_status_t (*load)(agate_module* module);
  void (*unload)(agate_module* module);
  // Allocates the executor's device memory (arena, workspace, outputs) and sets
  // executor->device_state and executor->outputs (device addresses); the
  // executor struct itself is the host's. On failure nothing stays allocated.
  agate_status_t (*create_executor)(agate_executor* executor);
  void (*free_executor)(agate_executor* executor);
  // Runs the plan once with the executor's current bindings. When out_call_ns
  // is not NULL, writes each plan call's device time in nanoseconds (profiling).
  // A failed run leaves the executor usable (unless the device itself faulted).
  agate_status_t (*run)(agate_executor* executor, uint64_t* out_call_ns);
  // Binds input `index` (a valid index) to `tensor` (any pointer: checked here),
  // host memory to copy in or device memory to use in place.
  agate_status_t (*set_input)(agate_executor* executor, uint32_t index, const DLTensor* tensor);
  // Binds output `index` to the caller's device memory (NULL: the executor's own again).
  agate_status_t (*set_output)(agate_executor* executor, uint32_t index, const DLTensor* tensor);
  // Copies output `index` into `dst` (any pointer: checked here), host memory or
  // memory of the module's device.
  agate_status_t (*copy_output)(agate_executor* executor, uint32_t index, const DLTensor* dst);
  // How many devices of this kind the machine has; AGATE_UNAVAILABLE (with the
  // reason) without a driver or device.
  agate_status_t (*device_count)(int32_t* out_count);
};

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CORE_DEVICE_H_
