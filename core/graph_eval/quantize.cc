// Reference kernels of linear quantization and the integer convolutions and matrix products.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph_eval/kernel.h"
#include "core/graph/shape_inference.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph_eval {

using namespace graph;  // the graph IR is what this layer runs

namespace {

using Tensors = std::vector<Tensor>;

// Index into a per-axis or blocked parameter (or 0 for per-tensor ones).
int64_t ParamIndex(const KernelContext& ctx, const Tensor& param, int64_t i) {
  const Shape& x = ctx.in(0).shape();
  int64_t block = ctx.attrs().GetInt("block_size", 0);
  if (param.numel() == 1 && block == 0) return 0;
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 1), static_cast<int>(x.size()), ctx.node.Describe());
  int64_t inner = NumElements(Shape(x.begin() + axis + 1, x.end()));
  int64_t along = (i / inner) % x[axis];
  if (block == 0) return along;
  // Blocked: the same position with the axis coordinate divided by the block size.
  int64_t outer = i / (inner * x[axis]);
  int64_t blocks = param.shape()[axis];
  return (outer * blocks + along / block) * inner + i % inner;
}

double Saturate(double v, DType dtype) {
  double lo = dtype == DType::Int(8) ? -128 : 0, hi = dtype == DType::Int(8) ? 127 : 255;
  return std::min(hi, std::max(lo, v));
}

// x / scale is divided in float32 for float32 inputs, as ONNX's definition (and the
// compiled kernel, core/ops/quantize.cc) computes it: a float64 quotient rounds
// differently near the halves, and one flipped rounding changes a quantized value.
Tensors Quantize(const KernelContext& ctx) {
  Tensor out = ctx.NewOutput(0);
  bool f32 = ctx.in(0).dtype() == DType::Float(32);
  for (int64_t i = 0; i < out.numel(); ++i) {
    double scale = ctx.in(1).GetDouble(ParamIndex(ctx, ctx.in(1), i));
    double zero = ctx.has(2) ? ctx.in(2).GetDouble(ParamIndex(ctx, ctx.in(2), i)) : 0.0;
    double x = ctx.in(0).GetDouble(i);
    double q = f32 ? static_cast<double>(static_cast<float>(x) / static_cast<float>(scale)) : x / scale;
    out.SetDouble(i, Saturate(std::nearbyint(q) + zero, out.dtype()));
  }
  return {out};
}

Tensors Dequantize(const KernelContext& ctx) {
  Tensor out = ctx.NewOutput(0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    double scale = ctx.in(1).GetDouble(ParamIndex(ctx, ctx.in(1), i));
    double zero = ctx.has(2) ? ctx.in(2).GetDouble(ParamIndex(ctx, ctx.in(2), i)) : 0.0;
    out.SetDouble(i, (ctx.in(0).GetDouble(i) - zero) * scale);
  }
  return {out};
}

Tensors DynamicQuantize(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  double lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    lo = std::min(lo, x.GetDouble(i));
    hi = std::max(hi, x.GetDouble(i));
  }
  // float32 arithmetic, as the operator's definition computes it.
  float scale = (static_cast<float>(hi) - static_cast<float>(lo)) / 255.0f;
  double zero = Saturate(std::nearbyint(-static_cast<float>(lo) / scale), DType::UInt(8));
  Tensor y = ctx.NewOutput(0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    float q = static_cast<float>(x.GetDouble(i)) / scale;
    y.SetDouble(i, Saturate(std::nearbyint(q) + zero, DType::UInt(8)));
  }
  return {y, Tensor::Scalar(DType::Float(32), scale), Tensor::Scalar(DType::UInt(8), zero)};
}

