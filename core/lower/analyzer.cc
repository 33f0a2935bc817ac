// The analyzer's knowledge: variable ranges (Bind) and assumed conditions (Assume). Its
// queries live by concern: const_bound.cc, simplify.cc, int_set.cc (see analyzer.h).
#include "core/lower/analyzer.h"

#include <algorithm>
#include <cstdlib>

#include "core/lower/bound_arith.h"

namespace agate {
namespace lower {

using namespace ir;     // NOLINT: this file is all IR arithmetic
using namespace arith;  // NOLINT: the analyzer's bound arithmetic and linear forms

void Analyzer::Assume(const Expr& cond) {
  Expr c = Simplify(cond);
  auto record = [&](const Expr& x, Bound b) { expr_bounds_.emplace_back(x, b); };
  int64_t v;
  if (const LT* lt = c.as<LT>()) {
    if (is_const_int(lt->b, &v) && v != ConstIntBound::kNegInf) record(lt->a, {ConstIntBound::kNegInf, v - 1});
  } else if (const LE* le = c.as<LE>()) {
    if (is_const_int(le->b, &v)) record(le->a, {ConstIntBound::kNegInf, v});
  } else if (const GE* ge = c.as<GE>()) {
    if (is_const_int(ge->b, &v)) record(ge->a, {v, ConstIntBound::kPosInf});
  } else if (const GT* gt = c.as<GT>()) {
    if (is_const_int(gt->b, &v) && v != ConstIntBound::kPosInf) record(gt->a, {v + 1, ConstIntBound::kPosInf});
  }
}

void Analyzer::ClearAssumptions() { expr_bounds_.clear(); }

void Analyzer::Bind(const Var& var, const Expr& min, const Expr& extent) {
  Bound lo = ConstBound(min);
  Bound hi = ConstBound(Simplify(min + extent - 1));
  Bind(var, Bound{lo.min, hi.max});
}

void Analyzer::Bind(const Var& var, const ConstIntBound& bound) { bounds_[var.get()] = bound; }

void Analyzer::Unbind(const Var& var) { bounds_.erase(var.get()); }

}  // namespace lower
}  // namespace agate
