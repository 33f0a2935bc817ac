// Reference kernels of the losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss).
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

}  // namespace

void RegisterLossKernels(KernelRegistry* r) {
  r->Register("NegativeLogLikelihoodLoss", NegativeLogLikelihood);
  r->Register("SoftmaxCrossEntropyLoss", SoftmaxCrossEntropy);
}

}  // namespace graph_eval
}  // namespace agate
