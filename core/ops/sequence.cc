#include "core/ops/sequence.h"

#include "core/graph/shape_rules.h"
#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

namespace {

Expr I(int64_t v) { return Expr(v); }

std::vector<Expr> Exprs(const std::vector<Var>& v) { return std::vector<Expr>(v.begin(), v.end()); }

std::vector<Tensor> CumSumOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  int axis = graph::NormalizeAxis(ctx.attrs().GetSingleInt("axis"), static_cast<int>(xs.size()), ctx.Describe());
  bool exclusive = ctx.attrs().GetInt("exclusive", 0) != 0, reverse = ctx.attrs().GetInt("reverse", 0) != 0;
  int64_t n = xs[axis];
  ir::IterVar r = te::reduce_axis({I(0), I(n)}, "j");
  Tensor out = te::compute(x.shape(), [&](const std::vector<Var>& o) {
    std::vector<Expr> idx = Exprs(o);
    idx[axis] = r;
    // j contributes to i when j <= i (j < i exclusive), mirrored for reverse.
    Expr take = reverse ? (exclusive ? Expr(r) > o[axis] : Expr(r) >= o[axis])
                        : (exclusive ? Expr(r) < o[axis] : Expr(r) <= o[axis]);
    return te::sum(ir::select(take, x(idx), ir::make_zero(x.dtype())), {r});
  }, ctx.node().outputs[0], tag::kReduce);
  SetDefaultSchedules(ctx, "cumsum", out);
  return {out};
}

std::vector<Tensor> CompressOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  std::vector<int64_t> condition = ctx.attrs().GetInts("condition");
  std::vector<int64_t> kept;
  for (size_t i = 0; i < condition.size(); ++i)
    if (condition[i]) kept.push_back(static_cast<int64_t>(i));
  int64_t count = static_cast<int64_t>(kept.size());
  if (count == 0) kept.push_back(0);  // a table is never empty; the output has no elements
  Tensor table = ctx.AddConstant(ctx.node().outputs[0] + "_kept",
                                 graph::Tensor::FromInts(ir::DType::Int(64), {static_cast<int64_t>(kept.size())}, kept));
  bool has_axis = ctx.attrs().Has("axis");
  int axis = has_axis ? graph::NormalizeAxis(ctx.attrs().GetInt("axis"), static_cast<int>(xs.size()), ctx.Describe()) : 0;
  return {te::compute(ToExprShape(ctx.output_type(0).shape), [&](const std::vector<Var>& o) {
    if (!has_axis) {
      Expr flat = table(o[0]);
      std::vector<Expr> idx(xs.size());
      int64_t stride = 1;
      for (size_t d = xs.size(); d-- > 0;) {
        Expr q = stride == 1 ? flat : ir::floordiv(flat, I(stride));
        idx[d] = d == 0 ? q : ir::floormod(q, I(xs[d]));
        stride *= xs[d];
      }
      return x(idx);
    }
    std::vector<Expr> idx = Exprs(o);
    idx[axis] = table(o[axis]);
    return x(idx);
  }, ctx.node().outputs[0], tag::kInjective)};
}

std::vector<Tensor> ReverseSequenceOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& lens = ctx.input(1);
  graph::Shape xs = StaticShape(x);
  int rank = static_cast<int>(xs.size());
  int batch = graph::NormalizeAxis(ctx.attrs().GetInt("batch_axis", 1), rank, ctx.Describe());
  int time = graph::NormalizeAxis(ctx.attrs().GetInt("time_axis", 0), rank, ctx.Describe());
  return {te::compute(x.shape(), [&](const std::vector<Var>& o) {
    Expr len = ir::cast(ir::DType::Index(), lens(o[batch]));
    std::vector<Expr> idx = Exprs(o);
    Expr t = ir::select(Expr(o[time]) < len, len - 1 - o[time], Expr(o[time]));
    idx[time] = ir::min(ir::max(t, I(0)), I(xs[time] - 1));
    return x(idx);
  }, ctx.node().outputs[0], tag::kInjective)};
}

}  // namespace

void RegisterSequenceOps(OpTable* t) {
  t->Register("CumSum", CumSumOp);
  t->Register("Compress", CompressOp);
  t->Register("ReverseSequence", ReverseSequenceOp);
}

}  // namespace ops
}  // namespace agate
