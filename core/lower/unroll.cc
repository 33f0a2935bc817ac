#include "core/lower/unroll.h"

#include "core/ir/functor.h"
#include "core/ir/substitute.h"
#include "core/lower/analyzer.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

class Unroller : public IRMutator {
 public:
  explicit Unroller(int max_extent) : max_extent_(max_extent) {}
  Stmt VisitStmt_(const For* op, const Stmt& self) override {
    Stmt s = IRMutator::VisitStmt_(op, self);
    const For* f = s.as<For>();
    int64_t extent;
    if (f->for_kind != ForKind::kUnrolled || !is_const_int(f->extent, &extent) || extent > max_extent_) return s;
    std::vector<Stmt> copies;
    for (int64_t i = 0; i < extent; ++i) {
      copies.push_back(Simplify(Substitute(f->body, VarMap{{f->var.get(), f->min + Expr(i)}})));
    }
    return Seq::make(copies);
  }

 private:
  int max_extent_;
};

}  // namespace

Stmt UnrollLoops(const Stmt& stmt, int max_extent) {
  Unroller u(max_extent);
  return u.VisitStmt(stmt);
}

}  // namespace lower
}  // namespace agate
