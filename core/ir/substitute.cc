#include "core/ir/substitute.h"

#include "core/ir/functor.h"

namespace agate {
namespace ir {
namespace {

class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& map) : map_(map) {}
  Expr VisitExpr_(const VarNode* op, const Expr& self) override {
    auto it = map_.find(op);
    return it == map_.end() ? self : it->second;
  }

 private:
  const VarMap& map_;
};

class VarUseFinder : public IRVisitor {
 public:
  explicit VarUseFinder(const std::function<bool(const VarNode*)>& pred) : pred_(pred) {}
  void VisitExpr(const Expr& e) override {
    if (found) return;
    IRVisitor::VisitExpr(e);
  }
  void VisitExpr_(const VarNode* op, const Expr&) override {
    if (pred_(op)) found = true;
  }
  void VisitExpr_(const Load* op, const Expr& self) override {
    if (pred_(op->buffer->data.get())) found = true;
    IRVisitor::VisitExpr_(op, self);
  }
  void VisitStmt_(const Store* op, const Stmt& self) override {
    if (pred_(op->buffer->data.get())) found = true;
    IRVisitor::VisitStmt_(op, self);
  }
  bool found = false;

 private:
  const std::function<bool(const VarNode*)>& pred_;
};

}  // namespace

Expr Substitute(const Expr& expr, const VarMap& map) {
  if (map.empty()) return expr;
  Substituter s(map);
  return s.VisitExpr(expr);
}

Stmt Substitute(const Stmt& stmt, const VarMap& map) {
  if (map.empty()) return stmt;
  Substituter s(map);
  return s.VisitStmt(stmt);
}

bool UsesVar(const Expr& expr, const std::function<bool(const VarNode*)>& pred) {
  VarUseFinder f(pred);
  f.VisitExpr(expr);
  return f.found;
}

bool UsesVar(const Stmt& stmt, const std::function<bool(const VarNode*)>& pred) {
  VarUseFinder f(pred);
  f.VisitStmt(stmt);
  return f.found;
}

std::unordered_set<const VarNode*> CollectVars(const Expr& expr) {
  std::unordered_set<const VarNode*> vars;
  PostOrderVisit(expr, [&](const Expr* e, const Stmt*) {
    if (e && e->as<VarNode>()) vars.insert(e->as<VarNode>());
  });
  return vars;
}

}  // namespace ir
}  // namespace agate
