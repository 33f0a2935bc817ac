// LowerThreadAllReduce: reductions across the threads of a block, as warp
// shuffles.
//
// Why: a reduction whose axis is bound to threadIdx.x (softmax's row maximum,
// a layer norm's mean) leaves each thread with a partial result in a local
// accumulator. Combining them through shared memory would take log2(n)
// barriers; within a warp, shuffles exchange registers with none.
//
// schedule_ops writes the combine step once, as a marker:
//   AttrStmt(attr::kThreadAllReduce, "threadIdx.x", n) {
//     acc[0] = combine(acc[0], shuffle_xor(acc[0], 0, 0))   (every accumulator of a tuple)
//   }
// This pass, run on bound launches (gpu_bind.h), repeats the step as a
// butterfly: shuffle_xor with lane masks w/2, ..., 1 over groups of
// w = min(n, 32) lanes, after which every lane of a group holds the group's
// result (for a commutative combiner every lane computes the same value). For
// n > 32, lane 0 of each warp writes its result to a shared buffer, every
// thread reads back the n/32 partials of its reduction and a second butterfly
// over n/32 lanes combines them; the barrier between the write and the read is
// left to InsertSyncThreads (gpu_sync.h), which inserts exactly the ones needed.
// Requirements (kIllegalSchedule naming the kernel otherwise): n is a power of
// two up to 1024 and equals the launch's threadIdx.x extent, so the threads that
// reduce together are exactly one row of the block.
#ifndef AGATE_CORE_LOWER_GPU_ALLREDUCE_H_
#define AGATE_CORE_LOWER_GPU_ALLREDUCE_H_

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

ir::Stmt LowerThreadAllReduce(const ir::Stmt& body, int warp_size = 32);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_GPU_ALLREDUCE_H_
