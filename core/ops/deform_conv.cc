// DeformConv in the operator library (2-D, opset 19): a convolution whose kernel
// taps read the input at learned, fractional offsets.
//
// Why two stages: each sampled value (input channel c, tap (i, j), output point
// (y, x)) is used by every output channel of its group, and computing it costs
// four gathered reads and their weights. The first stage therefore samples once
// into an im2col-style buffer cols[n, c, i, j, y, x] = mask * bilinear(x[n, c],
// regular position + offset) (tagged opaque so LowerGroup keeps it as a buffer in
// the kernel's workspace instead of inlining it into the contraction); the second
// contracts it with the weights like a convolution over (c, i, j) and adds the
// bias as an epilogue. Reads are clamped and masked (core/ops/grid_sample.h's
// taps), so no offset can make a read leave the input.
#include "core/graph/shape_rules.h"
#include "core/ops/cuda/cuda_schedules.h"
#include "core/ops/grid_sample.h"
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

std::vector<Tensor> DeformConvOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& weight = ctx.input(1);
  const Tensor& offset = ctx.input(2);
  AGATE_REQUIRE(x.dtype().is_float(), kUnsupported)
      << ctx.Describe() << ": DeformConv of X " << ctx.input_type(0).ToString();
  graph::Shape xs = StaticShape(x), ws = StaticShape(weight);
  int64_t group = ctx.attrs().GetInt("group", 1), offset_group = ctx.attrs().GetInt("offset_group", 1);
  int64_t channels = xs[1], height = xs[2], width = xs[3];
  int64_t out_channels = ws[0], group_in = ws[1], kh = ws[2], kw = ws[3], taps = kh * kw;
  graph::WindowGeometry g = graph::ComputeWindow(ctx.node(), xs, {kh, kw});
  int64_t oh = g.out[0], ow = g.out[1];
  int64_t offset_channels = channels / offset_group, group_out = out_channels / group;
  ir::DType t = x.dtype().bits() == 64 ? ir::DType::Float(64) : ir::DType::Float(32);
  std::string name = ctx.node().outputs[0];

  Tensor cols = te::compute(ToExprShape({xs[0], channels, kh, kw, oh, ow}), [&](const std::vector<Var>& v) {
    const Var &n = v[0], &c = v[1], &i = v[2], &j = v[3], &y = v[4], &xo = v[5];
    Expr og = ir::floordiv(c, I(offset_channels));
    Expr tap = i * I(kw) + j;
    Expr channel = og * I(2 * taps) + tap * I(2);
    Expr dh = ir::cast(t, offset(n, channel, y, xo)), dw = ir::cast(t, offset(n, channel + I(1), y, xo));
    Expr h = ir::cast(t, y * I(g.strides[0]) + i * I(g.dilations[0]) - I(g.pad_begin[0])) + dh;
    Expr w = ir::cast(t, xo * I(g.strides[1]) + j * I(g.dilations[1]) - I(g.pad_begin[1])) + dw;
    Expr value = GatherTaps(x, {n, c, Expr(), Expr()}, {2, 3}, {LinearTaps(h, height), LinearTaps(w, width)}, t);
    if (ctx.has_input(4)) value = value * ir::cast(t, ctx.input(4)(n, og * I(taps) + tap, y, xo));
    return ir::cast(x.dtype(), value);
  }, name + "_cols", tag::kOpaque);

  te::IterVar rc = te::reduce_axis({I(0), I(group_in)}, "rc");
  te::IterVar ri = te::reduce_axis({I(0), I(kh)}, "ri");
  te::IterVar rj = te::reduce_axis({I(0), I(kw)}, "rj");
  Tensor acc = te::compute(ToExprShape({xs[0], out_channels, oh, ow}), [&](const std::vector<Var>& v) {
    Expr c = ir::floordiv(v[1], I(group_out)) * I(group_in) + rc->var;
    return te::sum(weight(v[1], rc->var, ri->var, rj->var) * cols(v[0], c, ri->var, rj->var, v[2], v[3]),
                   {rc, ri, rj});
  }, ctx.has_input(3) ? name + "_acc" : name, tag::kReduce);
  Tensor out = acc;
  if (ctx.has_input(3)) {
    const Tensor& bias = ctx.input(3);
    out = te::compute(acc.shape(), [&](const std::vector<Var>& v) {
      return acc(v[0], v[1], v[2], v[3]) + bias(v[1]);
    }, name, tag::kBroadcast);
  }
  ctx.SetSchedule([cols](const ScheduleRequest& r) {
    InjectiveKnobs knobs;
    knobs.vector_lanes = r.options->vector_lanes;
    if (!r.options->allow_parallel) knobs.min_parallel_elements = INT64_MAX;
    te::Schedule s = r.schedule;
    ScheduleInjectiveStage(s, cols, *r.target, knobs);
    return ScheduleAnchorDefault(r, "deform_conv: bilinear im2col buffer, then the contraction over (c, kh, kw)");
  }, acc);
  ctx.SetCudaSchedule([cols](const ScheduleRequest& r) {
    te::Schedule s = r.schedule;
    cuda::ScheduleInjective(s, cols, r.options->cuda_threads);
    return cuda::ScheduleAnchorDefault(r, "deform_conv: bilinear im2col buffer, then the contraction (cuda)");
  }, acc);
  return {out};
}

}  // namespace

void RegisterDeformConvOps(OpTable* t) { t->Register("DeformConv", DeformConvOp); }

}  // namespace ops
}  // namespace agate
