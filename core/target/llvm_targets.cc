#include "core/target/llvm_targets.h"

#include <mutex>

#include <llvm/Support/TargetSelect.h>

namespace agate {
namespace target {

void EnsureLLVMTargetsInitialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
  });
}

}  // namespace target
}  // namespace agate
