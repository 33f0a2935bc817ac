// AffineGrid in the operator library: the sampling grid of an affine transform,
// grid[n, p..., j] = sum_i theta[n, j, i] * base_i(p), where base is the
// normalized coordinate of output point p (innermost axis first) followed by 1.
//
// Why an injective compute: each grid value is a (k+1)-term dot product with a
// base coordinate known from the output index alone, so there is nothing to
// stage; the injective schedule parallelizes and vectorizes it, and a consumer
// in the same group reads it without a buffer.
#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using te::Expr;
using te::Tensor;
using te::Var;

// Point i of an axis of `size` points in [-1, 1] (0 for a single point, as PyTorch).
Expr BaseCoordinate(const Expr& i, int64_t size, bool align_corners, ir::DType t) {
  if (size == 1) return ir::make_zero(t);
  Expr fi = ir::cast(t, i);
  if (align_corners) return fi * ir::make_const(t, 2.0 / (size - 1)) - ir::make_const(t, 1);
  return fi * ir::make_const(t, 2.0 / size) + ir::make_const(t, 1.0 / size - 1);
}

std::vector<Tensor> AffineGridOp(const OpContext& ctx) {
  const Tensor& theta = ctx.input(0);
  AGATE_REQUIRE(theta.dtype().is_float(), kUnsupported)
      << ctx.Describe() << ": AffineGrid of theta " << ctx.input_type(0).ToString();
  bool align = ctx.attrs().GetInt("align_corners", 0) != 0;
  graph::Shape out = ctx.output_type(0).shape;
  int64_t k = out.back();
  ir::DType t = theta.dtype().bits() == 64 ? ir::DType::Float(64) : ir::DType::Float(32);
  Tensor grid = te::compute(ToExprShape(out), [&](const std::vector<Var>& o) {
    std::vector<Expr> base;
    for (int64_t i = 0; i < k; ++i) base.push_back(BaseCoordinate(o[k - i], out[k - i], align, t));
    Expr v = ir::cast(t, theta(o[0], o.back(), Expr(k)));
    for (int64_t i = 0; i < k; ++i) v = v + ir::cast(t, theta(o[0], o.back(), Expr(i))) * base[i];
    return ir::cast(theta.dtype(), v);
  }, ctx.node().outputs[0], tag::kInjective);
  return {grid};
}

}  // namespace

void RegisterAffineGridOps(OpTable* t) { t->Register("AffineGrid", AffineGridOp); }

}  // namespace ops
}  // namespace agate
