#include "core/lower/vectorize.h"

#include "core/ir/functor.h"
#include "core/ir/substitute.h"
#include "core/lower/analyzer.h"
#include "core/support/error.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

// Thrown inside the vectorizer when the body cannot be vectorized; caught at the loop.
struct CannotVectorize {};

Expr BroadcastTo(const Expr& e, int lanes) {
  if (e.dtype().lanes() == lanes) return e;
  if (e.dtype().lanes() != 1) throw CannotVectorize();
  return Broadcast::make(e, lanes);
}

// Elements of the kernel's own allocations enclosing a loop, by buffer: the reads a
// lane mask need not guard (below).
using LocalSizes = std::unordered_map<const BufferNode*, int64_t>;

// Rewrites a loop body so that `var` stands for the vector ramp(0, 1, lanes).
class Vectorizer : public IRMutator {
 public:
  Vectorizer(const Var& var, int lanes, const LocalSizes& locals) : var_(var), lanes_(lanes), locals_(locals) {
    ramp_ = Ramp::make(make_zero(var.dtype()), make_const(var.dtype(), 1), lanes);
  }

  Expr VisitExpr_(const VarNode* op, const Expr& self) override {
    if (op == var_.get()) return ramp_;
    auto it = let_vars_.find(op);
    return it != let_vars_.end() ? it->second : self;
  }

  template <typename T>
  Expr Binary(const T* op, const Expr& self) {
    Expr a = VisitExpr(op->a), b = VisitExpr(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    int lanes = std::max(a.dtype().lanes(), b.dtype().lanes());
    if (lanes == 1) return T::make(a, b);
    // Keep index arithmetic in ramp form: ramp +- broadcast, ramp * broadcast.
    constexpr ExprKind K = T::kKind;
    const Ramp *ra = a.as<Ramp>(), *rb = b.as<Ramp>();
    if (K == ExprKind::kAdd || K == ExprKind::kSub) {
      if (ra && b.dtype().lanes() == 1) return Ramp::make(Simplify(T::make(ra->base, b)), ra->stride, lanes);
      if (ra && b.as<Broadcast>()) return Ramp::make(Simplify(T::make(ra->base, b.as<Broadcast>()->value)), ra->stride, lanes);
      if (K == ExprKind::kAdd && rb && a.dtype().lanes() == 1) return Ramp::make(Simplify(a + rb->base), rb->stride, lanes);
      if (ra && rb) return Ramp::make(Simplify(T::make(ra->base, rb->base)), Simplify(T::make(ra->stride, rb->stride)), lanes);
    }
    if (K == ExprKind::kMul) {
      Expr s = b.dtype().lanes() == 1 ? b : (b.as<Broadcast>() ? b.as<Broadcast>()->value : Expr());
      if (ra && s.defined()) return Ramp::make(Simplify(ra->base * s), Simplify(ra->stride * s), lanes);
      Expr s2 = a.dtype().lanes() == 1 ? a : (a.as<Broadcast>() ? a.as<Broadcast>()->value : Expr());
      if (rb && s2.defined()) return Ramp::make(Simplify(s2 * rb->base), Simplify(s2 * rb->stride), lanes);
    }
    return T::make(BroadcastTo(a, lanes), BroadcastTo(b, lanes));
  }

  Expr VisitExpr_(const Add* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const Sub* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const Mul* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const Div* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const Mod* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const FloorDiv* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const FloorMod* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const Min* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const Max* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const EQ* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const NE* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const LT* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const LE* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const GT* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const GE* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const And* op, const Expr& s) override { return Binary(op, s); }
  Expr VisitExpr_(const Or* op, const Expr& s) override { return Binary(op, s); }

  Expr VisitExpr_(const Select* op, const Expr& self) override {
    Expr c = VisitExpr(op->condition), t = VisitExpr(op->true_value), f = VisitExpr(op->false_value);
    int lanes = std::max({c.dtype().lanes(), t.dtype().lanes(), f.dtype().lanes()});
    if (lanes == 1) return c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value) ? self : Select::make(c, t, f);
    return Select::make(c.dtype().lanes() == 1 ? c : BroadcastTo(c, lanes), BroadcastTo(t, lanes), BroadcastTo(f, lanes));
  }
  Expr VisitExpr_(const Cast* op, const Expr& self) override {
    Expr v = VisitExpr(op->value);
    if (v.same_as(op->value)) return self;
    return Cast::make(op->dtype.with_lanes(v.dtype().lanes()), v);
  }
  Expr VisitExpr_(const Not* op, const Expr& self) override {
    Expr a = VisitExpr(op->a);
    return a.same_as(op->a) ? self : Not::make(a);
  }
  Expr VisitExpr_(const Call* op, const Expr& self) override {
    std::vector<Expr> args;
    int lanes = 1;
    for (const Expr& a : op->args) {
      args.push_back(VisitExpr(a));
      lanes = std::max(lanes, args.back().dtype().lanes());
    }
    if (lanes == 1) return IRMutator::VisitExpr_(op, self);
    if (op->op == CallOp::kReinterpret || DotGroup(op->op) != 0 || IsGpuIntrinsic(op->op)) {
      throw CannotVectorize();
    }
    for (Expr& a : args) a = BroadcastTo(a, lanes);
    return Call::make(op->dtype.with_lanes(lanes), op->op, args);
  }
  Expr VisitExpr_(const Load* op, const Expr& self) override {
    Expr index = VisitExpr(op->index);
    Expr pred = MutateOptional(op->predicate);
    int lanes = std::max(index.dtype().lanes(), pred.defined() ? pred.dtype().lanes() : 1);
    if (lanes == 1) return index.same_as(op->index) && pred.same_as(op->predicate) ? self : Load::make(op->buffer, index, pred);
    // Inside a lane-dependent branch, inactive lanes must not touch memory, except a
    // kernel-local buffer read in bounds: its inactive lanes' values reach only the
    // branch's own masked stores, and an unmasked read lets the code generator keep a
    // register tile's accumulator in registers (a masked read of it pins it to memory:
    // the ragged last tile of GPT-2's LM head ran 5x slower for every tile).
    index = BroadcastTo(index, lanes);
    if (!pred.defined() && InBoundsLocalRead(op->buffer, index)) return Load::make(op->buffer, index, Expr());
    return Load::make(op->buffer, index, WithActiveLanes(pred, lanes));
  }

