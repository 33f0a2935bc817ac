// Integer sets (Analyzer::EvalSet): the symbolic interval an expression covers while some
// variables range over intervals; bound inference uses it for the region a loop nest reads.
#include "core/lower/analyzer.h"

#include <algorithm>
#include <cstdlib>

#include "core/ir/functor.h"
#include "core/ir/substitute.h"
#include "core/lower/bound_arith.h"

namespace agate {
namespace lower {

using namespace ir;     // NOLINT: this file is all IR arithmetic
using namespace arith;  // NOLINT: the analyzer's bound arithmetic and linear forms

namespace {

class SetEvaluator {
 public:
  SetEvaluator(Analyzer* an, const std::unordered_map<const VarNode*, IntervalSet>& relax) : an_(an), relax_(relax) {}

  bool Relaxed(const Expr& e) {
    return UsesVar(e, [&](const VarNode* v) { return relax_.count(v) > 0; });
  }

  IntervalSet Eval(const Expr& e) {
    if (!Relaxed(e)) return IntervalSet::Point(e);
    if (const VarNode* v = e.as<VarNode>()) return relax_.at(v);
    if (const Add* op = e.as<Add>()) {
      IntervalSet a = Eval(op->a), b = Eval(op->b);
      return {Both(a.min, b.min, [](Expr x, Expr y) { return x + y; }),
              Both(a.max, b.max, [](Expr x, Expr y) { return x + y; })};
    }
    if (const Sub* op = e.as<Sub>()) {
      IntervalSet a = Eval(op->a), b = Eval(op->b);
      return {Both(a.min, b.max, [](Expr x, Expr y) { return x - y; }),
              Both(a.max, b.min, [](Expr x, Expr y) { return x - y; })};
    }
    if (const Mul* op = e.as<Mul>()) {
      Expr scalar, other;
      if (!Relaxed(op->b)) {
        scalar = op->b;
        other = op->a;
      } else if (!Relaxed(op->a)) {
        scalar = op->a;
        other = op->b;
      } else {
        return IntervalSet::Everything();
      }
      IntervalSet s = Eval(other);
      Bound sb = an_->ConstBound(scalar);
      auto mul = [&](Expr x) { return x.defined() ? x * scalar : x; };
      if (sb.min >= 0) return {mul(s.min), mul(s.max)};
      if (sb.max <= 0) return {mul(s.max), mul(s.min)};
      return IntervalSet::Everything();
    }
    if (const FloorDiv* op = e.as<FloorDiv>()) return DivSet(op->a, op->b, true);
    if (const Div* op = e.as<Div>()) return DivSet(op->a, op->b, false);
    if (const FloorMod* op = e.as<FloorMod>()) return ModSet(op->a, op->b, true);
    if (const Mod* op = e.as<Mod>()) return ModSet(op->a, op->b, false);
    if (const Min* op = e.as<Min>()) {
      IntervalSet a = Eval(op->a), b = Eval(op->b);
      return {Both(a.min, b.min, [](Expr x, Expr y) { return ir::min(x, y); }),
              Either(a.max, b.max, [](Expr x, Expr y) { return ir::min(x, y); })};
    }
    if (const Max* op = e.as<Max>()) {
      IntervalSet a = Eval(op->a), b = Eval(op->b);
      return {Either(a.min, b.min, [](Expr x, Expr y) { return ir::max(x, y); }),
              Both(a.max, b.max, [](Expr x, Expr y) { return ir::max(x, y); })};
    }
    if (const Select* op = e.as<Select>()) {
      IntervalSet a = Eval(op->true_value), b = Eval(op->false_value);
      return {Both(a.min, b.min, [](Expr x, Expr y) { return ir::min(x, y); }),
              Both(a.max, b.max, [](Expr x, Expr y) { return ir::max(x, y); })};
    }
    if (const Cast* op = e.as<Cast>()) {
      if (op->value.dtype().is_integer() && op->dtype.is_integer() && op->dtype.bits() >= op->value.dtype().bits()) {
        IntervalSet v = Eval(op->value);
        auto c = [&](Expr x) { return x.defined() ? cast(op->dtype, x) : x; };
        return {c(v.min), c(v.max)};
      }
    }
    return IntervalSet::Everything();
  }

 private:
  template <typename F>
  static Expr Both(const Expr& a, const Expr& b, F f) {
    return a.defined() && b.defined() ? f(a, b) : Expr();
  }
  // For the end where an undefined operand does not make the result unbounded.
  template <typename F>
  static Expr Either(const Expr& a, const Expr& b, F f) {
    if (a.defined() && b.defined()) return f(a, b);
    return a.defined() ? a : b;
  }

  IntervalSet DivSet(const Expr& a, const Expr& b, bool floor) {
    int64_t c;
    if (Relaxed(b) || !is_const_int(an_->Simplify(b), &c) || c <= 0) return IntervalSet::Everything();
    IntervalSet s = Eval(a);
    if (!floor && (!s.min.defined() || an_->ConstBound(s.min).min < 0)) return IntervalSet::Everything();
    auto div = [&](Expr x) { return x.defined() ? floordiv(x, Expr(c)) : x; };
    return {div(s.min), div(s.max)};
  }

  IntervalSet ModSet(const Expr& a, const Expr& b, bool floor) {
    int64_t c;
    if (Relaxed(b) || !is_const_int(an_->Simplify(b), &c) || c <= 0) return IntervalSet::Everything();
    if (!floor) {
      IntervalSet s = Eval(a);
      if (!s.min.defined() || an_->ConstBound(s.min).min < 0) return IntervalSet::Everything();
    }
    DType t = a.dtype();
    return {make_zero(t), IntImm::make(t, c - 1)};
  }

  Analyzer* an_;
  const std::unordered_map<const VarNode*, IntervalSet>& relax_;
};

}  // namespace

IntervalSet Analyzer::EvalSet(const Expr& e, const std::unordered_map<const VarNode*, IntervalSet>& relax) {
  SetEvaluator ev(this, relax);
  IntervalSet s = ev.Eval(e);
  if (s.min.defined()) s.min = Simplify(s.min);
  if (s.max.defined()) s.max = Simplify(s.max);
  return s;
}

}  // namespace lower
}  // namespace agate
