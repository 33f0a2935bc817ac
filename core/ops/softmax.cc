#include "core/ops/softmax.h"

#include "core/graph/shape_rules.h"
#include "core/ops/cuda/cuda_schedules.h"
#include "core/ops/op_context.h"
#include "core/ops/reduce.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

namespace {
// Index of the keepdims statistic for the element at `o`.
std::vector<Expr> StatIndex(const std::vector<Var>& o, const std::vector<int>& axes) {
  std::vector<Expr> idx(o.begin(), o.end());
  for (int a : axes) idx[a] = Expr(int64_t{0});
  return idx;
}
}  // namespace

Tensor Softmax(const Tensor& x, const std::vector<int>& axes, SoftmaxKind kind, const std::string& name,
               std::vector<Tensor>* stats) {
  graph::Shape xs = StaticShape(x);
  auto id = [](Expr v) { return v; };
  if (kind == SoftmaxKind::kHardmax) {
    // argmax over the flattened normalized axes: a row-major position among them.
    std::vector<ir::IterVar> r = MakeReduceAxes(xs, axes);
    std::vector<Tensor> am = te::compute_multi(
        ToExprShape(graph::ReducedShape(xs, axes, true)),
        [&](const std::vector<Var>& o) {
          std::vector<Expr> idx = ReducedInputIndex(o, axes, r, xs.size(), true);
          Expr pos = Expr(int64_t{0});
          for (size_t i = 0; i < axes.size(); ++i) pos = pos * xs[axes[i]] + r[i];
          return te::argmax(pos, x(idx), r);
        },
        name + "_argmax", tag::kReduce);
    stats->push_back(am[0]);
    return te::compute(x.shape(), [&](const std::vector<Var>& o) {
      Expr pos = Expr(int64_t{0});
      for (int a : axes) pos = pos * xs[a] + o[a];
      return ir::select(am[0](StatIndex(o, axes)) == pos, ir::make_const(x.dtype(), 1), ir::make_zero(x.dtype()));
    }, name, tag::kOpaque);
  }
  Tensor mx = ReduceTensor(x, axes, true, "max", id, name + "_max");
  std::vector<ir::IterVar> r = MakeReduceAxes(xs, axes);
  Tensor sum = te::compute(ToExprShape(graph::ReducedShape(xs, axes, true)), [&](const std::vector<Var>& o) {
    std::vector<Expr> idx = ReducedInputIndex(o, axes, r, xs.size(), true);
    return te::sum(ir::exp(x(idx) - mx(std::vector<Expr>(o.begin(), o.end()))), r);
  }, name + "_sum", tag::kReduce);
  stats->push_back(mx);
  stats->push_back(sum);
  return te::compute(x.shape(), [&](const std::vector<Var>& o) {
    std::vector<Expr> si = StatIndex(o, axes);
    Expr v = x(std::vector<Expr>(o.begin(), o.end())) - mx(si);
    return kind == SoftmaxKind::kSoftmax ? ir::exp(v) / sum(si) : v - ir::log(sum(si));
  }, name, tag::kOpaque);
}

namespace {

// Row statistics at the output's row loop when the normalized axes are innermost.
std::string ScheduleSoftmax(const ScheduleRequest& r, const std::vector<Tensor>& stats, const std::vector<int>& axes,
                            size_t rank) {
  te::Schedule s = r.schedule;
  InjectiveKnobs knobs;
  knobs.vector_lanes = r.options->vector_lanes;
  if (!r.options->allow_parallel) knobs.min_parallel_elements = INT64_MAX;
  bool trailing = !axes.empty() && axes.back() == static_cast<int>(rank) - 1 &&
                  axes.front() == static_cast<int>(rank - axes.size());
  const Tensor& out = r.outputs.at(0);
  if (r.outputs.size() != 1 || !trailing || axes.front() == 0) {
    for (const Tensor& st : stats) ScheduleReductionStage(s, st, *r.target, knobs);
    ScheduleInjectiveStage(s, out, *r.target, knobs);
    return "softmax: vectorized statistics, then normalize";
  }
  te::Stage o = s[out];
  std::vector<ir::IterVar> rows;
  for (int d = 0; d < axes.front(); ++d) rows.push_back(o.axis(d));
  ir::IterVar row = FuseRange(o, rows);
  int lanes = VectorLanes(*r.target, out.dtype());
  int64_t inner = ConstExtent(o.axis(rank - 1));
  if (lanes > 1 && inner % lanes == 0 && inner > 0) {
    auto [io, ii] = o.split(o.axis(rank - 1), Expr(int64_t{lanes}));
    o.vectorize(ii);
  }
  int64_t total = 1;
  for (size_t d = 0; d < rank; ++d) total *= std::max<int64_t>(ConstExtent(o.axis(d)), 1);
  if (ParallelAllowed(*r.target) && r.options->allow_parallel && total >= knobs.min_parallel_elements)
    o.parallel(row);
  bool vector_stats = false;
  for (const Tensor& st : stats) {
    vector_stats |= VectorizeReduction(s, st, lanes);
    s[st].compute_at(o, row);
  }
  return std::string("softmax: row statistics at the row loop") + (vector_stats ? " in vector partials" : "");
}

std::vector<Tensor> SoftmaxOp(const OpContext& ctx, SoftmaxKind kind) {
  const Tensor& x = ctx.input(0);
  AGATE_REQUIRE(x.dtype().is_float(), kUnsupported) << ctx.Describe() << ": softmax of " << x.dtype();
  int rank = static_cast<int>(x.ndim());
  bool coerce = ctx.attrs().GetInt("coerce_2d", 0) != 0;
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", coerce ? 1 : -1), rank, ctx.Describe());
  std::vector<int> axes;
  if (coerce) {
    for (int d = axis; d < rank; ++d) axes.push_back(d);
  } else {
    axes.push_back(axis);
  }
  std::vector<Tensor> stats;
  Tensor out = Softmax(x, axes, kind, ctx.node().outputs[0], &stats);
  size_t r = static_cast<size_t>(rank);
  ctx.SetSchedule([stats, axes, r](const ScheduleRequest& req) { return ScheduleSoftmax(req, stats, axes, r); }, out);
  ctx.SetCudaSchedule([stats, axes, r](const ScheduleRequest& req) {
    return cuda::ScheduleRows(req, stats, axes, r, "softmax");
  });
  return {out};
}

}  // namespace

void RegisterSoftmaxOps(OpTable* t) {
  t->Register("Softmax", [](const OpContext& ctx) { return SoftmaxOp(ctx, SoftmaxKind::kSoftmax); });
  t->Register("LogSoftmax", [](const OpContext& ctx) { return SoftmaxOp(ctx, SoftmaxKind::kLogSoftmax); });
  t->Register("Hardmax", [](const OpContext& ctx) { return SoftmaxOp(ctx, SoftmaxKind::kHardmax); });
}

}  // namespace ops
}  // namespace agate