  bool InBoundsLocalRead(const Buffer& buffer, const Expr& index) const {
    auto it = locals_.find(buffer.get());
    const Ramp* r = index.as<Ramp>();
    int64_t base, stride;
    if (it == locals_.end() || r == nullptr || !is_const_int(r->base, &base) || !is_const_int(r->stride, &stride)) {
      return false;
    }
    int64_t last = base + (r->lanes - 1) * stride;
    return std::min(base, last) >= 0 && std::max(base, last) < it->second;
  }

  // `pred` (may be undefined) restricted to the lanes active in the enclosing branches.
  Expr WithActiveLanes(const Expr& pred, int lanes) {
    if (!active_.defined()) return pred.defined() ? BroadcastTo(pred, lanes) : pred;
    if (!pred.defined()) return active_;
    return And::make(BroadcastTo(pred, lanes), active_);
  }
  Expr VisitExpr_(const Let* op, const Expr&) override {
    Expr v = VisitExpr(op->value);
    Var nv = v.dtype().lanes() > 1 ? Var(op->var.name(), v.dtype()) : op->var;
    let_vars_[op->var.get()] = nv;
    Expr b = VisitExpr(op->body);
    let_vars_.erase(op->var.get());
    return Let::make(nv, v, b);
  }
  Expr VisitExpr_(const Ramp*, const Expr&) override { throw CannotVectorize(); }
  Expr VisitExpr_(const Broadcast*, const Expr&) override { throw CannotVectorize(); }

