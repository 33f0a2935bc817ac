#include "core/ops/broadcast.h"

#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/shape_operand_check.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

Tensor BroadcastBinary(const Tensor& a, const Tensor& b, const graph::Shape& out_shape,
                       const std::function<Expr(Expr, Expr)>& f, const std::string& name) {
  return te::compute(ToExprShape(out_shape),
                     [&](const std::vector<Var>& i) { return f(BroadcastRead(a, i), BroadcastRead(b, i)); }, name,
                     tag::kBroadcast);
}

namespace {

using Binary = std::function<Expr(const OpContext&, Expr, Expr)>;

void RegisterBinary(OpTable* t, const std::string& op, Binary f) {
  t->Register(op, [f](const OpContext& ctx) {
    return std::vector<Tensor>{BroadcastBinary(ctx.input(0), ctx.input(1), ctx.output_type(0).shape,
                                               [&](Expr a, Expr b) { return f(ctx, a, b); }, ctx.node().outputs[0])};
  });
}

// Max/Min/Sum/Mean over any number of operands.
void RegisterVariadic(OpTable* t, const std::string& op) {
  t->Register(op, [op](const OpContext& ctx) {
    const graph::Shape& shape = ctx.output_type(0).shape;
    Tensor out = te::compute(
        ToExprShape(shape),
        [&](const std::vector<Var>& i) {
          Expr acc = BroadcastRead(ctx.input(0), i);
          for (int k = 1; k < ctx.num_inputs(); ++k) {
            Expr x = BroadcastRead(ctx.input(k), i);
            if (op == "Max") acc = ir::max(acc, x);
            if (op == "Min") acc = ir::min(acc, x);
            if (op == "Sum" || op == "Mean") acc = acc + x;
          }
          if (op == "Mean") {
            AGATE_REQUIRE(acc.dtype().is_float(), kUnsupported) << ctx.Describe() << ": Mean of " << acc.dtype();
            acc = acc / ir::make_const(acc.dtype(), ctx.num_inputs());
          }
          return acc;
        },
        ctx.node().outputs[0], tag::kBroadcast);
    return std::vector<Tensor>{out};
  });
}

Expr SafeDivisor(Expr b) { return ir::select(b == ir::make_zero(b.dtype()), ir::make_const(b.dtype(), 1), b); }

}  // namespace

void RegisterBroadcastOps(OpTable* t) {
  RegisterBinary(t, "Add", [](const OpContext&, Expr a, Expr b) { return a + b; });
  RegisterBinary(t, "Sub", [](const OpContext&, Expr a, Expr b) { return a - b; });
  RegisterBinary(t, "Mul", [](const OpContext&, Expr a, Expr b) { return a * b; });
  RegisterBinary(t, "Div", [](const OpContext&, Expr a, Expr b) {
    if (a.dtype().is_float()) return a / b;
    // Integer division by zero yields 0 (the reference's rule) instead of trapping.
    return ir::select(b == ir::make_zero(b.dtype()), ir::make_zero(a.dtype()), ir::truncdiv(a, SafeDivisor(b)));
  });
  RegisterBinary(t, "Mod", [](const OpContext& ctx, Expr a, Expr b) {
    bool fmod = ctx.attrs().GetInt("fmod", 0) != 0;
    if (a.dtype().is_float()) {
      Expr r = a - ir::trunc(a / b) * b;
      if (fmod) return r;
      Expr zero = ir::make_zero(a.dtype());
      return ir::select(r != zero && ((r < zero) != (b < zero)), r + b, r);
    }
    Expr zero = ir::make_zero(a.dtype());
    Expr r = fmod ? ir::truncmod(a, SafeDivisor(b)) : ir::floormod(a, SafeDivisor(b));
    return ir::select(b == zero, zero, r);
  });
  RegisterBinary(t, "Pow", [](const OpContext&, Expr a, Expr b) {
    if (a.dtype().is_float()) return ir::pow(a, ir::cast(a.dtype(), b));
    ir::DType f64 = ir::DType::Float(64);
    return ir::cast(a.dtype(), ir::pow(ir::cast(f64, a), ir::cast(f64, b)));
  });
  RegisterBinary(t, "PRelu", [](const OpContext&, Expr x, Expr s) {
    return ir::select(x < ir::make_zero(x.dtype()), x * s, x);
  });
  RegisterBinary(t, "Equal", [](const OpContext&, Expr a, Expr b) { return a == b; });
  RegisterBinary(t, "Greater", [](const OpContext&, Expr a, Expr b) { return a > b; });
  RegisterBinary(t, "GreaterOrEqual", [](const OpContext&, Expr a, Expr b) { return a >= b; });
  RegisterBinary(t, "Less", [](const OpContext&, Expr a, Expr b) { return a < b; });
  RegisterBinary(t, "LessOrEqual", [](const OpContext&, Expr a, Expr b) { return a <= b; });
  RegisterBinary(t, "And", [](const OpContext&, Expr a, Expr b) { return a && b; });
  RegisterBinary(t, "Or", [](const OpContext&, Expr a, Expr b) { return a || b; });
  RegisterBinary(t, "Xor", [](const OpContext&, Expr a, Expr b) { return a != b; });
  RegisterBinary(t, "BitwiseAnd", [](const OpContext&, Expr a, Expr b) { return ir::bitwise_and(a, b); });
  RegisterBinary(t, "BitwiseOr", [](const OpContext&, Expr a, Expr b) { return ir::bitwise_or(a, b); });
  RegisterBinary(t, "BitwiseXor", [](const OpContext&, Expr a, Expr b) { return ir::bitwise_xor(a, b); });
  // ONNX BitShift: logical shifts of unsigned integers; an amount >= the bit width gives 0 (ir::shift_left).
  RegisterBinary(t, "BitShift", [](const OpContext& ctx, Expr a, Expr b) {
    std::string direction = ctx.attrs().GetString("direction", "");
    AGATE_REQUIRE(direction == "LEFT" || direction == "RIGHT", kInvalidArgument)
        << ctx.Describe() << ": direction is '" << direction << "', not LEFT or RIGHT";
    AGATE_REQUIRE(a.dtype().is_uint(), kUnsupported)
        << ctx.Describe() << ": BitShift is defined on unsigned integers, got " << ctx.input_type(0).ToString()
        << " and " << ctx.input_type(1).ToString();
    return direction == "LEFT" ? ir::shift_left(a, b) : ir::shift_right(a, b);
  });
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) RegisterVariadic(t, op);
  t->Register("Where", [](const OpContext& ctx) {
    Tensor out = te::compute(
        ToExprShape(ctx.output_type(0).shape),
        [&](const std::vector<Var>& i) {
          return ir::select(BroadcastRead(ctx.input(0), i), BroadcastRead(ctx.input(1), i),
                            BroadcastRead(ctx.input(2), i));
        },
        ctx.node().outputs[0], tag::kBroadcast);
    return std::vector<Tensor>{out};
  });
  t->Register("Expand", [](const OpContext& ctx) {
    CheckShapeOperandAtRunTime(ctx);
    Tensor in = ctx.input(0);
    Tensor out = te::compute(ToExprShape(ctx.output_type(0).shape),
                             [&](const std::vector<Var>& i) { return BroadcastRead(in, i); }, ctx.node().outputs[0],
                             tag::kBroadcast);
    return std::vector<Tensor>{out};
  });
}

}  // namespace ops
}  // namespace agate
