// The microcontroller package: a compiled model as the files a firmware build takes.
//
// Why: a microcontroller has no loader and no file system. Its firmware links the
// module (a C array in flash), the kernels (C sources or an ELF object), a table
// naming each kernel for the runtime, and calls the core runtime profile with
// memory it reserves statically. Writing those by hand is where the mistakes were:
// a module loaded with another model's kernels of the same names, a module array
// not aligned for its constants, RAM sizes guessed. MakePackage writes all of them
// from one compile result (in the spirit of microTVM's Model Library Format and
// TFLite Micro's model arrays): every symbol carries the model's prefix, so several
// models link into one firmware, and the generated table carries the module's kernel
// fingerprint, which agate_module_load_in_place_fingerprinted checks.
//
// The files, for prefix P:
//   agate_P.h          the entry points agate_P_load / agate_P_run, the sizes as macros
//   agate_P.c          the kernel table, its fingerprint, the entry points
//   agate_P_module.c   the module bytes, 64-byte aligned, const (flash)
//   agate_P_kernels.c  the kernels (c targets), or agate_P_kernels.o (llvm targets)
//   README.md          what each file is, the RAM and flash figures, how to build
// Pure: the caller writes the files (tools/cli writes a folder atomically).
#ifndef AGATE_CORE_COMPILER_PACKAGE_H_
#define AGATE_CORE_COMPILER_PACKAGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/compiler/compiler.h"

namespace agate {
namespace compiler {

struct PackageFile {
  std::string name;      // relative to the package folder
  std::string contents;  // text or bytes
};

// RAM a package's model needs, in bytes, as the header's macros state them.
struct PackageMemory {
  uint64_t arena = 0;           // intermediate tensors (the graph memory plan)
  uint64_t workspace = 0;       // the largest kernel scratch buffer
  uint64_t outputs = 0;         // the executor's output tensors (each rounded up to 64 bytes)
  uint64_t module_state = 0;    // the loaded module's bookkeeping (kernel pointers)
  uint64_t executor_state = 0;  // the executor's tables (calls, arguments, tensors)
  uint64_t total = 0;           // what agate_P_load needs: all of the above, aligned
};

// The files of the package for `result` (a microcontroller target: c, or llvm for a bare-metal
// triple) with kernel symbols prefixed `prefix` (the CompileOptions::kernel_prefix it was compiled
// with). Throws agate::Error(kInvalidArgument) for a target with an OS or a GPU, or a result whose
// kernels do not carry the prefix. Sizes of runtime state are the host runtime's (64-bit
// pointers), an upper bound for a 32-bit microcontroller.
std::vector<PackageFile> MakePackage(const CompileResult& result, const std::string& prefix);

// The memory figures of `result`'s module (what MakePackage writes into the header).
PackageMemory PackageMemoryOf(const CompileResult& result);

}  // namespace compiler
}  // namespace agate

#endif  // AGATE_CORE_COMPILER_PACKAGE_H_
