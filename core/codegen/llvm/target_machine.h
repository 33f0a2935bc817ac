// Creates the LLVM TargetMachine that compiles for an agate Target.
//
// Why its own file: the code generator (to pick data layout and vector costs),
// the optimisation pipeline (target-aware vectorizers) and the object emitter all
// need the same TargetMachine, built the same way from the one Target: triple,
// CPU, -mattr features, float ABI, fast-math and the relocation model that the
// target's loader wants (PIC for shared objects on Linux, static on bare metal).
#ifndef AGATE_CORE_CODEGEN_LLVM_TARGET_MACHINE_H_
#define AGATE_CORE_CODEGEN_LLVM_TARGET_MACHINE_H_

#include <memory>

#include <llvm/Target/TargetMachine.h>

#include "core/target/target.h"

namespace agate {
namespace codegen {

// Throws agate::Error(kInvalidArgument) when the target is not an LLVM target.
std::unique_ptr<llvm::TargetMachine> CreateTargetMachine(const target::Target& target);

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_LLVM_TARGET_MACHINE_H_
