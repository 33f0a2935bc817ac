// Links relocatable objects into a shared object, in memory.
//
// Why ld.lld (LLVM 14's linker, Debian package lld-14) and not `cc -shared`:
// lld is one cross linker for every ELF architecture agate targets (x86-64 and
// AArch64 shared objects come out of the same binary), it is the same LLVM
// release as the code generator, and it needs no C runtime start files: agate's
// kernels are freestanding (no libc calls beyond what the loading process already
// has), so a plain `ld.lld -shared` is all a module needs. The system C compiler
// driver would only link for the host and drags in crt files we do not want.
#ifndef AGATE_CORE_CODEGEN_LLVM_LINK_H_
#define AGATE_CORE_CODEGEN_LLVM_LINK_H_

#include <string>
#include <vector>

namespace agate {
namespace codegen {

// The path of ld.lld: $AGATE_LLD, else ld.lld-14 / ld.lld on PATH, else
// /usr/lib/llvm-14/bin/ld.lld. Throws agate::Error(kUnavailable) when none exists.
std::string FindLinker();

// Links ELF objects (bytes, as EmitObject returns them) into one shared object and
// returns its bytes. Throws agate::Error(kUnavailable) without a linker and
// kInternal with the linker's message when linking fails.
std::string LinkSharedObject(const std::vector<std::string>& objects);

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_LLVM_LINK_H_
