// Lower: the one entry point from a scheduled tensor expression to loop IR.
//
// Why: the rest of the compiler (operator strategies, the auto-scheduler, the
// CLI's --dump-ir) needs a single call that runs the whole pass pipeline in the
// right order with verification between passes:
//
//   schedule_ops    bound inference + loop nests (Realize/Provide)   schedule_ops.h
//   simplify        arithmetic simplification, guard removal          analyzer.h
//   storage_flatten tensors -> buffers (Allocate/Store/Load)          storage_flatten.h
//   loop_partition  main loop + tail where a guard stops holding      loop_partition.h
//   vectorize       vectorized loops -> Ramp/Broadcast                vectorize.h
//   unroll          unrolled loops -> straight-line code              unroll.h
//   kernel_memory_plan  stack vs workspace, workspace offsets         kernel_memory_plan.h
//   unique_defs     one binding per variable/buffer                   unique_defs.h
// and for GPU targets (LowerOptions::gpu):
//   gpu_vectorize   wide accesses only where provably aligned         gpu_vectorize.h  (before vectorize)
//   gpu_verify      every kernel-level loop bound                     gpu_verify.h
//   gpu_bind        bound loops -> launches, shared memory per block  gpu_bind.h
//   gpu_allreduce   cross-thread reductions -> warp shuffles          gpu_allreduce.h
//   gpu_sync        __syncthreads where threads exchange data         gpu_sync.h
//   index_math      int32 index arithmetic, C division where exact    index_math.h
//   launch checks   threads, shared memory against the architecture   gpu_launch_check.h
// and for 32-bit CPUs (LowerOptions::narrow_index_math):
//   index_math      int32 loop counters and index arithmetic          index_math.h
//
// What the returned LoweredFunc guarantees to code generators (checked by the
// verifier after the last pass):
//  * only loop-IR nodes: no Provide/Realize/TensorRead/Reduce;
//  * every For/Let/LetStmt variable and every Allocate is bound exactly once,
//    and used only inside its binding; buffers are identified by their data Var
//    (a Load/Store may name a view Buffer, e.g. from tensorize, sharing the data
//    Var of a parameter or an Allocate);
//  * index arithmetic is int64 (DType::Index()); loop min/extent are int64,
//    except where index_math (GPU targets, narrow_index_math) made a
//    subexpression, or a serial loop or let variable, int32 because every
//    value it takes provably fits;
//  * vector code appears only as Ramp/Broadcast/vector Loads/Stores with
//    1 < lanes <= max_vector_lanes; Load/Store predicates are lane masks
//    (vector: tail lanes of a vectorized loop; scalar or vector on loads under
//    a select arm, e.g. padding) and a masked-off load must not touch memory;
//  * Allocate sizes are compile-time constants, scopes as in core/ir/function.h;
//  * free variables are only symbolic shape variables that appear in the
//    parameters' shapes (none when every shape is static or bound);
//  * LetStmt appears for tuple reductions (argmax) and vector lets;
//    AttrStmt for pragmas and tensorize (both may be ignored by codegen).
//
//   auto s = te::create_schedule({C});
//   ...
//   ir::LoweredFunc f = lower::Lower(s, {A, B, C}, "matmul");
#ifndef AGATE_CORE_LOWER_LOWER_H_
#define AGATE_CORE_LOWER_LOWER_H_

#include <functional>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/lower/gpu_launch_check.h"
#include "core/schedule/schedule.h"
#include "core/te/tensor.h"

namespace agate {
namespace lower {

struct LowerOptions {
  bool simplify = true;
  bool verify = true;          // run the verifier after every pass
  bool partition_loops = true; // split loops around tail guards so the main part vectorizes
  int max_vector_lanes = 64;   // vectorized loops with larger extents stay scalar loops
  int max_unroll_extent = 64;  // unrolled loops with larger extents stay loops
  int64_t max_local_bytes = 16384;  // larger buffers outside parallel loops go to the workspace
  // Values for symbolic shape variables (a variable extent stays a variable
  // until bound here); unbound ones remain free variables of the kernel.
  std::vector<std::pair<ir::Var, ir::Expr>> shape_bindings;
  // GPU targets: after the passes above, loops bound to blockIdx/threadIdx become
  // launches (core/ir/gpu_launch.h) with barriers and warp shuffles derived from
  // the code: gpu_verify, gpu_bind, gpu_allreduce, gpu_sync, then the launch
  // checks against `gpu_limits`. Vectorized loops become wide accesses only where
  // alignment is provable (gpu_vectorize, before vectorize).
  bool gpu = false;
  GpuLimits gpu_limits;
  // CPU targets whose pointers are 32 bits (Cortex-M, 32-bit Arm): serial loop
  // counters and index arithmetic in int32 where every value provably fits
  // (index_math.h), instead of register pairs.
  bool narrow_index_math = false;
  // Called after every pass with the pass name and the printed IR (--dump-ir).
  std::function<void(const std::string& pass, const std::string& ir_text)> dump;
};

// Lowers `sch` into a kernel whose parameters are `args` in order (every input
// placeholder the outputs read and every output of the schedule must be listed).
// Throws kIllegalSchedule for illegal schedules, kInvalidArgument for bad arguments.
ir::LoweredFunc Lower(const te::Schedule& sch, const std::vector<te::Tensor>& args, const std::string& name,
                      const LowerOptions& options = LowerOptions());

// Lower, returning every pass's printed output in order as (pass, text).
std::vector<std::pair<std::string, std::string>> LowerWithDump(const te::Schedule& sch,
                                                                const std::vector<te::Tensor>& args,
                                                                const std::string& name, ir::LoweredFunc* out = nullptr);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_LOWER_H_
