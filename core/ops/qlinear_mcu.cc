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

// The int16x2 value (a, b): lane 0 a, lane 1 b. The loop IR has no vector constructor; a
// select on the lane index folds to one in every backend (LLVM: two insertelements, then
// SMLAD's 32-bit operand; C: each lane printed on its own).
Expr Int16Pair(const Expr& a, const Expr& b) {
  const ir::DType i16 = ir::DType::Int(16);
  Expr first_lane = ir::Ramp::make(I(0), I(1), 2) == ir::Broadcast::make(I(0), 2);
  return ir::select(first_lane, ir::Broadcast::make(ir::cast(i16, a), 2), ir::Broadcast::make(ir::cast(i16, b), 2));
}

// The DSP template's weights: the centred int16 values in pairs, the pair innermost. Two
// input channels at one tap ([OC, IC/2, KH, KW, 2]) when a group has an even channel count,
// else two taps of one channel, the window flattened row by row ([OC, IC, ceil(KH*KW/2), 2],
// an odd window's last pair completed by a zero weight).
graph::Tensor PairWeights(const graph::Tensor& centred, bool channel_pairs) {
  const graph::Shape& s = centred.shape();  // [OC, IC/groups, KH, KW]
  int64_t oc = s[0], ic = s[1], taps = s[2] * s[3], tap_pairs = (taps + 1) / 2;
  graph::Tensor out(ir::DType::Int(16), channel_pairs ? graph::Shape{oc, ic / 2, s[2], s[3], 2}
                                                      : graph::Shape{oc, ic, tap_pairs, 2});
  for (int64_t i = 0; i < out.numel(); ++i) out.SetInt(i, 0);
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t c = 0; c < ic; ++c) {
      for (int64_t t = 0; t < taps; ++t) {
        int64_t at = channel_pairs ? ((o * (ic / 2) + c / 2) * taps + t) * 2 + c % 2
                                   : ((o * ic + c) * tap_pairs + t / 2) * 2 + t % 2;
        out.SetInt(at, centred.GetInt((o * ic + c) * taps + t));
      }
    }
  }
  return out;
}

// The same pairs from int8 weights, packed four to a 32-bit word so that SXTB16 unpacks two
// pairs from one load (CMSIS-NN's way): the weights keep int8's flash. A word holds bytes
// (p0.lo, p1.lo, p0.hi, p1.hi) of two pairs p0, p1: SXTB16 sign-extends bytes 0 and 2 (p0),
// and bytes 1 and 3 after a rotation by 8 (p1); in the IR, pair p is the int8 elements at
// word * 4 + p and word * 4 + p + 2, which the simplifier turns into one strided two-lane load.
// Channel pairs: the word's two pairs are those of output channels 2k and 2k + 1 at one pair of
// input channels and one tap ([OC/2, IC/2, KH, KW, 4]). Tap pairs: two consecutive tap pairs
// of one channel ([OC, IC, ceil(ceil(KH*KW/2)/2), 4], missing taps zero weights).
graph::Tensor PackWeights(const graph::Tensor& centred, bool channel_pairs) {
  const graph::Shape& s = centred.shape();  // [OC, IC/groups, KH, KW], int8
  int64_t oc = s[0], ic = s[1], taps = s[2] * s[3], tap_words = ((taps + 1) / 2 + 1) / 2;
  graph::Tensor out(ir::DType::Int(8), channel_pairs ? graph::Shape{oc / 2, ic / 2, s[2], s[3], 4}
                                                     : graph::Shape{oc, ic, tap_words, 4});
  for (int64_t i = 0; i < out.numel(); ++i) out.SetInt(i, 0);
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t c = 0; c < ic; ++c) {
      for (int64_t t = 0; t < taps; ++t) {
        int64_t at = channel_pairs ? (((o / 2) * (ic / 2) + c / 2) * taps + t) * 4 + o % 2 + 2 * (c % 2)
                                   : ((o * ic + c) * tap_words + t / 4) * 4 + (t / 2) % 2 + 2 * (t % 2);
        out.SetInt(at, centred.GetInt((o * ic + c) * taps + t));
      }
    }
  }
  return out;
}

