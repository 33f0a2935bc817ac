// NarrowIndexMath: cheaper index arithmetic for GPU kernels.
//
// Why: lowering computes indices in int64 with floor division (correct for
// every sign), and a GPU has no 64-bit integer divider: a 64-bit division or
// remainder by a constant is a call of dozens of instructions, and a signed
// floor division adds a sign fix-up around it. Nearly every index is a
// non-negative value far below 2^31 (thread and block indices, loop variables,
// offsets into buffers of fewer than 2^31 elements). This pass, run on bound
// launches (core/ir/gpu_launch.h), uses the analyzer's bounds of every loop,
// thread and block index to
//  * turn floordiv/floormod by a positive constant of a provably non-negative
//    value into C division and remainder (the same value there), and
//  * compute in int32, with one cast back to int64, every integer subexpression
//    that reads only index variables and constants when all of its values,
//    intermediate ones included, provably fit in int32 (a data value read from
//    memory, e.g. a Gather index, stays int64).
// Values are unchanged, so the evaluator checks the result like any other IR.
#ifndef AGATE_CORE_LOWER_GPU_INDEX_MATH_H_
#define AGATE_CORE_LOWER_GPU_INDEX_MATH_H_

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

ir::Stmt NarrowIndexMath(const ir::Stmt& body);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_GPU_INDEX_MATH_H_
