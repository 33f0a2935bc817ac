// The loaded module: a verified view of the module bytes plus resolved kernels.
//
// Why a separate concept from the executor: a module is immutable after
// loading and shared read-only by any number of executors on any threads;
// everything that changes during a run lives in the executor. The core profile
// builds the module inside caller memory (no heap); the host and cuda profiles
// allocate that memory and add their resources through the release/device hooks.
#ifndef AGATE_RUNTIME_MINIMAL_CORE_MODULE_H_
#define AGATE_RUNTIME_MINIMAL_CORE_MODULE_H_

#include <stddef.h>
#include <stdint.h>

#include "agate/runtime.h"
#include "runtime_minimal/core/verify.h"

namespace agate {
namespace rt {

// A place kernels are found by name besides the static kernel table: the host
// profile's embedded shared object.
struct KernelSource {
  agate_kernel_fn (*lookup)(void* self, const char* name);
  void* self;
  const char* description;  // for messages: "the module's host object"
};

struct DeviceBackend;  // runtime_minimal/core/device.h

}  // namespace rt
}  // namespace agate

struct agate_module {
  const agate::fb::Module* fb;
  const uint8_t* data;
  size_t size;
  agate::rt::ModuleFacts facts;
  agate_kernel_fn* kernels;  // one per module kernel; unused (NULL) for device modules
  // Set by the profile that owns the module's memory (NULL when loaded in place):
  // frees what it allocated, the module struct included.
  void (*release)(agate_module* module);
  void* owner;
  // Set for modules whose kernels run on a device (the cuda profile): the
  // backend, the device ordinal the module is loaded on, and what the backend
  // loaded there (owned by the backend, freed by its unload hook).
  const agate::rt::DeviceBackend* device;
  int32_t device_id;
  void* device_state;
};

namespace agate {
namespace rt {

// The caller memory LoadModuleInPlace needs for a verified module.
size_t ModuleInPlaceBytes(const fb::Module& module);

// Builds a module verified by VerifyModule (fbm, facts) in `memory`: checks the
// data's alignment and the memory, resolves kernels. Kernels come from `table`,
// then `source` (either may be NULL); a device module (CUDA) needs `device`,
// which loads it onto device ordinal `device_id` (ignored for CPU modules: the
// host profile refuses a device id other than 0 for them).
agate_status_t BuildModule(const uint8_t* data, size_t size, const fb::Module* fbm, const ModuleFacts& facts,
                           const agate_kernel_table* table, const KernelSource* source, const DeviceBackend* device,
                           int32_t device_id, void* memory, size_t memory_bytes, agate_module** out_module);

// Verifies data and builds the module in `memory`. Kernels come from `table`,
// then `source` (either may be NULL); a device module (CUDA) needs `device`.
agate_status_t LoadModuleInPlace(const uint8_t* data, size_t size, const agate_kernel_table* table,
                                 const KernelSource* source, const DeviceBackend* device, void* memory,
                                 size_t memory_bytes, agate_module** out_module);

// Refuses a kernel table generated for other kernels: `table_fingerprint` (what the
// generated table carries) must equal the module's Module.kernel_fingerprint, and a
// module that records none (format before 1.2) cannot be matched. The message names
// both values.
agate_status_t CheckKernelFingerprint(const fb::Module& module, uint64_t table_fingerprint);

// The DLPack dtype of a module tensor.
DLDataType ToDLDataType(const fb::DType& dtype);

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CORE_MODULE_H_
