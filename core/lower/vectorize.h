// Vectorize: turns loops marked vectorized into vector expressions.
//
// Why: a loop `for (j, 0, 8) vectorized { C[i*8 + j] = A[i*8 + j] + B[j] }`
// becomes one statement over 8 lanes, `C[ramp(i*8, 1, 8)] = A[ramp(i*8, 1, 8)] +
// B[ramp(0, 1, 8)]`, which every backend maps to SIMD instructions directly
// without relying on an auto-vectorizer. Lanes that index memory contiguously
// become Ramps; loop-invariant values become Broadcasts. A body that cannot be
// expressed lane-wise (a store whose address does not depend on the loop
// variable but whose value does, a condition that differs per lane, a nested
// allocation, a non-constant extent) is left as a scalar loop of kind
// kVectorized, which runs serially and which codegen may still vectorize.
#ifndef AGATE_CORE_LOWER_VECTORIZE_H_
#define AGATE_CORE_LOWER_VECTORIZE_H_

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

// max_lanes: loops with a larger constant extent stay scalar.
ir::Stmt VectorizeLoops(const ir::Stmt& stmt, int max_lanes = 64);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_VECTORIZE_H_
