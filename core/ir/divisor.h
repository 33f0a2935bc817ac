// KnownDivisor: a number that provably divides an integer expression.
//
// Why: a vector access of n elements may use one n-wide memory instruction only
// when its first element is n-aligned. Index expressions are sums of products
// of loop variables and constants (i * 64 + j.outer * 4 + j.inner), so the
// gcd of their constant factors is a cheap, sound alignment fact that both the
// GPU lowering (core/lower/gpu_vectorize.h) and the CUDA code generator use.
#ifndef AGATE_CORE_IR_DIVISOR_H_
#define AGATE_CORE_IR_DIVISOR_H_

#include <cstdint>

#include "core/ir/expr.h"

namespace agate {
namespace ir {

// The largest divisor of `e` this analysis proves (at least 1; a constant 0 gives
// 2^30): IntImm |v|, a+b and a-b the gcd, a*b the product, anything else 1.
int64_t KnownDivisor(const Expr& e);

}  // namespace ir
}  // namespace agate

#endif  // AGATE_CORE_IR_DIVISOR_H_
