// Reference kernels of the losses, window functions, quantization, Compress and ReverseSequence.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph/reference/kernel.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace reference {
namespace {

using Tensors = std::vector<Tensor>;

// loss[n, d...] = -scores[n, target, d...] * weight[target], reduced as asked.
Tensor NllLoss(const KernelContext& ctx, const Tensor& log_prob) {
  const Tensor& target = ctx.in(1);
  const Shape& s = log_prob.shape();
  int64_t classes = s[1];
  int64_t inner = NumElements(Shape(s.begin() + 2, s.end()));
  bool has_ignore = ctx.attrs().Has("ignore_index");
  int64_t ignore = ctx.attrs().GetInt("ignore_index", 0);
  std::string reduction = ctx.attrs().GetString("reduction", "mean");
  std::vector<double> loss(target.numel());
  double total = 0, weight_sum = 0;
  for (int64_t i = 0; i < target.numel(); ++i) {
    int64_t n = i / std::max<int64_t>(inner, 1), d = i % std::max<int64_t>(inner, 1);
    int64_t t = target.GetInt(i);
    if (has_ignore && t == ignore) continue;
    AGATE_REQUIRE(t >= 0 && t < classes, kOutOfRange) << ctx.node.Describe() << ": target " << t << " out of range";
    double w = ctx.has(2) ? ctx.in(2).GetDouble(t) : 1.0;
    loss[i] = -log_prob.GetDouble((n * classes + t) * inner + d) * w;
    total += loss[i];
    weight_sum += w;
  }
  if (reduction == "none") return Tensor::FromDoubles(ctx.outputs[0].dtype, ctx.outputs[0].shape, loss);
  double value = reduction == "sum" ? total : total / weight_sum;
  return Tensor::FromDoubles(ctx.outputs[0].dtype, {}, {value});
}

Tensors NegativeLogLikelihood(const KernelContext& ctx) { return {NllLoss(ctx, ctx.in(0))}; }

Tensors SoftmaxCrossEntropy(const KernelContext& ctx) {
  const Tensor& scores = ctx.in(0);
  const Shape& s = scores.shape();
  int64_t classes = s[1], inner = NumElements(Shape(s.begin() + 2, s.end()));
  Tensor log_prob(scores.dtype(), s);
  for (int64_t n = 0; n < s[0]; ++n) {
    for (int64_t d = 0; d < inner; ++d) {
      auto at = [&](int64_t c) { return (n * classes + c) * inner + d; };
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, scores.GetDouble(at(c)));
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(scores.GetDouble(at(c)) - mx);
      for (int64_t c = 0; c < classes; ++c) log_prob.SetDouble(at(c), scores.GetDouble(at(c)) - mx - std::log(sum));
    }
  }
  Tensors out{NllLoss(ctx, log_prob)};
  if (ctx.outputs.size() > 1) out.push_back(log_prob);
  return out;
}

KernelFn Window(const std::string& op) {
  return [op](const KernelContext& ctx) {
    Tensor out = ctx.NewOutput(0);
    int64_t n = out.numel();
    double denominator = ctx.attrs().GetInt("periodic", 1) != 0 ? n : n - 1;
    for (int64_t i = 0; i < n; ++i) {
      double a = 2 * M_PI * i / denominator;
      double v;
      if (op == "HannWindow") v = 0.5 - 0.5 * std::cos(a);
      else if (op == "HammingWindow") v = 25.0 / 46 - (1 - 25.0 / 46) * std::cos(a);
      else v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
      out.SetDouble(i, v);
    }
    return Tensors{out};
  };
}

// Index into a per-axis parameter (or 0 for per-tensor ones).
int64_t ParamIndex(const KernelContext& ctx, const Tensor& param, int64_t i) {
  if (param.numel() == 1) return 0;
  const Shape& x = ctx.in(0).shape();
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", 1), static_cast<int>(x.size()), ctx.node.Describe());
  int64_t inner = NumElements(Shape(x.begin() + axis + 1, x.end()));
  return (i / inner) % x[axis];
}

double Saturate(double v, DType dtype) {
  double lo = dtype == DType::Int(8) ? -128 : 0, hi = dtype == DType::Int(8) ? 127 : 255;
  return std::min(hi, std::max(lo, v));
}

Tensors Quantize(const KernelContext& ctx) {
  Tensor out = ctx.NewOutput(0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    double scale = ctx.in(1).GetDouble(ParamIndex(ctx, ctx.in(1), i));
    double zero = ctx.has(2) ? ctx.in(2).GetDouble(ParamIndex(ctx, ctx.in(2), i)) : 0.0;
    out.SetDouble(i, Saturate(std::nearbyint(ctx.in(0).GetDouble(i) / scale) + zero, out.dtype()));
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

Tensors Compress(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> condition = ctx.attrs().GetInts("condition");
  std::vector<int64_t> kept;
  for (size_t i = 0; i < condition.size(); ++i)
    if (condition[i]) kept.push_back(static_cast<int64_t>(i));
  if (!ctx.attrs().Has("axis")) return {GatherByOffsets(x.Reshaped({x.numel()}), ctx.outputs[0], kept)};
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank(), ctx.node.Describe());
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  std::vector<int64_t> offsets(ctx.outputs[0].numel());
  ForEachIndex(ctx.outputs[0].shape, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (static_cast<int>(d) == axis ? kept[idx[d]] : idx[d]) * strides[d];
    offsets[linear] = off;
  });
  return {GatherByOffsets(x, ctx.outputs[0], offsets)};
}

Tensors ReverseSequence(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int batch = NormalizeAxis(ctx.attrs().GetInt("batch_axis", 1), x.rank(), ctx.node.Describe());
  int time = NormalizeAxis(ctx.attrs().GetInt("time_axis", 0), x.rank(), ctx.node.Describe());
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  std::vector<int64_t> offsets(x.numel());
  ForEachIndex(x.shape(), [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t len = ctx.in(1).GetInt(idx[batch]);
    int64_t t = idx[time] < len ? len - 1 - idx[time] : idx[time];
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (static_cast<int>(d) == time ? t : idx[d]) * strides[d];
    offsets[linear] = off;
  });
  return {GatherByOffsets(x, ctx.outputs[0], offsets)};
}

}  // namespace

void RegisterMiscKernels(KernelRegistry* r) {
  r->Register("NegativeLogLikelihoodLoss", NegativeLogLikelihood);
  r->Register("SoftmaxCrossEntropyLoss", SoftmaxCrossEntropy);
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) r->Register(op, Window(op));
  r->Register("QuantizeLinear", Quantize);
  r->Register("DequantizeLinear", Dequantize);
  r->Register("DynamicQuantizeLinear", DynamicQuantize);
  r->Register("Compress", Compress);
  r->Register("ReverseSequence", ReverseSequence);
}

}  // namespace reference
}  // namespace graph
}  // namespace agate
