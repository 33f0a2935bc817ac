#include "core/ops/reduce.h"

#include <algorithm>

#include "core/graph/run_time_shape_operand.h"
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

std::vector<ir::IterVar> MakeReduceAxes(const graph::Shape& shape, const std::vector<int>& axes) {
  std::vector<ir::IterVar> r;
  for (int a : axes) r.push_back(te::reduce_axis({Expr(int64_t{0}), Expr(shape[a])}, "r" + std::to_string(a)));
  return r;
}

std::vector<Expr> ReducedInputIndex(const std::vector<Var>& o, const std::vector<int>& axes,
                                    const std::vector<ir::IterVar>& r, size_t rank, bool keepdims) {
  std::vector<Expr> idx;
  size_t next = 0, ri = 0;
  for (size_t d = 0; d < rank; ++d) {
    bool reduced = ri < axes.size() && axes[ri] == static_cast<int>(d);
    if (reduced) {
      idx.push_back(r[ri++]);
      if (keepdims) ++next;
    } else {
      idx.push_back(o[next++]);
    }
  }
  return idx;
}

Tensor ReduceTensor(const Tensor& x, const std::vector<int>& axes, bool keepdims, const std::string& kind,
                    const std::function<Expr(Expr)>& f, const std::string& name) {
  graph::Shape xs = StaticShape(x);
  std::vector<ir::IterVar> r = MakeReduceAxes(xs, axes);
  graph::Shape out = graph::ReducedShape(xs, axes, keepdims);
  return te::compute(ToExprShape(out), [&](const std::vector<Var>& o) {
    Expr v = f(x(ReducedInputIndex(o, axes, r, xs.size(), keepdims)));
    if (kind == "max") return te::max(v, r);
    if (kind == "min") return te::min(v, r);
    if (kind == "prod") return te::prod(v, r);
    return te::sum(v, r);
  }, name, tag::kReduce);
}

