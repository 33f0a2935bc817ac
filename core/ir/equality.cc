#include "core/ir/equality.h"

#include <unordered_map>

#include "core/ir/functor.h"

namespace agate {
namespace ir {
namespace {

// Compares two trees in lockstep. Variables bound inside the trees are paired
// at their binding site; everything else compares by identity.
class EqualChecker {
 public:
  bool Eq(const Expr& a, const Expr& b) {
    if (a.defined() != b.defined()) return false;
    if (!a.defined() || a.same_as(b)) return true;
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    switch (a.kind()) {
      case ExprKind::kIntImm: return a.as<IntImm>()->value == b.as<IntImm>()->value;
      case ExprKind::kFloatImm: return a.as<FloatImm>()->value == b.as<FloatImm>()->value;
      case ExprKind::kVar: return VarEq(a.as<VarNode>(), b.as<VarNode>());
#define AGATE_BIN(T) \
  case T::kKind: return Eq(a.as<T>()->a, b.as<T>()->a) && Eq(a.as<T>()->b, b.as<T>()->b);
        AGATE_BIN(Add) AGATE_BIN(Sub) AGATE_BIN(Mul) AGATE_BIN(Div) AGATE_BIN(Mod) AGATE_BIN(FloorDiv)
        AGATE_BIN(FloorMod) AGATE_BIN(Min) AGATE_BIN(Max) AGATE_BIN(EQ) AGATE_BIN(NE) AGATE_BIN(LT) AGATE_BIN(LE)
        AGATE_BIN(GT) AGATE_BIN(GE) AGATE_BIN(And) AGATE_BIN(Or)
#undef AGATE_BIN
      case ExprKind::kNot: return Eq(a.as<Not>()->a, b.as<Not>()->a);
      case ExprKind::kSelect: {
        const Select *x = a.as<Select>(), *y = b.as<Select>();
        return Eq(x->condition, y->condition) && Eq(x->true_value, y->true_value) && Eq(x->false_value, y->false_value);
      }
      case ExprKind::kCast: return Eq(a.as<Cast>()->value, b.as<Cast>()->value);
      case ExprKind::kCall: return a.as<Call>()->op == b.as<Call>()->op && Eq(a.as<Call>()->args, b.as<Call>()->args);
      case ExprKind::kRamp: {
        const Ramp *x = a.as<Ramp>(), *y = b.as<Ramp>();
        return x->lanes == y->lanes && Eq(x->base, y->base) && Eq(x->stride, y->stride);
      }
      case ExprKind::kBroadcast:
        return a.as<Broadcast>()->lanes == b.as<Broadcast>()->lanes && Eq(a.as<Broadcast>()->value, b.as<Broadcast>()->value);
      case ExprKind::kLet: {
        const Let *x = a.as<Let>(), *y = b.as<Let>();
        if (!Eq(x->value, y->value)) return false;
        Bind(x->var.get(), y->var.get());
        return Eq(x->body, y->body);
      }
      case ExprKind::kLoad: {
        const Load *x = a.as<Load>(), *y = b.as<Load>();
        return BufferEq(x->buffer, y->buffer) && Eq(x->index, y->index) && Eq(x->predicate, y->predicate);
      }
      case ExprKind::kTensorRead: {
        const TensorRead *x = a.as<TensorRead>(), *y = b.as<TensorRead>();
        return x->producer == y->producer && Eq(x->indices, y->indices);
      }
      case ExprKind::kReduce: {
        const Reduce *x = a.as<Reduce>(), *y = b.as<Reduce>();
        if (x->value_index != y->value_index || x->axis.size() != y->axis.size()) return false;
        if (!ReducerEq(x->combiner, y->combiner)) return false;
        for (size_t i = 0; i < x->axis.size(); ++i) {
          if (!Eq(x->axis[i].dom().min, y->axis[i].dom().min) || !Eq(x->axis[i].dom().extent, y->axis[i].dom().extent))
            return false;
          Bind(x->axis[i].var().get(), y->axis[i].var().get());
        }
        return Eq(x->source, y->source) && Eq(x->condition, y->condition) && Eq(x->init, y->init);
      }
    }
    return false;
  }

  bool Eq(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!Eq(a[i], b[i])) return false;
    return true;
  }

