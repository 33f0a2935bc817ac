// Linear quantization (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear) and the
// integer convolutions and matrix products (ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul).
#include <algorithm>

#include "core/graph/op_registry.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using Types = std::vector<TensorType>;

// Blocked quantization (opset 21, block_size > 0): a parameter has x's rank and shape except along
// `axis`, where each of its ceil(D / block_size) entries covers block_size consecutive elements.
void CheckBlockedParam(const InferContext& ctx, int input, const std::string& what, int axis, int64_t block) {
  const TensorType& x = ctx.input(0);
  const TensorType& p = ctx.input(input);
  Shape want = x.shape;
  want[axis] = (x.shape[axis] + block - 1) / block;
  AGATE_REQUIRE(p.shape == want, kInvalidArgument)
      << Where(ctx) << ": with block_size=" << block << " along axis " << axis << ", " << what << " '"
      << ctx.node().inputs[input] << "' must be " << ShapeToString(want) << " for input '" << ctx.node().inputs[0]
      << "' " << x.ToString() << " (ceil(" << x.shape[axis] << " / " << block << ") = " << want[axis]
      << " blocks), got " << p.ToString();
}

// Per-tensor, per-axis or blocked quantization parameters must fit the input.
void CheckQuantParams(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& scale = ctx.input(1);
  int64_t block = ctx.attrs().GetInt("block_size", 0);
  AGATE_REQUIRE(block >= 0, kInvalidArgument) << Where(ctx) << ": block_size=" << block << " is negative";
  if (block > 0) {
    AGATE_REQUIRE(x.rank() >= 1, kInvalidArgument)
        << Where(ctx) << ": block_size=" << block << " needs an input with an axis, got " << x.ToString();
    int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 1), x.rank(), Where(ctx));
    CheckBlockedParam(ctx, 1, "scale", axis, block);
    if (ctx.has_input(2)) CheckBlockedParam(ctx, 2, "zero point", axis, block);
    return;
  }
  if (scale.numel() == 1 && scale.rank() <= 1) return;
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 1), x.rank(), Where(ctx));
  AGATE_REQUIRE(scale.rank() == 1 && scale.shape[0] == x.shape[axis], kInvalidArgument)
      << Where(ctx) << ": scale " << ShapeToString(scale.shape) << " must be a scalar or [" << x.shape[axis] << "]";
}

Types QuantizeInfer(const InferContext& ctx) {
  CheckQuantParams(ctx);
  DType dtype = ctx.has_input(2) ? ctx.input(2).dtype : DType::UInt(8);
  return {TensorType{dtype, ctx.input(0).shape}};
}

Types DequantizeInfer(const InferContext& ctx) {
  CheckQuantParams(ctx);
  return {TensorType{ctx.input(1).dtype, ctx.input(0).shape}};
}

Types DynamicQuantizeInfer(const InferContext& ctx) {
  return {TensorType{DType::UInt(8), ctx.input(0).shape}, TensorType{DType::Float(32), {}},
          TensorType{DType::UInt(8), {}}};
}

// ConvInteger / QLinearConv: Conv geometry, integer output.
Types IntegerConvInfer(const InferContext& ctx, int w_input, DType dtype) {
  const Shape& x = ctx.input(0).shape;
  const Shape& w = ctx.input(w_input).shape;
  int64_t group = ctx.attrs().GetInt("group", 1);
  AGATE_REQUIRE(w.size() == x.size() && x.size() >= 3 && w[1] * group == x[1], kInvalidArgument)
      << Where(ctx) << ": input " << ShapeToString(x) << " and weight " << ShapeToString(w) << " disagree";
  WindowGeometry g = ComputeWindow(ctx.node(), x, Shape(w.begin() + 2, w.end()));
  Shape out{x[0], w[0]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  return {TensorType{dtype, out}};
}

// The integer matrix products: numpy.matmul's shape (MatMulShape), a scalar operand refused (the
// compiler-ABI probe's crash: a rank-0 operand's inner extent was read past its shape).
Types IntegerMatMulInfer(const InferContext& ctx, int a_input, int b_input, DType dtype) {
  return {TensorType{dtype, MatMulShape(ctx.input(a_input).shape, ctx.input(b_input).shape, Where(ctx))}};
}

}  // namespace

void RegisterQuantizeOps(OpRegistry* r) {
  r->Register(Def("QuantizeLinear", OpKind::kElemWise, 2, 3, {"axis", "block_size"}, QuantizeInfer));
  r->Register(Def("DequantizeLinear", OpKind::kElemWise, 2, 3, {"axis", "block_size"}, DequantizeInfer));
  r->Register(Def("DynamicQuantizeLinear", OpKind::kOpaque, 1, 1, {}, DynamicQuantizeInfer));
  const std::vector<std::string> conv_attrs{"kernel_shape", "strides", "dilations", "pads", "auto_pad", "group"};
  r->Register(Def("ConvInteger", OpKind::kOutEWiseFusable, 2, 4, conv_attrs, [](const InferContext& ctx) {
    return IntegerConvInfer(ctx, 1, DType::Int(32));
  }));
  r->Register(Def("QLinearConv", OpKind::kOutEWiseFusable, 8, 9, conv_attrs, [](const InferContext& ctx) {
    return IntegerConvInfer(ctx, 3, ctx.input(7).dtype);
  }));
  r->Register(Def("MatMulInteger", OpKind::kOutEWiseFusable, 2, 4, {}, [](const InferContext& ctx) {
    return IntegerMatMulInfer(ctx, 0, 1, DType::Int(32));
  }));
  r->Register(Def("QLinearMatMul", OpKind::kOutEWiseFusable, 8, 8, {}, [](const InferContext& ctx) {
    return IntegerMatMulInfer(ctx, 0, 3, ctx.input(7).dtype);
  }));
}

}  // namespace graph
}  // namespace agate
