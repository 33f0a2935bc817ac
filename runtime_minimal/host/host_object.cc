#include "runtime_minimal/host/host_object.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>

#include "runtime_minimal/core/message.h"

namespace agate {
namespace rt {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kThisMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kThisMachine = EM_AARCH64;
#elif defined(__arm__)
constexpr uint16_t kThisMachine = EM_ARM;
#elif defined(__riscv)
constexpr uint16_t kThisMachine = EM_RISCV;
#else
#error "unknown host machine: add its ELF e_machine"
#endif

// The architecture's name as users know it, or nullptr for one this runtime does not name.
const char* MachineName(uint16_t machine, unsigned char elf_class) {
  switch (machine) {
    case EM_X86_64: return elf_class == ELFCLASS64 ? "x86-64" : "x32";
    case EM_386: return "x86 (32-bit)";
    case EM_AARCH64: return elf_class == ELFCLASS64 ? "aarch64" : "aarch64 ILP32";
    case EM_ARM: return "32-bit Arm";
    case EM_RISCV: return elf_class == ELFCLASS64 ? "riscv64" : "riscv32";
    case EM_PPC64: return "ppc64";
    case EM_S390: return "s390x";
    default: return nullptr;
  }
}

}  // namespace

agate_status_t CheckHostObjectMachine(const uint8_t* bytes, size_t size) {
  if (size < sizeof(ElfW(Ehdr)) || memcmp(bytes, ELFMAG, SELFMAG) != 0) {
    return Fail(AGATE_CORRUPT) << "the module's host object is not an ELF file";
  }
  ElfW(Ehdr) header;
  memcpy(&header, bytes, sizeof(header));
  const unsigned char want_class = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
  if (header.e_ident[EI_CLASS] != want_class || header.e_machine != kThisMachine) {
    const char* module_arch = MachineName(header.e_machine, header.e_ident[EI_CLASS]);
    Message message = Fail(AGATE_VERSION_MISMATCH) << "module built for ";
    if (module_arch != nullptr) {
      message << module_arch;
    } else {
      message << "ELF machine " << header.e_machine << " (class " << header.e_ident[EI_CLASS] << ")";
    }
    message << ", this runtime runs on " << MachineName(kThisMachine, want_class)
            << ": compile the model for this machine's target";
    return message;
  }
  if (header.e_type != ET_DYN) {
    return Fail(AGATE_CORRUPT) << "the module's host object is not a shared object (ELF type " << header.e_type << ")";
  }
  return AGATE_OK;
}

namespace {

bool WriteAll(int fd, const uint8_t* bytes, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// An anonymous file holding the object: memfd, else an unlinked temporary file.
int AnonymousFile() {
#if defined(MFD_CLOEXEC)
  const int memfd = memfd_create("agate-kernels", MFD_CLOEXEC);
  if (memfd >= 0) return memfd;
#endif
  const char* dir = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof(path), "%s/agate-kernels-XXXXXX", dir != nullptr ? dir : "/tmp");
  const int fd = mkstemp(path);
  if (fd >= 0) unlink(path);
  return fd;
}

constexpr size_t kMaxKernelDir = 4000;
std::mutex g_kernel_dir_mutex;
char g_kernel_dir[kMaxKernelDir] = "";

// The kernel directory, copied into `out` (empty: none set).
void KernelDir(char* out, size_t size) {
  std::lock_guard<std::mutex> lock(g_kernel_dir_mutex);
  snprintf(out, size, "%s", g_kernel_dir);
}

// Writes the object to a new file in `dir` and opens it by its path (host_object.h says why
// the file stays until CloseHostObject).
agate_status_t OpenInKernelDir(const char* dir, const uint8_t* bytes, size_t size, HostObject* out) {
  char path[kMaxKernelDir + 32];
  snprintf(path, sizeof(path), "%s/agate-kernels-XXXXXX", dir);
  const int fd = mkstemp(path);
  if (fd < 0) {
    return Fail(AGATE_IO) << "cannot create a kernel file in '" << dir << "' (agate_runtime_set_kernel_dir): errno "
                          << errno;
  }
  const bool written = WriteAll(fd, bytes, size) && fchmod(fd, S_IRUSR | S_IXUSR) == 0;
  const int error = errno;
  close(fd);
  if (!written) {
    unlink(path);
    return Fail(AGATE_IO) << "cannot write the module's host object to '" << path << "' (" << size << " bytes, errno "
                          << error << ")";
  }
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    unlink(path);
    const char* message = dlerror();
    return Fail(AGATE_CORRUPT) << "cannot load the module's host object from '" << path
                               << "': " << (message != nullptr ? message : "dlopen failed");
  }
  out->path = strdup(path);
  if (out->path == nullptr) {
    dlclose(handle);
    unlink(path);
    return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate a kernel file name";
  }
  out->library = handle;
  return AGATE_OK;
}

agate_kernel_fn LookupSymbol(void* handle, const char* name) {
  return reinterpret_cast<agate_kernel_fn>(dlsym(handle, name));
}

}  // namespace