// How the schedule treats the accumulator's loops.
struct McuPlan {
  bool dsp = false;          // dot2_i16 (SMLAD) on pairs
  bool packed = false;       // int8 weights four to a word (PackWeights), else int16 pairs (PairWeights)
  bool channel_pairs = false;
  int64_t oc_block = 1;      // output channels sharing one activation pair (their accumulators in registers)
  int unroll_reduce = -1;    // the reduce axis unrolled (the tap pairs: their window offsets become constants)
};

// One conv's geometry as the accumulator's computes read it.
struct McuConv {
  Tensor x;
  graph::Shape w_shape;  // [OC, IC/groups, KH, KW]
  graph::WindowGeometry g;
  int64_t groups, ic_per_group, oc_per_group;
  Expr x_zp;  // read outside the input (padding)

  graph::Shape OutShape() const { return {StaticShape(x)[0], w_shape[0], g.out[0], g.out[1]}; }
  Expr FirstChannel(const Var& oc) const {
    return groups == 1 ? I(0) : ir::floordiv(oc, I(oc_per_group)) * ic_per_group;
  }
  // x at channel c and window offset (kh, kw) of output (n, oh, ow), in place (the zero
  // point outside the input: no padded copy).
  Expr Tap(const Var& n, const Expr& c, const Var& oh, const Var& ow, const Expr& kh, const Expr& kw) const {
    Expr row = oh * g.strides[0] - g.pad_begin[0] + kh * g.dilations[0];
    Expr col = ow * g.strides[1] - g.pad_begin[1] + kw * g.dilations[1];
    bool padded = false;
    for (size_t d = 0; d < 2; ++d) padded |= g.pad_begin[d] != 0 || g.pad_end[d] != 0;
    graph::Shape xs = StaticShape(x);
    return padded ? PaddedRead(x, {n, c, row, col}, 2, {xs[2], xs[3]}, x_zp) : x(n, c, row, col);
  }
};

// SMLAD (Armv7E-M's DSP extension: Cortex-M4, M7, M33, M55: two 16-bit products added to an
// int32 in one instruction) where the target has it and the knob allows; channel pairs when a
// group's channel count is even, with as many output channels per activation pair as divide
// the group's (at most 4: four accumulators, the activation pair and a weight pair fit Thumb-2's
// 13 registers with the pointers; int8_mcu_oc_block caps it).
// Packed int8 weights where every centred weight fits int8 and each SXTB16 reads a word whose
// pair is known when the code is generated: the oc block's channels unrolled in twos (channel
// pairs) or the tap pairs unrolled.
McuPlan PlanMcuConv(const OpContext& ctx, const McuConv& conv, bool int8_weights) {
  McuPlan plan;
  plan.dsp = ctx.target().HasFeature("dsp") && ctx.options().int8_mcu_smlad != 0;
  if (!plan.dsp) return plan;
  plan.channel_pairs = conv.ic_per_group % 2 == 0;
  if (plan.channel_pairs) {
    int64_t cap = ctx.options().int8_mcu_oc_block;
    for (int64_t b : {int64_t{4}, int64_t{2}, int64_t{1}}) {
      if ((cap == 0 || b <= cap) && conv.oc_per_group % b == 0) {
        plan.oc_block = b;
        break;
      }
    }
  } else if ((conv.w_shape[2] * conv.w_shape[3] + 1) / 2 <= 32) {
    plan.unroll_reduce = 1;  // the tap pairs: unrolled, their window offsets are constants (no division)
  }
  bool pair_known = plan.channel_pairs ? plan.oc_block % 2 == 0 : plan.unroll_reduce >= 0;
  plan.packed = int8_weights && pair_known && ctx.options().int8_mcu_packed != 0;
  return plan;
}

