#include "core/lower/gpu_index_math.h"

#include <cstdint>
#include <limits>

#include "core/ir/functor.h"
#include "core/lower/analyzer.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

class Narrower : public IRMutator {
 public:
  Stmt VisitStmt_(const For* op, const Stmt& self) override {
    Expr min = VisitExpr(op->min), extent = VisitExpr(op->extent);
    an_.Bind(op->var, min, extent);
    Stmt body = VisitStmt(op->body);
    an_.Unbind(op->var);
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return self;
    return For::make(op->var, min, extent, op->for_kind, body, op->thread_tag);
  }
  Stmt VisitStmt_(const LetStmt* op, const Stmt& self) override {
    Expr value = Widen(VisitExpr(op->value), op->value.dtype());
    an_.Bind(op->var, an_.ConstBound(value));
    Stmt body = VisitStmt(op->body);
    an_.Unbind(op->var);
    if (value.same_as(op->value) && body.same_as(op->body)) return self;
    return LetStmt::make(op->var, value, body);
  }
  Expr VisitExpr_(const Let* op, const Expr& self) override {
    Expr value = Widen(VisitExpr(op->value), op->value.dtype());
    an_.Bind(op->var, an_.ConstBound(value));
    Expr body = VisitExpr(op->body);
    an_.Unbind(op->var);
    if (value.same_as(op->value) && body.same_as(op->body)) return self;
    return Let::make(op->var, value, body);
  }

  // Floor division of a non-negative value by a positive constant is C division.
  Expr VisitExpr_(const FloorDiv* op, const Expr& self) override {
    Expr e = IRMutator::VisitExpr_(op, self);
    const FloorDiv* d = e.as<FloorDiv>();
    if (d && NonNegativeByPositive(d->a, d->b)) return Div::make(d->a, d->b);
    return e;
  }
  Expr VisitExpr_(const FloorMod* op, const Expr& self) override {
    Expr e = IRMutator::VisitExpr_(op, self);
    const FloorMod* m = e.as<FloorMod>();
    if (m && NonNegativeByPositive(m->a, m->b)) return Mod::make(m->a, m->b);
    return e;
  }

  Expr VisitExpr_(const Load* op, const Expr& self) override {
    Expr index = Narrow(VisitExpr(op->index));
    Expr pred = MutateOptional(op->predicate);
    if (index.same_as(op->index) && pred.same_as(op->predicate)) return self;
    return Load::make(op->buffer, index, pred);
  }
  Stmt VisitStmt_(const Store* op, const Stmt& self) override {
    Expr value = VisitExpr(op->value);
    Expr index = Narrow(VisitExpr(op->index));
    Expr pred = MutateOptional(op->predicate);
    if (value.same_as(op->value) && index.same_as(op->index) && pred.same_as(op->predicate)) return self;
    return Store::make(op->buffer, value, index, pred);
  }

#define AGATE_NARROW_COMPARE(T)                                                   \
  Expr VisitExpr_(const T* op, const Expr& self) override {                       \
    Expr a = VisitExpr(op->a), b = VisitExpr(op->b);                              \
    if (Fits(a) && Fits(b)) return T::make(ToInt32(a), ToInt32(b));               \
    if (a.same_as(op->a) && b.same_as(op->b)) return self;                        \
    return T::make(Widen(a, op->a.dtype()), Widen(b, op->b.dtype()));             \
  }
  AGATE_NARROW_COMPARE(LT)
  AGATE_NARROW_COMPARE(LE)
  AGATE_NARROW_COMPARE(GT)
  AGATE_NARROW_COMPARE(GE)
  AGATE_NARROW_COMPARE(EQ)
  AGATE_NARROW_COMPARE(NE)
#undef AGATE_NARROW_COMPARE

 private:
  bool NonNegativeByPositive(const Expr& a, const Expr& b) {
    int64_t c = 0;
    return a.dtype().is_int() && a.dtype().is_scalar() && is_const_int(b, &c) && c > 0 && an_.ConstBound(a).min >= 0;
  }

  // The int32 form of an int64 index expression when it and all its parts fit.
  Expr Narrow(const Expr& e) { return Fits(e) ? ToInt32(e) : e; }

  Expr Widen(const Expr& e, DType t) { return e.dtype() == t ? e : cast(t, e); }

  // An int64 scalar expression of index variables, constants and index
  // arithmetic, every node of which provably lies in int32.
  bool Fits(const Expr& e) {
    if (e.dtype() != DType::Index()) return false;
    ConstIntBound b = an_.ConstBound(e);
    if (b.min < std::numeric_limits<int32_t>::min() || b.max > std::numeric_limits<int32_t>::max()) return false;
    switch (e.kind()) {
      case ExprKind::kIntImm: return true;
      case ExprKind::kVar: return true;
#define AGATE_FITS_BINARY(T) \
  case T::kKind: return Fits(e.as<T>()->a) && Fits(e.as<T>()->b);
        AGATE_FITS_BINARY(Add)
        AGATE_FITS_BINARY(Sub)
        AGATE_FITS_BINARY(Mul)
        AGATE_FITS_BINARY(Div)
        AGATE_FITS_BINARY(Mod)
        AGATE_FITS_BINARY(FloorDiv)
        AGATE_FITS_BINARY(FloorMod)
        AGATE_FITS_BINARY(Min)
        AGATE_FITS_BINARY(Max)
#undef AGATE_FITS_BINARY
      default: return false;
    }
  }

  static Expr ToInt32(const Expr& e) {
    const DType i32 = DType::Int(32);
    switch (e.kind()) {
      case ExprKind::kIntImm: return IntImm::make(i32, e.as<IntImm>()->value);
      case ExprKind::kVar: return Cast::make(i32, e);
#define AGATE_TO_INT32(T) \
  case T::kKind: return T::make(ToInt32(e.as<T>()->a), ToInt32(e.as<T>()->b));
        AGATE_TO_INT32(Add)
        AGATE_TO_INT32(Sub)
        AGATE_TO_INT32(Mul)
        AGATE_TO_INT32(Div)
        AGATE_TO_INT32(Mod)
        AGATE_TO_INT32(FloorDiv)
        AGATE_TO_INT32(FloorMod)
        AGATE_TO_INT32(Min)
        AGATE_TO_INT32(Max)
#undef AGATE_TO_INT32
      default: return e;  // not reached: Fits admits only the kinds above
    }
  }

  Analyzer an_;
};

}  // namespace

Stmt NarrowIndexMath(const Stmt& body) { return Narrower().VisitStmt(body); }

}  // namespace lower
}  // namespace agate