agate_status_t OpenHostObject(const uint8_t* bytes, size_t size, uint64_t fnv1a64, HostObject* out) {
  // A flipped bit in native code must be refused, never executed.
  if (Fnv1a64(bytes, size) != fnv1a64) {
    return Fail(AGATE_CORRUPT) << "host object does not match its checksum (corrupt module)";
  }
  agate_status_t status = CheckHostObjectMachine(bytes, size);
  if (status != AGATE_OK) return status;
  char dir[kMaxKernelDir];
  KernelDir(dir, sizeof(dir));
  if (dir[0] != '\0') return OpenInKernelDir(dir, bytes, size, out);
  const int fd = AnonymousFile();
  if (fd < 0) {
    return Fail(AGATE_IO) << "cannot create an in-memory file for the module's host object (errno " << errno
                          << "); where memfd_create and $TMPDIR or /tmp are missing (Android before API 30), "
                          << "name a directory with agate_runtime_set_kernel_dir";
  }
  if (!WriteAll(fd, bytes, size)) {
    const int error = errno;
    close(fd);
    return Fail(AGATE_IO) << "cannot write the module's host object (" << size << " bytes, errno " << error << ")";
  }
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    close(fd);
    const char* error = dlerror();
    return Fail(AGATE_CORRUPT) << "cannot load the module's host object: " << (error != nullptr ? error : "dlopen failed");
  }
  // The file stays open until CloseHostObject (host_object.h says why).
  out->library = handle;
  out->fd = fd;
  return AGATE_OK;
}

void CloseHostObject(HostObject* object) {
  if (object->library != nullptr) dlclose(object->library);
  if (object->fd >= 0) close(object->fd);
  if (object->path != nullptr) {
    unlink(object->path);
    free(object->path);
  }
  object->library = nullptr;
  object->fd = -1;
  object->path = nullptr;
}

agate_status_t SetKernelDir(const char* dir) {
  if (dir == nullptr) dir = "";
  const size_t length = strlen(dir);
  if (length >= kMaxKernelDir) {
    return Fail(AGATE_INVALID_ARGUMENT) << "kernel directory path of " << length << " bytes (at most "
                                        << (kMaxKernelDir - 1) << ")";
  }
  struct stat st;
  if (length != 0 && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
    return Fail(AGATE_NOT_FOUND) << "kernel directory '" << dir << "' is not a directory";
  }
  std::lock_guard<std::mutex> lock(g_kernel_dir_mutex);
  memcpy(g_kernel_dir, dir, length + 1);
  return AGATE_OK;
}

KernelSource HostObjectKernelSource(const HostObject& object) {
  KernelSource source;
  source.lookup = LookupSymbol;
  source.self = object.library;
  source.description = "the module's host object";
  return source;
}

}  // namespace rt
}  // namespace agate
