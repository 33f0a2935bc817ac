// Dispatch on node kind for expressions and statements, plus the two workhorse
// traversals every pass is built from: IRVisitor (read-only walk) and IRMutator
// (rebuilds only what changed, sharing every untouched subtree).
//
// Why hand-rolled switch dispatch instead of a virtual Accept(): the node set is
// closed and small, a switch keeps each node struct a plain value, and a pass
// overrides only the VisitExpr_/VisitStmt_ overloads it cares about.
#ifndef AGATE_CORE_IR_FUNCTOR_H_
#define AGATE_CORE_IR_FUNCTOR_H_

#include <utility>

#include "core/ir/expr.h"
#include "core/ir/stmt.h"
#include "core/support/error.h"

namespace agate {
namespace ir {

template <typename FType>
class ExprFunctor;

#define AGATE_EXPR_FUNCTOR_NODES(X)                                                                       \
  X(IntImm) X(FloatImm) X(VarNode) X(Add) X(Sub) X(Mul) X(Div) X(Mod) X(FloorDiv) X(FloorMod) X(Min)     \
  X(Max) X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) X(And) X(Or) X(Not) X(Select) X(Cast) X(Call) X(Ramp)       \
  X(Broadcast) X(Let) X(Load) X(TensorRead) X(Reduce)

template <typename R, typename... Args>
class ExprFunctor<R(const Expr&, Args...)> {
 public:
  virtual ~ExprFunctor() = default;
  R operator()(const Expr& e, Args... args) { return VisitExpr(e, std::forward<Args>(args)...); }

  virtual R VisitExpr(const Expr& e, Args... args) {
    AGATE_CHECK(e.defined()) << "visiting an undefined expression";
    switch (e.kind()) {
#define AGATE_DISPATCH_CASE(T) \
  case T::kKind:               \
    return VisitExpr_(static_cast<const T*>(e.get()), e, std::forward<Args>(args)...);
      AGATE_EXPR_FUNCTOR_NODES(AGATE_DISPATCH_CASE)
#undef AGATE_DISPATCH_CASE
    }
    AGATE_THROW(kInternal) << "unknown expression kind " << static_cast<int>(e.kind());
  }

  // Each overload receives the node and its handle (so a pass can return `self` unchanged).
#define AGATE_DECLARE_VISIT(T) \
  virtual R VisitExpr_(const T* op, const Expr& self, Args... args) { return VisitExprDefault_(self, std::forward<Args>(args)...); }
  AGATE_EXPR_FUNCTOR_NODES(AGATE_DECLARE_VISIT)
#undef AGATE_DECLARE_VISIT

  virtual R VisitExprDefault_(const Expr& e, Args...) {
    AGATE_THROW(kInternal) << "no visitor for expression kind " << ExprKindName(e.kind());
  }
};

template <typename FType>
class StmtFunctor;

#define AGATE_STMT_FUNCTOR_NODES(X) \
  X(LetStmt) X(AttrStmt) X(AssertStmt) X(For) X(IfThenElse) X(Store) X(Allocate) X(Seq) X(Evaluate) X(Provide) X(Realize)

template <typename R, typename... Args>
class StmtFunctor<R(const Stmt&, Args...)> {
 public:
  virtual ~StmtFunctor() = default;
  R operator()(const Stmt& s, Args... args) { return VisitStmt(s, std::forward<Args>(args)...); }

  virtual R VisitStmt(const Stmt& s, Args... args) {
    AGATE_CHECK(s.defined()) << "visiting an undefined statement";
    switch (s.kind()) {
#define AGATE_DISPATCH_CASE(T) \
  case T::kKind:               \
    return VisitStmt_(static_cast<const T*>(s.get()), s, std::forward<Args>(args)...);
      AGATE_STMT_FUNCTOR_NODES(AGATE_DISPATCH_CASE)
#undef AGATE_DISPATCH_CASE
    }
    AGATE_THROW(kInternal) << "unknown statement kind " << static_cast<int>(s.kind());
  }

#define AGATE_DECLARE_VISIT(T) \
  virtual R VisitStmt_(const T* op, const Stmt& self, Args... args) { return VisitStmtDefault_(self, std::forward<Args>(args)...); }
  AGATE_STMT_FUNCTOR_NODES(AGATE_DECLARE_VISIT)
#undef AGATE_DECLARE_VISIT

  virtual R VisitStmtDefault_(const Stmt& s, Args...) {
    AGATE_THROW(kInternal) << "no visitor for statement kind " << StmtKindName(s.kind());
  }
};

// Visits every expression and statement of a tree in evaluation order.
// Override a VisitExpr_/VisitStmt_ and call the base version to keep descending.
class IRVisitor : public ExprFunctor<void(const Expr&)>, public StmtFunctor<void(const Stmt&)> {
 public:
  using ExprFunctor<void(const Expr&)>::VisitExpr;
  using StmtFunctor<void(const Stmt&)>::VisitStmt;

#define AGATE_DECLARE_VISIT(T) void VisitExpr_(const T* op, const Expr& self) override;
  AGATE_EXPR_FUNCTOR_NODES(AGATE_DECLARE_VISIT)
#undef AGATE_DECLARE_VISIT
#define AGATE_DECLARE_VISIT(T) void VisitStmt_(const T* op, const Stmt& self) override;
  AGATE_STMT_FUNCTOR_NODES(AGATE_DECLARE_VISIT)
#undef AGATE_DECLARE_VISIT

 protected:
  // Visits e when defined (optional fields).
  void VisitOptional(const Expr& e) {
    if (e.defined()) VisitExpr(e);
  }
  void VisitOptional(const Stmt& s) {
    if (s.defined()) VisitStmt(s);
  }
};

// Rebuilds a tree bottom-up; a node whose children come back unchanged (same_as)
// is returned as is, so unchanged subtrees stay shared.
class IRMutator : public ExprFunctor<Expr(const Expr&)>, public StmtFunctor<Stmt(const Stmt&)> {
 public:
  using ExprFunctor<Expr(const Expr&)>::VisitExpr;
  using StmtFunctor<Stmt(const Stmt&)>::VisitStmt;

#define AGATE_DECLARE_VISIT(T) Expr VisitExpr_(const T* op, const Expr& self) override;
  AGATE_EXPR_FUNCTOR_NODES(AGATE_DECLARE_VISIT)
#undef AGATE_DECLARE_VISIT
#define AGATE_DECLARE_VISIT(T) Stmt VisitStmt_(const T* op, const Stmt& self) override;
  AGATE_STMT_FUNCTOR_NODES(AGATE_DECLARE_VISIT)
#undef AGATE_DECLARE_VISIT

 protected:
  Expr MutateOptional(const Expr& e) { return e.defined() ? VisitExpr(e) : e; }
  Stmt MutateOptional(const Stmt& s) { return s.defined() ? VisitStmt(s) : s; }
  // Mutates every element; *changed is set when any element changed.
  std::vector<Expr> MutateArray(const std::vector<Expr>& exprs, bool* changed);
};

// Calls fvisit on every expression and statement node of a tree, children first.
void PostOrderVisit(const Stmt& stmt, const std::function<void(const Expr*, const Stmt*)>& fvisit);
void PostOrderVisit(const Expr& expr, const std::function<void(const Expr*, const Stmt*)>& fvisit);

}  // namespace ir
}  // namespace agate

#endif  // AGATE_CORE_IR_FUNCTOR_H_