// (t - zero_point) as float64; the zero point is per tensor or per `axis` slice.
Tensor Centered(const Tensor& t, const Tensor* zero_point, int axis) {
  Tensor out(DType::Float(64), t.shape());
  int64_t inner = axis < 0 ? 1 : NumElements(Shape(t.shape().begin() + axis + 1, t.shape().end()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    double zp = 0;
    if (zero_point != nullptr) zp = zero_point->GetDouble(zero_point->numel() == 1 ? 0 : (i / inner) % zero_point->numel());
    out.SetDouble(i, t.GetDouble(i) - zp);
  }
  return out;
}

// Runs `op` (Conv or MatMul) with this node's attributes on float64 operands.
Tensor RunFloat(const KernelContext& ctx, const std::string& op, const Tensor& a, const Tensor& b) {
  Node node = ctx.node;
  node.op = op;
  node.inputs = {"a", "b"};
  node.outputs = {"y"};
  std::vector<const Tensor*> args{&a, &b};
  std::map<std::string, TensorType> types{{"a", {a.dtype(), a.shape()}}, {"b", {b.dtype(), b.shape()}}};
  KernelContext inner{node, args, InferNodeTypes(node, types, {})};
  return (*KernelRegistry::Global().Find(op))(inner)[0];
}

Tensors ConvInteger(const KernelContext& ctx) {
  Tensor y = RunFloat(ctx, "Conv", Centered(ctx.in(0), ctx.has(2) ? &ctx.in(2) : nullptr, -1),
                      Centered(ctx.in(1), ctx.has(3) ? &ctx.in(3) : nullptr, 0));
  Tensor out = ctx.NewOutput(0);
  for (int64_t i = 0; i < out.numel(); ++i) out.SetInt(i, static_cast<int64_t>(std::llround(y.GetDouble(i))));
  return {out};
}

// The zero point of a matrix operand: a's per tensor or per row, b's per tensor or per column.
int RowAxis(const Tensor& t) { return t.rank() >= 2 ? t.rank() - 2 : -1; }
int ColumnAxis(const Tensor& t) { return t.rank() >= 2 ? t.rank() - 1 : -1; }

Tensors MatMulInteger(const KernelContext& ctx) {
  Tensor y = RunFloat(ctx, "MatMul", Centered(ctx.in(0), ctx.has(2) ? &ctx.in(2) : nullptr, RowAxis(ctx.in(0))),
                      Centered(ctx.in(1), ctx.has(3) ? &ctx.in(3) : nullptr, ColumnAxis(ctx.in(1))));
  Tensor out = ctx.NewOutput(0);
  for (int64_t i = 0; i < out.numel(); ++i) out.SetInt(i, static_cast<int64_t>(std::llround(y.GetDouble(i))));
  return {out};
}

// The requantisation of the QLinear operators, in the one form the compiled
// kernels use too (core/ops/qlinear.h), so integer outputs agree bit for bit:
// y = saturate(nearbyint(float(acc) * float(M[c])) + y_zero_point), M[c] = x_scale *
// w_scale[c] / y_scale computed in double and rounded to float32 once, the product and
// its rounding in float32. `acc` holds the exact integer accumulators (bias included);
// `channel(i)` is the index into w_scale of output element i.
template <typename ChannelFn>
Tensor Requantize(const KernelContext& ctx, const Tensor& acc, int w_scale_input, ChannelFn channel) {
  Tensor out = ctx.NewOutput(0);
  double x_scale = ctx.in(1).GetDouble(0), y_scale = ctx.in(6).GetDouble(0), y_zero = ctx.in(7).GetDouble(0);
  const Tensor& w_scale = ctx.in(w_scale_input);
  for (int64_t i = 0; i < out.numel(); ++i) {
    float m = static_cast<float>(x_scale * w_scale.GetDouble(w_scale.numel() == 1 ? 0 : channel(i)) / y_scale);
    float product = static_cast<float>(acc.GetDouble(i)) * m;
    out.SetDouble(i, Saturate(static_cast<double>(std::nearbyint(product)) + y_zero, out.dtype()));
  }
  return out;
}

Tensors QLinearMatMul(const KernelContext& ctx) {
  Tensor a = Centered(ctx.in(0), &ctx.in(2), RowAxis(ctx.in(0)));
  Tensor b = Centered(ctx.in(3), &ctx.in(5), ColumnAxis(ctx.in(3)));
  Tensor y = RunFloat(ctx, "MatMul", a, b);
  int64_t columns = ctx.in(3).rank() >= 2 ? ctx.in(3).shape().back() : 1;
  return {Requantize(ctx, y, 4, [&](int64_t i) { return i % columns; })};
}

Tensors QLinearConv(const KernelContext& ctx) {
  Tensor x = Centered(ctx.in(0), &ctx.in(2), -1), w = Centered(ctx.in(3), &ctx.in(5), 0);
  Tensor y = RunFloat(ctx, "Conv", x, w);
  const Shape& s = y.shape();
  int64_t channels = s[1], inner = NumElements(Shape(s.begin() + 2, s.end()));
  if (ctx.has(8)) {
    for (int64_t i = 0; i < y.numel(); ++i) y.SetDouble(i, y.GetDouble(i) + ctx.in(8).GetDouble((i / inner) % channels));
  }
  return {Requantize(ctx, y, 4, [&](int64_t i) { return (i / inner) % channels; })};
}

}  // namespace

void RegisterQuantizeKernels(KernelRegistry* r) {
  r->Register("ConvInteger", ConvInteger);
  r->Register("MatMulInteger", MatMulInteger);
  r->Register("QLinearMatMul", QLinearMatMul);
  r->Register("QLinearConv", QLinearConv);
  r->Register("QuantizeLinear", Quantize);
  r->Register("DequantizeLinear", Dequantize);
  r->Register("DynamicQuantizeLinear", DynamicQuantize);
}

}  // namespace graph_eval
}  // namespace agate
