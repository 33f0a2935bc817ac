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
