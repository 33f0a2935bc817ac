// The LLVM backend's entry points: lowered functions in, machine code out.
//
// Why a separate file from codegen_llvm.h: generating LLVM IR is one concern;
// the fixed sequence around it (generate, verify, optimize at O3, emit an object,
// link a shared object for Linux targets, load it for the host) is what the
// module builder, the tools and the tests call, and it is the same for every
// LLVM target.
#ifndef AGATE_CORE_CODEGEN_LLVM_BUILD_LLVM_H_
#define AGATE_CORE_CODEGEN_LLVM_BUILD_LLVM_H_

#include <string>
#include <vector>

#include "core/codegen/llvm/dynamic_library.h"
#include "core/ir/function.h"
#include "core/target/target.h"
#include "agate/kernel_abi.h"

namespace agate {
namespace codegen {

// What the backend produced for a set of kernels.
struct LLVMArtifacts {
  std::string object;     // ELF relocatable object with every kernel (global symbols named as the functions)
  std::string assembly;   // the same code as assembly text (only when asked for)
  std::string llvm_ir;    // the optimized LLVM IR (only when asked for)
};

struct LLVMBuildOptions {
  bool keep_assembly = false;
  bool keep_llvm_ir = false;
};

// Generates, optimizes (O3) and emits an object for `target` (an `llvm ...` target).
LLVMArtifacts BuildLLVMObject(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target,
                              const LLVMBuildOptions& options = {});

// BuildLLVMObject linked into an ELF shared object (for targets with an OS:
// x86-64 and AArch64 Linux). Throws agate::Error(kInvalidArgument) for bare-metal
// targets, whose objects are linked into firmware by the user's toolchain.
std::string BuildLLVMSharedObject(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target);

// Kernels compiled for the host and loaded into this process: the quickest way to
// run generated code (tests, autotuning measurements).
class HostKernels {
 public:
  // `target` must run on this machine (default: the host).
  static HostKernels Build(const std::vector<ir::LoweredFunc>& funcs,
                           const target::Target& target = target::Target::Host());
  // The kernel named `name`; throws agate::Error(kNotFound) when there is none.
  agate_kernel_fn Get(const std::string& name) const;

 private:
  explicit HostKernels(DynamicLibrary library) : library_(std::move(library)) {}
  DynamicLibrary library_;
};

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_LLVM_BUILD_LLVM_H_