namespace {

// The reduce operators' CPU schedule. A reduction over the input's last axis whose output's
// innermost axis takes no vectors (a scalar: DynamicQuantizeLinear's min and max; [rows, 1])
// accumulates in vector partials (ScheduleReductionInVectorPartials); every other reduction,
// and the GPU, take the default anchor schedule.
void SetReduceSchedules(const OpContext& ctx, const Tensor& acc, bool last_axis_reduced) {
  SetDefaultSchedules(ctx, "reduce", acc);
  if (!last_axis_reduced) return;
  ctx.SetSchedule([](const ScheduleRequest& r) {
    te::Schedule s = r.schedule;
    InjectiveKnobs knobs;
    knobs.vector_lanes = r.options->vector_lanes;
    if (!r.options->allow_parallel) knobs.min_parallel_elements = INT64_MAX;
    ir::IterVar fused;
    if (!ScheduleReductionInVectorPartials(s, r.anchor, *r.target, knobs, &fused)) {
      return ScheduleAnchorDefault(r, "reduce");
    }
    const std::string what = "reduce: vector partials over the last axis";
    if (r.epilogue.defined()) {
      InjectiveKnobs attach = knobs;
      attach.attach_point_per_vector = true;  // the partials are computed per output vector at `at`
      ir::IterVar at = ScheduleInjectiveStage(s, r.epilogue, *r.target, attach);
      if (at.defined()) s[r.anchor].compute_at(s[r.epilogue], at);
      return what + ", epilogue inlined";
    }
    for (const Tensor& out : r.outputs) {
      if (!out.same_as(r.anchor)) ScheduleInjectiveStage(s, out, *r.target, knobs);
    }
    return what;
  }, acc);
}

// The reduction over `axes` (not empty): its output and the stage that accumulates (the
// schedule's anchor).
struct Reduced {
  Tensor out, acc;
};

Reduced ReduceOver(const OpContext& ctx, const std::vector<int>& axes, bool keepdims, const std::string& name) {
  const std::string& op = ctx.node().op;
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  ir::DType dt = x.dtype();
  bool needs_float = op == "ReduceMean" || op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp";
  AGATE_REQUIRE(!needs_float || dt.is_float(), kUnsupported) << ctx.Describe() << ": " << op << " of " << dt;
  auto id = [](Expr v) { return v; };
  Tensor acc, max_stage;
  if (op == "ReduceMax") acc = ReduceTensor(x, axes, keepdims, "max", id, name);
  else if (op == "ReduceMin") acc = ReduceTensor(x, axes, keepdims, "min", id, name);
  else if (op == "ReduceProd") acc = ReduceTensor(x, axes, keepdims, "prod", id, name);
  else if (op == "ReduceL1") acc = ReduceTensor(x, axes, keepdims, "sum", [](Expr v) { return ir::abs(v); }, name);
  else if (op == "ReduceL2" || op == "ReduceSumSquare")
    acc = ReduceTensor(x, axes, keepdims, "sum", [](Expr v) { return v * v; }, name + "_acc");
  else if (op == "ReduceLogSumExp") {
    max_stage = ReduceTensor(x, axes, true, "max", id, name + "_max");
    graph::Shape ms = StaticShape(max_stage);
    std::vector<ir::IterVar> r = MakeReduceAxes(xs, axes);
    acc = te::compute(ToExprShape(graph::ReducedShape(xs, axes, keepdims)), [&](const std::vector<Var>& o) {
      std::vector<Expr> idx = ReducedInputIndex(o, axes, r, xs.size(), keepdims);
      std::vector<Expr> mi = idx;
      for (int a : axes) mi[a] = Expr(int64_t{0});
      return te::sum(ir::exp(x(idx) - max_stage(mi)), r);
    }, name + "_acc", tag::kReduce);
  } else {
    acc = ReduceTensor(x, axes, keepdims, "sum", id, op == "ReduceSum" ? name : name + "_acc");
  }
  Tensor out = acc;
  if (op == "ReduceMean" || op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp" ||
      op == "ReduceSumSquare") {
    int64_t count = 1;
    for (int a : axes) count *= xs[a];
    out = te::compute(acc.shape(), [&](const std::vector<Var>& o) {
      Expr v = acc(std::vector<Expr>(o.begin(), o.end()));
      if (op == "ReduceMean") return v / ir::make_const(dt, static_cast<double>(count));
      if (op == "ReduceL2") return ir::sqrt(v);
      if (op == "ReduceLogSum") return ir::log(v);
      if (op == "ReduceSumSquare") return v;
      // LogSumExp: max + log(sum); the max is read at the same (keepdims) position.
      std::vector<Expr> mi;
      size_t next = 0, ai = 0;
      for (size_t d = 0; d < xs.size(); ++d) {
        bool reduced = ai < axes.size() && axes[ai] == static_cast<int>(d);
        if (reduced) {
          ++ai;
          mi.push_back(Expr(int64_t{0}));
          if (keepdims) ++next;
        } else {
          mi.push_back(o[next++]);
        }
      }
      return max_stage(mi) + ir::log(v);
    }, name, tag::kElemwise);
  }
  return {out, acc};
}

// Whether input axis `a` (of `rank`) is among the run-time axes (negative ones count from the end).
Expr NamesAxis(const std::function<Expr(int64_t)>& value, int64_t count, int a, int rank) {
  Expr named;
  for (int64_t j = 0; j < count; ++j) {
    Expr hit = value(j) == Expr(int64_t{a}) || value(j) == Expr(int64_t{a - rank});
    named = named.defined() ? named || hit : hit;
  }
  return named;
}

// Whether the run-time axes select `candidate` (graph::ReductionsGiving): they name exactly its
// axes of extent > 1 (axes of extent 1 reduce nothing either way).
Expr SelectsCandidate(const std::function<Expr(int64_t)>& value, int64_t count, const graph::Shape& xs,
                      const std::vector<int>& candidate) {
  const int rank = static_cast<int>(xs.size());
  Expr all = Expr(int64_t{0}) == Expr(int64_t{0});
  for (int a = 0; a < rank; ++a) {
    if (xs[a] == 1) continue;
    Expr named = NamesAxis(value, count, a, rank);
    bool in_candidate = std::find(candidate.begin(), candidate.end(), a) != candidate.end();
    all = all && (in_candidate ? named : !named);
  }
  return all;
}

// A reduction whose axes arrive at run time, compiled for the declared output shape
// (core/graph/run_time_shape_operand.h): one stage per set of axes that gives that shape
// (usually one), the output picking the one the run-time axes select; the kernel first checks
// that the axes are in range and select one of them with the declared rank.
std::vector<Tensor> RunTimeAxesReduceOp(const OpContext& ctx, bool keepdims) {
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  const int rank = static_cast<int>(xs.size());
  const int operand = graph::RunTimeShapeOperandIndex(ctx.node());
  const int64_t count = ctx.input_type(operand).numel();
  const graph::Shape out_shape = ctx.output_type(0).shape;
  std::vector<std::vector<int>> candidates = graph::ReductionsGiving(xs, out_shape, keepdims);
  AGATE_REQUIRE(!candidates.empty() && count > 0, kInvalidArgument)
      << ctx.Describe() << ": no axes reduce " << graph::ShapeToString(xs) << " to the declared "
      << graph::ShapeToString(out_shape);
  const int64_t reduced_axes = rank - static_cast<int64_t>(out_shape.size());
  ctx.CheckAtRunTime({operand}, [=](const std::vector<ElementReader>& r) {
    std::function<Expr(int64_t)> value = r[0];
    Expr ok = Expr(int64_t{0}) == Expr(int64_t{0});
    for (int64_t j = 0; j < count; ++j) ok = ok && value(j) >= Expr(int64_t{-rank}) && value(j) < Expr(int64_t{rank});
    Expr any;
    for (const std::vector<int>& c : candidates) {
      Expr selects = SelectsCandidate(value, count, xs, c);
      any = any.defined() ? any || selects : selects;
    }
    ok = ok && any;
    if (!keepdims) {  // the number of distinct axes decides the rank
      Expr named = Expr(int64_t{0});
      for (int a = 0; a < rank; ++a) {
        named = named + ir::select(NamesAxis(value, count, a, rank), Expr(int64_t{1}), Expr(int64_t{0}));
      }
      ok = ok && named == Expr(int64_t{reduced_axes});
    }
    return ok;
  }, graph::DescribeRunTimeShapeOperand(ctx.node()) + " (read when the model runs) are out of range or do not give "
     "the output shape " + graph::ShapeToString(out_shape) + " that the model declares and agate compiled for");
  const std::string name = ctx.node().outputs[0];
  if (candidates.size() == 1) {
    Reduced r = ReduceOver(ctx, candidates[0], keepdims, name);
    SetDefaultSchedules(ctx, "reduce", r.acc);
    return {r.out};
  }
  std::vector<Reduced> each;
  for (size_t i = 0; i < candidates.size(); ++i) {
    each.push_back(ReduceOver(ctx, candidates[i], keepdims, name + "_axes" + std::to_string(i)));
  }
  SetDefaultSchedules(ctx, "reduce", each[0].acc);
  const Tensor& axes = ctx.input(operand);
  const int axes_rank = ctx.input_type(operand).rank();
  std::function<Expr(int64_t)> value = [&axes, axes_rank](int64_t j) {
    std::vector<Expr> at(axes_rank, Expr(int64_t{0}));
    if (axes_rank > 0) at.back() = Expr(j);
    return ir::cast(ir::DType::Index(), axes(at));
  };
  Tensor out = te::compute(ToExprShape(out_shape), [&](const std::vector<Var>& o) {
    std::vector<Expr> at(o.begin(), o.end());
    Expr picked = each.back().out(at);
    for (size_t i = each.size() - 1; i-- > 0;) {
      picked = ir::select(SelectsCandidate(value, count, xs, candidates[i]), each[i].out(at), picked);
    }
    return picked;
  }, name, tag::kElemwise);
  return {out};
}

std::vector<Tensor> ReduceOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  bool keepdims = ctx.attrs().GetInt("keepdims", 1) != 0;
  if (graph::RunTimeShapeOperandIndex(ctx.node()) >= 0) return RunTimeAxesReduceOp(ctx, keepdims);
  std::vector<int> axes = graph::ReduceAxes(ctx.node(), static_cast<int>(xs.size()));
  std::string name = ctx.node().outputs[0];
  if (axes.empty()) {  // noop_with_empty_axes
    return {te::compute(x.shape(), [&](const std::vector<Var>& i) { return x(std::vector<Expr>(i.begin(), i.end())); },
                        name, tag::kInjective)};
  }
  Reduced r = ReduceOver(ctx, axes, keepdims, name);
  SetReduceSchedules(ctx, r.acc, axes.back() == static_cast<int>(xs.size()) - 1);
  return {r.out};
}

