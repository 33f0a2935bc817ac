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
    Buffer b = Rebind(op->buffer);
    if (b.same_as(op->buffer)) return e;
    const Load* l = e.as<Load>();
    return Load::make(b, l->index, l->predicate);
  }
  Stmt VisitStmt_(const Store* op, const Stmt& self) override {
    Stmt s = IRMutator::VisitStmt_(op, self);
    Buffer b = Rebind(op->buffer);
    if (b.same_as(op->buffer)) return s;
    const Store* st = s.as<Store>();
    return Store::make(b, st->value, st->index, st->predicate);
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
    const VarNode* data = op->buffer->data.get();
    bool renamed = !seen_buffers_.insert(data).second;
    if (renamed) data_[data] = Var(op->buffer->data.name(), op->buffer->data.dtype());
    Buffer buf = Rebind(op->buffer);
    Stmt b = VisitStmt(op->body);
    if (renamed) {
      data_.erase(data);
      rebound_.clear();
    }
    return Allocate::make(buf, ext, op->alignment, op->scope, b, op->workspace_offset);
  }

 private:
  // The buffer (or a view of it) with its allocation's renamed data variable.
  Buffer Rebind(const Buffer& b) {
    auto it = data_.find(b->data.get());
    if (it == data_.end()) return b;
    auto r = rebound_.find(b.get());
    if (r != rebound_.end()) return r->second;
    auto node = std::make_shared<BufferNode>(*b.get());
    node->data = it->second;
    Buffer nb(node);
    rebound_[b.get()] = nb;
    return nb;
  }

  Var Define(const Var& v) {
    if (seen_.insert(v.get()).second) return v;
    Var nv(v.name(), v.dtype());
    vars_[v.get()] = nv;
    return nv;
  }
  void Undefine(const Var& v) { vars_.erase(v.get()); }

  std::unordered_set<const VarNode*> seen_;
  std::unordered_map<const VarNode*, Expr> vars_;
  std::unordered_set<const VarNode*> seen_buffers_;
  std::unordered_map<const VarNode*, Var> data_;
  std::unordered_map<const BufferNode*, Buffer> rebound_;
};

}  // namespace

Stmt UniqueDefs(const Stmt& stmt) {
  Renamer r;
  return r.VisitStmt(stmt);
}

}  // namespace lower
}  // namespace agate
