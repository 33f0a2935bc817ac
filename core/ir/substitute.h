// Variable substitution and small queries on IR trees.
//
// Why: nearly every TE and lowering step replaces variables by expressions
// (an axis by outer*factor + inner, a compute's axes by a consumer's indices)
// or asks which variables an expression uses.
#ifndef AGATE_CORE_IR_SUBSTITUTE_H_
#define AGATE_CORE_IR_SUBSTITUTE_H_

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "core/ir/expr.h"
#include "core/ir/stmt.h"

namespace agate {
namespace ir {

using VarMap = std::unordered_map<const VarNode*, Expr>;

// Replaces free occurrences of the mapped variables.
Expr Substitute(const Expr& expr, const VarMap& map);
Stmt Substitute(const Stmt& stmt, const VarMap& map);

// True when `expr` uses a variable for which pred returns true.
bool UsesVar(const Expr& expr, const std::function<bool(const VarNode*)>& pred);
bool UsesVar(const Stmt& stmt, const std::function<bool(const VarNode*)>& pred);
// Every variable `expr` uses.
std::unordered_set<const VarNode*> CollectVars(const Expr& expr);

}  // namespace ir
}  // namespace agate

#endif  // AGATE_CORE_IR_SUBSTITUTE_H_
