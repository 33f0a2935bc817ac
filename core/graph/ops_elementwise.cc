// Elementwise and broadcasting operators: unary math and activations, binary
// arithmetic/comparison/logic with numpy broadcasting, variadic Max/Min/Sum/Mean,
// Clip, Where, Cast.
#include <algorithm>

#include "core/graph/op_registry.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

std::vector<TensorType> SameAsFirst(const InferContext& ctx) { return {ctx.input(0)}; }

std::vector<TensorType> BoolOfFirst(const InferContext& ctx) {
  return {TensorType{DType::Bool(), ctx.input(0).shape}};
}

// Output shape: every present input broadcast together; dtype: input 0's (or bool).
InferFn Broadcasting(bool bool_result) {
  return [bool_result](const InferContext& ctx) {
    Shape shape = ctx.input(0).shape;
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      shape = BroadcastShapes(shape, ctx.input(i).shape, ctx.node().Describe());
    }
    return std::vector<TensorType>{TensorType{bool_result ? DType::Bool() : ctx.input(0).dtype, shape}};
  };
}

// Arithmetic requires equal operand dtypes (ONNX's type constraint T).
InferFn SameDTypeBroadcasting(bool bool_result, int first_checked = 0) {
  InferFn broadcast = Broadcasting(bool_result);
  return [broadcast, first_checked](const InferContext& ctx) {
    for (int i = first_checked + 1; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      AGATE_REQUIRE(ctx.input(i).dtype == ctx.input(first_checked).dtype, kInvalidArgument)
          << ctx.node().Describe() << ": input " << i << " is " << ctx.input(i).dtype << " but input "
          << first_checked << " is " << ctx.input(first_checked).dtype;
    }
    return broadcast(ctx);
  };
}

// Operands must be integers (ONNX's bitwise operators); bool and floats are refused.
InferFn IntegerOnly(InferFn infer) {
  return [infer](const InferContext& ctx) {
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      AGATE_REQUIRE(ctx.input(i).dtype.is_int() || ctx.input(i).dtype.is_uint(), kInvalidArgument)
          << ctx.node().Describe() << ": input " << i << " is " << ctx.input(i).dtype << "; the operator takes integers";
    }
    return infer(ctx);
  };
}

}  // namespace

