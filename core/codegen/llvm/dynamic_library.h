// Loads a shared object held in memory and looks up its kernels.
//
// Why: a host module carries its code as shared-object bytes; tests, the JIT-like
// "compile and run now" path and the runtime all need those bytes mapped into the
// process without leaving files behind. The bytes go into an anonymous memory
// file (memfd) that dlopen reads through /proc/self/fd, so nothing touches disk.
#ifndef AGATE_CORE_CODEGEN_LLVM_DYNAMIC_LIBRARY_H_
#define AGATE_CORE_CODEGEN_LLVM_DYNAMIC_LIBRARY_H_

#include <string>

namespace agate {
namespace codegen {

class DynamicLibrary {
 public:
  // Maps `shared_object` (ELF bytes for this process's architecture). Throws
  // agate::Error(kCorrupt) with dlerror()'s message when the loader refuses it.
  static DynamicLibrary Load(const std::string& shared_object);

  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary();

  // The address of `name`; throws agate::Error(kNotFound) naming it when absent.
  void* Symbol(const std::string& name) const;
  // The address of `name`, or nullptr.
  void* FindSymbol(const std::string& name) const;

 private:
  DynamicLibrary(void* handle, int fd) : handle_(handle), fd_(fd) {}
  void Release();
  void* handle_ = nullptr;
  // The memory file the library was loaded from, open for as long as the library is: glibc
  // recognises an already-loaded library by its path, so a closed descriptor number reused by
  // the next Load would hand back this library instead of the new one.
  int fd_ = -1;
};

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_LLVM_DYNAMIC_LIBRARY_H_