  bool Eq(const Stmt& a, const Stmt& b) {
    if (a.defined() != b.defined()) return false;
    if (!a.defined() || a.same_as(b)) return true;
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
      case StmtKind::kLetStmt: {
        const LetStmt *x = a.as<LetStmt>(), *y = b.as<LetStmt>();
        if (!Eq(x->value, y->value)) return false;
        Bind(x->var.get(), y->var.get());
        return Eq(x->body, y->body);
      }
      case StmtKind::kAttrStmt: {
        const AttrStmt *x = a.as<AttrStmt>(), *y = b.as<AttrStmt>();
        return x->key == y->key && x->node_name == y->node_name && Eq(x->value, y->value) && Eq(x->body, y->body);
      }
      case StmtKind::kAssert:
        return a.as<AssertStmt>()->message == b.as<AssertStmt>()->message &&
               Eq(a.as<AssertStmt>()->condition, b.as<AssertStmt>()->condition);
      case StmtKind::kFor: {
        const For *x = a.as<For>(), *y = b.as<For>();
        if (x->for_kind != y->for_kind || x->thread_tag != y->thread_tag) return false;
        if (!Eq(x->min, y->min) || !Eq(x->extent, y->extent)) return false;
        Bind(x->var.get(), y->var.get());
        return Eq(x->body, y->body);
      }
      case StmtKind::kIfThenElse: {
        const IfThenElse *x = a.as<IfThenElse>(), *y = b.as<IfThenElse>();
        return Eq(x->condition, y->condition) && Eq(x->then_case, y->then_case) && Eq(x->else_case, y->else_case);
      }
      case StmtKind::kStore: {
        const Store *x = a.as<Store>(), *y = b.as<Store>();
        return BufferEq(x->buffer, y->buffer) && Eq(x->value, y->value) && Eq(x->index, y->index) &&
               Eq(x->predicate, y->predicate);
      }
      case StmtKind::kAllocate: {
        const Allocate *x = a.as<Allocate>(), *y = b.as<Allocate>();
        if (x->alignment != y->alignment || x->scope != y->scope || x->workspace_offset != y->workspace_offset ||
            x->buffer->dtype != y->buffer->dtype || !Eq(x->extents, y->extents))
          return false;
        buffers_[x->buffer.get()] = y->buffer.get();
        Bind(x->buffer->data.get(), y->buffer->data.get());
        return Eq(x->body, y->body);
      }
      case StmtKind::kSeq: {
        const Seq *x = a.as<Seq>(), *y = b.as<Seq>();
        if (x->stmts.size() != y->stmts.size()) return false;
        for (size_t i = 0; i < x->stmts.size(); ++i)
          if (!Eq(x->stmts[i], y->stmts[i])) return false;
        return true;
      }
      case StmtKind::kEvaluate: return Eq(a.as<Evaluate>()->value, b.as<Evaluate>()->value);
      case StmtKind::kProvide: {
        const Provide *x = a.as<Provide>(), *y = b.as<Provide>();
        return x->producer == y->producer && Eq(x->value, y->value) && Eq(x->indices, y->indices);
      }
      case StmtKind::kRealize: {
        const Realize *x = a.as<Realize>(), *y = b.as<Realize>();
        if (x->producer != y->producer || x->scope != y->scope || x->bounds.size() != y->bounds.size()) return false;
        for (size_t i = 0; i < x->bounds.size(); ++i)
          if (!Eq(x->bounds[i].min, y->bounds[i].min) || !Eq(x->bounds[i].extent, y->bounds[i].extent)) return false;
        return Eq(x->body, y->body);
      }
    }
    return false;
  }

 private:
  void Bind(const VarNode* a, const VarNode* b) { vars_[a] = b; }
  bool VarEq(const VarNode* a, const VarNode* b) {
    auto it = vars_.find(a);
    return it != vars_.end() ? it->second == b : a == b;
  }
  bool BufferEq(const Buffer& a, const Buffer& b) {
    if (a.same_as(b)) return true;
    auto it = buffers_.find(a.get());
    return it != buffers_.end() && it->second == b.get();
  }
  bool ReducerEq(const CommReducer& a, const CommReducer& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a.lhs[i].dtype() != b.lhs[i].dtype() || a.rhs[i].dtype() != b.rhs[i].dtype()) return false;
      Bind(a.lhs[i].get(), b.lhs[i].get());
      Bind(a.rhs[i].get(), b.rhs[i].get());
    }
    return Eq(a.result, b.result) && Eq(a.identity_element, b.identity_element);
  }

  std::unordered_map<const VarNode*, const VarNode*> vars_;
  std::unordered_map<const BufferNode*, const BufferNode*> buffers_;
};

// Hashes bound variables by the order in which they were bound.
class Hasher : public IRVisitor {
 public:
  size_t hash = 0x9e3779b97f4a7c15ULL;

  void Mix(size_t v) { hash ^= v + 0x9e3779b97f4a7c15ULL + (hash << 6) + (hash >> 2); }
  void Bind(const VarNode* v) { bound_[v] = bound_.size() + 1; }

