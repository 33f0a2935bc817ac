// The kernel-level memory plan: where each intermediate buffer of one kernel lives.
//
// Why: kernels run on targets without a heap (microcontrollers) and inside
// thread pools, so every allocation must be either on the stack of the thread
// that uses it or in the one workspace block the runtime lends the kernel
// (agate_kernel_ctx::workspace). Rules (see core/ir/function.h):
//  * inside a parallel (or GPU-bound) loop: kLocal, one copy per task;
//  * otherwise kShared stays shared; buffers whose size is a constant of at
//    most max_local_bytes are kLocal; the rest go to the workspace at an offset
//    (64-byte aligned, stack-allocated: allocations whose scopes do not nest
//    reuse the same bytes), and the peak is returned as the workspace size.
// A buffer of non-constant size outside any parallel loop cannot be placed and
// is reported as kUnsupported naming the buffer.
// For a GPU kernel (`gpu`), loops bound to threadIdx count as parallel loops;
// a buffer inside the blockIdx loops but outside the threadIdx loops is
// computed once per block and lives in shared memory; outside every bound loop
// a buffer is global (the workspace), never a thread's stack.
#ifndef AGATE_CORE_LOWER_KERNEL_MEMORY_PLAN_H_
#define AGATE_CORE_LOWER_KERNEL_MEMORY_PLAN_H_

#include <cstdint>

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

struct KernelMemoryPlan {
  ir::Stmt body;
  int64_t workspace_bytes = 0;
};

KernelMemoryPlan PlanKernelMemory(const ir::Stmt& stmt, int64_t max_local_bytes = 16384, bool gpu = false);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_KERNEL_MEMORY_PLAN_H_
