// Unroll: replicates the bodies of loops marked unrolled.
//
// Why: small inner loops (register tiles of a matmul, a 3x3 convolution window)
// run faster as straight-line code: no loop counter, and each copy's indices
// become constants that the simplifier folds into the addresses. A loop whose
// extent is not a constant, or is larger than max_extent, stays a loop of kind
// kUnrolled (codegen may pass it to LLVM's unroller as a hint).
#ifndef AGATE_CORE_LOWER_UNROLL_H_
#define AGATE_CORE_LOWER_UNROLL_H_

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

ir::Stmt UnrollLoops(const ir::Stmt& stmt, int max_extent = 64);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_UNROLL_H_
