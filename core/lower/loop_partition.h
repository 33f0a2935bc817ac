// LoopPartition: splits a loop where a guard inside it stops being always true.
//
// Why: a split that does not divide leaves `if (jo*8 + ji < 19)` inside the
// inner loops. The guard is true for every jo except the last, but its
// presence blocks vectorization and costs a branch per element. Partitioning
// the jo loop into [0, 2) (guard provably true, removed by the simplifier) and
// [2, 3) (guard kept) gives a fast main part and a small tail, the classic
// "main loop + epilogue" form. Only guards of the form `linear < bound` whose
// other terms range over loops nested inside (constant bounds) are used
// (`linear` checked: a floormod of the loop variable is not linear, however
// its first values look); vectorized loops are never partitioned (their tail is
// what the partition of the enclosing loop isolates), nor parallel loops (each
// part would be a fork/join of its own, the tail alone on one thread), and at
// most three partitions nest (each one duplicates the loop body).
#ifndef AGATE_CORE_LOWER_LOOP_PARTITION_H_
#define AGATE_CORE_LOWER_LOOP_PARTITION_H_

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

ir::Stmt PartitionLoops(const ir::Stmt& stmt);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_LOOP_PARTITION_H_
