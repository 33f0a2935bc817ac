#include "core/lower/unique_defs.h"

#include <unordered_map>
#include <unordered_set>

#include "core/ir/functor.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

class Renamer : public IRMutator {
 public:
  Expr VisitExpr_(const VarNode* op, const Expr& self) override {
    auto it = vars_.find(op);
    return it == vars_.end() ? self : it->second;
  }
  Expr VisitExpr_(const Let* op, const Expr&) override {
    Expr v = VisitExpr(op->value);
    Var nv = Define(op->var);
    Expr b = VisitExpr(op->body);
    Undefine(op->var);
    return Let::make(nv, v, b);
  }
  Expr VisitExpr_(const Load* op, const Expr& self) override {
    Expr e = IRMutator::VisitExpr_(op, self);
    auto it = buffers_.find(op->buffer.get());
    if (it == buffers_.end()) return e;
    const Load* l = e.as<Load>();
    return Load::make(it->second, l->index, l->predicate);
  }
  Stmt VisitStmt_(const Store* op, const Stmt& self) override {
    Stmt s = IRMutator::VisitStmt_(op, self);
    auto it = buffers_.find(op->buffer.get());
    if (it == buffers_.end()) return s;
    const Store* st = s.as<Store>();
    return Store::make(it->second, st->value, st->index, st->predicate);
  }
  Stmt VisitStmt_(const For* op, const Stmt&) override {
    Expr m = VisitExpr(op->min), e = VisitExpr(op->extent);
    Var nv = Define(op->var);
    Stmt b = VisitStmt(op->body);
    Undefine(op->var);
    return For::make(nv, m, e, op->for_kind, b, op->thread_tag);
  }
  Stmt VisitStmt_(const LetStmt* op, const Stmt&) override {
    Expr v = VisitExpr(op->value);
    Var nv = Define(op->var);
    Stmt b = VisitStmt(op->body);
    Undefine(op->var);
    return LetStmt::make(nv, v, b);
  }
  Stmt VisitStmt_(const Allocate* op, const Stmt&) override {
    bool changed = false;
    std::vector<Expr> ext = MutateArray(op->extents, &changed);
    Buffer buf = op->buffer;
    bool renamed = !seen_buffers_.insert(buf.get()).second;
    if (renamed) {
      auto node = std::make_shared<BufferNode>(*buf.get());
      node->data = Var(buf->data.name(), buf->data.dtype());
      buf = Buffer(node);
      buffers_[op->buffer.get()] = buf;
    }
    Stmt b = VisitStmt(op->body);
    if (renamed) buffers_.erase(op->buffer.get());
    return Allocate::make(buf, ext, op->alignment, op->scope, b, op->workspace_offset);
  }

 private:
  Var Define(const Var& v) {
    if (seen_.insert(v.get()).second) return v;
    Var nv(v.name(), v.dtype());
    vars_[v.get()] = nv;
    return nv;
  }
  void Undefine(const Var& v) { vars_.erase(v.get()); }

  std::unordered_set<const VarNode*> seen_;
  std::unordered_map<const VarNode*, Expr> vars_;
  std::unordered_set<const BufferNode*> seen_buffers_;
  std::unordered_map<const BufferNode*, Buffer> buffers_;
};

}  // namespace

Stmt UniqueDefs(const Stmt& stmt) {
  Renamer r;
  return r.VisitStmt(stmt);
}

}  // namespace lower
}  // namespace agate
