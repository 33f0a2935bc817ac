#include "core/codegen/llvm/target_machine.h"

#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Target/TargetOptions.h>

#include "core/support/error.h"
#include "core/target/llvm_targets.h"

namespace agate {
namespace codegen {
namespace {

llvm::FloatABI::ABIType ToLLVM(target::FloatABI abi) {
  switch (abi) {
    case target::FloatABI::kHard: return llvm::FloatABI::Hard;
    case target::FloatABI::kSoft:
    case target::FloatABI::kSoftFP: return llvm::FloatABI::Soft;
    case target::FloatABI::kDefault: return llvm::FloatABI::Default;
  }
  return llvm::FloatABI::Default;
}

std::string FeatureString(const target::Target& target) {
  std::string features = target.LLVMFeatureString();
  // softfp: FPU instructions inside functions, integer registers at calls; soft: no FPU at all.
  if (target.float_abi() == target::FloatABI::kSoft) features += std::string(features.empty() ? "" : ",") + "+soft-float";
  return features;
}

}  // namespace

std::unique_ptr<llvm::TargetMachine> CreateTargetMachine(const target::Target& target) {
  AGATE_REQUIRE(target.kind() == target::TargetKind::kLLVM, kInvalidArgument)
      << "target '" << target << "' is not an LLVM target: the LLVM code generator needs 'llvm ...'";
  target::EnsureLLVMTargetsInitialized();
  std::string message;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(target.triple(), message);
  AGATE_REQUIRE(llvm_target != nullptr, kInvalidArgument)
      << "target '" << target << "': LLVM has no backend for " << target.triple() << ": " << message;

  llvm::TargetOptions options;
  options.FloatABIType = ToLLVM(target.float_abi());
  // Fusing a*b+c into one FMA is always allowed (as in C with -ffp-contract=fast);
  // reassociation and the no-NaN/no-Inf assumptions only under -fast-math.
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  if (target.fast_math()) {
    options.UnsafeFPMath = true;
    options.NoInfsFPMath = true;
    options.NoNaNsFPMath = true;
    options.NoSignedZerosFPMath = true;
  }
  options.FunctionSections = target.is_bare_metal();  // lets the firmware linker drop unused kernels
  llvm::Reloc::Model reloc = target.is_bare_metal() ? llvm::Reloc::Static : llvm::Reloc::PIC_;
  std::unique_ptr<llvm::TargetMachine> machine(llvm_target->createTargetMachine(
      target.triple(), target.cpu(), FeatureString(target), options, reloc, llvm::None, llvm::CodeGenOpt::Aggressive));
  AGATE_CHECK(machine != nullptr) << "LLVM could not create a TargetMachine for " << target;
  return machine;
}

}  // namespace codegen
}  // namespace agate
