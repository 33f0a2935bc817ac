// GPU launches: how a lowered function for a GPU target is laid out, and the
// one reader of that layout.
//
// Why a fixed form: the CUDA code generator, the evaluator's GPU semantics
// (core/loop_eval) and the compiler driver (launch geometry in the module) all need
// the same facts about a kernel: which __global__ functions it becomes, their
// grid, block and shared memory, and where each thread's code starts. The GPU
// lowering passes (core/lower/gpu_bind.h) produce exactly this form, and every
// consumer reads it through CollectGpuLaunches instead of re-deriving it:
//
//   body     := Seq(body...) | Allocate[kWorkspace](body) | LetStmt(body)
//             | AttrStmt(pragma)(body) | launch
//   launch   := AttrStmt(attr::kGpuLaunch, name, dynamic_shared_bytes)(blocks)
//   blocks   := For[kThreadBinding "blockIdx.z|y|x", 0, grid](blocks) | shared
//   shared   := Allocate[kShared, byte offset in dynamic shared memory](shared) | threads
//   threads  := For[kThreadBinding "threadIdx.z|y|x", 0, block](threads) | code
//
// Launches run one after the other (the runtime launches them in order on one
// stream), so a later launch sees everything an earlier one wrote, including
// workspace buffers. Inside `code` there are no thread-bound loops: the
// canonical loop variables are the block and thread indices, and
// __syncthreads/shuffles appear as the GPU intrinsics of core/ir/expr.h.
// Each tag appears at most once per launch; a missing tag has extent 1.
#ifndef AGATE_CORE_IR_GPU_LAUNCH_H_
#define AGATE_CORE_IR_GPU_LAUNCH_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/stmt.h"

namespace agate {
namespace ir {

// "blockIdx.x" -> (true, 0), "threadIdx.z" -> (false, 2). False when `tag` is neither.
bool ParseThreadTag(const std::string& tag, bool* is_block, int* dim);

// Three undefined variables (Var's default constructor makes a fresh one).
inline std::array<Var, 3> NoVars() {
  Var none{std::shared_ptr<const VarNode>()};
  return {none, none, none};
}

struct GpuLaunch {
  std::string name;                      // the __global__ function's name
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  int64_t shared_bytes = 0;              // dynamic shared memory per block
  // The canonical loop variables; undefined (a null Var) where the axis has no loop.
  std::array<Var, 3> block_vars = NoVars();
  std::array<Var, 3> thread_vars = NoVars();
  std::vector<Stmt> shared;              // the launch's kShared Allocates, outermost first
  Stmt attr;                             // the AttrStmt(kGpuLaunch)
  Stmt code;                             // what each thread runs (inside the thread loops)
  int64_t threads_per_block() const { return block[0] * block[1] * block[2]; }
};

// Every launch of `body`, in execution order. Throws kInternal when a launch
// does not have the form above (a bug in the pass that built it).
std::vector<GpuLaunch> CollectGpuLaunches(const Stmt& body);

// True when `body` contains a launch (the function was lowered for a GPU).
bool HasGpuLaunches(const Stmt& body);

}  // namespace ir
}  // namespace agate

#endif  // AGATE_CORE_IR_GPU_LAUNCH_H_
