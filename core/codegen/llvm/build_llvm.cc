#include "core/codegen/llvm/build_llvm.h"

#include <llvm/IR/LLVMContext.h>

#include "core/codegen/llvm/codegen_llvm.h"
#include "core/codegen/llvm/emit.h"
#include "core/codegen/llvm/link.h"
#include "core/codegen/llvm/optimize.h"
#include "core/codegen/llvm/target_machine.h"
#include "core/support/error.h"

namespace agate {
namespace codegen {

LLVMArtifacts BuildLLVMObject(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target,
                              const LLVMBuildOptions& options) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = GenerateLLVM(funcs, target, &context);
  std::unique_ptr<llvm::TargetMachine> machine = CreateTargetMachine(target);
  OptimizeModule(*module, *machine);
  LLVMArtifacts artifacts;
  artifacts.object = EmitObject(*module, *machine);
  if (options.keep_assembly) artifacts.assembly = EmitAssembly(*module, *machine);
  if (options.keep_llvm_ir) artifacts.llvm_ir = PrintLLVMIR(*module);
  return artifacts;
}

std::string BuildLLVMSharedObject(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target) {
  AGATE_REQUIRE(!target.is_bare_metal(), kInvalidArgument)
      << "target '" << target << "' has no operating system to load a shared object; use BuildLLVMObject and link "
      << "the object into the firmware";
  return LinkSharedObject({BuildLLVMObject(funcs, target).object});
}

HostKernels HostKernels::Build(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target) {
  const target::Target& host = target::Target::Host();
  AGATE_REQUIRE(target.arch() == host.arch() && !target.is_bare_metal(), kInvalidArgument)
      << "target '" << target << "' cannot run on this " << host.triple() << " machine";
  // Code for a CPU with features this one lacks would die of an illegal instruction.
  for (const std::string& feature : target.features()) {
    AGATE_REQUIRE(host.HasFeature(feature), kInvalidArgument)
        << "target '" << target << "' uses " << feature << ", which this CPU (" << host.cpu() << ") does not have";
  }
  return HostKernels(DynamicLibrary::Load(BuildLLVMSharedObject(funcs, target)));
}

agate_kernel_fn HostKernels::Get(const std::string& name) const {
  return reinterpret_cast<agate_kernel_fn>(library_.Symbol(name));
}

}  // namespace codegen
}  // namespace agate
