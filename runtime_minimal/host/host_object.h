// Loading the CPU kernels a host module carries as an embedded shared object.
//
// Why memfd + dlopen: the module is one self-contained file, and the system's
// dynamic loader is the one component that correctly relocates, links (libm,
// libc) and unloads native code. The object's bytes are copied into an anonymous
// in-memory file (memfd_create; a deleted temporary file where memfd is not
// available) and opened through /proc/self/fd, so nothing is left on disk.
// Before that the ELF header is checked against this machine, so a module built
// for another architecture is refused naming both ("module built for x86-64, this
// runtime runs on aarch64") instead of failing in the dynamic loader.
#ifndef AGATE_RUNTIME_MINIMAL_HOST_HOST_OBJECT_H_
#define AGATE_RUNTIME_MINIMAL_HOST_HOST_OBJECT_H_

#include <stddef.h>
#include <stdint.h>

#include "agate/runtime.h"
#include "runtime_minimal/core/module.h"

namespace agate {
namespace rt {

// A loaded object: the dlopen handle and the in-memory file it was loaded from.
// The file stays open for as long as the library is loaded: glibc recognises an
// already-loaded library by its path ("/proc/self/fd/N"), so a descriptor closed
// after dlopen could be reused by the next module's file, and that module's
// dlopen of the same path would return this library instead of its own.
// With a kernel directory (agate_runtime_set_kernel_dir) the object is a named file there
// instead, `path` (malloc'd), deleted by CloseHostObject; its unique name plays the same part.
struct HostObject {
  void* library = nullptr;
  int fd = -1;
  char* path = nullptr;
};

// The directory kernels are written to (agate_runtime_set_kernel_dir); nullptr or "" for the
// default (memfd, else an unlinked temporary file). Thread-safe.
agate_status_t SetKernelDir(const char* dir);

// AGATE_OK when the object is an ELF shared object for this machine's architecture; otherwise
// AGATE_VERSION_MISMATCH naming both architectures, or AGATE_CORRUPT.
agate_status_t CheckHostObjectMachine(const uint8_t* bytes, size_t size);

// Checks the object against its checksum (HostObject.fnv1a64 in the schema) and
// this machine, then loads it into *out (release with CloseHostObject).
agate_status_t OpenHostObject(const uint8_t* bytes, size_t size, uint64_t fnv1a64, HostObject* out);
// dlclose, then close (or delete) the file; leaves *object empty (safe on an empty one).
void CloseHostObject(HostObject* object);

// A KernelSource that finds kernels with dlsym in an open object.
KernelSource HostObjectKernelSource(const HostObject& object);

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_HOST_HOST_OBJECT_H_
