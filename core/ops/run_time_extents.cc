#include "core/ops/run_time_extents.h"

#include <algorithm>

#include "core/ops/op_context.h"
#include "core/ops/registry.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

Tensor ExtentsTensor(const std::vector<Expr>& extents, const std::string& name) {
  int rank = static_cast<int>(extents.size());
  return te::compute({Expr(int64_t{rank})}, [&](const std::vector<Var>& o) {
    Expr e = extents[rank - 1];
    for (int d = rank - 2; d >= 0; --d) e = ir::select(Expr(o[0]) == Expr(int64_t{d}), extents[d], e);
    return ir::cast(ir::DType::Int(64), e);
  }, name, tag::kInjective);
}

std::vector<Expr> CompactIndex(Expr flat, const std::vector<Expr>& extents, const graph::Shape& bounds) {
  int rank = static_cast<int>(extents.size());
  std::vector<Expr> index(rank);
  for (int d = rank - 1; d >= 0; --d) {
    Expr extent = ir::max(extents[d], Expr(int64_t{1}));
    index[d] = ir::min(ir::floormod(flat, extent), Expr(std::max<int64_t>(bounds[d] - 1, 0)));
    flat = ir::floordiv(flat, extent);
  }
  return index;
}

namespace {

// RunTimeRowExtents (core/graph/ops_tensor.cc): the bound shape with the source's row count on
// the rows' axis.
std::vector<Tensor> RunTimeRowExtentsOp(const OpContext& ctx) {
  const std::vector<int64_t> shape = ctx.attrs().GetInts("shape");
  const int64_t axis = ctx.attrs().GetInt("axis", 0);
  std::vector<Expr> extents;
  for (size_t d = 0; d < shape.size(); ++d) {
    extents.push_back(static_cast<int64_t>(d) == axis ? ctx.input(0)({Expr(ctx.attrs().GetInt("source_axis", 0))})
                                                      : Expr(shape[d]));
  }
  return {ExtentsTensor(extents, ctx.node().outputs[0])};
}

}  // namespace

void RegisterRunTimeExtentsOps(OpTable* t) { t->Register("RunTimeRowExtents", RunTimeRowExtentsOp); }

}  // namespace ops
}  // namespace agate
