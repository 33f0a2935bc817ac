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
//   memory_plan     stack vs workspace, workspace offsets             memory_plan.h
//   unique_defs     one binding per variable/buffer                   unique_defs.h
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