// sum over the taps of x * w, one product per multiply-accumulate (int8 or int16 weights).
Tensor ScalarDot(const McuConv& conv, const Tensor& w, const std::string& name) {
  ir::IterVar rc = te::reduce_axis({I(0), I(conv.ic_per_group)}, "rc");
  ir::IterVar rkh = te::reduce_axis({I(0), I(conv.w_shape[2])}, "rkh");
  ir::IterVar rkw = te::reduce_axis({I(0), I(conv.w_shape[3])}, "rkw");
  return te::compute(ToExprShape(conv.OutShape()), [&](Var n, Var oc, Var oh, Var ow) {
    Expr xv = conv.Tap(n, conv.FirstChannel(oc) + rc, oh, ow, rkh, rkw);
    return te::sum(ir::cast(kI32, xv) * ir::cast(kI32, w(oc, rc, rkh, rkw)), {rc, rkh, rkw});
  }, name, tag::kConv2dNCHW);
}

// The same sum with SMLAD on pairs of input channels at one tap (weights [OC, IC/2, KH, KW, 2],
// or packed [OC/2, IC/2, KH, KW, 4]).
Tensor ChannelPairDot(const McuConv& conv, const Tensor& pairs, bool packed, const std::string& name) {
  ir::IterVar rq = te::reduce_axis({I(0), I(conv.ic_per_group / 2)}, "rq");
  ir::IterVar rkh = te::reduce_axis({I(0), I(conv.w_shape[2])}, "rkh");
  ir::IterVar rkw = te::reduce_axis({I(0), I(conv.w_shape[3])}, "rkw");
  return te::compute(ToExprShape(conv.OutShape()), [&](Var n, Var oc, Var oh, Var ow) {
    Expr c = conv.FirstChannel(oc) + rq * 2;
    Expr xs = Int16Pair(conv.Tap(n, c, oh, ow, rkh, rkw), conv.Tap(n, c + 1, oh, ow, rkh, rkw));
    Expr ws = packed ? Int16Pair(pairs(ir::floordiv(oc, I(2)), rq, rkh, rkw, ir::floormod(oc, I(2))),
                                 pairs(ir::floordiv(oc, I(2)), rq, rkh, rkw, ir::floormod(oc, I(2)) + 2))
                     : Int16Pair(pairs(oc, rq, rkh, rkw, I(0)), pairs(oc, rq, rkh, rkw, I(1)));
    return te::sum(ir::dot2_i16(ir::make_zero(kI32), xs, ws), {rq, rkh, rkw});
  }, name, tag::kConv2dNCHW);
}

// The same sum with SMLAD on pairs of taps of one channel, the window flattened row by row
// (weights [OC, IC, ceil(KH*KW/2), 2], or packed [OC, IC, ceil(ceil(KH*KW/2)/2), 4]; an odd
// window's last pair reads its last tap twice against a zero weight).
Tensor TapPairDot(const McuConv& conv, const Tensor& pairs, bool packed, const std::string& name) {
  int64_t kw = conv.w_shape[3], taps = conv.w_shape[2] * kw;
  ir::IterVar rc = te::reduce_axis({I(0), I(conv.ic_per_group)}, "rc");
  ir::IterVar rp = te::reduce_axis({I(0), I((taps + 1) / 2)}, "rp");
  return te::compute(ToExprShape(conv.OutShape()), [&](Var n, Var oc, Var oh, Var ow) {
    Expr c = conv.FirstChannel(oc) + rc;
    Expr t0 = rp * 2, t1 = ir::min(rp * 2 + 1, I(taps - 1));
    Expr x0 = conv.Tap(n, c, oh, ow, ir::floordiv(t0, I(kw)), ir::floormod(t0, I(kw)));
    Expr x1 = conv.Tap(n, c, oh, ow, ir::floordiv(t1, I(kw)), ir::floormod(t1, I(kw)));
    Expr ws = packed ? Int16Pair(pairs(oc, rc, ir::floordiv(rp, I(2)), ir::floormod(rp, I(2))),
                                 pairs(oc, rc, ir::floordiv(rp, I(2)), ir::floormod(rp, I(2)) + 2))
                     : Int16Pair(pairs(oc, rc, rp, I(0)), pairs(oc, rc, rp, I(1)));
    return te::sum(ir::dot2_i16(ir::make_zero(kI32), Int16Pair(x0, x1), ws), {rc, rp});
  }, name, tag::kConv2dNCHW);
}

