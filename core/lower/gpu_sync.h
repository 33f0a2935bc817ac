// InsertSyncThreads: __syncthreads where threads of a block exchange data
// through memory, and only there.
//
// Why: a barrier is needed between a write of a shared (or block-visible
// global) buffer and a later read or write of the same element by another
// thread of the block; one too few gives wrong results sometimes, one too many
// stalls every warp. Schedules never write barriers: this pass derives them
// from the accesses of a bound launch (core/ir/gpu_launch.h).
//
// The analysis walks the thread code in program order and keeps the accesses
// since the last barrier. Before a statement whose first accesses conflict with
// those, it inserts a barrier; in a loop, accesses at the end of one iteration
// that conflict with the start of the next put a barrier at the top of the body
// (the shared-memory tile loop of a GEMM gets "sync; fetch; sync; compute").
// Two accesses conflict when they touch the same buffer, one reads and the
// other writes, and they may come from different threads (two writes of one
// element by two threads are a race no barrier repairs; the evaluator reports
// them). They provably come from the same
// thread when both use the same index, and that index, with lets substituted,
// is affine in the thread indices with coefficients that make it injective over
// the block (each thread owns its elements: out[ty * 64 + tx] = ...; ... =
// out[ty * 64 + tx] needs no barrier) and depends on no loop variable of the
// loop whose iterations are compared.
//
// A barrier may only stand where every thread of the block arrives: not inside
// a branch or loop whose condition or bounds depend on the thread. A conflict
// that would need one there is an error (kIllegalSchedule) naming the buffer;
// the evaluator (core/loop_eval) checks the result for races and divergent barriers.
#ifndef AGATE_CORE_LOWER_GPU_SYNC_H_
#define AGATE_CORE_LOWER_GPU_SYNC_H_

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

ir::Stmt InsertSyncThreads(const ir::Stmt& body);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_GPU_SYNC_H_
