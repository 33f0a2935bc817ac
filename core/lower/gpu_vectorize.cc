#include "core/lower/gpu_vectorize.h"

#include "core/ir/divisor.h"
#include "core/ir/functor.h"
#include "core/ir/substitute.h"
#include "core/lower/analyzer.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

class Preparer : public IRMutator {
 public:
  explicit Preparer(int max_bytes) : max_bytes_(max_bytes) {}

  Stmt VisitStmt_(const For* op, const Stmt& self) override {
    an_.Bind(op->var, op->min, op->extent);
    Stmt s = IRMutator::VisitStmt_(op, self);
    an_.Unbind(op->var);
    if (op->for_kind != ForKind::kVectorized || Wide(s.as<For>())) return s;
    const For* f = s.as<For>();
    return For::make(f->var, f->min, f->extent, ForKind::kUnrolled, f->body, f->thread_tag);
  }

 private:
  bool Wide(const For* op) {
    int64_t lanes = 0;
    if (!is_zero(op->min) || !is_const_int(op->extent, &lanes) || lanes < 2) return false;
    bool ok = true;
    auto check = [&](const Buffer& b, const Expr& index) {
      if (!UsesVar(index, [&](const VarNode* v) { return v == op->var.get(); })) return;
      int64_t bytes = lanes * b->dtype.element_bytes();
      Expr step = an_.Simplify(Substitute(index, VarMap{{op->var.get(), op->var + Expr(int64_t{1})}}) - index);
      Expr base = an_.Simplify(Substitute(index, VarMap{{op->var.get(), make_zero(op->var.dtype())}}));
      ok = ok && is_one(step) && (bytes == 8 || bytes == 16) && bytes <= max_bytes_ && b->alignment >= bytes &&
           KnownDivisor(base) % lanes == 0;
    };
    PostOrderVisit(op->body, [&](const Expr* e, const Stmt* s) {
      if (e && e->as<Load>()) check(e->as<Load>()->buffer, e->as<Load>()->index);
      if (s && s->as<Store>()) check(s->as<Store>()->buffer, s->as<Store>()->index);
      if (s && (s->as<For>() || s->as<IfThenElse>() || s->as<Allocate>())) ok = false;
      if (e && e->as<Load>() && e->as<Load>()->predicate.defined()) ok = false;
    });
    return ok;
  }

  int max_bytes_;
  Analyzer an_;
};

}  // namespace

Stmt PrepareGpuVectorize(const Stmt& body, int max_vector_bytes) { return Preparer(max_vector_bytes).VisitStmt(body); }

}  // namespace lower
}  // namespace agate
