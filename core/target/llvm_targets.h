// Registers LLVM's targets (X86, AArch64, ARM, NVPTX) with the TargetRegistry.
//
// Why a function of its own: target parsing (CPU names, implied features) and
// every LLVM code generator need the registry, and LLVM's Initialize* calls
// must run once per process before the first lookup. Thread-safe, idempotent.
#ifndef AGATE_CORE_TARGET_LLVM_TARGETS_H_
#define AGATE_CORE_TARGET_LLVM_TARGETS_H_

namespace agate {
namespace target {

void EnsureLLVMTargetsInitialized();

}  // namespace target
}  // namespace agate

#endif  // AGATE_CORE_TARGET_LLVM_TARGETS_H_
