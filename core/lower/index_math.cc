#include "core/lower/index_math.h"

#include <cstdint>
#include <limits>
#include <unordered_map>

#include "core/ir/functor.h"
#include "core/lower/analyzer.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

bool InInt32(const ConstIntBound& b) {
  return b.min >= std::numeric_limits<int32_t>::min() && b.max <= std::numeric_limits<int32_t>::max();
}

class Narrower : public IRMutator {
 public:
  explicit Narrower(const NarrowOptions& options) : options_(options) {}

  Stmt VisitStmt_(const For* op, const Stmt& self) override {
    Expr min = VisitExpr(op->min), extent = VisitExpr(op->extent);
    if (NarrowsLoop(op, min, extent)) {
      // The counter runs over [min, min + extent]: the end value is the last one it takes.
      Var narrow(op->var->name, DType::Int(32));
      Expr narrow_min = ToInt32(min), narrow_extent = ToInt32(extent);
      an_.Bind(narrow, narrow_min, narrow_extent);
      renamed_[op->var.get()] = Cast::make(DType::Index(), narrow);
      Stmt body = VisitStmt(op->body);
      renamed_.erase(op->var.get());
      an_.Unbind(narrow);
      return For::make(narrow, narrow_min, narrow_extent, op->for_kind, body, op->thread_tag);
    }
    an_.Bind(op->var, min, extent);
    Stmt body = VisitStmt(op->body);
    an_.Unbind(op->var);
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return self;
    return For::make(op->var, min, extent, op->for_kind, body, op->thread_tag);
  }
  Stmt VisitStmt_(const LetStmt* op, const Stmt& self) override { return MutateLet(op, self); }
  Expr VisitExpr_(const Let* op, const Expr& self) override { return MutateLet(op, self); }
  Expr VisitExpr_(const VarNode* op, const Expr& self) override {
    auto it = renamed_.find(op);
    return it == renamed_.end() ? self : it->second;
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
  // A let (LetStmt or Let) of an index that fits becomes an int32 variable, its uses the value
  // widened back; other lets keep their variable, the value widened back where it was narrowed.
  template <typename LetNode, typename Node>
  Node MutateLet(const LetNode* op, const Node& self) {
    Expr value = VisitExpr(op->value);
    if (NarrowsLet(op->var, value)) {
      Var narrow(op->var->name, DType::Int(32));
      Expr narrow_value = ToInt32(value);
      an_.Bind(narrow, an_.ConstBound(narrow_value));
      renamed_[op->var.get()] = Cast::make(DType::Index(), narrow);
      Node body = VisitBody(op->body);
      renamed_.erase(op->var.get());
      an_.Unbind(narrow);
      return LetNode::make(narrow, narrow_value, body);
    }
    value = Widen(value, op->value.dtype());
    an_.Bind(op->var, an_.ConstBound(value));
    Node body = VisitBody(op->body);
    an_.Unbind(op->var);
    if (value.same_as(op->value) && body.same_as(op->body)) return self;
    return LetNode::make(op->var, value, body);
  }
  Stmt VisitBody(const Stmt& s) { return VisitStmt(s); }
  Expr VisitBody(const Expr& e) { return VisitExpr(e); }

  // A serial loop whose counter stays in int32 over its whole range (the end
  // value included, which the counter reaches on exit).
  bool NarrowsLoop(const For* op, const Expr& min, const Expr& extent) {
    if (!options_.loop_variables || op->var.dtype() != DType::Index()) return false;
    if (op->for_kind == ForKind::kParallel || op->for_kind == ForKind::kThreadBinding) return false;
    if (!Fits(min) || !Fits(extent)) return false;
    return InInt32(an_.ConstBound(min + extent));
  }
  bool NarrowsLet(const Var& var, const Expr& value) {
    return options_.loop_variables && var.dtype() == DType::Index() && Fits(value);
  }

  bool NonNegativeByPositive(const Expr& a, const Expr& b) {
    int64_t c = 0;
    return a.dtype().is_int() && a.dtype().is_scalar() && is_const_int(b, &c) && c > 0 && an_.ConstBound(a).min >= 0;
  }

  // The int32 form of an int64 index expression when it and all its parts fit; with
  // loop_variables also a vector index ramp(base, stride, lanes) whose lanes all fit.
  Expr Narrow(const Expr& e) {
    if (const Ramp* ramp = e.as<Ramp>(); ramp && options_.loop_variables) {
      if (Fits(ramp->base) && Fits(ramp->stride) && InInt32(an_.ConstBound(e))) {
        return Ramp::make(ToInt32(ramp->base), ToInt32(ramp->stride), ramp->lanes);
      }
      return e;
    }
    return Fits(e) ? ToInt32(e) : e;
  }

  Expr Widen(const Expr& e, DType t) { return e.dtype() == t ? e : cast(t, e); }

  // An int64 scalar expression of index variables, constants, narrowed
  // variables and index arithmetic, every node of which provably lies in int32.
  // (IndexShaped admits the same kinds BoundsFit and ToInt32 handle.)
  // The shape is checked first, in one linear walk, so a long chain of data
  // arithmetic (a max over many loads) costs no bound per node.
  bool Fits(const Expr& e) { return IndexShaped(e) && BoundsFit(e); }
  static bool IndexShaped(const Expr& e) {
    if (e.dtype() != DType::Index()) return false;
    switch (e.kind()) {
      case ExprKind::kIntImm:
      case ExprKind::kVar: return true;
      case ExprKind::kCast: return IsNarrowInt(e.as<Cast>()->value.dtype());
#define AGATE_SHAPED_BINARY(T) \
  case T::kKind: return IndexShaped(e.as<T>()->a) && IndexShaped(e.as<T>()->b);
        AGATE_SHAPED_BINARY(Add)
        AGATE_SHAPED_BINARY(Sub)
        AGATE_SHAPED_BINARY(Mul)
        AGATE_SHAPED_BINARY(Div)
        AGATE_SHAPED_BINARY(Mod)
        AGATE_SHAPED_BINARY(FloorDiv)
        AGATE_SHAPED_BINARY(FloorMod)
        AGATE_SHAPED_BINARY(Min)
        AGATE_SHAPED_BINARY(Max)
#undef AGATE_SHAPED_BINARY
      default: return false;
    }
  }
  bool BoundsFit(const Expr& e) {
    if (!InInt32(an_.ConstBound(e))) return false;
    switch (e.kind()) {
      case ExprKind::kIntImm:
      case ExprKind::kVar:
      // A value computed in a narrower type (a narrowed variable): its bound was checked above.
      case ExprKind::kCast: return true;
#define AGATE_FITS_BINARY(T) \
  case T::kKind: return BoundsFit(e.as<T>()->a) && BoundsFit(e.as<T>()->b);
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
  static bool IsNarrowInt(DType t) {
    return t.is_scalar() && ((t.is_int() && t.bits() <= 32) || (t.is_uint() && t.bits() < 32));
  }

  static Expr ToInt32(const Expr& e) {
    const DType i32 = DType::Int(32);
    switch (e.kind()) {
      case ExprKind::kIntImm: return IntImm::make(i32, e.as<IntImm>()->value);
      case ExprKind::kVar: return Cast::make(i32, e);
      case ExprKind::kCast: {
        const Expr& value = e.as<Cast>()->value;
        return value.dtype() == i32 ? value : Cast::make(i32, value);
      }
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

  const NarrowOptions options_;
  Analyzer an_;
  // Variables made int32, and the int64 value that replaces each use.
  std::unordered_map<const VarNode*, Expr> renamed_;
};

}  // namespace

Stmt NarrowIndexMath(const Stmt& body, const NarrowOptions& options) { return Narrower(options).VisitStmt(body); }

}  // namespace lower
}  // namespace agate