  void VisitExpr(const Expr& e) override {
    if (!e.defined()) {
      Mix(7);
      return;
    }
    Mix(static_cast<size_t>(e.kind()) * 131 + 17);
    Mix(e.dtype().Hash());
    IRVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    Mix(static_cast<size_t>(s.kind()) * 977 + 3);
    IRVisitor::VisitStmt(s);
  }
  void VisitExpr_(const IntImm* op, const Expr&) override { Mix(std::hash<int64_t>()(op->value)); }
  void VisitExpr_(const FloatImm* op, const Expr&) override { Mix(std::hash<double>()(op->value)); }
  void VisitExpr_(const VarNode* op, const Expr&) override {
    auto it = bound_.find(op);
    Mix(it != bound_.end() ? it->second * 1000003 : std::hash<const void*>()(op));
  }
  void VisitExpr_(const Call* op, const Expr& self) override {
    Mix(static_cast<size_t>(op->op));
    IRVisitor::VisitExpr_(op, self);
  }
  void VisitExpr_(const Ramp* op, const Expr& self) override {
    Mix(op->lanes);
    IRVisitor::VisitExpr_(op, self);
  }
  void VisitExpr_(const Let* op, const Expr&) override {
    VisitExpr(op->value);
    Bind(op->var.get());
    VisitExpr(op->body);
  }
  void VisitExpr_(const Load* op, const Expr& self) override {
    MixBuffer(op->buffer);
    IRVisitor::VisitExpr_(op, self);
  }
  void VisitExpr_(const TensorRead* op, const Expr& self) override {
    Mix(std::hash<const void*>()(op->producer.get()));
    IRVisitor::VisitExpr_(op, self);
  }
  void VisitExpr_(const Reduce* op, const Expr& self) override {
    for (const IterVar& iv : op->axis) Bind(iv.var().get());
    for (size_t i = 0; i < op->combiner.size(); ++i) {
      Bind(op->combiner.lhs[i].get());
      Bind(op->combiner.rhs[i].get());
      VisitExpr(op->combiner.result[i]);
    }
    IRVisitor::VisitExpr_(op, self);
  }
  void VisitStmt_(const LetStmt* op, const Stmt&) override {
    VisitExpr(op->value);
    Bind(op->var.get());
    VisitStmt(op->body);
  }
  void VisitStmt_(const AttrStmt* op, const Stmt& self) override {
    Mix(std::hash<std::string>()(op->key));
    IRVisitor::VisitStmt_(op, self);
  }
  void VisitStmt_(const For* op, const Stmt&) override {
    Mix(static_cast<size_t>(op->for_kind));
    VisitExpr(op->min);
    VisitExpr(op->extent);
    Bind(op->var.get());
    VisitStmt(op->body);
  }
  void VisitStmt_(const Store* op, const Stmt& self) override {
    MixBuffer(op->buffer);
    IRVisitor::VisitStmt_(op, self);
  }
  void VisitStmt_(const Allocate* op, const Stmt& self) override {
    bound_buffers_[op->buffer.get()] = bound_buffers_.size() + 1;
    Bind(op->buffer->data.get());
    Mix(static_cast<size_t>(op->scope));
    IRVisitor::VisitStmt_(op, self);
  }
  void VisitStmt_(const Provide* op, const Stmt& self) override {
    Mix(std::hash<const void*>()(op->producer.get()));
    IRVisitor::VisitStmt_(op, self);
  }
  void VisitStmt_(const Realize* op, const Stmt& self) override {
    Mix(std::hash<const void*>()(op->producer.get()));
    IRVisitor::VisitStmt_(op, self);
  }

 private:
  void MixBuffer(const Buffer& b) {
    auto it = bound_buffers_.find(b.get());
    Mix(it != bound_buffers_.end() ? it->second * 7919 : std::hash<const void*>()(b.get()));
  }
  std::unordered_map<const VarNode*, size_t> bound_;
  std::unordered_map<const BufferNode*, size_t> bound_buffers_;
};

}  // namespace

bool StructuralEqual(const Expr& a, const Expr& b) { return EqualChecker().Eq(a, b); }
bool StructuralEqual(const Stmt& a, const Stmt& b) { return EqualChecker().Eq(a, b); }

size_t StructuralHash(const Expr& e) {
  Hasher h;
  h.VisitExpr(e);
  return h.hash;
}
size_t StructuralHash(const Stmt& s) {
  Hasher h;
  h.VisitStmt(s);
  return h.hash;
}

}  // namespace ir
}  // namespace agate
