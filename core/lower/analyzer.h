// Arithmetic analysis and simplification of index expressions.
//
// Why: scheduling produces index arithmetic full of redundancy
// ((io*8 + ii)*64 + j, floordiv(f, 64)*64 + floormod(f, 64), guards like
// io*8 + ii < 64). Without simplification, generated code recomputes it and
// keeps guards that are always true, which blocks vectorization. The Analyzer
// knows the range of every loop variable in scope and provides:
//  * ConstBound: a constant interval containing an integer expression;
//  * Simplify: constant folding, canonical linear forms (sum of coefficient *
//    term + constant, equal terms merged), floordiv/floormod reasoning
//    (floordiv(8*q + r, 8) = q + floordiv(r, 8), and r when 0 <= r < 8), and
//    comparisons/min/max decided by bounds;
//  * EvalSet: the symbolic interval an expression covers when some variables
//    range over intervals (bound inference uses it to find the region of a
//    producer that a loop nest reads).
// One file per concern, as TVM's arith does: the analyzer's state (analyzer.cc), constant
// bounds (const_bound.cc), the simplifier (simplify.cc, over linear_form.h), integer sets
// (int_set.cc); bound_arith.h is the saturating interval arithmetic they share.
#ifndef AGATE_CORE_LOWER_ANALYZER_H_
#define AGATE_CORE_LOWER_ANALYZER_H_

#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "core/ir/expr.h"
#include "core/ir/stmt.h"

namespace agate {
namespace lower {

using ir::Expr;
using ir::Stmt;
using ir::Var;

// [min, max] with int64 ends; kNegInf/kPosInf stand for unbounded.
struct ConstIntBound {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t min = kNegInf;
  int64_t max = kPosInf;
  bool is_point() const { return min == max && min != kNegInf && max != kPosInf; }
};

// A symbolic closed interval [min, max]; an undefined end is unbounded.
struct IntervalSet {
  Expr min;
  Expr max;
  static IntervalSet Point(const Expr& e) { return {e, e}; }
  static IntervalSet Everything() { return {}; }
  bool bounded() const { return min.defined() && max.defined(); }
};

class Analyzer {
 public:
  // Declares that var ranges over [min, min + extent) (constant bounds are taken
  // from ConstBound of the expressions). Later binds of the same var override.
  void Bind(const Var& var, const Expr& min, const Expr& extent);
  void Bind(const Var& var, const ConstIntBound& bound);
  void Unbind(const Var& var);
  // Records that `cond` holds (understood forms: expr < c, expr <= c, expr >= c,
  // expr > c with constant c), until ClearAssumptions. Used to drop guards
  // implied by guards already emitted around the same code.
  void Assume(const Expr& cond);
  void ClearAssumptions();

  ConstIntBound ConstBound(const Expr& e);
  Expr Simplify(const Expr& e);
  // Simplifies statements: loop-variable ranges enter scope as loops are entered;
  // loops of extent 1 disappear, branches decided by bounds are pruned.
  Stmt Simplify(const Stmt& s);
  // True when the bool expression holds for every value of the bound variables.
  bool CanProve(const Expr& cond);

  // The interval e covers when each var in `relax` ranges over its interval
  // (other variables are fixed). Ends are simplified with this analyzer.
  IntervalSet EvalSet(const Expr& e, const std::unordered_map<const ir::VarNode*, IntervalSet>& relax);

 private:
  std::unordered_map<const ir::VarNode*, ConstIntBound> bounds_;
  std::vector<std::pair<Expr, ConstIntBound>> expr_bounds_;
  friend class SimplifyMutator;
};

// Convenience: simplify with no knowledge of variable ranges.
Expr Simplify(const Expr& e);
Stmt Simplify(const Stmt& s);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_ANALYZER_H_
