#include "core/codegen/llvm/dynamic_library.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <utility>

#include "core/support/error.h"

namespace agate {
namespace codegen {

DynamicLibrary DynamicLibrary::Load(const std::string& shared_object) {
  int fd = memfd_create("agate-module", MFD_CLOEXEC);
  AGATE_REQUIRE(fd >= 0, kIo) << "memfd_create failed for a " << shared_object.size() << "-byte shared object";
  size_t written = 0;
  while (written < shared_object.size()) {
    ssize_t n = write(fd, shared_object.data() + written, shared_object.size() - written);
    if (n <= 0) {
      close(fd);
      AGATE_THROW(kIo) << "cannot write the shared object into its memory file";
    }
    written += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    close(fd);
    const char* error = dlerror();
    AGATE_THROW(kCorrupt) << "the loader rejected the shared object: " << (error ? error : "unknown reason");
  }
  return DynamicLibrary(handle, fd);
}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), fd_(std::exchange(other.fd_, -1)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    Release();
    handle_ = std::exchange(other.handle_, nullptr);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() { Release(); }

void DynamicLibrary::Release() {
  if (handle_) dlclose(handle_);
  if (fd_ >= 0) close(fd_);
  handle_ = nullptr;
  fd_ = -1;
}

void* DynamicLibrary::FindSymbol(const std::string& name) const {
  return handle_ ? dlsym(handle_, name.c_str()) : nullptr;
}

void* DynamicLibrary::Symbol(const std::string& name) const {
  void* address = FindSymbol(name);
  AGATE_REQUIRE(address != nullptr, kNotFound) << "symbol '" << name << "' is not in the loaded module";
  return address;
}

}  // namespace codegen
}  // namespace agate
