// NarrowIndexMath: index arithmetic in the width the target computes fastest.
//
// Why: lowering computes indices in int64 with floor division (correct for
// every sign). Two kinds of target pay for that on every access:
//  * a GPU has no 64-bit integer divider: a 64-bit division or remainder by a
//    constant is a call of dozens of instructions, and a signed floor division
//    adds a sign fix-up around it;
//  * a 32-bit CPU (Cortex-M, 32-bit Arm) does each 64-bit addition, comparison
//    and multiplication in two to four instructions and keeps every index in a
//    register pair: an int8 depthwise convolution on a Cortex-M4 spent more
//    instructions on 64-bit loop counters and padding tests than on products.
// Nearly every index is a value far below 2^31 (loop variables, thread and
// block indices, offsets into buffers of fewer than 2^31 elements). This pass
// uses the analyzer's bounds of every loop, thread and block index to
//  * turn floordiv/floormod by a positive constant of a provably non-negative
//    value into C division and remainder (the same value there),
//  * compute in int32, with one cast back to int64 where an int64 is still
//    needed, every integer subexpression that reads only index variables and
//    constants when all of its values, intermediate ones included, provably fit
//    in int32 (a data value read from memory, e.g. a Gather index, stays int64),
//  * and with NarrowOptions::loop_variables, make a serial loop's variable (and
//    a let-bound index) itself int32 when its whole range fits: its counter,
//    end test and increment are then 32-bit too. Parallel loops keep int64
//    counters (the runtime's task split is 64-bit), GPU-bound loops their tags.
// Values are unchanged, so the evaluator checks the result like any other IR.
#ifndef AGATE_CORE_LOWER_INDEX_MATH_H_
#define AGATE_CORE_LOWER_INDEX_MATH_H_

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

struct NarrowOptions {
  // Also narrow loop and let variables (on for 32-bit CPUs; off for GPU
  // kernels until a device measures it: their loops are few and short).
  bool loop_variables = false;
};

ir::Stmt NarrowIndexMath(const ir::Stmt& body, const NarrowOptions& options = NarrowOptions());

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_INDEX_MATH_H_
