#include "core/ops/qlinear_mcu.h"

#include <algorithm>

#include "core/graph/shape_rules.h"
#include "core/ops/schedule_common.h"
#include "core/ops/window.h"
#include "core/schedule/schedule.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

namespace {

const ir::DType kI32 = ir::DType::Int(32);

Expr I(int64_t v) { return Expr(v); }

bool IsQuantType(ir::DType t) { return t == ir::DType::Int(8) || t == ir::DType::UInt(8); }

// The weights centred on their zero points (per tensor or per output channel), and
// x_zp * sum(centred weights of oc) per output channel.
struct CentredWeights {
  graph::Tensor values;        // int8 when every centred value fits, else int16
  graph::Tensor compensation;  // int32 [OC]
};

CentredWeights CentreWeights(const graph::Tensor& w, const graph::Tensor* w_zp, int64_t x_zp) {
  const graph::Shape& ws = w.shape();
  int64_t oc = ws[0], per_oc = w.numel() / std::max<int64_t>(oc, 1);
  bool per_channel = w_zp != nullptr && w_zp->numel() > 1;
  auto centred = [&](int64_t i) {
    int64_t z = w_zp == nullptr ? 0 : w_zp->GetInt(per_channel ? i / per_oc : 0);
    return w.GetInt(i) - z;
  };
  bool fits_int8 = true;
  for (int64_t i = 0; i < w.numel() && fits_int8; ++i) fits_int8 = centred(i) >= -128 && centred(i) <= 127;
  CentredWeights out{graph::Tensor(fits_int8 ? ir::DType::Int(8) : ir::DType::Int(16), ws),
                     graph::Tensor(kI32, {oc})};
  for (int64_t o = 0; o < oc; ++o) {
    int64_t sum = 0;
    for (int64_t i = o * per_oc; i < (o + 1) * per_oc; ++i) {
      int64_t v = centred(i);
      out.values.SetInt(i, v);
      sum += v;
    }
    out.compensation.SetInt(o, x_zp * sum);
  }
  return out;
}

// The schedule: the requantised output (or the accumulator itself, through a local
// cache stage) loops over n, oc, oh, ow; the accumulator of one element is computed
// inside the innermost loop, so it is one int32 that never leaves a register.
std::string ScheduleMcuConv(const ScheduleRequest& r, const Tensor& acc) {
  te::Schedule s = r.schedule;
  Tensor out = r.epilogue.defined() ? r.epilogue : (r.outputs.size() == 1 ? r.outputs[0] : Tensor());
  if (!out.defined() || StaticShape(out) != StaticShape(acc)) {
    return ScheduleAnchorDefault(r, "conv int8 mcu (outputs of other shapes: default schedule)");
  }
  Tensor accum = acc;
  if (out.same_as(acc)) accum = s.cache_write(acc, ir::MemoryScope::kLocal);
  te::Stage o = s[out];
  s[accum].compute_at(o, o.axis(3));
  return "conv int8 mcu direct: 8-bit input read in place, padding by bounds, one int32 accumulator per output";
}

}  // namespace

bool UseMcuIntegerConv(const target::Target& target) {
  if (target.kind() == target::TargetKind::kC) return true;
  return target.kind() == target::TargetKind::kLLVM && target.arch() == target::Arch::kARM && target.is_bare_metal();
}

Tensor McuIntegerConv(const OpContext& ctx, const McuConvInputs& in, const std::string& name) {
  if (!UseMcuIntegerConv(ctx.target())) return Tensor();
  const Tensor& x = ctx.input(in.x);
  const graph::Tensor* wc = ctx.constant(in.w);
  if (wc == nullptr || !IsQuantType(x.dtype()) || !IsQuantType(wc->dtype())) return Tensor();
  const graph::Tensor* w_zp = nullptr;
  if (ctx.has_input(in.w_zp)) {
    w_zp = ctx.constant(in.w_zp);
    if (w_zp == nullptr) return Tensor();
  }
  int64_t x_zp = 0;
  if (ctx.has_input(in.x_zp)) {
    const graph::Tensor* xz = ctx.constant(in.x_zp);
    if (xz == nullptr || xz->numel() != 1) return Tensor();
    x_zp = xz->GetInt(0);
  }
  graph::Shape xs = StaticShape(x), ws = wc->shape();
  int64_t groups = ctx.attrs().GetInt("group", 1);
  if (xs.size() != 4 || ws.size() != 4 || groups < 1 || xs[1] % groups != 0 || ws[0] % groups != 0 ||
      ws[1] * groups != xs[1]) {
    return Tensor();
  }
  graph::WindowGeometry g = graph::ComputeWindow(ctx.node(), xs, {ws[2], ws[3]});
  CentredWeights centred = CentreWeights(*wc, w_zp, x_zp);
  Tensor w = ctx.AddConstant(name + "_w_centred", centred.values);
  Tensor comp = ctx.AddConstant(name + "_zp_compensation", centred.compensation);

  int64_t ic_per_group = ws[1], oc_per_group = ws[0] / groups;
  bool padded = false;
  for (size_t d = 0; d < 2; ++d) padded |= g.pad_begin[d] != 0 || g.pad_end[d] != 0;
  std::vector<int64_t> spatial{xs[2], xs[3]};
  Expr zp = ir::make_const(x.dtype(), static_cast<double>(x_zp));
  ir::IterVar rc = te::reduce_axis({I(0), I(ic_per_group)}, "rc");
  ir::IterVar rkh = te::reduce_axis({I(0), I(ws[2])}, "rkh");
  ir::IterVar rkw = te::reduce_axis({I(0), I(ws[3])}, "rkw");
  // sum over the taps of x * w, x read in place (the zero point outside the input).
  Tensor dot = te::compute(ToExprShape({xs[0], ws[0], g.out[0], g.out[1]}), [&](Var n, Var oc, Var oh, Var ow) {
    Expr c = groups == 1 ? Expr(rc) : ir::floordiv(oc, I(oc_per_group)) * ic_per_group + rc;
    Expr row = oh * g.strides[0] - g.pad_begin[0] + rkh * g.dilations[0];
    Expr col = ow * g.strides[1] - g.pad_begin[1] + rkw * g.dilations[1];
    Expr xv = padded ? PaddedRead(x, {n, c, row, col}, 2, spatial, zp) : x(n, c, row, col);
    return te::sum(ir::cast(kI32, xv) * ir::cast(kI32, w(oc, rc, rkh, rkw)), {rc, rkh, rkw});
  }, name + "_mcu", tag::kConv2dNCHW);
  Tensor acc = te::compute(dot.shape(), [&](Var n, Var oc, Var oh, Var ow) {
    return dot(n, oc, oh, ow) - comp(oc);
  }, name, tag::kInjective);
  ctx.SetSchedule([dot](const ScheduleRequest& r) { return ScheduleMcuConv(r, dot); }, dot);
  return acc;
}

}  // namespace ops
}  // namespace agate
