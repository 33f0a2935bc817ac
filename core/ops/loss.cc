#include "core/ops/loss.h"

#include <limits>

#include "core/ops/op_context.h"
#include "core/ops/reduce.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/ops/softmax.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using te::Expr;
using te::Tensor;
using te::Var;

// Per position (n, d...) of the target: the weighted negative log-probability
// and the weight it counts with (0 where the target is ignore_index).
struct PerPosition {
  Tensor loss;
  Tensor weight;
};

PerPosition WeightedNll(const OpContext& ctx, const Tensor& log_prob, const std::string& name) {
  const Tensor& target = ctx.input(1);
  graph::Shape ss = StaticShape(log_prob);
  int64_t classes = ss[1];
  ir::DType dt = log_prob.dtype(), it = target.dtype();
  bool has_ignore = ctx.attrs().Has("ignore_index");
  int64_t ignore = ctx.attrs().GetInt("ignore_index", 0);
  bool has_weight = ctx.has_input(2);
  // The class a target names, clamped into [0, C) so that no read leaves the scores.
  auto cls = [&](const Expr& t) {
    return ir::max(ir::min(t, ir::make_const(it, classes - 1)), ir::make_zero(it));
  };
  auto counted = [&](const Expr& t) {
    return has_ignore ? Expr(t != ir::make_const(it, ignore)) : Expr();
  };
  auto weight_of = [&](const Expr& t) { return has_weight ? ctx.input(2)(cls(t)) : ir::make_const(dt, 1.0); };
  Tensor weight = te::compute(target.shape(), [&](const std::vector<Var>& p) {
    Expr t = target(std::vector<Expr>(p.begin(), p.end()));
    Expr w = weight_of(t);
    Expr keep = counted(t);
    return keep.defined() ? ir::select(keep, w, ir::make_zero(dt)) : w;
  }, name + "_weight", tag::kInjective);
  Tensor loss = te::compute(target.shape(), [&](const std::vector<Var>& p) {
    Expr t = target(std::vector<Expr>(p.begin(), p.end()));
    std::vector<Expr> idx{p[0], cls(t)};
    for (size_t d = 1; d < p.size(); ++d) idx.push_back(p[d]);
    Expr in_range = t >= ir::make_zero(it) && t < ir::make_const(it, classes);
    Expr value = ir::select(in_range, -log_prob(idx) * weight_of(t),
                            ir::make_const(dt, std::numeric_limits<double>::quiet_NaN()));
    Expr keep = counted(t);
    return keep.defined() ? ir::select(keep, value, ir::make_zero(dt)) : value;
  }, name + "_loss", tag::kInjective);
  return {loss, weight};
}

// reduction none: the per-position losses; sum: their sum; mean: the sum over
// the sum of the counted weights (ONNX's weighted mean).
Tensor Reduce(const OpContext& ctx, const PerPosition& p, const std::string& name) {
  std::string reduction = ctx.attrs().GetString("reduction", "mean");
  graph::Shape ts = StaticShape(p.loss);
  if (reduction == "none") {
    return te::compute(p.loss.shape(), [&](const std::vector<Var>& i) {
      return p.loss(std::vector<Expr>(i.begin(), i.end()));
    }, name, tag::kInjective);
  }
  std::vector<int> all;
  for (size_t d = 0; d < ts.size(); ++d) all.push_back(static_cast<int>(d));
  auto id = [](Expr v) { return v; };
  Tensor sum = ReduceTensor(p.loss, all, false, "sum", id, reduction == "sum" ? name : name + "_sum");
  if (reduction == "sum") return sum;
  Tensor weights = ReduceTensor(p.weight, all, false, "sum", id, name + "_weights");
  return te::compute({}, [&](const std::vector<Var>&) { return sum({}) / weights({}); }, name, tag::kElemwise);
}

void RequireTypes(const OpContext& ctx) {
  AGATE_REQUIRE(ctx.input(0).dtype().is_float(), kUnsupported)
      << ctx.Describe() << ": scores of " << ctx.input(0).dtype();
  AGATE_REQUIRE(ctx.input(1).dtype().is_integer(), kInvalidArgument)
      << ctx.Describe() << ": targets of " << ctx.input(1).dtype() << " (integer class indices expected)";
  std::string reduction = ctx.attrs().GetString("reduction", "mean");
  AGATE_REQUIRE(reduction == "none" || reduction == "sum" || reduction == "mean", kUnsupported)
      << ctx.Describe() << ": reduction=" << reduction;
}

std::vector<Tensor> NllLossOp(const OpContext& ctx) {
  RequireTypes(ctx);
  std::string name = ctx.node().outputs[0];
  Tensor out = Reduce(ctx, WeightedNll(ctx, ctx.input(0), name), name);
  SetDefaultSchedules(ctx, "nll_loss", out);
  return {out};
}

std::vector<Tensor> SoftmaxCrossEntropyOp(const OpContext& ctx) {
  RequireTypes(ctx);
  std::string name = ctx.node().outputs[0];
  std::vector<Tensor> stats;
  bool wants_log_prob = ctx.num_outputs() > 1 && !ctx.node().outputs[1].empty();
  Tensor log_prob = Softmax(ctx.input(0), {1}, SoftmaxKind::kLogSoftmax,
                            wants_log_prob ? ctx.node().outputs[1] : name + "_log_prob", &stats);
  Tensor out = Reduce(ctx, WeightedNll(ctx, log_prob, name), name);
  SetDefaultSchedules(ctx, "softmax_cross_entropy", out);
  if (ctx.num_outputs() > 1) return {out, wants_log_prob ? log_prob : Tensor()};
  return {out};
}

}  // namespace

void RegisterLossOps(OpTable* t) {
  t->Register("NegativeLogLikelihoodLoss", NllLossOp);
  t->Register("SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyOp);
}

}  // namespace ops
}  // namespace agate
