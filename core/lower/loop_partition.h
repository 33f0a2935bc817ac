// LoopPartition: splits a loop where a guard inside it stops (or starts) being always true.
//
// Why: a split that does not divide leaves `if (jo*8 + ji < 19)` inside the
// inner loops. The guard is true for every jo except the last, but its
// presence blocks vectorization and costs a branch per element. Partitioning
// the jo loop into [0, 2) (guard provably true, removed by the simplifier) and
// [2, 3) (guard kept) gives a fast main part and a small tail, the classic
// "main loop + epilogue" form. A convolution or pool that reads its input in
// place (padding by bounds: `select(0 <= oh*s - p + kh && oh*s - p + kh < H,
// x[clamped row], pad)`, core/ops/window.h PaddedRead) has the same shape of
// guard on both sides: the output rows and columns near the border read
// padding, the interior never does. There the loop is cut in three, a head
// (the first rows, guard kept), the interior (every bounds test and clamp
// folded away) and a tail, as Halide's PartitionLoops does for its clamped
// boundary conditions.
//
// Guards used: the conditions of IfThenElse and Select, split at `&&`, each a
// comparison of scalar integers linear in the loop variable whose other terms
// range over loops nested inside (constant bounds); `linear` is checked (a
// floormod of the loop variable is not linear, however its first values
// look). Vectorized loops are never partitioned (their tail is what the
// partition of the enclosing loop isolates), nor parallel loops (each part
// would be a fork/join of its own, the tail alone on one thread), and at most
// three partitions nest (each one duplicates the loop body).
#ifndef AGATE_CORE_LOWER_LOOP_PARTITION_H_
#define AGATE_CORE_LOWER_LOOP_PARTITION_H_

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

ir::Stmt PartitionLoops(const ir::Stmt& stmt);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_LOOP_PARTITION_H_
