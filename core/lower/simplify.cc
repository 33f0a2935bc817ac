// The simplifier (Analyzer::Simplify): constant folding, canonical linear forms, floordiv/floormod
// reasoning, and comparisons, min/max and branches decided by bounds.
#include "core/lower/analyzer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include "core/ir/equality.h"
#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/ir/substitute.h"
#include "core/lower/bound_arith.h"
#include "core/lower/linear_form.h"
#include "core/support/error.h"

namespace agate {
namespace lower {

using namespace ir;     // NOLINT: this file is all IR arithmetic
using namespace arith;  // NOLINT: the analyzer's bound arithmetic and linear forms

namespace {

bool IsIndexLike(DType t) { return t.is_scalar() && t.is_integer(); }

bool IsNoOp(const Stmt& s) {
  const Seq* seq = s.as<Seq>();
  return seq && seq->stmts.empty();
}

Stmt NoOp() { return Stmt(std::make_shared<Seq>(std::vector<Stmt>{})); }

}  // namespace

class SimplifyMutator : public IRMutator {
 public:
  explicit SimplifyMutator(Analyzer* analyzer) : an_(analyzer) {}

  Bound BoundOf(const Expr& e) { return an_->ConstBound(e); }

  Bound LinearBound(const Linear& l) {
    Bound b{l.constant, l.constant};
    for (const Term& t : l.terms) {
      Bound tb = MulBound(BoundOf(t.atom), {t.coeff, t.coeff});
      b = {SatAdd(b.min, tb.min), SatAdd(b.max, tb.max)};
    }
    return b;
  }

  Expr Canonical(Linear l) {
    MergeDivModPairs(&l);
    l.DropZeros();
    return FromLinear(l);
  }

  // ---- arithmetic
  Expr VisitExpr_(const Add* op, const Expr& self) override { return AddSub(op->a, op->b, 1, self); }
  Expr VisitExpr_(const Sub* op, const Expr& self) override { return AddSub(op->a, op->b, -1, self); }

  Expr AddSub(const Expr& a0, const Expr& b0, int sign, const Expr& self) {
    Expr a = VisitExpr(a0), b = VisitExpr(b0);
    if (sign > 0) {
      Expr into = AccumulateIntoDot(a, b);
      if (!into.defined()) into = AccumulateIntoDot(b, a);
      if (into.defined()) return into;
    }
    if (IsIndexLike(self.dtype())) {
      Linear l = ToLinear(a);
      l.Append(ToLinear(b), sign);
      l.DropZeros();
      return Canonical(l);
    }
    if (self.dtype().is_float() && self.dtype().is_scalar()) {
      const FloatImm *fa = a.as<FloatImm>(), *fb = b.as<FloatImm>();
      if (fa && fb) return FloatConst(self.dtype(), sign > 0 ? fa->value + fb->value : fa->value - fb->value);
      if (fb && fb->value == 0) return a;
      if (fa && fa->value == 0 && sign > 0) return b;
    }
    if (const Broadcast* ba = a.as<Broadcast>()) {
      if (const Broadcast* bb = b.as<Broadcast>()) {
        return Broadcast::make(VisitExpr(sign > 0 ? ba->value + bb->value : ba->value - bb->value), ba->lanes);
      }
    }
    if (a.same_as(a0) && b.same_as(b0)) return self;
    return sign > 0 ? Add::make(a, b) : Sub::make(a, b);
  }

  // acc + dot(0, x, y) is dot(acc, x, y) (the dot-product intrinsics wrap modulo 2^32 like the
  // addition): a reduction whose body is one dot product, as the Cortex-M int8 conv's, then
  // accumulates in the instruction itself (SMLAD's third operand, vpdpbusd's destination).
  static Expr AccumulateIntoDot(const Expr& acc, const Expr& dot) {
    const Call* call = dot.as<Call>();
    if (call == nullptr || DotGroup(call->op) == 0 || !is_zero(call->args[0]) || acc.dtype() != dot.dtype()) {
      return Expr();
    }
    return Call::make(dot.dtype(), call->op, {acc, call->args[1], call->args[2]});
  }

  Expr FloatConst(DType t, double v) {
    if (t.bits() == 32) v = static_cast<float>(v);
    return FloatImm::make(t, v);
  }

