// Structural equality and hashing of IR trees.
//
// Why: passes and tests need "the same computation" rather than "the same
// nodes": common-subexpression checks, the simplifier's fixpoint test, caching
// of lowered kernels by their IR. Two trees are structurally equal when they
// have the same node kinds, dtypes, constants and shape, and their variables
// correspond: a variable bound inside the tree (For, Let, LetStmt, Allocate's
// buffer) may have any identity as long as it is used consistently; a free
// variable must be the same node on both sides. Buffers and producers that are
// not bound inside the tree compare by identity.
#ifndef AGATE_CORE_IR_EQUALITY_H_
#define AGATE_CORE_IR_EQUALITY_H_

#include <cstddef>

#include "core/ir/expr.h"
#include "core/ir/stmt.h"

namespace agate {
namespace ir {

bool StructuralEqual(const Expr& a, const Expr& b);
bool StructuralEqual(const Stmt& a, const Stmt& b);

// Equal trees hash equally. Bound variables hash by their position of binding,
// free variables and buffers by identity.
size_t StructuralHash(const Expr& e);
size_t StructuralHash(const Stmt& s);

}  // namespace ir
}  // namespace agate

#endif  // AGATE_CORE_IR_EQUALITY_H_
