#include "core/lower/loop_partition.h"

#include <algorithm>

#include "core/ir/functor.h"
#include "core/ir/substitute.h"
#include "core/lower/analyzer.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

// floor(a / b) for b > 0 (no negation: a may be INT64_MIN).
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// Bounds and coefficients past this are left alone: the split points below add
// and negate them, which must not overflow.
constexpr int64_t kMaxMagnitude = int64_t{1} << 62;

// The guard `cond` as `d < 0` (integers: a <= b is a - b - 1 < 0); undefined for
// other conditions.
Expr AsNegative(const Expr& cond) {
  auto integral = [](const Expr& e) { return e.dtype().is_integer() && e.dtype().is_scalar(); };
  if (const LT* c = cond.as<LT>()) return integral(c->a) ? c->a - c->b : Expr();
  if (const LE* c = cond.as<LE>()) return integral(c->a) ? c->a - c->b - make_const(c->a.dtype(), 1) : Expr();
  if (const GT* c = cond.as<GT>()) return integral(c->a) ? c->b - c->a : Expr();
  if (const GE* c = cond.as<GE>()) return integral(c->a) ? c->b - c->a - make_const(c->a.dtype(), 1) : Expr();
  return Expr();
}

// Finds, inside a loop over `var` in [lo, hi], the values of var for which every guard
// linear in it holds for every inner iteration: from `first` to `last` (a guard that
// grows with var bounds `last`, one that shrinks bounds `first`).
class SplitPointFinder : public IRVisitor {
 public:
  SplitPointFinder(const Var& var, int64_t lo, int64_t hi) : var_(var), lo_(lo), hi_(hi), first(lo), last(hi) {}

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
  void VisitExpr_(const Select* op, const Expr& self) override {
    Consider(op->condition);
    IRVisitor::VisitExpr_(op, self);
  }

  // Whether some guard holds on a part of [lo, hi] only: the loop is worth cutting.
  bool found() const { return first <= last && (first > lo_ || last < hi_); }

  int64_t first, last;  // the values of var where every guard found always holds

 private:
  void Consider(const Expr& cond) {
    if (const And* a = cond.as<And>()) {
      Consider(a->a);
      Consider(a->b);
      return;
    }
    Expr negative = AsNegative(cond);
    if (!negative.defined()) return;
    Expr d = Simplify(negative);
    // Coefficient of var: d(var = 1) - d(var = 0) must be a nonzero constant and d linear in var.
    Expr d0 = Simplify(Substitute(d, VarMap{{var_.get(), make_zero(var_.dtype())}}));
    Expr d1 = Simplify(Substitute(d, VarMap{{var_.get(), make_const(var_.dtype(), 1)}}));
    Expr d2 = Simplify(Substitute(d, VarMap{{var_.get(), make_const(var_.dtype(), 2)}}));
    int64_t a, a2;
    if (!is_const_int(Simplify(d1 - d0), &a) || !is_const_int(Simplify(d2 - d1), &a2) || a != a2 || a == 0) return;
    // Three samples cannot tell floormod(var, 3) from var: the rest of d must not
    // depend on var at all (d = a*var + rest), else the guard is not linear in it.
    Expr rest = Simplify(d - make_const(var_.dtype(), a) * var_);
    if (UsesVar(rest, [&](const VarNode* v) { return v == var_.get(); })) return;
    ConstIntBound rb = an_.ConstBound(d0);  // the rest, over the inner loops
    if (rb.max == ConstIntBound::kPosInf || rb.min == ConstIntBound::kNegInf) return;
    if (rb.max > kMaxMagnitude || rb.max < -kMaxMagnitude || a > kMaxMagnitude || a < -kMaxMagnitude) return;
    if (a > 0) {
      // a*v + rest < 0 for every rest  <=>  v <= floor((-rest.max - 1) / a)
      int64_t v = FloorDiv(-rb.max - 1, a);
      if (v < lo_ || v >= hi_) return;  // true nowhere or everywhere: nothing to split
      last = std::min(last, v);
    } else {
      // rest - |a|*v < 0 for every rest  <=>  v >= floor(rest.max / |a|) + 1
      int64_t v = FloorDiv(rb.max, -a) + 1;
      if (v > hi_ || v <= lo_) return;
      first = std::max(first, v);
    }
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
    if (!finder.found()) return IRMutator::VisitStmt_(op, self);
    // [m, first) head, [first, last] the part every guard holds in, (last, m + e) tail.
    std::vector<Stmt> parts;
    ++depth_;
    if (finder.first > m) parts.push_back(VisitStmt(Part(op, ".head", m, finder.first)));
    parts.push_back(VisitStmt(Part(op, "", finder.first, finder.last + 1)));
    if (finder.last < m + e - 1) parts.push_back(VisitStmt(Part(op, ".tail", finder.last + 1, m + e)));
    --depth_;
    return Seq::make(parts);
  }

 private:
  // The loop over [begin, end) (its variable renamed by `suffix` where it is not the main
  // part), simplified knowing the range.
  static Stmt Part(const For* op, const std::string& suffix, int64_t begin, int64_t end) {
    Var var = op->var;
    Stmt body = op->body;
    if (!suffix.empty()) {
      var = op->var.copy_with_suffix(suffix);
      body = Substitute(op->body, VarMap{{op->var.get(), var}});
    }
    Analyzer an;
    DType t = op->var.dtype();
    return an.Simplify(For::make(var, make_const(t, begin), make_const(t, end - begin), op->for_kind, body, op->thread_tag));
  }

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
