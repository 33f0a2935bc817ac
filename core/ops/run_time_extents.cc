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

// Coordinates in `bounds` of the row-major offset `flat` (in [0, numel)).
std::vector<Expr> CoordinatesOf(Expr flat, const graph::Shape& bounds) {
  std::vector<Expr> index(bounds.size());
  for (int d = static_cast<int>(bounds.size()) - 1; d >= 0; --d) {
    index[d] = d == 0 ? flat : ir::floormod(flat, Expr(bounds[d]));
    if (d > 0) flat = ir::floordiv(flat, Expr(bounds[d]));
  }
  return index;
}

std::vector<Expr> ExtentsOf(const Tensor& extents, size_t rank) {
  std::vector<Expr> out;
  for (size_t d = 0; d < rank; ++d) out.push_back(ir::cast(ir::DType::Index(), extents({Expr(static_cast<int64_t>(d))})));
  return out;
}

// RunTimeToBoundLayout (core/graph/ops_tensor.cc): element o of the bound layout is element
// sum_d o_d * (product of the extents after d) of the compact input. Coordinates past the
// extents read some element in bounds (they are never read downstream).
std::vector<Tensor> RunTimeToBoundLayoutOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const graph::Shape bounds = StaticShape(x);
  const std::vector<Expr> extents = ExtentsOf(ctx.input(1), bounds.size());
  const int64_t last = std::max<int64_t>(graph::NumElements(bounds) - 1, 0);
  return {te::compute(x.shape(), [&](const std::vector<Var>& o) {
    Expr flat = Expr(int64_t{0});
    for (size_t d = 0; d < bounds.size(); ++d) flat = flat * extents[d] + Expr(o[d]);
    return x(CoordinatesOf(ir::max(ir::min(flat, Expr(last)), Expr(int64_t{0})), bounds));
  }, ctx.node().outputs[0], tag::kInjective)};
}

// RunTimeToCompactLayout: element k of the compact output (row-major over the extents) is the
// bound-layout input at its coordinates.
std::vector<Tensor> RunTimeToCompactLayoutOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const graph::Shape bounds = StaticShape(x);
  const std::vector<Expr> extents = ExtentsOf(ctx.input(1), bounds.size());
  return {te::compute(x.shape(), [&](const std::vector<Var>& o) {
    Expr flat = Expr(int64_t{0});
    for (size_t d = 0; d < bounds.size(); ++d) flat = flat * Expr(bounds[d]) + Expr(o[d]);
    return x(CompactIndex(flat, extents, bounds));
  }, ctx.node().outputs[0], tag::kInjective)};
}

}  // namespace

void RegisterRunTimeExtentsOps(OpTable* t) {
  t->Register("RunTimeRowExtents", RunTimeRowExtentsOp);
  t->Register("RunTimeToBoundLayout", RunTimeToBoundLayoutOp);
  t->Register("RunTimeToCompactLayout", RunTimeToCompactLayoutOp);
}

}  // namespace ops
}  // namespace agate