// The schedule: the requantised output (or the accumulator itself, through a local
// cache stage) loops over n, oc, oh, ow; the accumulator of one element is computed
// inside the innermost loop, so it is one int32 that never leaves a register. With
// an oc block, the output's innermost loop runs over the block's channels and their
// accumulators are computed together, each activation pair read once for all of them.
std::string ScheduleMcuConv(const ScheduleRequest& r, const Tensor& acc, const McuPlan& plan) {
  te::Schedule s = r.schedule;
  Tensor out = r.epilogue.defined() ? r.epilogue : (r.outputs.size() == 1 ? r.outputs[0] : Tensor());
  if (!out.defined() || StaticShape(out) != StaticShape(acc)) {
    return ScheduleAnchorDefault(r, "conv int8 mcu (outputs of other shapes: default schedule)");
  }
  Tensor accum = acc;
  if (out.same_as(acc)) accum = s.cache_write(acc, ir::MemoryScope::kLocal);
  te::Stage o = s[out], a = s[accum];
  if (plan.oc_block > 1) {
    auto [oc_outer, oc_inner] = o.split(o.axis(1), I(plan.oc_block));
    o.reorder({o.axis(0), oc_outer, o.axis(2), o.axis(3), oc_inner});
    o.unroll(oc_inner);  // constant indices: the block's accumulators stay in registers
    a.compute_at(o, o.axis(3));
    // Channel pairs only (the oc block's channels then share every activation pair).
    a.reorder({a.axis(0), a.axis(2), a.axis(3), a.reduce_axis(0), a.reduce_axis(1), a.reduce_axis(2), a.axis(1)});
    a.unroll(a.axis(1));
  } else {
    a.compute_at(o, o.axis(3));
  }
  if (plan.unroll_reduce >= 0) a.unroll(a.reduce_axis(static_cast<size_t>(plan.unroll_reduce)));
  if (!plan.dsp) return "conv int8 mcu direct: 8-bit input read in place, padding by bounds, one int32 accumulator per output";
  return std::string("conv int8 mcu direct dsp: SMLAD on int16 pairs of ") +
         (plan.channel_pairs ? "input channels" : "window taps") +
         (plan.packed ? ", int8 weights unpacked by SXTB16" : ", int16 weights") + ", " + std::to_string(plan.oc_block) +
         " output channel(s) per activation pair, 8-bit input read in place, padding by bounds";
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
  McuConv conv{x, ws, g, groups, ws[1], ws[0] / groups, ir::make_const(x.dtype(), static_cast<double>(x_zp))};
  McuPlan plan = PlanMcuConv(ctx, conv, centred.values.dtype() == ir::DType::Int(8));
  Tensor dot;
  if (!plan.dsp) {
    dot = ScalarDot(conv, ctx.AddConstant(name + "_w_centred", centred.values), name + "_mcu");
  } else {
    Tensor pairs = plan.packed ? ctx.AddConstant(name + "_w_packed", PackWeights(centred.values, plan.channel_pairs))
                               : ctx.AddConstant(name + "_w_pairs", PairWeights(centred.values, plan.channel_pairs));
    dot = plan.channel_pairs ? ChannelPairDot(conv, pairs, plan.packed, name + "_mcu")
                             : TapPairDot(conv, pairs, plan.packed, name + "_mcu");
  }
  Tensor comp = ctx.AddConstant(name + "_zp_compensation", centred.compensation);
  Tensor acc = te::compute(dot.shape(), [&](Var n, Var oc, Var oh, Var ow) {
    return dot(n, oc, oh, ow) - comp(oc);
  }, name, tag::kInjective);
  ctx.SetSchedule([dot, plan](const ScheduleRequest& r) { return ScheduleMcuConv(r, dot, plan); }, dot);
  return acc;
}

}  // namespace ops
}  // namespace agate
