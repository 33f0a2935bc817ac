// Loading the CPU kernels a host module carries as an embedded shared object.
//
// Why memfd + dlopen: the module is one self-contained file, and the system's
// dynamic loader is the one component that correctly relocates, links (libm,
// libc) and unloads native code. The object's bytes are copied into an anonymous
// in-memory file (memfd_create; a deleted temporary file where memfd is not
// available) and opened through /proc/self/fd, so nothing is left on disk.
// Before that the ELF header is checked against this machine, so a module built
// for another CPU gets a clear "version mismatch" instead of a loader error.
#ifndef AGATE_RUNTIME_MINIMAL_HOST_HOST_OBJECT_H_
#define AGATE_RUNTIME_MINIMAL_HOST_HOST_OBJECT_H_

#include <stddef.h>
#include <stdint.h>

#include "agate/runtime.h"
#include "runtime_minimal/core/module.h"

namespace agate {
namespace rt {

// Checks the object against its checksum (HostObject.fnv1a64) and this machine,
// then loads it; *out_handle is a dlopen handle (close with CloseHostObject).
agate_status_t OpenHostObject(const uint8_t* bytes, size_t size, uint64_t fnv1a64, void** out_handle);
void CloseHostObject(void* handle);

// A KernelSource that finds kernels with dlsym in an open object.
KernelSource HostObjectKernelSource(void* handle);

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_HOST_HOST_OBJECT_H_