std::vector<Tensor> ArgOp(const OpContext& ctx, bool is_max) {
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", 0), static_cast<int>(xs.size()), ctx.Describe());
  bool keepdims = ctx.attrs().GetInt("keepdims", 1) != 0;
  bool last = ctx.attrs().GetInt("select_last_index", 0) != 0;
  std::vector<ir::IterVar> r = MakeReduceAxes(xs, {axis});
  int64_t n = xs[axis];
  std::vector<Tensor> outs = te::compute_multi(
      ToExprShape(graph::ReducedShape(xs, {axis}, keepdims)),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx = ReducedInputIndex(o, {axis}, r, xs.size(), keepdims);
        // The reducer resolves ties to the smaller index; for select_last_index the
        // index is mirrored (n-1-k) so ties go to the larger position, and mirrored back below.
        Expr k = last ? Expr(n - 1) - r[0] : Expr(r[0]);
        Expr v = x(idx);
        return te::argmax(k, is_max ? v : -v, r);
      },
      ctx.node().outputs[0] + "_arg", tag::kReduce);
  // The (index, value) tuple stage stays internal (both its outputs are realized in
  // the kernel); the output stage takes the index, mirrored back for select_last_index.
  Tensor arg = outs[0];
  Tensor out = te::compute(arg.shape(), [&](const std::vector<Var>& o) {
    Expr k = arg(std::vector<Expr>(o.begin(), o.end()));
    return last ? Expr(n - 1) - k : k;
  }, ctx.node().outputs[0], tag::kElemwise);
  SetDefaultSchedules(ctx, "arg_reduce", outs[0]);
  return {out};
}

}  // namespace

void RegisterReduceOps(OpTable* t) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    t->Register(op, ReduceOp);
  }
  t->Register("ArgMax", [](const OpContext& ctx) { return ArgOp(ctx, true); });
  t->Register("ArgMin", [](const OpContext& ctx) { return ArgOp(ctx, false); });
}

}  // namespace ops
}  // namespace agate