  Expr VisitExpr_(const Mul* op, const Expr& self) override {
    Expr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (IsIndexLike(self.dtype())) {
      int64_t c;
      if (is_const_int(b, &c) || is_const_int(a, &c)) {
        Linear l = ToLinear(is_const_int(b) ? a : b);
        l.Scale(c);
        l.DropZeros();
        return Canonical(l);
      }
      return Mul::make(a, b);
    }
    if (self.dtype().is_float() && self.dtype().is_scalar()) {
      const FloatImm *fa = a.as<FloatImm>(), *fb = b.as<FloatImm>();
      if (fa && fb) return FloatConst(self.dtype(), fa->value * fb->value);
      if (fb && fb->value == 1) return a;
      if (fa && fa->value == 1) return b;
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return Mul::make(a, b);
  }

  Expr VisitExpr_(const Div* op, const Expr& self) override {
    Expr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (IsIndexLike(self.dtype())) {
      int64_t c;
      if (is_const_int(b, &c) && c > 0 && BoundOf(a).min >= 0) return DivMod(a, c, /*is_div=*/true);
      int64_t x;
      if (is_const_int(a, &x) && is_const_int(b, &c) && c != 0) return IntImm::make(self.dtype(), x / c);
      if (is_const_int(b, &c) && c == 1) return a;
    } else if (self.dtype().is_float() && self.dtype().is_scalar()) {
      const FloatImm *fa = a.as<FloatImm>(), *fb = b.as<FloatImm>();
      if (fa && fb && fb->value != 0) return FloatConst(self.dtype(), fa->value / fb->value);
      if (fb && fb->value == 1) return a;
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return Div::make(a, b);
  }

  Expr VisitExpr_(const Mod* op, const Expr& self) override {
    Expr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (IsIndexLike(self.dtype())) {
      int64_t c, x;
      if (is_const_int(a, &x) && is_const_int(b, &c) && c != 0) return IntImm::make(self.dtype(), x % c);
      if (is_const_int(b, &c) && c > 0 && BoundOf(a).min >= 0) return DivMod(a, c, /*is_div=*/false);
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return Mod::make(a, b);
  }

  Expr VisitExpr_(const FloorDiv* op, const Expr& self) override {
    Expr a = VisitExpr(op->a), b = VisitExpr(op->b);
    int64_t c, x;
    if (IsIndexLike(self.dtype()) && is_const_int(b, &c)) {
      if (is_const_int(a, &x) && c != 0) return IntImm::make(self.dtype(), FloorDivInt(x, c));
      if (c > 0) return DivMod(a, c, true);
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return FloorDiv::make(a, b);
  }

  Expr VisitExpr_(const FloorMod* op, const Expr& self) override {
    Expr a = VisitExpr(op->a), b = VisitExpr(op->b);
    int64_t c, x;
    if (IsIndexLike(self.dtype()) && is_const_int(b, &c)) {
      if (is_const_int(a, &x) && c != 0) return IntImm::make(self.dtype(), FloorModInt(x, c));
      if (c > 0) return DivMod(a, c, false);
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return FloorMod::make(a, b);
  }

  // floordiv / floormod of a simplified `a` by constant c > 0 (a may be any sign).
  Expr DivMod(const Expr& a, int64_t c, bool is_div) {
    DType t = a.dtype();
    if (c == 1) return is_div ? a : IntImm::make(t, 0);
    Linear l = ToLinear(a);
    // Nested division: floordiv(floordiv(x, c1), c) = floordiv(x, c1*c).
    if (is_div && l.terms.size() == 1 && l.constant == 0 && l.terms[0].coeff == 1) {
      if (const FloorDiv* inner = l.terms[0].atom.as<FloorDiv>()) {
        int64_t c1;
        if (is_const_int(inner->b, &c1) && c1 > 0) return DivMod(inner->a, c1 * c, true);
      }
    }
    Linear q, r;
    q.dtype = r.dtype = t;
    for (const Term& term : l.terms) {
      if (term.coeff % c == 0) {
        q.AddTerm(term.atom, term.coeff / c);
      } else {
        r.AddTerm(term.atom, term.coeff);
      }
    }
    q.constant = FloorDivInt(l.constant, c);
    r.constant = FloorModInt(l.constant, c);
    Bound rb = LinearBound(r);
    if (rb.min != kNegInf && rb.max != kPosInf && FloorDivInt(rb.min, c) == FloorDivInt(rb.max, c)) {
      int64_t k = FloorDivInt(rb.min, c);
      if (is_div) {
        q.constant += k;
        return Canonical(q);
      }
      r.constant -= k * c;
      return Canonical(r);
    }
    // floordiv(g*x + y, g*k) = floordiv(x, k) when 0 <= y < g.
    for (const Term& term : r.terms) {
      int64_t g = std::gcd(std::llabs(term.coeff), c);
      if (g <= 1) continue;
      Linear x, y;
      x.dtype = y.dtype = t;
      for (const Term& t2 : r.terms) {
        if (t2.coeff % g == 0) {
          x.AddTerm(t2.atom, t2.coeff / g);
        } else {
          y.AddTerm(t2.atom, t2.coeff);
        }
      }
      y.constant = r.constant;
      Bound yb = LinearBound(y);
      if (yb.min < 0 || yb.max >= g) continue;
      Expr xe = Canonical(x);
      if (is_div) {
        Linear out = q;
        out.AddTerm(MakeDivModAtom(xe, c / g, true), 1);
        return Canonical(out);
      }
      Linear out = y;
      out.AddTerm(MakeDivModAtom(xe, c / g, false), g);
      return Canonical(out);
    }
    Expr re = Canonical(r);
    if (is_div) {
      q.AddTerm(MakeDivModAtom(re, c, true), 1);
      return Canonical(q);
    }
    return MakeDivModAtom(re, c, false);
  }

  Expr MakeDivModAtom(const Expr& x, int64_t c, bool is_div) {
    DType t = x.dtype();
    if (c == 1) return is_div ? x : IntImm::make(t, 0);
    Bound xb = BoundOf(x);
    if (xb.min >= 0 && xb.max < c) return is_div ? IntImm::make(t, 0) : x;
    int64_t v;
    if (is_const_int(x, &v)) return IntImm::make(t, is_div ? FloorDivInt(v, c) : FloorModInt(v, c));
    return is_div ? FloorDiv::make(x, IntImm::make(t, c)) : FloorMod::make(x, IntImm::make(t, c));
  }

  Expr VisitExpr_(const Min* op, const Expr& self) override { return MinMax(op->a, op->b, true, self); }
  Expr VisitExpr_(const Max* op, const Expr& self) override { return MinMax(op->a, op->b, false, self); }

  Expr MinMax(const Expr& a0, const Expr& b0, bool is_min, const Expr& self) {
    Expr a = VisitExpr(a0), b = VisitExpr(b0);
    if (IsIndexLike(self.dtype())) {
      Linear d = ToLinear(a);
      d.Append(ToLinear(b), -1);
      d.DropZeros();
      Bound db = LinearBound(d);
      if (db.max <= 0) return is_min ? a : b;
      if (db.min >= 0) return is_min ? b : a;
    } else if (self.dtype().is_float() && self.dtype().is_scalar()) {
      const FloatImm *fa = a.as<FloatImm>(), *fb = b.as<FloatImm>();
      if (fa && fb) return FloatConst(self.dtype(), is_min ? std::min(fa->value, fb->value) : std::max(fa->value, fb->value));
    }
    if (StructuralEqual(a, b)) return a;
    if (a.same_as(a0) && b.same_as(b0)) return self;
    return is_min ? Min::make(a, b) : Max::make(a, b);
  }

  // ---- comparisons
  template <typename T>
  Expr Compare(const T* op, const Expr& self, bool (*decide)(Bound, bool*)) {
    Expr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (IsIndexLike(a.dtype())) {
      Linear d = ToLinear(a);
      d.Append(ToLinear(b), -1);
      d.DropZeros();
      bool value;
      if (decide(LinearBound(d), &value)) return IntImm::make(DType::Bool(), value);
    } else if (a.dtype().is_float() && a.dtype().is_scalar()) {
      const FloatImm *fa = a.as<FloatImm>(), *fb = b.as<FloatImm>();
      if (fa && fb) {
        bool value;
        double diff = fa->value - fb->value;
        int64_t s = diff < 0 ? -1 : diff > 0 ? 1 : 0;
        if (decide(Bound{s, s}, &value)) return IntImm::make(DType::Bool(), value);
      }
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return T::make(a, b);
  }

  // d = a - b
  static bool DecideLT(Bound d, bool* v) { return d.max < 0 ? (*v = true) : d.min >= 0 ? !(*v = false) : false; }
  static bool DecideLE(Bound d, bool* v) { return d.max <= 0 ? (*v = true) : d.min > 0 ? !(*v = false) : false; }
  static bool DecideGT(Bound d, bool* v) { return d.min > 0 ? (*v = true) : d.max <= 0 ? !(*v = false) : false; }
  static bool DecideGE(Bound d, bool* v) { return d.min >= 0 ? (*v = true) : d.max < 0 ? !(*v = false) : false; }
  static bool DecideEQ(Bound d, bool* v) {
    if (d.min == 0 && d.max == 0) return *v = true;
    if (d.min > 0 || d.max < 0) return !(*v = false);
    return false;
  }
  static bool DecideNE(Bound d, bool* v) {
    if (d.min == 0 && d.max == 0) return !(*v = false);
    if (d.min > 0 || d.max < 0) return *v = true;
    return false;
  }

  Expr VisitExpr_(const LT* op, const Expr& self) override { return Compare(op, self, DecideLT); }
  Expr VisitExpr_(const LE* op, const Expr& self) override { return Compare(op, self, DecideLE); }
  Expr VisitExpr_(const GT* op, const Expr& self) override { return Compare(op, self, DecideGT); }
  Expr VisitExpr_(const GE* op, const Expr& self) override { return Compare(op, self, DecideGE); }
  Expr VisitExpr_(const EQ* op, const Expr& self) override { return Compare(op, self, DecideEQ); }
  Expr VisitExpr_(const NE* op, const Expr& self) override { return Compare(op, self, DecideNE); }

  // ---- logic
  Expr VisitExpr_(const And* op, const Expr& self) override {
    Expr a = VisitExpr(op->a), b = VisitExpr(op->b);
    int64_t x;
    if (is_const_int(a, &x) && a.dtype().is_scalar()) return x ? b : a;
    if (is_const_int(b, &x) && b.dtype().is_scalar()) return x ? a : b;
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return And::make(a, b);
  }
  Expr VisitExpr_(const Or* op, const Expr& self) override {
    Expr a = VisitExpr(op->a), b = VisitExpr(op->b);
    int64_t x;
    if (is_const_int(a, &x) && a.dtype().is_scalar()) return x ? a : b;
    if (is_const_int(b, &x) && b.dtype().is_scalar()) return x ? b : a;
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return Or::make(a, b);
  }
  Expr VisitExpr_(const Not* op, const Expr& self) override {
    Expr a = VisitExpr(op->a);
    int64_t x;
    if (is_const_int(a, &x) && a.dtype().is_scalar()) return IntImm::make(DType::Bool(), !x);
    if (const LT* lt = a.as<LT>()) return GE::make(lt->a, lt->b);
    if (const LE* le = a.as<LE>()) return GT::make(le->a, le->b);
    if (const GT* gt = a.as<GT>()) return LE::make(gt->a, gt->b);
    if (const GE* ge = a.as<GE>()) return LT::make(ge->a, ge->b);
    if (const Not* n = a.as<Not>()) return n->a;
    if (a.same_as(op->a)) return self;
    return Not::make(a);
  }
  Expr VisitExpr_(const Select* op, const Expr& self) override {
    Expr c = VisitExpr(op->condition);
    int64_t x;
    if (is_const_int(c, &x) && c.dtype().is_scalar()) return VisitExpr(x ? op->true_value : op->false_value);
    Expr t = VisitExpr(op->true_value), f = VisitExpr(op->false_value);
    if (StructuralEqual(t, f)) return t;
    Expr pair = AdjacentPairLoad(c, t, f);
    if (pair.defined()) return pair;
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
    return Select::make(c, t, f);
  }

  // select(ramp(0, 1, 2) == 0, broadcast(B[i]), broadcast(B[i + 1])): the two-lane vector of
  // consecutive elements (as the Cortex-M int8 conv pairs its weights) is one vector load
  // B[ramp(i, 1, 2)], which code generators emit as one 32-bit load. Two int8 elements two
  // apart, each widened to int16 (the Cortex-M template's int8 weights, packed so that one
  // 32-bit word holds two pairs), become int16x2(B[ramp(i, 2, 2)]): Arm's SXTB16 extracts
  // exactly bytes 0 and 2 (or 1 and 3) of a word as such a pair.
  Expr AdjacentPairLoad(const Expr& condition, const Expr& first, const Expr& second) {
    const EQ* eq = condition.as<EQ>();
    const Broadcast *a = first.as<Broadcast>(), *b = second.as<Broadcast>();
    if (eq == nullptr || a == nullptr || b == nullptr || a->lanes != 2) return Expr();
    const Ramp* lane = eq->a.as<Ramp>();
    if (lane == nullptr || !is_zero(lane->base) || !is_one(lane->stride) || !is_zero(eq->b)) return Expr();
    const Cast *ca = a->value.as<Cast>(), *cb = b->value.as<Cast>();
    bool widened = ca != nullptr && cb != nullptr && ca->dtype == DType::Int(16) && cb->dtype == DType::Int(16);
    const Load *la = (widened ? ca->value : a->value).as<Load>(), *lb = (widened ? cb->value : b->value).as<Load>();
    if (la == nullptr || lb == nullptr || la->buffer.get() != lb->buffer.get() || la->predicate.defined() ||
        lb->predicate.defined() || !la->index.dtype().is_scalar()) {
      return Expr();
    }
    if (widened && la->dtype != DType::Int(8)) return Expr();
    int64_t stride = 0;
    if (!is_const_int(VisitExpr(lb->index - la->index), &stride) || stride != (widened ? 2 : 1)) return Expr();
    Expr pair = Load::make(la->buffer, Ramp::make(la->index, make_const(la->index.dtype(), stride), 2));
    return widened ? Cast::make(DType::Int(16, 2), pair) : pair;
  }

  Expr VisitExpr_(const Cast* op, const Expr& self) override {
    Expr v = VisitExpr(op->value);
    DType t = op->dtype;
    if (v.dtype() == t) return v;
    if (t.is_scalar()) {
      if (const IntImm* i = v.as<IntImm>()) {
        if (t.is_float()) return FloatConst(t, static_cast<double>(i->value));
        if (t.is_bool()) return IntImm::make(t, i->value != 0);
        if (t.is_integer()) return IntImm::make(t, WrapInt(i->value, t));
      }
      if (const FloatImm* f = v.as<FloatImm>()) {
        if (t.is_float()) return FloatConst(t, f->value);
        if (t.is_integer() && std::isfinite(f->value) && std::fabs(f->value) < 9e18)
          return IntImm::make(t, WrapInt(static_cast<int64_t>(f->value), t));
      }
      // int -> wider int of a value that fits: keep the cast (codegen needs it) but simplify inside.
    }
    if (v.same_as(op->value)) return self;
    return Cast::make(t, v);
  }

  static int64_t WrapInt(int64_t v, DType t) {
    if (t.bits() >= 64) return v;
    uint64_t mask = (uint64_t{1} << t.bits()) - 1;
    uint64_t u = static_cast<uint64_t>(v) & mask;
    if (t.is_int() && (u >> (t.bits() - 1))) return static_cast<int64_t>(u | ~mask);
    return static_cast<int64_t>(u);
  }

  Expr VisitExpr_(const Let* op, const Expr& self) override {
    Expr v = VisitExpr(op->value);
    if (is_const_number(v) || v.as<VarNode>()) {
      return VisitExpr(Substitute(op->body, VarMap{{op->var.get(), v}}));
    }
    an_->Bind(op->var, BoundOf(v));
    Expr b = VisitExpr(op->body);
    an_->Unbind(op->var);
    if (v.same_as(op->value) && b.same_as(op->body)) return self;
    return Let::make(op->var, v, b);
  }

  // A predicate that always holds is no predicate.
  Expr VisitExpr_(const Load* op, const Expr& self) override {
    Expr e = IRMutator::VisitExpr_(op, self);
    const Load* l = e.as<Load>();
    if (l->predicate.defined() && IsAllTrue(l->predicate)) return Load::make(l->buffer, l->index);
    return e;
  }
  Stmt VisitStmt_(const Store* op, const Stmt& self) override {
    Stmt s = IRMutator::VisitStmt_(op, self);
    const Store* st = s.as<Store>();
    if (st->predicate.defined() && IsAllTrue(st->predicate)) return Store::make(st->buffer, st->value, st->index);
    return s;
  }
  static bool IsAllTrue(const Expr& p) {
    int64_t v;
    return is_const_int(p, &v) && v != 0;
  }

  Expr VisitExpr_(const Reduce* op, const Expr& self) override {
    for (const IterVar& iv : op->axis) {
      if (iv.dom().min.defined() && iv.dom().extent.defined()) an_->Bind(iv.var(), iv.dom().min, iv.dom().extent);
    }
    Expr out = IRMutator::VisitExpr_(op, self);
    for (const IterVar& iv : op->axis) an_->Unbind(iv.var());
    return out;
  }

  // ---- statements
  Stmt VisitStmt_(const For* op, const Stmt& self) override {
    Expr m = VisitExpr(op->min), e = VisitExpr(op->extent);
    int64_t ext;
    if (is_const_int(e, &ext) && ext <= 0) return NoOp();
    if (is_const_int(e, &ext) && ext == 1 && op->for_kind != ForKind::kThreadBinding) {
      return VisitStmt(Substitute(op->body, VarMap{{op->var.get(), m}}));
    }
    an_->Bind(op->var, m, e);
    Stmt b = VisitStmt(op->body);
    an_->Unbind(op->var);
    if (IsNoOp(b)) return b;
    if (m.same_as(op->min) && e.same_as(op->extent) && b.same_as(op->body)) return self;
    return For::make(op->var, m, e, op->for_kind, b, op->thread_tag);
  }

  Stmt VisitStmt_(const IfThenElse* op, const Stmt& self) override {
    Expr c = VisitExpr(op->condition);
    int64_t x;
    if (is_const_int(c, &x)) {
      if (x) return VisitStmt(op->then_case);
      return op->else_case.defined() ? VisitStmt(op->else_case) : NoOp();
    }
    Stmt t = VisitStmt(op->then_case);
    Stmt e = MutateOptional(op->else_case);
    if (e.defined() && IsNoOp(e)) e = Stmt();
    if (IsNoOp(t) && !e.defined()) return t;
    if (IsNoOp(t)) return IfThenElse::make(VisitExpr(Not::make(c)), e);
    if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
    return IfThenElse::make(c, t, e);
  }

  Stmt VisitStmt_(const LetStmt* op, const Stmt& self) override {
    Expr v = VisitExpr(op->value);
    if (is_const_number(v) || v.as<VarNode>()) return VisitStmt(Substitute(op->body, VarMap{{op->var.get(), v}}));
    an_->Bind(op->var, BoundOf(v));
    Stmt b = VisitStmt(op->body);
    an_->Unbind(op->var);
    if (IsNoOp(b)) return b;
    if (v.same_as(op->value) && b.same_as(op->body)) return self;
    return LetStmt::make(op->var, v, b);
  }

  Stmt VisitStmt_(const AssertStmt* op, const Stmt& self) override {
    Expr c = VisitExpr(op->condition);
    int64_t x;
    if (is_const_int(c, &x) && x) return NoOp();
    return c.same_as(op->condition) ? self : AssertStmt::make(c, op->message);
  }

  Stmt VisitStmt_(const Seq* op, const Stmt& self) override {
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& s : op->stmts) {
      Stmt n = VisitStmt(s);
      if (!n.same_as(s)) changed = true;
      if (IsNoOp(n)) continue;
      out.push_back(n);
    }
    if (!changed) return self;
    if (out.empty()) return NoOp();
    return Seq::make(out);
  }

  Stmt VisitStmt_(const Allocate* op, const Stmt& self) override {
    Stmt s = IRMutator::VisitStmt_(op, self);
    const Allocate* a = s.as<Allocate>();
    if (a && IsNoOp(a->body)) return a->body;
    return s;
  }
  Stmt VisitStmt_(const AttrStmt* op, const Stmt& self) override {
    Stmt s = IRMutator::VisitStmt_(op, self);
    const AttrStmt* a = s.as<AttrStmt>();
    if (a && IsNoOp(a->body)) return a->body;
    return s;
  }
  Stmt VisitStmt_(const Realize* op, const Stmt& self) override {
    Stmt s = IRMutator::VisitStmt_(op, self);
    const Realize* r = s.as<Realize>();
    if (r && IsNoOp(r->body)) return r->body;
    return s;
  }

 private:
  Analyzer* an_;
};

Expr Analyzer::Simplify(const Expr& e) {
  SimplifyMutator m(this);
  return m.VisitExpr(e);
}

Stmt Analyzer::Simplify(const Stmt& s) {
  SimplifyMutator m(this);
  return m.VisitStmt(s);
}

bool Analyzer::CanProve(const Expr& cond) {
  int64_t v;
  return is_const_int(Simplify(cond), &v) && v != 0;
}

Expr Simplify(const Expr& e) {
  Analyzer a;
  return a.Simplify(e);
}

Stmt Simplify(const Stmt& s) {
  Analyzer a;
  return a.Simplify(s);
}

}  // namespace lower
}  // namespace agate
