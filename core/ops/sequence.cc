#include "core/ops/sequence.h"

#include <algorithm>
#include <string>

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

// The running sum along a compile-time axis: out[..i..] = sum over j of x[..j..], j <= i
// (j < i exclusive), mirrored for reverse.
Tensor CumSumAlong(const OpContext& ctx, int axis, bool exclusive, bool reverse) {
  const Tensor& x = ctx.input(0);
  int64_t n = StaticShape(x)[axis];
  ir::IterVar r = te::reduce_axis({I(0), I(n)}, "j");
  return te::compute(x.shape(), [&](const std::vector<Var>& o) {
    std::vector<Expr> idx = Exprs(o);
    idx[axis] = r;
    Expr take = reverse ? (exclusive ? Expr(r) > o[axis] : Expr(r) >= o[axis])
                        : (exclusive ? Expr(r) < o[axis] : Expr(r) <= o[axis]);
    return te::sum(ir::select(take, x(idx), ir::make_zero(x.dtype())), {r});
  }, ctx.node().outputs[0], tag::kReduce);
}

// The running sum along an axis read when the kernel runs (input 1): one reduction over the
// largest extent whose every index and bound selects the run-time axis among the rank's axes,
// so one kernel serves every axis. Reads stay in bounds whatever the value (the index is
// clamped); an axis outside [-rank, rank) fails the kernel's run-time check.
Tensor CumSumAlongRunTimeAxis(const OpContext& ctx, bool exclusive, bool reverse) {
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  int rank = static_cast<int>(xs.size());
  auto in_range = [rank](const std::vector<ElementReader>& axis) {
    return axis[0](0) >= I(-rank) && axis[0](0) < I(rank);
  };
  ctx.CheckAtRunTime({1}, in_range,
                     "the axis (input 1, read when the model runs) is out of range for rank " + std::to_string(rank));
  Expr given = ir::cast(ir::DType::Index(), ctx.input(1)(std::vector<Expr>(ctx.input_type(1).rank(), I(0))));
  Expr axis = ir::select(given < I(0), given + I(rank), given);
  int64_t longest = *std::max_element(xs.begin(), xs.end());
  ir::IterVar r = te::reduce_axis({I(0), I(longest)}, "j");
  return te::compute(x.shape(), [&](const std::vector<Var>& o) {
    Expr extent = I(xs[rank - 1]), position = o[rank - 1];
    std::vector<Expr> idx(rank);
    for (int d = rank - 1; d >= 0; --d) {
      Expr on_axis = axis == I(d);
      if (d < rank - 1) {
        extent = ir::select(on_axis, I(xs[d]), extent);
        position = ir::select(on_axis, Expr(o[d]), position);
      }
      idx[d] = ir::select(on_axis, ir::min(Expr(r), I(std::max<int64_t>(xs[d] - 1, 0))), Expr(o[d]));
    }
    Expr order = reverse ? (exclusive ? Expr(r) > position : Expr(r) >= position)
                         : (exclusive ? Expr(r) < position : Expr(r) <= position);
    Expr take = Expr(r) < extent && order;
    return te::sum(ir::select(take, x(idx), ir::make_zero(x.dtype())), {r});
  }, ctx.node().outputs[0], tag::kReduce);
}

// The axis is an attribute, input 1 when it is a constant, else read when the kernel runs.
std::vector<Tensor> CumSumOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  int rank = static_cast<int>(StaticShape(x).size());
  bool exclusive = ctx.attrs().GetInt("exclusive", 0) != 0, reverse = ctx.attrs().GetInt("reverse", 0) != 0;
  Tensor out;
  if (ctx.has_input(1) && ctx.constant(1) == nullptr) {
    out = CumSumAlongRunTimeAxis(ctx, exclusive, reverse);
  } else {
    int64_t given = ctx.has_input(1) ? ctx.constant(1)->GetInt(0) : ctx.attrs().GetSingleInt("axis");
    out = CumSumAlong(ctx, graph::NormalizeAxis(given, rank, ctx.Describe()), exclusive, reverse);
  }
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
