// CodeGenLLVM: lowered loop IR (ir::LoweredFunc) to LLVM IR, one kernel per function.
//
// Why this pass exists: it is where agate's loop IR becomes machine code for
// every LLVM target (x86-64 host, AArch64, Cortex-M). It keeps the decisions the
// schedule made visible to LLVM instead of hoping LLVM rediscovers them:
//  * Ramp/Broadcast and vector Load/Store become LLVM vector values and (aligned,
//    where the index provably is) vector memory operations; strided or
//    data-dependent indices become gathers/scatters, predicates masked operations.
//  * Every buffer gets its own alias scope, so loads and stores of different
//    buffers never alias, also inside outlined parallel tasks where argument
//    noalias would be lost.
//  * Math calls (exp, tanh, sigmoid, erf...) are inline polynomial expansions
//    that vectorize (math_functions.h), not per-lane libm calls.
//  * For(kParallel) is outlined into an agate_parallel_task_fn and launched with
//    ctx->parallel_for; each task runs one even, contiguous chunk of the range.
//  * Allocate: kLocal/kShared on the stack (entry-block alloca), kWorkspace at
//    ctx->workspace + offset.
// Each kernel is `int32_t name(void* const* args, const agate_kernel_ctx* ctx)`
// (c_api/include/agate/kernel_abi.h) and returns 0, or -1 - i when its i-th
// AssertStmt (in program order) fails.
#ifndef AGATE_CORE_CODEGEN_LLVM_CODEGEN_LLVM_H_
#define AGATE_CORE_CODEGEN_LLVM_CODEGEN_LLVM_H_

#include <memory>
#include <vector>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "core/ir/function.h"
#include "core/target/target.h"

namespace agate {
namespace codegen {

// The status a kernel returns when its first AssertStmt (in program order) fails; the i-th
// returns kKernelAssertFailed - i, so the runtime can name the check that failed (a module
// records each kernel's check messages in that order: module.fbs Kernel.check_messages).
constexpr int32_t kKernelAssertFailed = -1;

// Translates `funcs` into one LLVM module for `target` (triple and data layout
// set, not yet optimized). Throws agate::Error: kUnsupported for IR the backend
// cannot generate (naming the node), kInvalidArgument for a non-LLVM target,
// kResourceExhausted for a stack allocation too large for the target, kInternal
// for IR that breaks the LoweredFunc contract (TE-level nodes, unbound variables).
std::unique_ptr<llvm::Module> GenerateLLVM(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target,
                                           llvm::LLVMContext* context);

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_LLVM_CODEGEN_LLVM_H_
