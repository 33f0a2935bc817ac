#include "core/lower/verify.h"

#include <unordered_map>
#include <unordered_set>

#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

#define VERIFY_FAIL AGATE_THROW(kInternal) << "loop IR invalid after pass " << pass_ << ": "

class Verifier : public IRVisitor {
 public:
  Verifier(const LoweredFunc& f, const std::string& pass, const VerifyOptions& opt) : pass_(pass), opt_(opt) {
    for (const Buffer& b : f.params) {
      buffers_.insert(b->data.get());
      for (const Expr& e : b->shape) AllowFree(e);
      for (const Expr& e : b->strides) AllowFree(e);
    }
  }

  void VisitExpr_(const VarNode* op, const Expr&) override {
    if (!scope_.count(op) && !free_.count(op)) VERIFY_FAIL << "variable " << op->name << " is used outside its definition";
  }
  void VisitExpr_(const Let* op, const Expr&) override {
    VisitExpr(op->value);
    Define(op->var.get());
    VisitExpr(op->body);
    scope_.erase(op->var.get());
  }
  void VisitExpr_(const Load* op, const Expr& self) override {
    CheckBuffer(op->buffer);
    IRVisitor::VisitExpr_(op, self);
  }
  void VisitExpr_(const TensorRead* op, const Expr& self) override {
    if (opt_.flattened) VERIFY_FAIL << "tensor read of " << op->producer->producer_name() << " left after flattening";
    IRVisitor::VisitExpr_(op, self);
  }
  void VisitExpr_(const Reduce*, const Expr& self) override { VERIFY_FAIL << "reduction left in loop IR: " << self; }

  void VisitStmt_(const For* op, const Stmt&) override {
    VisitExpr(op->min);
    VisitExpr(op->extent);
    bool parallel = op->for_kind == ForKind::kParallel || op->for_kind == ForKind::kThreadBinding;
    parallel_depth_ += parallel;
    Define(op->var.get());
    VisitStmt(op->body);
    scope_.erase(op->var.get());
    parallel_depth_ -= parallel;
  }
  void VisitStmt_(const LetStmt* op, const Stmt&) override {
    VisitExpr(op->value);
    Define(op->var.get());
    VisitStmt(op->body);
    scope_.erase(op->var.get());
  }
  void VisitStmt_(const Allocate* op, const Stmt&) override {
    for (const Expr& e : op->extents) VisitExpr(e);
    if (op->scope == MemoryScope::kWorkspace && parallel_depth_ > 0)
      VERIFY_FAIL << "workspace buffer " << op->buffer->name << " allocated inside a parallel loop";
    const VarNode* data = op->buffer->data.get();
    if (opt_.unique_defs && !defined_buffers_.insert(data).second)
      VERIFY_FAIL << "buffer " << op->buffer->name << " allocated twice";
    if (buffers_.count(data)) VERIFY_FAIL << "buffer " << op->buffer->name << " allocated inside its own allocation";
    buffers_.insert(data);
    VisitStmt(op->body);
    buffers_.erase(data);
  }
  void VisitStmt_(const Store* op, const Stmt& self) override {
    CheckBuffer(op->buffer);
    IRVisitor::VisitStmt_(op, self);
  }
  void VisitStmt_(const Provide* op, const Stmt& self) override {
    if (opt_.flattened) VERIFY_FAIL << "provide of " << op->producer->producer_name() << " left after flattening";
    IRVisitor::VisitStmt_(op, self);
  }
  void VisitStmt_(const Realize* op, const Stmt& self) override {
    if (opt_.flattened) VERIFY_FAIL << "realize of " << op->producer->producer_name() << " left after flattening";
    IRVisitor::VisitStmt_(op, self);
  }

  // Symbolic shape variables used by the kernel are free by design.
  void AllowFree(const Expr& e) {
    PostOrderVisit(e, [&](const Expr* x, const Stmt*) {
      if (x && x->as<VarNode>()) free_.insert(x->as<VarNode>());
    });
  }
 private:
  void Define(const VarNode* v) {
    if (opt_.unique_defs && !defined_.insert(v).second) VERIFY_FAIL << "variable " << v->name << " is bound twice";
    scope_.insert(v);
  }
  void CheckBuffer(const Buffer& b) {
    // Buffers are identified by their data variable: views of one allocation share it.
    if (!buffers_.count(b->data.get())) VERIFY_FAIL << "buffer " << b->name << " is used outside its allocation";
  }
  std::string pass_;
  VerifyOptions opt_;
  std::unordered_set<const VarNode*> scope_, free_, defined_;
  std::unordered_set<const VarNode*> buffers_, defined_buffers_;
  int parallel_depth_ = 0;
};

}  // namespace

void VerifyLoweredFunc(const LoweredFunc& func, const std::string& after_pass, const VerifyOptions& options) {
  AGATE_CHECK(func.body.defined()) << "function " << func.name << " has no body after pass " << after_pass;
  Verifier v(func, after_pass, options);
  v.VisitStmt(func.body);
}

}  // namespace lower
}  // namespace agate
