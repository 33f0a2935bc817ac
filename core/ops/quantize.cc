#include "core/ops/quantize.h"

#include "core/graph/shape_rules.h"
#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

namespace {

Expr I(int64_t v) { return Expr(v); }

std::vector<Expr> Exprs(const std::vector<Var>& v) { return std::vector<Expr>(v.begin(), v.end()); }

// A quantization parameter: a scalar, one value per element of `axis`, or (block_size > 0) one
// per block of block_size elements along `axis`, the other axes as the input's.
Expr QuantParam(const OpContext& ctx, int input, const std::vector<Var>& o) {
  const Tensor& p = ctx.input(input);
  graph::Shape ps = StaticShape(p);
  int64_t block = ctx.attrs().GetInt("block_size", 0);
  if (graph::NumElements(ps) == 1 && block == 0) return p(std::vector<Expr>(ps.size(), I(0)));
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", 1), static_cast<int>(o.size()), ctx.Describe());
  if (block == 0) return p(o[axis]);
  std::vector<Expr> index = Exprs(o);
  index[axis] = ir::floordiv(o[axis], I(block));
  return p(index);
}

std::vector<Tensor> QuantizeOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  ir::DType out = ctx.output_type(0).dtype;
  AGATE_REQUIRE(out == ir::DType::UInt(8) || out == ir::DType::Int(8), kUnsupported)
      << ctx.Describe() << ": quantize to " << out;
  double lo = out == ir::DType::Int(8) ? -128 : 0, hi = out == ir::DType::Int(8) ? 127 : 255;
  return {te::compute(x.shape(), [&](const std::vector<Var>& o) {
    ir::DType f = x.dtype();
    Expr v = ir::round(x(Exprs(o)) / ir::cast(f, QuantParam(ctx, 1, o)));
    if (ctx.has_input(2)) v = v + ir::cast(f, QuantParam(ctx, 2, o));
    v = ir::min(ir::max(v, ir::make_const(f, lo)), ir::make_const(f, hi));
    return ir::cast(out, v);
  }, ctx.node().outputs[0], tag::kElemwise)};
}

std::vector<Tensor> DequantizeOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  ir::DType out = ctx.output_type(0).dtype;
  return {te::compute(x.shape(), [&](const std::vector<Var>& o) {
    Expr v = ir::cast(out, x(Exprs(o)));
    if (ctx.has_input(2)) v = v - ir::cast(out, QuantParam(ctx, 2, o));
    return v * ir::cast(out, QuantParam(ctx, 1, o));
  }, ctx.node().outputs[0], tag::kElemwise)};
}

}  // namespace

void RegisterQuantizeOps(OpTable* t) {
  t->Register("QuantizeLinear", QuantizeOp);
  t->Register("DequantizeLinear", DequantizeOp);
}

}  // namespace ops
}  // namespace agate
