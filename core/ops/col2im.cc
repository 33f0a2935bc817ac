// Col2Im in the operator library: the inverse of im2col, summing every column
// entry back into the image pixel it was taken from.
//
// Why a gather-reduction rather than a scatter: a scatter-add over the columns
// would need atomics or a serial loop; written per output pixel instead, the
// pixel sums over the kernel offsets r whose block position
// (p + pad - r * dilation) / stride is a whole block inside the grid of blocks,
// so each output element is written once and the default reduction schedule
// parallelizes over pixels. Reads are clamped, so no read leaves the input.
#include "core/graph/shape_rules.h"
#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using te::Expr;
using te::Tensor;
using te::Var;

Expr I(int64_t v) { return Expr(v); }

std::vector<Tensor> Col2ImOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  graph::Col2ImSpec spec = graph::ComputeCol2Im(ctx.node(), StaticShape(x));
  size_t k = spec.image.size();
  std::vector<ir::IterVar> r;
  for (size_t d = 0; d < k; ++d) r.push_back(te::reduce_axis({I(0), I(spec.block[d])}, "r" + std::to_string(d)));
  int64_t block_size = graph::NumElements(spec.block);
  Tensor out = te::compute(ToExprShape(ctx.output_type(0).shape), [&](const std::vector<Var>& o) {
    Expr valid, column = I(0), block = I(0);
    for (size_t d = 0; d < k; ++d) {
      Expr position = o[2 + d] + I(spec.pads[d]) - r[d]->var * I(spec.dilations[d]);
      Expr q = ir::floordiv(position, I(spec.strides[d]));
      Expr ok = position >= I(0) && ir::floormod(position, I(spec.strides[d])) == I(0) && q < I(spec.blocks[d]);
      valid = valid.defined() ? (valid && ok) : ok;
      column = column * I(spec.block[d]) + r[d]->var;
      block = block * I(spec.blocks[d]) + ir::min(ir::max(q, I(0)), I(spec.blocks[d] - 1));
    }
    Expr value = x(o[0], o[1] * I(block_size) + column, block);
    return te::sum(ir::select(valid, value, ir::make_zero(x.dtype())), r);
  }, ctx.node().outputs[0], tag::kReduce);
  SetDefaultSchedules(ctx, "col2im", out);
  return {out};
}

}  // namespace

void RegisterCol2ImOps(OpTable* t) { t->Register("Col2Im", Col2ImOp); }

}  // namespace ops
}  // namespace agate
