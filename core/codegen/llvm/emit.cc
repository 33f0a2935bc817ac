#include "core/codegen/llvm/emit.h"

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include "core/support/error.h"

namespace agate {
namespace codegen {
namespace {

std::string Emit(llvm::Module& module, llvm::TargetMachine& machine, llvm::CodeGenFileType type) {
  module.setTargetTriple(machine.getTargetTriple().str());
  module.setDataLayout(machine.createDataLayout());
  // The legacy pass manager still drives LLVM 14's code generator. It mutates the
  // module (e.g. lowering intrinsics), so it works on a copy: emitting an object
  // and then the assembly of the same module must give matching code.
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(module);
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream out(buffer);
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, out, nullptr, type)) {
    AGATE_THROW(kUnsupported) << "LLVM cannot emit " << (type == llvm::CGFT_ObjectFile ? "objects" : "assembly")
                              << " for " << machine.getTargetTriple().str();
  }
  passes.run(*copy);
  return std::string(buffer.begin(), buffer.end());
}

}  // namespace

std::string EmitObject(llvm::Module& module, llvm::TargetMachine& machine) {
  return Emit(module, machine, llvm::CGFT_ObjectFile);
}

std::string EmitAssembly(llvm::Module& module, llvm::TargetMachine& machine) {
  return Emit(module, machine, llvm::CGFT_AssemblyFile);
}

std::string PrintLLVMIR(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream out(text);
  module.print(out, nullptr);
  out.flush();
  return text;
}

}  // namespace codegen
}  // namespace agate
