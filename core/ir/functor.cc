#include "core/ir/functor.h"

namespace agate {
namespace ir {

// ---------------------------------------------------------------- IRVisitor

void IRVisitor::VisitExpr_(const IntImm*, const Expr&) {}
void IRVisitor::VisitExpr_(const FloatImm*, const Expr&) {}
void IRVisitor::VisitExpr_(const VarNode*, const Expr&) {}
#define AGATE_VISIT_BINARY(T)                           \
  void IRVisitor::VisitExpr_(const T* op, const Expr&) { \
    VisitExpr(op->a);                                    \
    VisitExpr(op->b);                                    \
  }
AGATE_VISIT_BINARY(Add)
AGATE_VISIT_BINARY(Sub)
AGATE_VISIT_BINARY(Mul)
AGATE_VISIT_BINARY(Div)
AGATE_VISIT_BINARY(Mod)
AGATE_VISIT_BINARY(FloorDiv)
AGATE_VISIT_BINARY(FloorMod)
AGATE_VISIT_BINARY(Min)
AGATE_VISIT_BINARY(Max)
AGATE_VISIT_BINARY(EQ)
AGATE_VISIT_BINARY(NE)
AGATE_VISIT_BINARY(LT)
AGATE_VISIT_BINARY(LE)
AGATE_VISIT_BINARY(GT)
AGATE_VISIT_BINARY(GE)
AGATE_VISIT_BINARY(And)
AGATE_VISIT_BINARY(Or)
#undef AGATE_VISIT_BINARY
void IRVisitor::VisitExpr_(const Not* op, const Expr&) { VisitExpr(op->a); }
void IRVisitor::VisitExpr_(const Select* op, const Expr&) {
  VisitExpr(op->condition);
  VisitExpr(op->true_value);
  VisitExpr(op->false_value);
}
void IRVisitor::VisitExpr_(const Cast* op, const Expr&) { VisitExpr(op->value); }
void IRVisitor::VisitExpr_(const Call* op, const Expr&) {
  for (const Expr& a : op->args) VisitExpr(a);
}
void IRVisitor::VisitExpr_(const Ramp* op, const Expr&) {
  VisitExpr(op->base);
  VisitExpr(op->stride);
}
void IRVisitor::VisitExpr_(const Broadcast* op, const Expr&) { VisitExpr(op->value); }
void IRVisitor::VisitExpr_(const Let* op, const Expr&) {
  VisitExpr(op->value);
  VisitExpr(op->body);
}
void IRVisitor::VisitExpr_(const Load* op, const Expr&) {
  VisitExpr(op->index);
  VisitOptional(op->predicate);
}
void IRVisitor::VisitExpr_(const TensorRead* op, const Expr&) {
  for (const Expr& i : op->indices) VisitExpr(i);
}
void IRVisitor::VisitExpr_(const Reduce* op, const Expr&) {
  for (const IterVar& iv : op->axis) {
    VisitOptional(iv.dom().min);
    VisitOptional(iv.dom().extent);
  }
  for (const Expr& s : op->source) VisitExpr(s);
  VisitExpr(op->condition);
  for (const Expr& i : op->init) VisitExpr(i);
}

void IRVisitor::VisitStmt_(const LetStmt* op, const Stmt&) {
  VisitExpr(op->value);
  VisitStmt(op->body);
}
void IRVisitor::VisitStmt_(const AttrStmt* op, const Stmt&) {
  VisitOptional(op->value);
  VisitStmt(op->body);
}
void IRVisitor::VisitStmt_(const AssertStmt* op, const Stmt&) { VisitExpr(op->condition); }
void IRVisitor::VisitStmt_(const For* op, const Stmt&) {
  VisitExpr(op->min);
  VisitExpr(op->extent);
  VisitStmt(op->body);
}
void IRVisitor::VisitStmt_(const IfThenElse* op, const Stmt&) {
  VisitExpr(op->condition);
  VisitStmt(op->then_case);
  VisitOptional(op->else_case);
}
void IRVisitor::VisitStmt_(const Store* op, const Stmt&) {
  VisitExpr(op->value);
  VisitExpr(op->index);
  VisitOptional(op->predicate);
}
void IRVisitor::VisitStmt_(const Allocate* op, const Stmt&) {
  for (const Expr& e : op->extents) VisitExpr(e);
  VisitStmt(op->body);
}
void IRVisitor::VisitStmt_(const Seq* op, const Stmt&) {
  for (const Stmt& s : op->stmts) VisitStmt(s);
}
void IRVisitor::VisitStmt_(const Evaluate* op, const Stmt&) { VisitExpr(op->value); }
void IRVisitor::VisitStmt_(const Provide* op, const Stmt&) {
  VisitExpr(op->value);
  for (const Expr& i : op->indices) VisitExpr(i);
}
void IRVisitor::VisitStmt_(const Realize* op, const Stmt&) {
  for (const Range& r : op->bounds) {
    VisitExpr(r.min);
    VisitExpr(r.extent);
  }
  VisitStmt(op->body);
}

// ---------------------------------------------------------------- IRMutator

std::vector<Expr> IRMutator::MutateArray(const std::vector<Expr>& exprs, bool* changed) {
  std::vector<Expr> out;
  out.reserve(exprs.size());
  for (const Expr& e : exprs) {
    out.push_back(VisitExpr(e));
    if (!out.back().same_as(e)) *changed = true;
  }
  return out;
}

Expr IRMutator::VisitExpr_(const IntImm*, const Expr& self) { return self; }
Expr IRMutator::VisitExpr_(const FloatImm*, const Expr& self) { return self; }
Expr IRMutator::VisitExpr_(const VarNode*, const Expr& self) { return self; }
#define AGATE_MUTATE_BINARY(T)                                        \
  Expr IRMutator::VisitExpr_(const T* op, const Expr& self) {         \
    Expr a = VisitExpr(op->a);                                        \
    Expr b = VisitExpr(op->b);                                        \
    if (a.same_as(op->a) && b.same_as(op->b)) return self;            \
    return T::make(a, b);                                             \
  }
AGATE_MUTATE_BINARY(Add)
AGATE_MUTATE_BINARY(Sub)
AGATE_MUTATE_BINARY(Mul)
AGATE_MUTATE_BINARY(Div)
AGATE_MUTATE_BINARY(Mod)
AGATE_MUTATE_BINARY(FloorDiv)
AGATE_MUTATE_BINARY(FloorMod)
AGATE_MUTATE_BINARY(Min)
AGATE_MUTATE_BINARY(Max)
AGATE_MUTATE_BINARY(EQ)
AGATE_MUTATE_BINARY(NE)
AGATE_MUTATE_BINARY(LT)
AGATE_MUTATE_BINARY(LE)
AGATE_MUTATE_BINARY(GT)
AGATE_MUTATE_BINARY(GE)
AGATE_MUTATE_BINARY(And)
AGATE_MUTATE_BINARY(Or)
#undef AGATE_MUTATE_BINARY
Expr IRMutator::VisitExpr_(const Not* op, const Expr& self) {
  Expr a = VisitExpr(op->a);
  return a.same_as(op->a) ? self : Not::make(a);
}
Expr IRMutator::VisitExpr_(const Select* op, const Expr& self) {
  Expr c = VisitExpr(op->condition), t = VisitExpr(op->true_value), f = VisitExpr(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  return Select::make(c, t, f);
}
Expr IRMutator::VisitExpr_(const Cast* op, const Expr& self) {
  Expr v = VisitExpr(op->value);
  return v.same_as(op->value) ? self : Cast::make(op->dtype, v);
}
Expr IRMutator::VisitExpr_(const Call* op, const Expr& self) {
  bool changed = false;
  std::vector<Expr> args = MutateArray(op->args, &changed);
  return changed ? Call::make(op->dtype, op->op, args) : self;
}
Expr IRMutator::VisitExpr_(const Ramp* op, const Expr& self) {
  Expr b = VisitExpr(op->base), s = VisitExpr(op->stride);
  if (b.same_as(op->base) && s.same_as(op->stride)) return self;
  return Ramp::make(b, s, op->lanes);
}
Expr IRMutator::VisitExpr_(const Broadcast* op, const Expr& self) {
  Expr v = VisitExpr(op->value);
  return v.same_as(op->value) ? self : Broadcast::make(v, op->lanes);
}
Expr IRMutator::VisitExpr_(const Let* op, const Expr& self) {
  Expr v = VisitExpr(op->value), b = VisitExpr(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  return Let::make(op->var, v, b);
}
Expr IRMutator::VisitExpr_(const Load* op, const Expr& self) {
  Expr i = VisitExpr(op->index), p = MutateOptional(op->predicate);
  if (i.same_as(op->index) && p.same_as(op->predicate)) return self;
  return Load::make(op->buffer, i, p);
}
Expr IRMutator::VisitExpr_(const TensorRead* op, const Expr& self) {
  bool changed = false;
  std::vector<Expr> idx = MutateArray(op->indices, &changed);
  return changed ? TensorRead::make(op->producer, idx) : self;
}
Expr IRMutator::VisitExpr_(const Reduce* op, const Expr& self) {
  bool changed = false;
  std::vector<Expr> source = MutateArray(op->source, &changed);
  std::vector<Expr> init = MutateArray(op->init, &changed);
  Expr cond = VisitExpr(op->condition);
  if (!changed && cond.same_as(op->condition)) return self;
  return Reduce::make(op->combiner, source, op->axis, cond, op->value_index, init);
}

Stmt IRMutator::VisitStmt_(const LetStmt* op, const Stmt& self) {
  Expr v = VisitExpr(op->value);
  Stmt b = VisitStmt(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  return LetStmt::make(op->var, v, b);
}
Stmt IRMutator::VisitStmt_(const AttrStmt* op, const Stmt& self) {
  Expr v = MutateOptional(op->value);
  Stmt b = VisitStmt(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  return AttrStmt::make(op->key, op->node_name, v, b);
}
Stmt IRMutator::VisitStmt_(const AssertStmt* op, const Stmt& self) {
  Expr c = VisitExpr(op->condition);
  return c.same_as(op->condition) ? self : AssertStmt::make(c, op->message);
}
Stmt IRMutator::VisitStmt_(const For* op, const Stmt& self) {
  Expr m = VisitExpr(op->min), e = VisitExpr(op->extent);
  Stmt b = VisitStmt(op->body);
  if (m.same_as(op->min) && e.same_as(op->extent) && b.same_as(op->body)) return self;
  return For::make(op->var, m, e, op->for_kind, b, op->thread_tag);
}
Stmt IRMutator::VisitStmt_(const IfThenElse* op, const Stmt& self) {
  Expr c = VisitExpr(op->condition);
  Stmt t = VisitStmt(op->then_case), e = MutateOptional(op->else_case);
  if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
  return IfThenElse::make(c, t, e);
}
Stmt IRMutator::VisitStmt_(const Store* op, const Stmt& self) {
  Expr v = VisitExpr(op->value), i = VisitExpr(op->index), p = MutateOptional(op->predicate);
  if (v.same_as(op->value) && i.same_as(op->index) && p.same_as(op->predicate)) return self;
  return Store::make(op->buffer, v, i, p);
}
Stmt IRMutator::VisitStmt_(const Allocate* op, const Stmt& self) {
  bool changed = false;
  std::vector<Expr> ext = MutateArray(op->extents, &changed);
  Stmt b = VisitStmt(op->body);
  if (!changed && b.same_as(op->body)) return self;
  return Allocate::make(op->buffer, ext, op->alignment, op->scope, b, op->workspace_offset);
}
Stmt IRMutator::VisitStmt_(const Seq* op, const Stmt& self) {
  bool changed = false;
  std::vector<Stmt> out;
  for (const Stmt& s : op->stmts) {
    out.push_back(VisitStmt(s));
    if (!out.back().same_as(s)) changed = true;
  }
  return changed ? Seq::make(out) : self;
}
Stmt IRMutator::VisitStmt_(const Evaluate* op, const Stmt& self) {
  Expr v = VisitExpr(op->value);
  return v.same_as(op->value) ? self : Evaluate::make(v);
}
Stmt IRMutator::VisitStmt_(const Provide* op, const Stmt& self) {
  bool changed = false;
  Expr v = VisitExpr(op->value);
  std::vector<Expr> idx = MutateArray(op->indices, &changed);
  if (!changed && v.same_as(op->value)) return self;
  return Provide::make(op->producer, v, idx);
}
Stmt IRMutator::VisitStmt_(const Realize* op, const Stmt& self) {
  bool changed = false;
  std::vector<Range> bounds;
  for (const Range& r : op->bounds) {
    Expr m = VisitExpr(r.min), e = VisitExpr(r.extent);
    if (!m.same_as(r.min) || !e.same_as(r.extent)) changed = true;
    bounds.emplace_back(m, e);
  }
  Stmt b = VisitStmt(op->body);
  if (!changed && b.same_as(op->body)) return self;
  return Realize::make(op->producer, bounds, op->scope, b);
}

// ---------------------------------------------------------------- PostOrderVisit

namespace {
class PostOrderVisitor : public IRVisitor {
 public:
  explicit PostOrderVisitor(const std::function<void(const Expr*, const Stmt*)>& f) : f_(f) {}
  void VisitExpr(const Expr& e) override {
    IRVisitor::VisitExpr(e);
    f_(&e, nullptr);
  }
  void VisitStmt(const Stmt& s) override {
    IRVisitor::VisitStmt(s);
    f_(nullptr, &s);
  }

 private:
  const std::function<void(const Expr*, const Stmt*)>& f_;
};
}  // namespace

void PostOrderVisit(const Stmt& stmt, const std::function<void(const Expr*, const Stmt*)>& fvisit) {
  PostOrderVisitor v(fvisit);
  v.VisitStmt(stmt);
}
void PostOrderVisit(const Expr& expr, const std::function<void(const Expr*, const Stmt*)>& fvisit) {
  PostOrderVisitor v(fvisit);
  v.VisitExpr(expr);
}

}  // namespace ir
}  // namespace agate
