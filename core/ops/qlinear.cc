#include "core/ops/qlinear.h"

#include <cmath>
#include <sstream>

#include "core/graph/shape_rules.h"
#include "core/ops/conv2d.h"
#include "core/ops/dense.h"
#include "core/ops/op_context.h"
#include "core/ops/qlinear_matmul_vnni.h"
#include "core/ops/qlinear_mcu.h"
#include "core/ops/qlinear_vnni.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

namespace {

const ir::DType kI32 = ir::DType::Int(32);
const ir::DType kF64 = ir::DType::Float(64);
const ir::DType kF32 = ir::DType::Float(32);

Expr I(int64_t v) { return Expr(v); }

bool IsQuantType(ir::DType t) { return t == ir::DType::Int(8) || t == ir::DType::UInt(8); }

// Which element of an operand a quantization parameter varies along.
enum class ParamAxis { kNone, kFirst, kRow, kLast };

// How input `param` (scale or zero point) of the node is laid out: one value,
// or one per element of the operand's axis `axis` (extent `extent`).
// kInvalidArgument naming the parameter otherwise.
bool PerAxis(const OpContext& ctx, int param, int64_t extent, const char* what, bool allowed = true) {
  graph::Shape ps = StaticShape(ctx.input(param));
  int64_t n = graph::NumElements(ps);
  if (n == 1 && ps.size() <= 1) return false;
  AGATE_REQUIRE(allowed && ps.size() == 1 && n == extent, kInvalidArgument)
      << ctx.Describe() << ": " << what << " '" << ctx.node().inputs[param] << "' has shape " << graph::ShapeToString(ps)
      << "; it must be a scalar" << (allowed ? " or have " + std::to_string(extent) + " elements" : "");
  return true;
}

// Reads a scalar-or-per-axis parameter at `index` (ignored for a scalar).
Expr ParamAt(const Tensor& p, const Expr& index) {
  graph::Shape ps = StaticShape(p);
  if (graph::NumElements(ps) == 1) return p(std::vector<Expr>(ps.size(), I(0)));
  return p(index);
}

void CheckZeroPointType(const OpContext& ctx, int data, int zero_point) {
  ir::DType t = ctx.input(data).dtype();
  AGATE_REQUIRE(IsQuantType(t), kUnsupported) << ctx.Describe() << ": input '" << ctx.node().inputs[data]
                                              << "' is " << t << "; int8 or uint8 is implemented";
  if (!ctx.has_input(zero_point)) return;
  AGATE_REQUIRE(ctx.input(zero_point).dtype() == t, kInvalidArgument)
      << ctx.Describe() << ": zero point '" << ctx.node().inputs[zero_point] << "' is "
      << ctx.input(zero_point).dtype() << " but its data is " << t;
}

// int32(data) - int32(zero_point), the zero point per element of `axis` of the data
// (or a scalar), as a compile-time constant when both are constants.
Tensor Centered(const OpContext& ctx, int data, int zero_point, int axis, const std::string& name) {
  const Tensor& x = ctx.input(data);
  graph::Shape xs = StaticShape(x);
  int rank = static_cast<int>(xs.size());
  bool has_zp = ctx.has_input(zero_point);
  bool per_axis = has_zp && PerAxis(ctx, zero_point, axis >= 0 && axis < rank ? xs[axis] : -1, "zero point", axis >= 0);
  const graph::Tensor* xc = ctx.constant(data);
  const graph::Tensor* zc = has_zp ? ctx.constant(zero_point) : nullptr;
  if (xc != nullptr && (!has_zp || zc != nullptr) && ctx.target().kind() != target::TargetKind::kCUDA) {
    // 8-bit values minus 8-bit zero points lie in [-255, 255]: stored as int16 (half
    // of int32's size), widened where the kernel reads them.
    graph::Tensor out(ir::DType::Int(16), xs);
    int64_t inner = per_axis ? graph::NumElements(graph::Shape(xs.begin() + axis + 1, xs.end())) : 1;
    int16_t* dst = out.mutable_data<int16_t>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      int64_t z = has_zp ? zc->GetInt(per_axis ? (i / inner) % xs[axis] : 0) : 0;
      dst[i] = static_cast<int16_t>(xc->GetInt(i) - z);
    }
    te::Tensor stored = ctx.AddConstant(name, out);
    return te::compute(x.shape(), [&](const std::vector<Var>& o) {
      return ir::cast(kI32, stored(std::vector<Expr>(o.begin(), o.end())));
    }, name + "_i32", tag::kInjective);
  }
  return te::compute(x.shape(), [&](const std::vector<Var>& o) {
    Expr v = ir::cast(kI32, x(std::vector<Expr>(o.begin(), o.end())));
    if (!has_zp) return v;
    return v - ir::cast(kI32, ParamAt(ctx.input(zero_point), per_axis ? Expr(o[axis]) : I(0)));
  }, name, tag::kInjective);
}

