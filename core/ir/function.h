// LoweredFunc: the unit of work that lowering hands to code generation.
//
// Why a tiny struct: every backend (core/codegen) and the reference evaluator
// (core/loop_eval) consume exactly this, so it states the whole contract between
// "what to compute" and "how a kernel is called".
//
// The contract (c_api/include/agate/kernel_abi.h):
//  * The generated kernel is `int32_t name(void* const* args, const agate_kernel_ctx* ctx)`.
//    params[i]->data is bound to args[i] (a buffer of params[i]->dtype with
//    params[i]->shape, compact row-major unless strides are given, aligned to at
//    least params[i]->alignment bytes).
//  * Return 0 on success; a failed AssertStmt returns a non-zero status.
//  * For(kind = kParallel) stays a loop in the IR. Codegen outlines its body into an
//    agate_parallel_task_fn and calls ctx->parallel_for(ctx->pool, task, closure,
//    num_tasks); task t runs a contiguous chunk of the iterations (num_tasks is at
//    most the loop extent, typically min(extent, ctx->num_threads)). Every variable
//    the body uses from outside (buffer data vars, outer loop vars, lets) is passed
//    through the closure. Parallel loops may nest only when the inner one is
//    executed serially inside a task (codegen may treat a nested parallel For as serial).
//    Allocations inside a parallel body are scope kLocal (per task).
//  * Allocate with scope kWorkspace lives at ctx->workspace + workspace_offset;
//    workspace_bytes is the total the kernel needs (0 for none). The runtime
//    provides at least that many bytes, 64-byte aligned.
//  * For(kind = kVectorized / kUnrolled) is a hint that lowering could not act on;
//    such loops are executed as serial loops.
#ifndef AGATE_CORE_IR_FUNCTION_H_
#define AGATE_CORE_IR_FUNCTION_H_

#include <string>
#include <vector>

#include "core/ir/buffer.h"
#include "core/ir/stmt.h"

namespace agate {
namespace ir {

struct LoweredFunc {
  std::string name;
  std::vector<Buffer> params;  // kernel args[i], inputs first then outputs, in the order Lower() was given
  Stmt body;
  int64_t workspace_bytes = 0;
};

}  // namespace ir
}  // namespace agate

#endif  // AGATE_CORE_IR_FUNCTION_H_
