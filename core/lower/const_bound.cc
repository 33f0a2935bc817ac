// Constant bounds (Analyzer::ConstBound): the int64 interval an integer expression stays in,
// given the bound variables and the assumed conditions.
#include "core/lower/analyzer.h"

#include <algorithm>
#include <cstdlib>

#include "core/ir/equality.h"
#include "core/ir/functor.h"
#include "core/lower/bound_arith.h"

namespace agate {
namespace lower {

using namespace ir;     // NOLINT: this file is all IR arithmetic
using namespace arith;  // NOLINT: the analyzer's bound arithmetic and linear forms

namespace {

class BoundEvaluator : public ExprFunctor<Bound(const Expr&)> {
 public:
  BoundEvaluator(const std::unordered_map<const VarNode*, Bound>& vars,
                 const std::vector<std::pair<Expr, Bound>>& exprs)
      : vars_(vars), exprs_(exprs) {}

  Bound VisitExpr(const Expr& e) override {
    if (!e.dtype().is_integer() && !e.dtype().is_bool()) return Bound{};
    Bound b = Intersect(ExprFunctor::VisitExpr(e), TypeBound(e.dtype()));
    for (const auto& [known, bound] : exprs_) {
      if (!e.as<IntImm>() && StructuralEqual(known, e)) b = Intersect(b, bound);
    }
    return b;
  }
  Bound VisitExprDefault_(const Expr& e) override { return TypeBound(e.dtype()); }
  Bound VisitExpr_(const IntImm* op, const Expr&) override { return {op->value, op->value}; }
  Bound VisitExpr_(const VarNode* op, const Expr& self) override {
    auto it = vars_.find(op);
    return it == vars_.end() ? TypeBound(self.dtype()) : it->second;
  }
  Bound VisitExpr_(const Add* op, const Expr&) override {
    Bound a = VisitExpr(op->a), b = VisitExpr(op->b);
    return {SatAdd(a.min, b.min), SatAdd(a.max, b.max)};
  }
  Bound VisitExpr_(const Sub* op, const Expr&) override {
    Bound a = VisitExpr(op->a), b = VisitExpr(op->b);
    return {SatAdd(a.min, b.max == kPosInf ? kNegInf : -b.max), SatAdd(a.max, b.min == kNegInf ? kPosInf : -b.min)};
  }
  Bound VisitExpr_(const Mul* op, const Expr&) override { return MulBound(VisitExpr(op->a), VisitExpr(op->b)); }
  Bound DivBound(Bound a, Bound b, bool floor) {
    if (!b.is_point() || b.min == 0) return Bound{};
    int64_t c = b.min;
    if (!floor && a.min < 0) return Bound{};  // truncation toward zero: only handled for non-negative dividends
    int64_t x = FloorDivInt(a.min, c), y = FloorDivInt(a.max, c);
    if (a.min == kNegInf) x = c > 0 ? kNegInf : kPosInf;
    if (a.max == kPosInf) y = c > 0 ? kPosInf : kNegInf;
    return {std::min(x, y), std::max(x, y)};
  }
  Bound VisitExpr_(const Div* op, const Expr&) override { return DivBound(VisitExpr(op->a), VisitExpr(op->b), false); }
  Bound VisitExpr_(const FloorDiv* op, const Expr&) override {
    return DivBound(VisitExpr(op->a), VisitExpr(op->b), true);
  }
  Bound VisitExpr_(const FloorMod* op, const Expr&) override {
    Bound a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (!b.is_point() || b.min <= 0) return Bound{};
    int64_t c = b.min;
    if (a.min >= 0 && a.max < c) return a;
    if (a.min != kNegInf && a.max != kPosInf && FloorDivInt(a.min, c) == FloorDivInt(a.max, c))
      return {FloorModInt(a.min, c), FloorModInt(a.max, c)};
    return {0, c - 1};
  }
  Bound VisitExpr_(const Mod* op, const Expr&) override {
    Bound a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (!b.is_point() || b.min <= 0) return Bound{};
    int64_t c = b.min;
    if (a.min >= 0 && a.max < c) return a;
    if (a.min >= 0) return {0, std::min(a.max, c - 1)};
    return {-(c - 1), c - 1};
  }
  Bound VisitExpr_(const Min* op, const Expr&) override {
    Bound a = VisitExpr(op->a), b = VisitExpr(op->b);
    return {std::min(a.min, b.min), std::min(a.max, b.max)};
  }
  Bound VisitExpr_(const Max* op, const Expr&) override {
    Bound a = VisitExpr(op->a), b = VisitExpr(op->b);
    return {std::max(a.min, b.min), std::max(a.max, b.max)};
  }
  Bound VisitExpr_(const Select* op, const Expr&) override {
    return Union(VisitExpr(op->true_value), VisitExpr(op->false_value));
  }
  Bound VisitExpr_(const Cast* op, const Expr& self) override {
    if (op->value.dtype().is_integer() || op->value.dtype().is_bool())
      return Intersect(VisitExpr(op->value), TypeBound(self.dtype()));
    return TypeBound(self.dtype());
  }
  Bound VisitExpr_(const Ramp* op, const Expr&) override {
    Bound base = VisitExpr(op->base), stride = VisitExpr(op->stride);
    Bound last = MulBound(stride, {op->lanes - 1, op->lanes - 1});
    return Union(base, {SatAdd(base.min, last.min), SatAdd(base.max, last.max)});
  }
  Bound VisitExpr_(const Broadcast* op, const Expr&) override { return VisitExpr(op->value); }
  Bound VisitExpr_(const Let* op, const Expr&) override {
    Bound v = VisitExpr(op->value);
    auto saved = vars_.find(op->var.get());
    bool had = saved != vars_.end();
    Bound old = had ? saved->second : Bound{};
    vars_[op->var.get()] = v;
    Bound b = VisitExpr(op->body);
    if (had) {
      vars_[op->var.get()] = old;
    } else {
      vars_.erase(op->var.get());
    }
    return b;
  }

 private:
  std::unordered_map<const VarNode*, Bound> vars_;
  const std::vector<std::pair<Expr, Bound>>& exprs_;
};

}  // namespace

ConstIntBound Analyzer::ConstBound(const Expr& e) {
  BoundEvaluator ev(bounds_, expr_bounds_);
  return ev.VisitExpr(e);
}

}  // namespace lower
}  // namespace agate
