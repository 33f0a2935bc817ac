// UniqueDefs: makes every variable and buffer bound exactly once.
//
// Why: loop-nest generation reuses a stage's loop variables in the init and
// update nests of a reduction, and unrolling copies loop bodies. Codegen and the
// evaluator are simpler and safer when each For/Let/LetStmt variable and each
// Allocate buffer has a single binding site, so this pass renames the repeats.
#ifndef AGATE_CORE_LOWER_UNIQUE_DEFS_H_
#define AGATE_CORE_LOWER_UNIQUE_DEFS_H_

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

ir::Stmt UniqueDefs(const ir::Stmt& stmt);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_UNIQUE_DEFS_H_
