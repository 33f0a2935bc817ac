// The loop-IR interpreter (core/loop_eval): runs one lowered kernel. Not to be confused with
// core/graph_eval, which runs a whole graph with reference kernels.
//
// Why: every schedule must compute the same numbers as the plain algorithm.
// Tests use this interpreter as the oracle: lower a schedule, run the
// LoweredFunc here on concrete buffers, compare with a straightforward C++ loop.
// It follows the codegen contract of core/ir/function.h exactly (parameters by
// position, workspace offsets, all loop kinds run serially, vector lanes one by
// one) and checks what generated code cannot: every load and store is bounds-
// checked against its buffer (kOutOfRange naming buffer and index), fresh
// allocations are filled with NaN-like bytes so reads of never-written memory
// show up in results, and division by zero is reported. Slow by design.
//
// GPU kernels (core/ir/gpu_launch.h) run with CUDA's semantics, so the CUDA
// backend is checked on machines without a GPU: launches run in order; the
// blocks of a launch run one after another as the loops they are; the threads
// of a block each have their own variables and local buffers and share the
// block's shared buffers; code with a __syncthreads or a warp shuffle runs in
// lockstep (every thread finishes one phase before any starts the next, a
// shuffle reads the other lane's value at that point). What would be undefined
// on a GPU is an error (kInternal, naming kernel, block and thread): a barrier
// reached by only part of a block, a shuffle in part of a warp, and every data
// race on shared memory or on global memory the launch writes (race_detector.h).
// Thread-bound loops outside a launch (a schedule lowered without the GPU
// passes) run as ordinary nested loops.
#ifndef AGATE_CORE_LOOP_EVAL_EVALUATOR_H_
#define AGATE_CORE_LOOP_EVAL_EVALUATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/ir/function.h"

namespace agate {
namespace loop_eval {

// One kernel argument: memory of at least `bytes` bytes.
struct ArgBuffer {
  void* data;
  size_t bytes;
};

// Runs `func` with args[i] bound to func.params[i]. `shape_vars` gives values to
// free symbolic shape variables by name. Returns the kernel's status: 0, or -1
// when an AssertStmt failed. Throws agate::Error for out-of-bounds accesses
// (kOutOfRange), argument mismatches (kInvalidArgument) and unbound variables.
int32_t Run(const ir::LoweredFunc& func, const std::vector<ArgBuffer>& args,
            const std::map<std::string, int64_t>& shape_vars = {});

// Convenience for float32 kernels: args[i] is the data of params[i].
int32_t RunFloat(const ir::LoweredFunc& func, const std::vector<std::vector<float>*>& args,
                 const std::map<std::string, int64_t>& shape_vars = {});

}  // namespace loop_eval
}  // namespace agate

#endif  // AGATE_CORE_LOOP_EVAL_EVALUATOR_H_