// The requantisation multiplier M[c] = x_scale * w_scale[c] / y_scale (see the
// header), read at output channel `channel` as float32: an immediate or a constant
// table when the scales are constants (computed in double, rounded once), else
// computed from the scale inputs in double and rounded.
struct Multiplier {
  Tensor table;       // per channel, constant
  double value = 0;   // per tensor, constant
  bool constant = false;
  const OpContext* ctx = nullptr;
  int x_scale = 0, w_scale = 0, y_scale = 0;

  Expr At(const Expr& channel) const {
    if (table.defined()) return table(channel);
    if (constant) return ir::make_const(kF32, static_cast<double>(static_cast<float>(value)));
    const Tensor& ws = ctx->input(w_scale);
    return ir::cast(kF32, ir::cast(kF64, ParamAt(ctx->input(x_scale), I(0))) * ir::cast(kF64, ParamAt(ws, channel)) /
                              ir::cast(kF64, ParamAt(ctx->input(y_scale), I(0))));
  }
};

void CheckScale(const OpContext& ctx, int scale) {
  ir::DType t = ctx.input(scale).dtype();
  AGATE_REQUIRE(t.is_float(), kInvalidArgument)
      << ctx.Describe() << ": scale '" << ctx.node().inputs[scale] << "' is " << t << "; it must be a float";
  if (const graph::Tensor* c = ctx.constant(scale)) {
    for (int64_t i = 0; i < c->numel(); ++i) {
      double v = c->GetDouble(i);
      AGATE_REQUIRE(v > 0 && std::isfinite(v), kInvalidArgument)
          << ctx.Describe() << ": scale '" << ctx.node().inputs[scale] << "' holds " << v << " at " << i
          << "; scales must be positive and finite";
    }
  }
}

Multiplier MakeMultiplier(const OpContext& ctx, int x_scale, int w_scale, int y_scale, int64_t channels,
                          const std::string& name) {
  for (int s : {x_scale, w_scale, y_scale}) CheckScale(ctx, s);
  PerAxis(ctx, x_scale, 0, "scale", false);
  PerAxis(ctx, y_scale, 0, "scale", false);
  bool per_channel = PerAxis(ctx, w_scale, channels, "scale");
  Multiplier m;
  m.ctx = &ctx;
  m.x_scale = x_scale;
  m.w_scale = w_scale;
  m.y_scale = y_scale;
  const graph::Tensor *xs = ctx.constant(x_scale), *ws = ctx.constant(w_scale), *ys = ctx.constant(y_scale);
  if (xs == nullptr || ws == nullptr || ys == nullptr) return m;
  auto value = [&](int64_t c) { return xs->GetDouble(0) * ws->GetDouble(c) / ys->GetDouble(0); };
  m.constant = true;
  if (!per_channel) {
    m.value = value(0);
    return m;
  }
  graph::Tensor table(kF32, {channels});
  for (int64_t c = 0; c < channels; ++c) table.mutable_data<float>()[c] = static_cast<float>(value(c));
  m.table = ctx.AddConstant(name, table);
  return m;
}

// ---- convolutions

struct ConvInputs {
  int x, x_zp, w, w_zp, bias = -1;
};

// The generic integer conv: centred operands (padding with the centred zero, i.e. the zero point)
// through the direct NCHW template, vectorized at the int32 accumulator's width.
Tensor CenteredDirectConv(const OpContext& ctx, const ConvInputs& in, const graph::Shape& xs, const graph::Shape& ws,
                          int64_t groups, const std::string& name) {
  Tensor x = Centered(ctx, in.x, in.x_zp, -1, name + "_x_centered");
  Tensor w = Centered(ctx, in.w, in.w_zp, 0, name + "_w_centered");
  graph::WindowGeometry g = graph::ComputeWindow(ctx.node(), xs, std::vector<int64_t>(ws.begin() + 2, ws.end()));
  bool gpu = ctx.target().kind() == target::TargetKind::kCUDA;
  Tensor conv = ConvNCHW(x, w, g, groups, name, !gpu);
  int lanes = VectorLanes(ctx.target(), kI32);
  SetDefaultSchedules(ctx, "integer conv", conv);
  ctx.SetSchedule([conv, lanes](const ScheduleRequest& r) { return ScheduleDirectNCHW(r, conv, lanes); }, conv);
  return conv;
}