void RegisterElementwiseOps(OpRegistry* r) {
  for (const char* op : {"Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Cos", "Cosh", "Erf",
                         "Exp", "Floor", "Log", "Neg", "Reciprocal", "Round", "Sigmoid", "Sign", "Sin", "Sinh",
                         "Sqrt", "Tan", "Tanh", "Relu", "HardSwish", "Softplus", "Softsign", "Not", "Identity"}) {
    r->Register(Def(op, OpKind::kElemWise, 1, 1, {}, SameAsFirst));
  }
  r->Register(Def("LeakyRelu", OpKind::kElemWise, 1, 1, {"alpha"}, SameAsFirst));
  r->Register(Def("Elu", OpKind::kElemWise, 1, 1, {"alpha"}, SameAsFirst));
  r->Register(Def("Celu", OpKind::kElemWise, 1, 1, {"alpha"}, SameAsFirst));
  r->Register(Def("Selu", OpKind::kElemWise, 1, 1, {"alpha", "gamma"}, SameAsFirst));
  r->Register(Def("ThresholdedRelu", OpKind::kElemWise, 1, 1, {"alpha"}, SameAsFirst));
  r->Register(Def("HardSigmoid", OpKind::kElemWise, 1, 1, {"alpha", "beta"}, SameAsFirst));
  // Gelu (ONNX opset 20): approximate="none" is x/2 (1 + erf(x/sqrt 2)), "tanh" the tanh approximation.
  OpDef gelu = Def("Gelu", OpKind::kElemWise, 1, 1, {"approximate"}, SameAsFirst);
  gelu.check = [](const Node& node) -> std::string {
    std::string a = node.attrs.GetString("approximate", "none");
    return a == "none" || a == "tanh" ? "" : "approximate=" + a + " (only none and tanh exist)";
  };
  r->Register(gelu);
  // Swish (ONNX opset 24): x * sigmoid(alpha * x); alpha = 1 is SiLU.
  r->Register(Def("Swish", OpKind::kElemWise, 1, 1, {"alpha"}, SameAsFirst));
  r->Register(Def("Shrink", OpKind::kElemWise, 1, 1, {"bias", "lambd"}, SameAsFirst));
  r->Register(Def("IsNaN", OpKind::kElemWise, 1, 1, {}, BoolOfFirst));
  r->Register(Def("IsInf", OpKind::kElemWise, 1, 1, {"detect_negative", "detect_positive"}, BoolOfFirst));
  // Dropout in inference is the identity; its optional mask output is all true. A ratio (input 1)
  // or training_mode (input 2) that arrives at run time is checked by the kernel when it runs
  // (the importer's NormalizeDropout keeps them only where they can matter).
  r->Register(Def("Dropout", OpKind::kElemWise, 1, 3, {"ratio", "seed", "training_mode"}, [](const InferContext& ctx) {
    bool training = ctx.attrs().GetInt("training_mode", 0) != 0;
    AGATE_REQUIRE(!training || ctx.has_input(1) || ctx.attrs().GetFloat("ratio", 0.5) == 0.0, kUnsupported)
        << ctx.node().Describe() << ": training_mode=1 with a nonzero ratio (random masks) is not supported";
    for (int k : {1, 2}) {
      if (!ctx.has_input(k)) continue;
      const TensorType& t = ctx.input(k);
      bool ok = t.numel() == 1 && (k == 1 ? t.dtype.is_float() : t.dtype.is_bool());
      AGATE_REQUIRE(ok, kInvalidArgument) << ctx.node().Describe() << ": input " << k << " ("
                                          << (k == 1 ? "ratio" : "training_mode") << ") must be one "
                                          << (k == 1 ? "float" : "bool") << ", got " << t.dtype << " "
                                          << ShapeToString(t.shape);
    }
    std::vector<TensorType> out{ctx.input(0)};
    if (ctx.num_outputs() > 1) out.push_back(TensorType{DType::Bool(), ctx.input(0).shape});
    return out;
  }));

  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "PRelu"}) {
    int max_inputs = (std::string(op) == "Max" || std::string(op) == "Min" || std::string(op) == "Sum" ||
                      std::string(op) == "Mean")
                         ? -1
                         : 2;
    int min_inputs = max_inputs == -1 ? 1 : 2;
    // Pow allows a different exponent dtype (ONNX T1/T2).
    InferFn infer = std::string(op) == "Pow" ? Broadcasting(false) : SameDTypeBroadcasting(false);
    if (std::string(op) == "PRelu") {
      // The slope broadcasts onto the input ("unidirectional"): the output keeps the input's shape.
      infer = [](const InferContext& ctx) {
        Shape out = BroadcastShapes(ctx.input(0).shape, ctx.input(1).shape, ctx.node().Describe());
        AGATE_REQUIRE(out == ctx.input(0).shape, kInvalidArgument)
            << ctx.node().Describe() << ": slope " << ShapeToString(ctx.input(1).shape) << " does not broadcast to "
            << ShapeToString(ctx.input(0).shape);
        return std::vector<TensorType>{ctx.input(0)};
      };
    }
    r->Register(Def(op, OpKind::kBroadcast, min_inputs, max_inputs, {}, infer));
  }
  r->Register(Def("Mod", OpKind::kBroadcast, 2, 2, {"fmod"}, SameDTypeBroadcasting(false)));
  // Bitwise operators (ONNX opset 18): integers only, two's complement for signed types.
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    r->Register(Def(op, OpKind::kBroadcast, 2, 2, {}, IntegerOnly(SameDTypeBroadcasting(false))));
  }
  r->Register(Def("BitwiseNot", OpKind::kElemWise, 1, 1, {}, IntegerOnly(SameAsFirst)));
  r->Register(Def("BitShift", OpKind::kBroadcast, 2, 2, {"direction"}, SameDTypeBroadcasting(false)));
  for (const char* op : {"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "And", "Or", "Xor"}) {
    r->Register(Def(op, OpKind::kBroadcast, 2, 2, {}, SameDTypeBroadcasting(true)));
  }
  // Where(cond, x, y): x and y share the dtype; the condition is bool.
  r->Register(Def("Where", OpKind::kBroadcast, 3, 3, {}, [](const InferContext& ctx) {
    AGATE_REQUIRE(ctx.input(0).dtype.is_bool(), kInvalidArgument) << ctx.node().Describe() << ": condition must be bool";
    AGATE_REQUIRE(ctx.input(1).dtype == ctx.input(2).dtype, kInvalidArgument)
        << ctx.node().Describe() << ": x is " << ctx.input(1).dtype << ", y is " << ctx.input(2).dtype;
    Shape shape = BroadcastShapes(ctx.input(0).shape, ctx.input(1).shape, ctx.node().Describe());
    shape = BroadcastShapes(shape, ctx.input(2).shape, ctx.node().Describe());
    return std::vector<TensorType>{TensorType{ctx.input(1).dtype, shape}};
  }));
  // Clip(x, min, max): min/max are optional scalars (runtime values allowed); opset < 11 attributes too.
  r->Register(Def("Clip", OpKind::kElemWise, 1, 3, {"min", "max"}, [](const InferContext& ctx) {
    for (int i = 1; i < 3; ++i) {
      if (!ctx.has_input(i)) continue;
      AGATE_REQUIRE(ctx.input(i).numel() == 1, kInvalidArgument)
          << ctx.node().Describe() << ": bound " << i << " must be a scalar, got " << ShapeToString(ctx.input(i).shape);
    }
    return std::vector<TensorType>{ctx.input(0)};
  }));
  // Cast's `to` is an agate dtype name ("float32"); the frontend translates ONNX's enum.
  r->Register(Def("Cast", OpKind::kElemWise, 1, 1, {"to", "saturate"}, [](const InferContext& ctx) {
    return std::vector<TensorType>{TensorType{DType::Parse(ctx.attrs().GetString("to")), ctx.input(0).shape}};
  }));
  r->Register(Def("CastLike", OpKind::kElemWise, 2, 2, {"saturate"}, [](const InferContext& ctx) {
    return std::vector<TensorType>{TensorType{ctx.input(1).dtype, ctx.input(0).shape}};
  }));
}

}  // namespace graph
}  // namespace agate
