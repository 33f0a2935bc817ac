// VerifyGpuBinding: a kernel for a GPU must have all its work in bound loops.
//
// Why: on a GPU, a loop left serial at kernel level runs on one thread: a
// 100 000-element elementwise kernel would be correct and a thousand times too
// slow, and a schedule meant for a CPU (parallel, vectorized outer loops) would
// silently become such a kernel. So before BindThreads (gpu_bind.h) turns bound
// loops into launches, this verifier rejects, naming the loop and the stage
// (the tensor the loop writes) and saying what to do:
//  * a loop at kernel level (outside every bound loop) or around bound loops;
//  * a loop marked parallel (a CPU thread-pool loop);
//  * a bound loop whose extent is not a compile-time constant, a blockIdx loop
//    inside a threadIdx loop or inside another loop of its own axis;
//  * a shared buffer outside the block loops, and two separate nests bound to
//    blockIdx inside one statement that is not a sequence at kernel level
//    (they could not be separate launches).
// Statements without loops (a scalar output) are allowed: they run as a
// launch of one thread. Failures are kIllegalSchedule: the schedule is wrong
// for the target.
#ifndef AGATE_CORE_LOWER_GPU_VERIFY_H_
#define AGATE_CORE_LOWER_GPU_VERIFY_H_

#include <string>

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

void VerifyGpuBinding(const ir::Stmt& body, const std::string& kernel_name);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_GPU_VERIFY_H_