// epilogue(acc) of ConvInteger/QLinearConv (the int32 accumulator when `epilogue` is
// empty): the VNNI template applies it at its register tile; otherwise the
// microcontroller template (qlinear_mcu.h) or the centred direct conv computes the
// accumulator and the epilogue is an elementwise stage after it.
Tensor IntegerConv(const OpContext& ctx, const ConvInputs& in, const TileEpilogue& epilogue, const std::string& name) {
  CheckZeroPointType(ctx, in.x, in.x_zp);
  CheckZeroPointType(ctx, in.w, in.w_zp);
  graph::Shape xs = StaticShape(ctx.input(in.x)), ws = StaticShape(ctx.input(in.w));
  int64_t groups = ctx.attrs().GetInt("group", 1);
  AGATE_REQUIRE(xs.size() >= 3 && ws.size() == xs.size(), kInvalidArgument)
      << ctx.Describe() << ": input " << graph::ShapeToString(xs) << " and weight " << graph::ShapeToString(ws);
  if (ctx.has_input(in.x_zp)) PerAxis(ctx, in.x_zp, 0, "zero point", false);
  if (ctx.has_input(in.w_zp)) PerAxis(ctx, in.w_zp, ws[0], "zero point");
  Tensor vnni = VnniIntegerConv(ctx, VnniConvInputs{in.x, in.x_zp, in.w, in.w_zp}, epilogue, name);
  if (vnni.defined()) return vnni;
  std::string acc_name = epilogue ? name + "_acc" : name;
  Tensor conv = McuIntegerConv(ctx, McuConvInputs{in.x, in.x_zp, in.w, in.w_zp}, acc_name);
  if (!conv.defined()) conv = CenteredDirectConv(ctx, in, xs, ws, groups, acc_name);
  if (!epilogue) return conv;
  return te::compute(conv.shape(), [&](const std::vector<Var>& o) {
    return epilogue(conv(std::vector<Expr>(o.begin(), o.end())), o[1]);
  }, name, tag::kBroadcast);
}

std::vector<Tensor> ConvIntegerOp(const OpContext& ctx) {
  return {IntegerConv(ctx, ConvInputs{0, 2, 1, 3}, TileEpilogue(), ctx.node().outputs[0])};
}

std::vector<Tensor> QLinearConvOp(const OpContext& ctx) {
  std::string name = ctx.node().outputs[0];
  ir::DType out = ctx.output_type(0).dtype;
  AGATE_REQUIRE(IsQuantType(out), kUnsupported) << ctx.Describe() << ": output of " << out;
  AGATE_REQUIRE(ctx.input(7).dtype() == out, kInvalidArgument) << ctx.Describe() << ": y_zero_point type";
  PerAxis(ctx, 7, 0, "zero point", false);
  graph::Shape ws = StaticShape(ctx.input(3));
  AGATE_REQUIRE(!ws.empty(), kInvalidArgument) << ctx.Describe() << ": weight of rank 0";
  int64_t channels = ws[0];
  bool has_bias = ctx.has_input(8);
  if (has_bias) {
    AGATE_REQUIRE(ctx.input(8).dtype() == kI32 && graph::NumElements(StaticShape(ctx.input(8))) == channels,
                  kInvalidArgument)
        << ctx.Describe() << ": bias '" << ctx.node().inputs[8] << "' must be int32 [" << channels << "]";
  }
  Multiplier m = MakeMultiplier(ctx, 1, 4, 6, channels, name + "_requant_scale");
  const Tensor& y_zp = ctx.input(7);
  const Tensor* bias = has_bias ? &ctx.input(8) : nullptr;
  TileEpilogue requantise = [&](const Expr& acc, const Expr& channel) {
    Expr v = bias ? acc + (*bias)(channel) : acc;
    return Requantize(v, m.At(channel), ParamAt(y_zp, I(0)), out);
  };
  return {IntegerConv(ctx, ConvInputs{0, 2, 3, 5}, requantise, name)};
}

// ---- matrix products

struct MatMulInputs {
  int a, a_zp, b, b_zp;
};

