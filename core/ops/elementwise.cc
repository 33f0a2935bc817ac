#include "core/ops/elementwise.h"

#include <cmath>

#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

Tensor Map(const Tensor& in, const std::function<Expr(Expr)>& f, const std::string& name, const std::string& tag) {
  return te::compute(
      in.shape(), [&](const std::vector<Var>& i) { return f(in(std::vector<Expr>(i.begin(), i.end()))); }, name, tag);
}

Expr Relu(Expr x) { return ir::max(x, ir::make_zero(x.dtype())); }

Expr Gelu(Expr x) { return x * (ir::erf(x * 0.70710678118654752) + 1.0) * 0.5; }

Expr Atan(Expr x) {
  ir::DType t = x.dtype();
  Expr ax = ir::abs(x);
  // Reduce |x| to [0, tan(pi/8)] with atan(x) = pi/2 + atan(-1/x) and pi/4 + atan((x-1)/(x+1)).
  Expr big = ax > 2.414213562373095;
  Expr mid = ax > 0.4142135623730950;
  Expr r = ir::select(big, ir::make_const(t, -1.0) / ax, ir::select(mid, (ax - 1.0) / (ax + 1.0), ax));
  Expr base = ir::select(big, ir::make_const(t, M_PI / 2), ir::select(mid, ir::make_const(t, M_PI / 4),
                                                                        ir::make_zero(t)));
  Expr z = r * r;
  Expr poly = (((z * 8.05374449538e-2 - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * r + r;
  Expr result = base + poly;
  return ir::select(x < ir::make_zero(t), -result, result);
}

namespace {

Expr C(ir::DType t, double v) { return ir::make_const(t, v); }

using Unary = std::function<Expr(const OpContext&, Expr)>;

Expr RequireFloat(const OpContext& ctx, Expr x) {
  AGATE_REQUIRE(x.dtype().is_float(), kUnsupported) << ctx.Describe() << ": input is " << x.dtype()
                                                    << " (only floating point is supported)";
  return x;
}

void RegisterUnary(OpTable* t, const std::string& op, Unary f) {
  t->Register(op, [op, f](const OpContext& ctx) {
    Tensor in = ctx.input(0);
    std::vector<Tensor> out{Map(in, [&](Expr x) { return f(ctx, x); }, ctx.node().outputs[0])};
    // Dropout's optional mask: all true in inference.
    for (int i = 1; i < ctx.num_outputs(); ++i) {
      out.push_back(te::compute(in.shape(), [](const std::vector<Var>&) { return ir::make_const(ir::DType::Bool(), 1); },
                                ctx.node().outputs[i], "elemwise"));
    }
    return out;
  });
}

// Clip bounds: inputs 1/2 (scalars) or the opset < 11 attributes.
Expr ClipBound(const OpContext& ctx, int input, const std::string& attr, Expr fallback) {
  if (ctx.has_input(input)) {
    const Tensor& b = ctx.input(input);
    std::vector<Expr> zeros(b.ndim(), Expr(int64_t{0}));
    return b(zeros);
  }
  if (ctx.attrs().Has(attr)) return ir::make_const(fallback.dtype(), ctx.attrs().GetFloat(attr));
  return Expr();
}

// Dropout with a ratio or training_mode read at run time (graph/ops_elementwise.cc): the
// identity only in inference or with ratio 0, which the kernel checks when it runs.
void CheckDropoutMode(const OpContext& ctx) {
  bool ratio_at_run_time = ctx.has_input(1), mode_at_run_time = ctx.has_input(2);
  if (!ratio_at_run_time && !mode_at_run_time) return;
  std::vector<int> operands;
  if (ratio_at_run_time) operands.push_back(1);
  if (mode_at_run_time) operands.push_back(2);
  double ratio = ctx.attrs().GetFloat("ratio", 0.5);
  bool training = ctx.attrs().GetInt("training_mode", 0) != 0;
  ctx.CheckAtRunTime(operands, [=](const std::vector<ElementReader>& r) {
    Expr rate = ratio_at_run_time ? r[0](0) : C(ir::DType::Float(32), ratio);
    Expr mode = mode_at_run_time ? r.back()(0) : ir::make_const(ir::DType::Bool(), training);
    return !mode || rate == C(rate.dtype(), 0.0);
  }, "training_mode is true and the ratio nonzero when the model runs (random masks are not supported)",
  /*raw_elements=*/true);
}

}  // namespace

void RegisterElementwiseOps(OpTable* t) {
  auto F = [](std::function<Expr(Expr)> f) -> Unary {
    return [f](const OpContext& ctx, Expr x) { return f(RequireFloat(ctx, x)); };
  };
  RegisterUnary(t, "Identity", [](const OpContext&, Expr x) { return x; });
  RegisterUnary(t, "Dropout", [](const OpContext& ctx, Expr x) {
    CheckDropoutMode(ctx);
    return x;
  });
  RegisterUnary(t, "Abs", [](const OpContext& ctx, Expr x) {
    return x.dtype().is_uint() || x.dtype().is_bool() ? x : ir::abs(x);
  });
  RegisterUnary(t, "Neg", [](const OpContext&, Expr x) { return -x; });
  RegisterUnary(t, "Not", [](const OpContext&, Expr x) { return !x; });
  RegisterUnary(t, "BitwiseNot", [](const OpContext&, Expr x) { return ir::bitwise_not(x); });
  RegisterUnary(t, "Sign", [](const OpContext&, Expr x) {
    ir::DType d = x.dtype();
    return ir::select(x > ir::make_zero(d), C(d, 1), ir::select(x < ir::make_zero(d), C(d, -1), ir::make_zero(d)));
  });
  RegisterUnary(t, "Relu", [](const OpContext&, Expr x) { return Relu(x); });
  RegisterUnary(t, "Ceil", F([](Expr x) { return ir::ceil(x); }));
  RegisterUnary(t, "Floor", F([](Expr x) { return ir::floor(x); }));
  RegisterUnary(t, "Round", F([](Expr x) { return ir::round(x); }));
  RegisterUnary(t, "Exp", F([](Expr x) { return ir::exp(x); }));
  RegisterUnary(t, "Log", F([](Expr x) { return ir::log(x); }));
  RegisterUnary(t, "Sqrt", F([](Expr x) { return ir::sqrt(x); }));
  RegisterUnary(t, "Tanh", F([](Expr x) { return ir::tanh(x); }));
  RegisterUnary(t, "Erf", F([](Expr x) { return ir::erf(x); }));
  RegisterUnary(t, "Sigmoid", F([](Expr x) { return ir::sigmoid(x); }));
  RegisterUnary(t, "Sin", F([](Expr x) { return ir::sin(x); }));
  RegisterUnary(t, "Cos", F([](Expr x) { return ir::cos(x); }));
  RegisterUnary(t, "Tan", F([](Expr x) { return ir::sin(x) / ir::cos(x); }));
  RegisterUnary(t, "Sinh", F([](Expr x) { return (ir::exp(x) - ir::exp(-x)) * 0.5; }));
  RegisterUnary(t, "Cosh", F([](Expr x) { return (ir::exp(x) + ir::exp(-x)) * 0.5; }));
  RegisterUnary(t, "Asinh", F([](Expr x) {
    Expr ax = ir::abs(x);
    Expr r = ir::log(ax + ir::sqrt(ax * ax + 1.0));
    return ir::select(x < ir::make_zero(x.dtype()), -r, r);
  }));
  RegisterUnary(t, "Acosh", F([](Expr x) { return ir::log(x + ir::sqrt(x * x - 1.0)); }));
  RegisterUnary(t, "Atanh", F([](Expr x) { return ir::log((x + 1.0) / (C(x.dtype(), 1.0) - x)) * 0.5; }));
  RegisterUnary(t, "Atan", F([](Expr x) { return Atan(x); }));
  RegisterUnary(t, "Asin", F([](Expr x) { return Atan(x / ir::sqrt(C(x.dtype(), 1.0) - x * x)); }));
  RegisterUnary(t, "Acos", F([](Expr x) { return C(x.dtype(), M_PI / 2) - Atan(x / ir::sqrt(C(x.dtype(), 1.0) - x * x)); }));
  RegisterUnary(t, "Reciprocal", F([](Expr x) { return C(x.dtype(), 1.0) / x; }));
  RegisterUnary(t, "HardSwish", F([](Expr x) {
    ir::DType d = x.dtype();
    return x * ir::max(ir::make_zero(d), ir::min(C(d, 1.0), x / 6.0 + 0.5));
  }));
  RegisterUnary(t, "Gelu", [](const OpContext& ctx, Expr x) {
    RequireFloat(ctx, x);
    if (ctx.attrs().GetString("approximate", "none") != "tanh") return Gelu(x);
    // 0.5 x (1 + tanh(u)) = x sigmoid(2u): one exp and one division per value where tanh
    // takes an exp, a division, a series for small |u| and selects between them (GPT-2's
    // MLP products spent a third of their time in the tanh epilogue on AVX2), and no
    // cancellation in 1 + tanh(u) for large negative x.
    return x * ir::sigmoid((x + x * x * x * 0.044715) * (2.0 * std::sqrt(2.0 / M_PI)));
  });
  RegisterUnary(t, "Swish", [](const OpContext& ctx, Expr x) {
    double alpha = ctx.attrs().GetFloat("alpha", 1.0);
    RequireFloat(ctx, x);
    return x * ir::sigmoid(alpha == 1.0 ? x : x * alpha);
  });
  RegisterUnary(t, "Softplus", F([](Expr x) {
    // log(1 + e^x) without overflow: max(x, 0) + log(1 + e^-|x|).
    return ir::max(x, ir::make_zero(x.dtype())) + ir::log(ir::exp(-ir::abs(x)) + 1.0);
  }));
  RegisterUnary(t, "Softsign", F([](Expr x) { return x / (ir::abs(x) + 1.0); }));
  RegisterUnary(t, "LeakyRelu", [](const OpContext& ctx, Expr x) {
    double alpha = ctx.attrs().GetFloat("alpha", 0.01);
    return ir::select(RequireFloat(ctx, x) < ir::make_zero(x.dtype()), x * alpha, x);
  });
  RegisterUnary(t, "Elu", [](const OpContext& ctx, Expr x) {
    double alpha = ctx.attrs().GetFloat("alpha", 1.0);
    return ir::select(RequireFloat(ctx, x) < ir::make_zero(x.dtype()), (ir::exp(x) - 1.0) * alpha, x);
  });
  RegisterUnary(t, "Celu", [](const OpContext& ctx, Expr x) {
    double alpha = ctx.attrs().GetFloat("alpha", 1.0);
    ir::DType d = RequireFloat(ctx, x).dtype();
    return ir::max(ir::make_zero(d), x) + ir::min(ir::make_zero(d), (ir::exp(x / alpha) - 1.0) * alpha);
  });
  RegisterUnary(t, "Selu", [](const OpContext& ctx, Expr x) {
    double alpha = ctx.attrs().GetFloat("alpha", 1.67326319217681884765625);
    double gamma = ctx.attrs().GetFloat("gamma", 1.05070102214813232421875);
    return ir::select(RequireFloat(ctx, x) > ir::make_zero(x.dtype()), x, (ir::exp(x) - 1.0) * alpha) * gamma;
  });
  RegisterUnary(t, "ThresholdedRelu", [](const OpContext& ctx, Expr x) {
    double alpha = ctx.attrs().GetFloat("alpha", 1.0);
    return ir::select(RequireFloat(ctx, x) > alpha, x, ir::make_zero(x.dtype()));
  });
  RegisterUnary(t, "HardSigmoid", [](const OpContext& ctx, Expr x) {
    double alpha = ctx.attrs().GetFloat("alpha", 0.2), beta = ctx.attrs().GetFloat("beta", 0.5);
    ir::DType d = RequireFloat(ctx, x).dtype();
    return ir::max(ir::make_zero(d), ir::min(C(d, 1.0), x * alpha + beta));
  });
  RegisterUnary(t, "Shrink", [](const OpContext& ctx, Expr x) {
    double bias = ctx.attrs().GetFloat("bias", 0.0), lambd = ctx.attrs().GetFloat("lambd", 0.5);
    ir::DType d = x.dtype();
    return ir::select(x < C(d, -lambd), x + C(d, bias), ir::select(x > C(d, lambd), x - C(d, bias), ir::make_zero(d)));
  });
  RegisterUnary(t, "IsNaN", [](const OpContext& ctx, Expr x) { return RequireFloat(ctx, x) != x; });
  RegisterUnary(t, "IsInf", [](const OpContext& ctx, Expr x) {
    bool neg = ctx.attrs().GetInt("detect_negative", 1) != 0, pos = ctx.attrs().GetInt("detect_positive", 1) != 0;
    ir::DType d = RequireFloat(ctx, x).dtype();
    Expr result = ir::make_const(ir::DType::Bool(), 0);
    if (pos) result = result || x > ir::max_value(d);
    if (neg) result = result || x < ir::min_value(d);
    return result;
  });
  auto cast = [](const OpContext& ctx, ir::DType to) {
    return Map(ctx.input(0), [to](Expr x) {
      // Float -> bool is x != 0 (Cast's rule); float -> int truncates.
      return ir::cast(to, x);
    }, ctx.node().outputs[0]);
  };
  t->Register("Cast", [cast](const OpContext& ctx) {
    return std::vector<Tensor>{cast(ctx, ir::DType::Parse(ctx.attrs().GetString("to")))};
  });
  t->Register("CastLike", [cast](const OpContext& ctx) {
    return std::vector<Tensor>{cast(ctx, ctx.input(1).dtype())};
  });
  t->Register("Clip", [](const OpContext& ctx) {
    Tensor in = ctx.input(0);
    Expr zero = ir::make_zero(in.dtype());
    Expr lo = ClipBound(ctx, 1, "min", zero), hi = ClipBound(ctx, 2, "max", zero);
    return std::vector<Tensor>{Map(in, [&](Expr x) {
      if (lo.defined()) x = ir::max(x, lo);
      if (hi.defined()) x = ir::min(x, hi);
      return x;
    }, ctx.node().outputs[0])};
  });
}

}  // namespace ops
}  // namespace agate
