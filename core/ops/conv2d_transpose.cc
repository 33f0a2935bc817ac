#include "core/ops/conv2d_transpose.h"

#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

Tensor ConvTranspose(const Tensor& x, const Tensor& w, const graph::WindowGeometry& g, int64_t groups,
                     const std::string& name) {
  graph::Shape xs = StaticShape(x), ws = StaticShape(w);
  size_t nsp = g.kernel.size();
  int64_t ic_per_group = xs[1] / groups, oc_per_group = ws[1];
  ir::IterVar ric = te::reduce_axis({Expr(int64_t{0}), Expr(ic_per_group)}, "ric");
  std::vector<ir::IterVar> reduce{ric}, rk;
  for (size_t d = 0; d < nsp; ++d) {
    rk.push_back(te::reduce_axis({Expr(int64_t{0}), Expr(g.kernel[d])}, "rk" + std::to_string(d)));
    reduce.push_back(rk.back());
  }
  graph::Shape out{xs[0], oc_per_group * groups};
  out.insert(out.end(), g.out.begin(), g.out.end());
  return te::compute(ToExprShape(out), [&](const std::vector<Var>& o) {
    Expr group = groups == 1 ? Expr(int64_t{0}) : ir::floordiv(o[1], Expr(oc_per_group));
    Expr oc_in_group = groups == 1 ? Expr(o[1]) : ir::floormod(o[1], Expr(oc_per_group));
    Expr ic = group * ic_per_group + ric;
    std::vector<Expr> xi{o[0], ic};
    std::vector<Expr> wi{ic, oc_in_group};
    Expr valid;
    for (size_t d = 0; d < nsp; ++d) {
      Expr t = o[2 + d] + g.pad_begin[d] - rk[d] * g.dilations[d];
      Expr i = ir::floordiv(t, Expr(g.strides[d]));
      Expr ok = t >= Expr(int64_t{0}) && i < Expr(g.in[d]);
      if (g.strides[d] > 1) ok = ok && ir::floormod(t, Expr(g.strides[d])) == Expr(int64_t{0});
      valid = valid.defined() ? (valid && ok) : ok;
      xi.push_back(ir::min(ir::max(i, Expr(int64_t{0})), Expr(g.in[d] - 1)));
      wi.push_back(rk[d]);
    }
    return te::sum(ir::select(valid, x(xi) * w(wi), ir::make_zero(x.dtype())), reduce);
  }, name, tag::kConvTranspose);
}

namespace {

std::vector<Tensor> ConvTransposeOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  AGATE_REQUIRE(x.dtype() == ir::DType::Float(32), kUnsupported) << ctx.Describe() << ": " << x.dtype();
  int64_t groups = ctx.attrs().GetInt("group", 1);
  graph::Shape xs = StaticShape(x), ws = StaticShape(w);
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  graph::WindowGeometry g = graph::ComputeTransposedWindow(ctx.node(), xs, kernel);
  std::string name = ctx.node().outputs[0];
  Tensor conv = ConvTranspose(x, w, g, groups, ctx.has_input(2) ? name + "_conv" : name);
  Tensor out = conv;
  if (ctx.has_input(2)) {
    const Tensor& bias = ctx.input(2);
    out = te::compute(conv.shape(), [&](const std::vector<Var>& o) {
      return conv(std::vector<Expr>(o.begin(), o.end())) + bias(o[1]);
    }, name, tag::kBroadcast);
  }
  SetDefaultSchedules(ctx, "conv2d_transpose (gather)", conv);
  return {out};
}

}  // namespace

void RegisterConvTransposeOps(OpTable* t) { t->Register("ConvTranspose", ConvTransposeOp); }

}  // namespace ops
}  // namespace agate