// The int32 accumulator of MatMulInteger/QLinearMatMul: a's zero point per tensor
// or per row, b's per tensor or per column; 1-D operands as in MatMul.
Tensor IntegerMatMul(const OpContext& ctx, const MatMulInputs& in, const std::string& name, bool* per_column) {
  // (the product is named `name` unless a 1-D operand needs a reshape after it)
  CheckZeroPointType(ctx, in.a, in.a_zp);
  CheckZeroPointType(ctx, in.b, in.b_zp);
  graph::Shape as = StaticShape(ctx.input(in.a)), bs = StaticShape(ctx.input(in.b));
  int ra = static_cast<int>(as.size()), rb = static_cast<int>(bs.size());
  Tensor a = Centered(ctx, in.a, in.a_zp, ra >= 2 ? ra - 2 : -1, name + "_a_centered");
  Tensor b = Centered(ctx, in.b, in.b_zp, rb >= 2 ? rb - 1 : -1, name + "_b_centered");
  *per_column = rb >= 2;
  bool a_vec = ra == 1, b_vec = rb == 1;
  if (a_vec) {
    Tensor orig = a;
    a = te::compute(ToExprShape({1, as[0]}), [&](Var, Var k) { return orig(k); }, name + "_a2", tag::kInjective);
  }
  if (b_vec) {
    Tensor orig = b;
    b = te::compute(ToExprShape({bs[0], 1}), [&](Var k, Var) { return orig(k); }, name + "_b2", tag::kInjective);
  }
  Tensor prod = BatchMatmul(a, b, a_vec || b_vec ? name + "_mm" : name);
  int lanes = VectorLanes(ctx.target(), kI32);
  SetDefaultSchedules(ctx, "integer matmul", prod);
  ctx.SetSchedule([lanes](const ScheduleRequest& r) { return ScheduleMatVec(r, lanes); }, prod);
  if (!a_vec && !b_vec) return prod;
  graph::Shape out_shape = StaticShape(prod);
  if (a_vec) out_shape.erase(out_shape.end() - 2);
  if (b_vec) out_shape.pop_back();
  return te::compute(ToExprShape(out_shape), [&](const std::vector<Var>& i) {
    std::vector<Expr> idx(i.begin(), i.end());
    if (a_vec && b_vec) return prod(I(0), I(0));
    if (a_vec) idx.insert(idx.end() - 1, I(0));
    else idx.push_back(I(0));
    return prod(idx);
  }, name, tag::kInjective);
}

std::vector<Tensor> MatMulIntegerOp(const OpContext& ctx) {
  CheckZeroPointType(ctx, 0, 2);
  CheckZeroPointType(ctx, 1, 3);
  Tensor vnni = VnniIntegerMatMul(ctx, VnniMatMulInputs{0, 2, 1, 3}, TileEpilogue(), ctx.node().outputs[0]);
  if (vnni.defined()) return {vnni};
  bool per_column = false;
  return {IntegerMatMul(ctx, MatMulInputs{0, 2, 1, 3}, ctx.node().outputs[0], &per_column)};
}

std::vector<Tensor> QLinearMatMulOp(const OpContext& ctx) {
  std::string name = ctx.node().outputs[0];
  ir::DType out = ctx.output_type(0).dtype;
  AGATE_REQUIRE(IsQuantType(out), kUnsupported) << ctx.Describe() << ": output of " << out;
  AGATE_REQUIRE(ctx.input(7).dtype() == out, kInvalidArgument) << ctx.Describe() << ": y_zero_point type";
  PerAxis(ctx, 7, 0, "zero point", false);
  CheckZeroPointType(ctx, 0, 2);
  CheckZeroPointType(ctx, 3, 5);
  graph::Shape bs = StaticShape(ctx.input(3));
  bool per_column = bs.size() >= 2;
  int64_t columns = per_column ? bs.back() : 1;
  Multiplier m = MakeMultiplier(ctx, 1, 4, 6, columns, name + "_requant_scale");
  const Tensor& y_zp = ctx.input(7);
  TileEpilogue requantise = [&](const Expr& acc, const Expr& column) {
    return Requantize(acc, m.At(per_column ? column : I(0)), ParamAt(y_zp, I(0)), out);
  };
  Tensor vnni = VnniIntegerMatMul(ctx, VnniMatMulInputs{0, 2, 3, 5}, requantise, name);
  if (vnni.defined()) return {vnni};
  Tensor acc = IntegerMatMul(ctx, MatMulInputs{0, 2, 3, 5}, name + "_acc", &per_column);
  return {te::compute(acc.shape(), [&](const std::vector<Var>& o) {
    Expr v = acc(std::vector<Expr>(o.begin(), o.end()));
    Expr column = per_column ? Expr(o.back()) : I(0);
    return Requantize(v, m.At(column), ParamAt(y_zp, I(0)), out);
  }, name, tag::kBroadcast)};
}

}  // namespace

Expr Requantize(const Expr& acc, const Expr& multiplier, const Expr& zero_point, ir::DType out) {
  double lo = out == ir::DType::Int(8) ? -128 : 0, hi = out == ir::DType::Int(8) ? 127 : 255;
  Expr m = multiplier.dtype() == kF32 ? multiplier : ir::cast(kF32, multiplier);
  Expr v = ir::round(ir::cast(kF32, acc) * m) + ir::cast(kF32, zero_point);
  v = ir::min(ir::max(v, ir::make_const(kF32, lo)), ir::make_const(kF32, hi));
  return ir::cast(out, v);
}

void RegisterQLinearOps(OpTable* t) {
  t->Register("ConvInteger", ConvIntegerOp);
  t->Register("QLinearConv", QLinearConvOp);
  t->Register("MatMulInteger", MatMulIntegerOp);
  t->Register("QLinearMatMul", QLinearMatMulOp);
}

}  // namespace ops
}  // namespace agate
