// Hooks through which a device profile (cuda) runs modules the CPU core cannot.
//
// Why hooks instead of #ifdefs: the core stays the same object in every profile;
// the cuda profile registers its backend at load time, and the host profile
// without it reports "unsupported" for CUDA modules instead of failing to link.
#ifndef AGATE_RUNTIME_MINIMAL_CORE_DEVICE_H_
#define AGATE_RUNTIME_MINIMAL_CORE_DEVICE_H_

#include "agate/runtime.h"

namespace agate {
namespace rt {

struct DeviceBackend {
  const char* name;    // "CUDA"
  int32_t device_type; // the DLDeviceType of its tensors
  // Loads the kernels of a verified module; sets module->device_state.
  agate_status_t (*load)(agate_module* module);
  void (*unload)(agate_module* module);
  // Allocates the executor's device memory (arena, workspace, outputs) and sets
  // executor->device_state; the executor struct itself is the host's.
  agate_status_t (*create_executor)(agate_executor* executor);
  void (*free_executor)(agate_executor* executor);
  agate_status_t (*run)(agate_executor* executor);
  // Copies output `index` to host memory of its size.
  agate_status_t (*copy_output)(agate_executor* executor, uint32_t index, void* host_dst);
};

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CORE_DEVICE_H_