  Stmt VisitStmt_(const Store* op, const Stmt& self) override {
    Expr value = VisitExpr(op->value), index = VisitExpr(op->index);
    Expr pred = MutateOptional(op->predicate);
    int lanes = std::max({value.dtype().lanes(), index.dtype().lanes(), pred.defined() ? pred.dtype().lanes() : 1});
    if (lanes == 1 && !active_.defined()) return IRMutator::VisitStmt_(op, self);
    if (lanes == 1) lanes = lanes_;
    // Every lane writing the same address with a lane-dependent value is a reduction over the loop.
    if (index.dtype().lanes() == 1) throw CannotVectorize();
    return Store::make(op->buffer, BroadcastTo(value, lanes), index, WithActiveLanes(pred, lanes));
  }
  Stmt VisitStmt_(const For* op, const Stmt& self) override {
    if (Uses(op->min) || Uses(op->extent)) throw CannotVectorize();
    return IRMutator::VisitStmt_(op, self);
  }
  // A branch whose condition differs per lane (a tail guard) becomes a lane
  // mask on every load and store inside it.
  Stmt VisitStmt_(const IfThenElse* op, const Stmt& self) override {
    if (!Uses(op->condition)) return IRMutator::VisitStmt_(op, self);
    if (op->else_case.defined()) throw CannotVectorize();
    Expr cond = BroadcastTo(VisitExpr(op->condition), lanes_);
    Expr saved = active_;
    active_ = saved.defined() ? And::make(saved, cond) : cond;
    Stmt body = VisitStmt(op->then_case);
    active_ = saved;
    return body;
  }
  Stmt VisitStmt_(const LetStmt* op, const Stmt&) override {
    Expr v = VisitExpr(op->value);
    Var nv = v.dtype().lanes() > 1 ? Var(op->var.name(), v.dtype()) : op->var;
    let_vars_[op->var.get()] = nv;
    Stmt b = VisitStmt(op->body);
    let_vars_.erase(op->var.get());
    return LetStmt::make(nv, v, b);
  }
  Stmt VisitStmt_(const Allocate*, const Stmt&) override { throw CannotVectorize(); }
  Stmt VisitStmt_(const AssertStmt* op, const Stmt& self) override {
    if (Uses(op->condition)) throw CannotVectorize();
    return self;
  }
  Stmt VisitStmt_(const Evaluate* op, const Stmt& self) override {
    if (Uses(op->value)) throw CannotVectorize();
    return self;
  }

 private:
  bool Uses(const Expr& e) {
    return UsesVar(e, [&](const VarNode* v) { return v == var_.get() || let_vars_.count(v); });
  }
  Var var_;
  int lanes_;
  const LocalSizes& locals_;
  Expr ramp_;
  Expr active_;  // lanes enabled by enclosing lane-dependent branches (undefined: all)
  std::unordered_map<const VarNode*, Expr> let_vars_;
};

class LoopVectorizer : public IRMutator {
 public:
  explicit LoopVectorizer(int max_lanes) : max_lanes_(max_lanes) {}
  Stmt VisitStmt_(const For* op, const Stmt& self) override {
    Stmt s = IRMutator::VisitStmt_(op, self);
    const For* f = s.as<For>();
    if (f->for_kind != ForKind::kVectorized) return s;
    int64_t lanes;
    if (!is_const_int(f->extent, &lanes) || lanes < 2 || lanes > max_lanes_ || !is_zero(f->min)) return s;
    try {
      Vectorizer v(f->var, static_cast<int>(lanes), locals_);
      return Simplify(v.VisitStmt(f->body));
    } catch (const CannotVectorize&) {
      return s;
    }
  }
  Stmt VisitStmt_(const Allocate* op, const Stmt& self) override {
    int64_t elements;
    bool known = is_const_int(op->NumElements(), &elements);
    if (known) locals_[op->buffer.get()] = elements;
    Stmt s = IRMutator::VisitStmt_(op, self);
    if (known) locals_.erase(op->buffer.get());
    return s;
  }

 private:
  int max_lanes_;
  LocalSizes locals_;
};

}  // namespace

Stmt VectorizeLoops(const Stmt& stmt, int max_lanes) {
  LoopVectorizer v(max_lanes);
  return v.VisitStmt(stmt);
}

}  // namespace lower
}  // namespace agate
