// Runs LLVM's O3 pipeline (new pass manager) over a generated module.
//
// Why: the code generator emits straightforward IR (allocas, explicit index
// arithmetic, vector ops where the schedule asked for them). mem2reg, LICM,
// GVN, instcombine and the loop and SLP vectorizers, tuned by the target's cost
// model, turn that into the code a hand-written kernel would have.
#ifndef AGATE_CORE_CODEGEN_LLVM_OPTIMIZE_H_
#define AGATE_CORE_CODEGEN_LLVM_OPTIMIZE_H_

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

namespace agate {
namespace codegen {

// Optimizes `module` in place for `machine` (its triple and data layout are set
// here). Throws agate::Error(kInternal) when the module does not verify before.
void OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine);

// Throws agate::Error(kInternal) with LLVM's verifier message when `module` is malformed.
void VerifyModule(const llvm::Module& module);

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_LLVM_OPTIMIZE_H_
