#include "core/lower/loop_partition.h"

#include <optional>

#include "core/ir/functor.h"
#include "core/ir/substitute.h"
#include "core/lower/analyzer.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

// Finds, inside a loop over `var`, the last value of var for which some guard
// `e < bound` (with e linear in var, positive coefficient, other terms bounded
// by inner loops) holds for every inner iteration.
class SplitPointFinder : public IRVisitor {
 public:
  SplitPointFinder(const Var& var, int64_t lo, int64_t hi) : var_(var), lo_(lo), hi_(hi) {}

  void VisitStmt_(const For* op, const Stmt& self) override {
    int64_t m, e;
    if (!is_const_int(op->min, &m) || !is_const_int(op->extent, &e)) return;  // unknown inner range
    an_.Bind(op->var, op->min, op->extent);
    IRVisitor::VisitStmt_(op, self);
    an_.Unbind(op->var);
  }
  void VisitStmt_(const IfThenElse* op, const Stmt& self) override {
    Consider(op->condition);
    IRVisitor::VisitStmt_(op, self);
  }

  std::optional<int64_t> split;  // last var value with the guard always true

 private:
  void Consider(const Expr& cond) {
    if (const And* a = cond.as<And>()) {
      Consider(a->a);
      Consider(a->b);
      return;
    }
    const LT* lt = cond.as<LT>();
    if (!lt || !lt->a.dtype().is_integer() || !lt->a.dtype().is_scalar()) return;
    Expr d = Simplify(lt->a - lt->b);
    // Coefficient of var: d(var = 1) - d(var = 0) must be a positive constant and d linear in var.
    Expr d0 = Simplify(Substitute(d, VarMap{{var_.get(), make_zero(var_.dtype())}}));
    Expr d1 = Simplify(Substitute(d, VarMap{{var_.get(), make_const(var_.dtype(), 1)}}));
    Expr d2 = Simplify(Substitute(d, VarMap{{var_.get(), make_const(var_.dtype(), 2)}}));
    int64_t a, a2;
    if (!is_const_int(Simplify(d1 - d0), &a) || !is_const_int(Simplify(d2 - d1), &a2) || a != a2 || a <= 0) return;
    // Three samples cannot tell floormod(var, 3) from var: the rest of d must not
    // depend on var at all (d = a*var + rest), else the guard is not linear in it.
    Expr rest = Simplify(d - make_const(var_.dtype(), a) * var_);
    if (UsesVar(rest, [&](const VarNode* v) { return v == var_.get(); })) return;
    ConstIntBound rb = an_.ConstBound(d0);  // the rest, over the inner loops
    if (rb.max == ConstIntBound::kPosInf || rb.min == ConstIntBound::kNegInf) return;
    // a*v + rest < 0 for every rest  <=>  v <= floor((-rest.max - 1) / a)
    int64_t num = -rb.max - 1;
    int64_t v = num >= 0 ? num / a : -((-num + a - 1) / a);
    if (v < lo_ || v >= hi_) return;  // true nowhere or everywhere: nothing to split
    if (!split || v < *split) split = v;
  }

  Var var_;
  int64_t lo_, hi_;
  Analyzer an_;
};

class Partitioner : public IRMutator {
 public:
  Stmt VisitStmt_(const For* op, const Stmt& self) override {
    int64_t m, e;
    // A parallel loop is not partitioned: each part would be a fork/join of its
    // own, and a one-iteration tail would run on one thread while the others
    // wait. Its guards stay; loops inside it are partitioned instead.
    if (op->for_kind == ForKind::kVectorized || op->for_kind == ForKind::kThreadBinding ||
        op->for_kind == ForKind::kParallel ||
        !is_const_int(op->min, &m) || !is_const_int(op->extent, &e) || e < 2 || depth_ >= kMaxDepth) {
      return IRMutator::VisitStmt_(op, self);
    }
    SplitPointFinder finder(op->var, m, m + e - 1);
    finder.VisitStmt(op->body);
    if (!finder.split) return IRMutator::VisitStmt_(op, self);
    int64_t s = *finder.split + 1;
    Var tail_var = op->var.copy_with_suffix(".tail");
    Stmt tail_body = Substitute(op->body, VarMap{{op->var.get(), tail_var}});
    Analyzer an;
    Stmt main = an.Simplify(For::make(op->var, op->min, Expr(s - m), op->for_kind, op->body, op->thread_tag));
    Stmt tail = an.Simplify(For::make(tail_var, Expr(s), Expr(m + e - s), op->for_kind, tail_body, op->thread_tag));
    ++depth_;
    Stmt out = Seq::make({VisitStmt(main), VisitStmt(tail)});
    --depth_;
    return out;
  }

 private:
  // Each partition duplicates the loop body; nested partitions multiply the
  // copies, so at most kMaxDepth partitions are nested.
  static constexpr int kMaxDepth = 3;
  int depth_ = 0;
};

}  // namespace

Stmt PartitionLoops(const Stmt& stmt) {
  Partitioner p;
  return p.VisitStmt(stmt);
}

}  // namespace lower
}  // namespace agate
