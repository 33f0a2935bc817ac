// Turns an optimized LLVM module into machine code in memory.
//
// Why in memory: a compiled agate module embeds the object (bare metal) or the
// linked shared object (Linux) as bytes; nothing needs a file until a linker runs.
#ifndef AGATE_CORE_CODEGEN_LLVM_EMIT_H_
#define AGATE_CORE_CODEGEN_LLVM_EMIT_H_

#include <string>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

namespace agate {
namespace codegen {

// The ELF relocatable object for `module`, as bytes.
std::string EmitObject(llvm::Module& module, llvm::TargetMachine& machine);
// The target assembly text, for inspection and tests (e.g. "did it use zmm registers").
std::string EmitAssembly(llvm::Module& module, llvm::TargetMachine& machine);
// The textual LLVM IR.
std::string PrintLLVMIR(const llvm::Module& module);

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_LLVM_EMIT_H_
