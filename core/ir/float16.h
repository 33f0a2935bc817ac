// IEEE binary16 (half) and bfloat16 <-> float32 conversions, rounding to nearest even.
//
// Why here: the element types are core/ir's (DType), and every layer that reads or writes
// 16-bit floats on the host must round exactly alike: graph tensors and constant folding
// (core/graph), the loop-IR interpreter (core/loop_eval) and constants the code generators
// embed. One implementation, so that the oracles and the compiled code cannot drift apart.
#ifndef AGATE_CORE_IR_FLOAT16_H_
#define AGATE_CORE_IR_FLOAT16_H_

#include <cstdint>

namespace agate {
namespace ir {

// Exact: every half is a float. NaN payloads are kept (shifted into the float's mantissa).
float HalfToFloat(uint16_t bits);
// Rounds to nearest even; overflow gives infinity, NaN gives the quiet NaN 0x7e00 (sign kept).
uint16_t FloatToHalf(float value);
// Exact: a bfloat16 is the high half of a float.
float BFloat16ToFloat(uint16_t bits);
// Rounds to nearest even; NaN stays a (quiet) NaN.
uint16_t FloatToBFloat16(float value);

}  // namespace ir
}  // namespace agate

#endif  // AGATE_CORE_IR_FLOAT16_H_
