#include "core/ops/transform.h"

#include <algorithm>
#include <cmath>

#include "core/graph/run_time_shape_operand.h"
#include "core/graph/shape_rules.h"
#include "core/ops/cuda/cuda_schedules.h"
#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/ops/shape_operand_check.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

namespace {
Expr I(int64_t v) { return Expr(v); }
std::vector<Expr> Exprs(const std::vector<Var>& v) { return std::vector<Expr>(v.begin(), v.end()); }
}  // namespace

Expr Ravel(const std::vector<Expr>& index, const graph::Shape& shape) {
  Expr flat = I(0);
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
  return flat;
}

std::vector<Expr> Unravel(Expr flat, const graph::Shape& shape) {
  std::vector<Expr> index(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    Expr q = stride == 1 ? flat : ir::floordiv(flat, I(stride));
    index[d] = d == 0 ? q : ir::floormod(q, I(shape[d]));
    stride *= shape[d];
  }
  return index;
}

Tensor Reshape(const Tensor& x, const graph::Shape& shape, const std::string& name) {
  graph::Shape xs = StaticShape(x);
  return te::compute(ToExprShape(shape), [&](const std::vector<Var>& o) {
    return x(Unravel(Ravel(Exprs(o), shape), xs));
  }, name, tag::kInjective);
}

Tensor Transpose(const Tensor& x, const std::vector<int64_t>& perm, const std::string& name) {
  graph::Shape xs = StaticShape(x), out;
  for (int64_t p : perm) out.push_back(xs[p]);
  return te::compute(ToExprShape(out), [&](const std::vector<Var>& o) {
    std::vector<Expr> idx(xs.size());
    for (size_t d = 0; d < perm.size(); ++d) idx[perm[d]] = o[d];
    return x(idx);
  }, name, tag::kInjective);
}

namespace {

Tensor InjectiveCompute(const OpContext& ctx, int output, const std::function<Expr(const std::vector<Var>&)>& f) {
  return te::compute(ToExprShape(ctx.output_type(output).shape), f, ctx.node().outputs[output], tag::kInjective);
}

// An index read from an index tensor, wrapped for negative values and clamped into [0, dim).
Expr WrapIndex(Expr index, int64_t dim) {
  Expr i = ir::cast(ir::DType::Index(), index);
  i = ir::select(i < I(0), i + I(dim), i);
  return ir::min(ir::max(i, I(0)), I(dim - 1));
}

std::vector<Tensor> ReshapeLike(const OpContext& ctx) {
  return {Reshape(ctx.input(0), ctx.output_type(0).shape, ctx.node().outputs[0])};
}

std::vector<Tensor> TransposeOp(const OpContext& ctx) {
  int rank = static_cast<int>(ctx.input(0).ndim());
  std::vector<int64_t> perm = ctx.attrs().GetInts("perm", {});
  if (perm.empty())
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  return {Transpose(ctx.input(0), perm, ctx.node().outputs[0])};
}

// Concat's loop nest on CPUs, for an output of the concat's shape: the axes before the concat
// axis (or, when they hold few elements, one axis after it) outermost and parallel, then the
// concat axis as a serial loop, then the rest with the innermost vectorized. The loop
// partition pass (core/lower/loop_partition.h) then cuts the concat axis where each input
// starts, since the select guards are linear in it, and each piece copies its input's
// contiguous rows with neither selects nor clamps. With every axis fused into one loop, as
// the injective schedule does, each vector evaluated every input's load and the selects
// between them: Inception-v3's channel concats on NCHW8c ran at a quarter of ONNX Runtime's
// speed (0.58 against 0.16 ms).
void OrderConcatLoops(te::Schedule& s, const Tensor& out, int axis, const target::Target& target,
                      const InjectiveKnobs& knobs) {
  te::Stage stage = s[out];
  const int rank = static_cast<int>(out.ndim());
  int64_t total = 1, prefix = 1;
  for (int i = 0; i < rank; ++i) total *= std::max<int64_t>(ConstExtent(stage.axis(i)), 1);
  for (int i = 0; i < axis; ++i) prefix *= std::max<int64_t>(ConstExtent(stage.axis(i)), 1);
  std::vector<ir::IterVar> outer;
  for (int i = 0; i < axis; ++i) outer.push_back(stage.axis(i));
  int hoisted = -1;
  if (prefix < 8) {
    for (int i = axis + 1; i + 1 < rank && hoisted < 0; ++i)
      if (ConstExtent(stage.axis(i)) >= 2) hoisted = i;
  }
  if (hoisted >= 0) outer.push_back(stage.axis(hoisted));
  std::vector<ir::IterVar> order = outer;
  order.push_back(stage.axis(axis));
  for (int i = axis + 1; i < rank; ++i)
    if (i != hoisted) order.push_back(stage.axis(i));
  stage.reorder(order);
  const int lanes = knobs.vector_lanes > 0 ? knobs.vector_lanes : VectorLanes(target, out.dtype());
  const int64_t inner = ConstExtent(stage.axis(rank - 1));
  if (lanes > 1 && inner > 0 && inner % lanes == 0 && !out.dtype().is_bool()) {
    auto [io, ii] = stage.split(stage.axis(rank - 1), lanes);
    stage.vectorize(ii);
  }
  ir::IterVar fused = FuseRange(stage, outer);
  if (fused.defined() && ParallelAllowed(target) && total >= knobs.min_parallel_elements) stage.parallel(fused);
}

std::string ScheduleConcat(const ScheduleRequest& r, int axis) {
  te::Schedule s = r.schedule;
  InjectiveKnobs knobs;
  knobs.vector_lanes = r.options->vector_lanes;
  if (!r.options->allow_parallel) knobs.min_parallel_elements = INT64_MAX;
  const graph::Shape shape = StaticShape(r.anchor);
  bool anchor_is_output = false;
  for (const Tensor& out : r.outputs) {
    anchor_is_output = anchor_is_output || out.op().get() == r.anchor.op().get();
    if (StaticShape(out) == shape && static_cast<int>(out.ndim()) > axis + 1) {
      OrderConcatLoops(s, out, axis, *r.target, knobs);
    } else {
      ScheduleInjectiveStage(s, out, *r.target, knobs);
    }
  }
  if (!anchor_is_output) s[r.anchor].compute_inline();
  return "concat, one loop per input along axis " + std::to_string(axis);
}

// On GPUs Concat keeps the plain injective schedule (what a group without an anchor gets).
std::string ScheduleConcatCuda(const ScheduleRequest& r) {
  te::Schedule s = r.schedule;
  bool anchor_is_output = false;
  for (const Tensor& out : r.outputs) {
    anchor_is_output = anchor_is_output || out.op().get() == r.anchor.op().get();
    cuda::ScheduleInjective(s, out, r.options->cuda_threads);
  }
  if (!anchor_is_output) s[r.anchor].compute_inline();
  return "injective (cuda)";
}

std::vector<Tensor> ConcatOp(const OpContext& ctx) {
  int rank = static_cast<int>(ctx.input(0).ndim());
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis"), rank, ctx.Describe());
  if (axis + 1 < rank) {
    ctx.SetSchedule([axis](const ScheduleRequest& r) { return ScheduleConcat(r, axis); });
    ctx.SetCudaSchedule(ScheduleConcatCuda);
  }
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    // Nested selects from the last input backwards; each reads with a clamped offset.
    std::vector<int64_t> starts;
    int64_t start = 0;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      starts.push_back(start);
      start += StaticShape(ctx.input(i))[axis];
    }
    Expr result;
    for (int i = ctx.num_inputs() - 1; i >= 0; --i) {
      int64_t extent = StaticShape(ctx.input(i))[axis];
      if (extent == 0) continue;
      std::vector<Expr> idx = Exprs(o);
      idx[axis] = ir::min(ir::max(o[axis] - starts[i], I(0)), I(extent - 1));
      Expr v = ctx.input(i)(idx);
      result = result.defined() ? ir::select(o[axis] < I(starts[i] + extent), v, result) : v;
    }
    return result;
  })};
}

std::vector<Tensor> SplitOp(const OpContext& ctx) {
  int rank = static_cast<int>(ctx.input(0).ndim());
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", 0), rank, ctx.Describe());
  std::vector<Tensor> outs;
  int64_t start = 0;
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    int64_t s = start;
    outs.push_back(InjectiveCompute(ctx, i, [&](const std::vector<Var>& o) {
      std::vector<Expr> idx = Exprs(o);
      idx[axis] = o[axis] + s;
      return ctx.input(0)(idx);
    }));
    start += ctx.output_type(i).shape[axis];
  }
  return outs;
}

std::vector<Tensor> SliceOp(const OpContext& ctx) {
  graph::SliceSpec spec = graph::ComputeSlice(ctx.node(), StaticShape(ctx.input(0)));
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < o.size(); ++d) idx.push_back(o[d] * spec.step[d] + spec.start[d]);
    return ctx.input(0)(idx);
  })};
}

std::vector<Tensor> GatherOp(const OpContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  graph::Shape ds = StaticShape(data);
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", 0), static_cast<int>(ds.size()), ctx.Describe());
  size_t q = indices.ndim();
  // A constant scalar index (Q, K and V picked from one [3, ...] tensor, as Swin and ViT export
  // them) is resolved now: the kernel reads no index tensor, and an epilogue that takes the
  // Gather (fusion `all`) has no extra buffer to bind.
  const graph::Tensor* constant_index = ctx.constant(1);
  bool fixed = q == 0 && constant_index != nullptr && constant_index->numel() == 1;
  int64_t fixed_index = 0;
  if (fixed) {
    fixed_index = constant_index->GetInt(0);
    if (fixed_index < 0) fixed_index += ds[axis];
    fixed_index = std::min(std::max<int64_t>(fixed_index, 0), ds[axis] - 1);  // as WrapIndex clamps
  }
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    std::vector<Expr> ii(o.begin() + axis, o.begin() + axis + q);
    std::vector<Expr> idx(o.begin(), o.begin() + axis);
    idx.push_back(fixed ? I(fixed_index) : WrapIndex(indices(ii), ds[axis]));
    for (size_t d = axis + q; d < o.size(); ++d) idx.push_back(o[d]);
    return data(idx);
  })};
}

std::vector<Tensor> GatherElementsOp(const OpContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  graph::Shape ds = StaticShape(data);
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", 0), static_cast<int>(ds.size()), ctx.Describe());
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    std::vector<Expr> idx = Exprs(o);
    idx[axis] = WrapIndex(indices(Exprs(o)), ds[axis]);
    return data(idx);
  })};
}

std::vector<Tensor> GatherNDOp(const OpContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  graph::Shape ds = StaticShape(data), is = StaticShape(indices);
  int64_t batch = ctx.attrs().GetInt("batch_dims", 0);
  int64_t last = is.back();
  size_t tuple_rank = is.size() - 1;
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    // o = (index tuple position..., slice position...); the first `batch` axes are shared.
    std::vector<Expr> idx;
    for (int64_t d = 0; d < batch; ++d) idx.push_back(o[d]);
    std::vector<Expr> tuple(o.begin(), o.begin() + tuple_rank);
    for (int64_t j = 0; j < last; ++j) {
      std::vector<Expr> ti = tuple;
      ti.push_back(I(j));
      idx.push_back(WrapIndex(indices(ti), ds[batch + j]));
    }
    for (size_t d = tuple_rank; d < o.size(); ++d) idx.push_back(o[d]);
    return data(idx);
  })};
}

// Scatter as a gather from the output's side: each output element searches the
// update positions that land on it. Without a reduction the last one in
// row-major order wins (an argmax over the candidates' positions); add/mul fold
// every candidate into the data value. O(output x candidates per element), the
// price of expressing a data-dependent write as a pure function of the output
// index; indices wrap like Gather's (negative from the end, clamped in range).
// Scatter's reduction attribute: "none" (the last update wins), "add", "mul", or (opset 18)
// "max" / "min".
std::string ScatterReduction(const OpContext& ctx) {
  std::string reduction = ctx.attrs().GetString("reduction", "none");
  AGATE_REQUIRE(reduction == "none" || reduction == "add" || reduction == "mul" || reduction == "max" ||
                    reduction == "min",
                kUnsupported)
      << ctx.Describe() << ": reduction=" << reduction;
  return reduction;
}

// add/mul/max/min: every matching update folded into the data value (the reduction
// starts from it, since a reduction is a compute's whole body).
Expr ScatterFold(const std::string& reduction, const Expr& data_value, const Expr& match, const Expr& update,
                 const std::vector<ir::IterVar>& candidates) {
  ir::DType dt = data_value.dtype();
  if (reduction == "add") return te::sum(ir::select(match, update, ir::make_zero(dt)), candidates, Expr(), data_value);
  if (reduction == "max") return te::max(ir::select(match, update, data_value), candidates, Expr(), data_value);
  if (reduction == "min") return te::min(ir::select(match, update, data_value), candidates, Expr(), data_value);
  return te::prod(ir::select(match, update, ir::make_const(dt, 1)), candidates, Expr(), data_value);
}

std::vector<Tensor> ScatterElementsOp(const OpContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  graph::Shape ds = StaticShape(data), is = StaticShape(indices);
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", 0), static_cast<int>(ds.size()), ctx.Describe());
  std::string name = ctx.node().outputs[0];
  ir::IterVar k = te::reduce_axis({I(0), I(is[axis])}, "k");
  // The candidates of output o: index positions (o with o[axis] replaced by k),
  // read clamped into indices' shape; `inside` says whether o is within it.
  auto candidate = [&](const std::vector<Var>& o) {
    std::vector<Expr> at = Exprs(o);
    at[axis] = k;
    for (size_t d = 0; d < ds.size(); ++d)
      if (static_cast<int>(d) != axis && is[d] < ds[d]) at[d] = ir::min(at[d], I(is[d] - 1));
    return at;
  };
  auto matches = [&](const std::vector<Var>& o) {
    Expr m = WrapIndex(indices(candidate(o)), ds[axis]) == Expr(o[axis]);
    for (size_t d = 0; d < ds.size(); ++d)
      if (static_cast<int>(d) != axis && is[d] < ds[d]) m = m && Expr(o[d]) < I(is[d]);
    return m;
  };
  std::string reduction = ScatterReduction(ctx);
  if (reduction != "none") {
    Tensor out = te::compute(data.shape(), [&](const std::vector<Var>& o) {
      return ScatterFold(reduction, data(Exprs(o)), matches(o), updates(candidate(o)), {k});
    }, name, tag::kReduce);
    SetDefaultSchedules(ctx, "scatter", out);
    return {out};
  }
  std::vector<Tensor> last = te::compute_multi(data.shape(), [&](const std::vector<Var>& o) {
    return te::argmax(ir::cast(ir::DType::Int(64), Expr(k)), ir::cast(ir::DType::Int(64), Expr(k)), {k}, matches(o));
  }, name + "_last", tag::kReduce);
  Tensor out = te::compute(data.shape(), [&](const std::vector<Var>& o) {
    Expr kk = last[0](Exprs(o));
    std::vector<Expr> at = candidate(o);
    at[axis] = ir::max(ir::cast(ir::DType::Index(), kk), I(0));
    return ir::select(kk >= ir::make_const(ir::DType::Int(64), 0), updates(at), data(Exprs(o)));
  }, name, tag::kInjective);
  SetDefaultSchedules(ctx, "scatter", last[0]);
  return {out};
}

std::vector<Tensor> ScatterNDOp(const OpContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  graph::Shape ds = StaticShape(data), is = StaticShape(indices);
  int64_t last_dim = is.back();
  std::string name = ctx.node().outputs[0];
  // Candidates: every index tuple t (the axes of indices but the last), in row-major order.
  std::vector<ir::IterVar> t;
  Expr position = I(0);
  for (size_t d = 0; d + 1 < is.size(); ++d) {
    t.push_back(te::reduce_axis({I(0), I(is[d])}, "t" + std::to_string(d)));
    position = position * I(is[d]) + Expr(t.back());
  }
  // One tuple (1-D indices): a reduction over one candidate, since a reduction needs an axis.
  std::vector<ir::IterVar> candidates = t;
  if (candidates.empty()) candidates.push_back(te::reduce_axis({I(0), I(1)}, "t_one"));
  auto tuple_at = [&](int64_t j) {
    std::vector<Expr> at(t.begin(), t.end());
    at.push_back(I(j));
    return indices(at);
  };
  auto matches = [&](const std::vector<Var>& o) {
    Expr m;
    for (int64_t j = 0; j < last_dim; ++j) {
      Expr e = WrapIndex(tuple_at(j), ds[j]) == Expr(o[j]);
      m = m.defined() ? (m && e) : e;
    }
    return m.defined() ? m : Expr(I(0) == I(0));
  };
  auto update_at = [&](const std::vector<Var>& o, const std::vector<Expr>& tuple) {
    std::vector<Expr> at = tuple;
    for (size_t d = last_dim; d < ds.size(); ++d) at.push_back(o[d]);
    return updates(at);
  };
  std::string reduction = ScatterReduction(ctx);
  if (reduction != "none") {
    Tensor out = te::compute(data.shape(), [&](const std::vector<Var>& o) {
      std::vector<Expr> tuple(t.begin(), t.end());
      return ScatterFold(reduction, data(Exprs(o)), matches(o), update_at(o, tuple), candidates);
    }, name, tag::kReduce);
    SetDefaultSchedules(ctx, "scatter_nd", out);
    return {out};
  }
  std::vector<Tensor> last = te::compute_multi(data.shape(), [&](const std::vector<Var>& o) {
    Expr p = ir::cast(ir::DType::Int(64), position);
    return te::argmax(p, p, candidates, matches(o));
  }, name + "_last", tag::kReduce);
  Tensor out = te::compute(data.shape(), [&](const std::vector<Var>& o) {
    Expr p = last[0](Exprs(o));
    // The tuple's coordinates from its row-major position (0 where nothing matched).
    Expr rest = ir::max(ir::cast(ir::DType::Index(), p), I(0));
    std::vector<Expr> tuple(is.size() - 1);
    for (size_t d = is.size() - 1; d-- > 0;) {
      tuple[d] = ir::floormod(rest, I(is[d]));
      rest = ir::floordiv(rest, I(is[d]));
    }
    return ir::select(p >= ir::make_const(ir::DType::Int(64), 0), update_at(o, tuple), data(Exprs(o)));
  }, name, tag::kInjective);
  SetDefaultSchedules(ctx, "scatter_nd", last[0]);
  return {out};
}

}  // namespace

// TopK by ranking: rank(j) = how many elements of j's row come before it in
// the sorted order (larger first, or smaller with largest=0; ties by lower
// index, as ONNX orders them), a permutation of [0, n); output r is the element
// whose rank is r. O(n^2) compares per row: meant for the short rows of
// classification post-processing, not for sorting long tensors. Always sorted.
Tensor TopKIndices(const Tensor& x, int axis, bool largest, int64_t k, const std::string& name) {
  graph::Shape xs = StaticShape(x);
  int64_t n = xs[axis];
  ir::DType i64 = ir::DType::Int(64);
  ir::IterVar i = te::reduce_axis({I(0), I(n)}, "i");
  Tensor rank = te::compute(x.shape(), [&](const std::vector<Var>& o) {
    std::vector<Expr> other = Exprs(o);
    other[axis] = i;
    Expr xi = x(other), xj = x(Exprs(o));
    Expr before = (largest ? xi > xj : xi < xj) || (xi == xj && Expr(i) < Expr(o[axis]));
    return te::sum(ir::select(before, ir::make_const(i64, 1), ir::make_zero(i64)), {i});
  }, name + "_rank", tag::kReduce);
  graph::Shape out = xs;
  out[axis] = k;
  ir::IterVar j = te::reduce_axis({I(0), I(n)}, "j");
  return te::compute(ToExprShape(out), [&](const std::vector<Var>& o) {
    std::vector<Expr> at = Exprs(o);
    at[axis] = j;
    Expr hit = rank(at) == ir::cast(i64, Expr(o[axis]));
    return te::sum(ir::select(hit, ir::cast(i64, Expr(j)), ir::make_zero(i64)), {j});
  }, name, tag::kReduce);
}

namespace {

std::vector<Tensor> TopKOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", -1), static_cast<int>(xs.size()), ctx.Describe());
  bool largest = ctx.attrs().GetInt("largest", 1) != 0;
  std::string name = ctx.node().outputs[0];
  // k from the values' type: the indices output may be unnamed (unused), and then has no type.
  Tensor indices = TopKIndices(x, axis, largest, ctx.output_type(0).shape[axis],
                               ctx.node().outputs.size() > 1 && !ctx.node().outputs[1].empty() ? ctx.node().outputs[1]
                                                                                                : name + "_indices");
  Tensor values = te::compute(ToExprShape(ctx.output_type(0).shape), [&](const std::vector<Var>& o) {
    std::vector<Expr> at = Exprs(o);
    at[axis] = ir::cast(ir::DType::Index(), indices(Exprs(o)));
    return x(at);
  }, name, tag::kInjective);
  SetDefaultSchedules(ctx, "top_k", indices);
  return {values, indices};
}

std::vector<Tensor> TileOp(const OpContext& ctx) {
  CheckShapeOperandAtRunTime(ctx);
  graph::Shape xs = StaticShape(ctx.input(0));
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < o.size(); ++d) idx.push_back(xs[d] == 1 ? I(0) : ir::floormod(o[d], I(xs[d])));
    return ctx.input(0)(idx);
  })};
}

// Pads given at run time (run_time_shape_operand.h): the declared shape fixes only each axis's
// total, so every axis reads its begin from the operand.
std::vector<Tensor> PadOp(const OpContext& ctx) {
  CheckShapeOperandAtRunTime(ctx);
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  const int operand = graph::RunTimeShapeOperandIndex(ctx.node());
  std::vector<int64_t> pads = ctx.attrs().GetInts("pads");
  auto begin = [&](size_t d) {
    return operand < 0 ? I(pads[d]) : ir::cast(ir::DType::Index(), ctx.input(operand)(std::vector<Expr>{I(d)}));
  };
  std::string mode = ctx.attrs().GetString("mode", "constant");
  Expr value = ir::make_const(x.dtype(), ctx.attrs().GetFloat("value", 0.0));
  if (const int value_input = graph::PadValueInput(ctx.node()); value_input >= 0) {
    value = ir::cast(x.dtype(), ctx.input(value_input)(std::vector<Expr>(ctx.input_type(value_input).rank(), I(0))));
  }
  size_t rank = xs.size();
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    std::vector<Expr> idx;
    Expr inside;
    for (size_t d = 0; d < rank; ++d) {
      Expr i = o[d] - begin(d);
      if (operand < 0 && pads[d] == 0 && pads[d + rank] <= 0) {
        idx.push_back(i);
        continue;
      }
      int64_t dim = xs[d];
      if (mode == "constant") {
        Expr ok = i >= I(0) && i < I(dim);
        inside = inside.defined() ? (inside && ok) : ok;
        idx.push_back(ir::min(ir::max(i, I(0)), I(dim - 1)));
      } else if (mode == "edge" || dim == 1) {
        idx.push_back(ir::min(ir::max(i, I(0)), I(dim - 1)));
      } else if (mode == "wrap") {  // opset 19: the input repeats with period dim
        idx.push_back(ir::floormod(i, I(dim)));
      } else {  // reflect without repeating the edge
        int64_t period = 2 * (dim - 1);
        Expr m = ir::floormod(i, I(period));
        idx.push_back(ir::select(m >= I(dim), I(period) - m, m));
      }
    }
    Expr v = x(idx);
    return inside.defined() ? ir::select(inside, v, value) : v;
  })};
}

std::vector<Tensor> DepthToSpaceOp(const OpContext& ctx) {
  int64_t b = ctx.attrs().GetInt("blocksize");
  bool crd = ctx.attrs().GetString("mode", "DCR") == "CRD";
  int64_t c_out = ctx.output_type(0).shape[1];
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    Expr i = ir::floormod(o[2], I(b)), j = ir::floormod(o[3], I(b));
    Expr c = crd ? o[1] * (b * b) + i * b + j : (i * b + j) * c_out + o[1];
    return ctx.input(0)(o[0], c, ir::floordiv(o[2], I(b)), ir::floordiv(o[3], I(b)));
  })};
}

std::vector<Tensor> SpaceToDepthOp(const OpContext& ctx) {
  int64_t b = ctx.attrs().GetInt("blocksize");
  int64_t c_in = StaticShape(ctx.input(0))[1];
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    Expr block = ir::floordiv(o[1], I(c_in)), c = ir::floormod(o[1], I(c_in));
    return ctx.input(0)(o[0], c, o[2] * b + ir::floordiv(block, I(b)), o[3] * b + ir::floormod(block, I(b)));
  })};
}

// k is an attribute, or input 1 read when the kernel runs (any k is valid: it only moves the diagonal).
std::vector<Tensor> TriluOp(const OpContext& ctx) {
  bool upper = ctx.attrs().GetInt("upper", 1) != 0;
  const Tensor& x = ctx.input(0);
  Expr k = I(ctx.attrs().GetSingleInt("k", 0));
  if (ctx.has_input(1)) {
    const graph::Tensor* constant = ctx.constant(1);
    k = constant ? I(constant->GetInt(0))
                 : ir::cast(ir::DType::Index(), ctx.input(1)(std::vector<Expr>(ctx.input_type(1).rank(), I(0))));
  }
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    size_t r = o.size();
    Expr diff = o[r - 1] - o[r - 2];
    Expr keep = upper ? diff >= k : diff <= k;
    return ir::select(keep, x(Exprs(o)), ir::make_zero(x.dtype()));
  })};
}

std::vector<Tensor> EyeLikeOp(const OpContext& ctx) {
  int64_t k = ctx.attrs().GetInt("k", 0);
  ir::DType dt = ctx.output_type(0).dtype;
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    return ir::select(o[1] - o[0] == I(k), ir::make_const(dt, 1), ir::make_zero(dt));
  })};
}

std::vector<Tensor> OneHotOp(const OpContext& ctx) {
  CheckShapeOperandAtRunTime(ctx);
  const Tensor& indices = ctx.input(0);
  const Tensor& values = ctx.input(1);
  int rank = static_cast<int>(ctx.output_type(0).shape.size());
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", -1), rank, ctx.Describe());
  int64_t depth = ctx.output_type(0).shape[axis];
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    std::vector<Expr> ii;
    for (int d = 0; d < rank; ++d)
      if (d != axis) ii.push_back(o[d]);
    Expr index = indices(ii);
    if (index.dtype().is_float()) index = ir::floor(index);
    index = ir::cast(ir::DType::Index(), index);
    index = ir::select(index < I(0), index + I(depth), index);
    return ir::select(index == o[axis], values(I(1)), values(I(0)));
  })};
}

// ---- Resize: per-axis taps (graph::ComputeResizeTaps) as constant tables.

// Terms of the unrolled per-element sum (product of the resized axes' taps): cubic in 3-D is 64,
// an antialiased 2-D linear downscale by 8 is 256, by 16 cubic 4,096.
constexpr int64_t kMaxResizeTerms = 4096;

// ---- Resize with scales read at run time (run_time_shape_operand.h): compiled for the declared
// output shape, each resized axis computes its taps in the kernel from its scale, in float64 as
// graph::ComputeResizeTaps does, so a scale that is not out/in (0.6 for 5 -> 3) gives ONNX's
// coordinates. An axis whose extent does not change is copied, and its scale must be 1 when it
// is longer than 1 (graph::CheckRunTimeShapeOperand refuses other scales there too).

Expr F64(Expr e) { return ir::cast(ir::DType::Float(64), e); }
Expr D(double v) { return ir::make_const(ir::DType::Float(64), v); }

// graph::SourceCoordinate over expressions: x the output coordinate, `length` = in * scale unrounded.
Expr SourceCoordinateExpr(const std::string& mode, Expr x, Expr scale, int64_t in, int64_t out, double rs, double re) {
  Expr length = scale * D(static_cast<double>(in));
  if (mode == "half_pixel") return (x + D(0.5)) / scale - D(0.5);
  if (mode == "half_pixel_symmetric") {
    Expr adjustment = ir::select(length > D(0), D(static_cast<double>(out)) / length, D(1));
    Expr offset = D(in / 2.0) * (D(1) - adjustment);
    return offset + (x + D(0.5)) / scale - D(0.5);
  }
  if (mode == "pytorch_half_pixel") return ir::select(length > D(1), (x + D(0.5)) / scale - D(0.5), D(0));
  if (mode == "align_corners") {
    return ir::select(length == D(1), D(0), x * D(static_cast<double>(in - 1)) / (length - D(1)));
  }
  if (mode == "asymmetric") return x / scale;
  if (mode == "tf_half_pixel_for_nn") return (x + D(0.5)) / scale;
  AGATE_CHECK(mode == "tf_crop_and_resize") << "coordinate_transformation_mode=" << mode;
  return ir::select(length > D(1),
                    D(rs * (in - 1)) + x * D((re - rs) * (in - 1)) / (length - D(1)), D(0.5 * (rs + re) * (in - 1)));
}

// graph::NearestIndex: x rounded by nearest_mode (ties decided explicitly, not by the FPU).
Expr NearestIndexExpr(const std::string& mode, Expr x) {
  Expr f = ir::floor(x);
  if (mode == "floor") return f;
  if (mode == "ceil") return ir::ceil(x);
  Expr frac = x - f;
  Expr tie = mode == "round_prefer_ceil" ? f + D(1) : f;
  return ir::select(frac == D(0.5), tie, ir::select(frac < D(0.5), f, f + D(1)));
}

// The cubic convolution kernel at distance d (graph's CubicWeights, one tap).
Expr CubicWeightExpr(Expr d, double a) {
  d = ir::abs(d);
  Expr near = ((D(a + 2) * d - D(a + 3)) * d * d) + D(1);
  Expr far = ((D(a) * d - D(5 * a)) * d + D(8 * a)) * d - D(4 * a);
  return ir::select(d <= D(1), near, ir::select(d < D(2), far, D(0)));
}

struct RunTimeTaps {
  std::vector<Expr> index;   // DType::Index(), clamped into [0, in)
  std::vector<Expr> weight;  // float64
  Expr inside;               // bool, defined for tf_crop_and_resize
};

RunTimeTaps RunTimeResizeTaps(const graph::Node& node, int axis, int rank, int64_t in, int64_t out, Expr scale, Expr o) {
  std::string mode = node.attrs.GetString("mode", "nearest");
  std::string ct = node.attrs.GetString("coordinate_transformation_mode", "half_pixel");
  std::string nearest_mode = node.attrs.GetString("nearest_mode", "round_prefer_floor");
  double a = node.attrs.GetFloat("cubic_coeff_a", -0.75);
  bool exclude_outside = node.attrs.GetInt("exclude_outside", 0) != 0;
  std::vector<double> roi = node.attrs.GetFloats("roi", {});
  double rs = roi.size() == static_cast<size_t>(2 * rank) ? roi[axis] : 0.0;
  double re = roi.size() == static_cast<size_t>(2 * rank) ? roi[axis + rank] : 1.0;
  Expr s = SourceCoordinateExpr(ct, F64(o), scale, in, out, rs, re);
  auto clamp_index = [in](Expr i) { return ir::min(ir::max(i, Expr(int64_t{0})), Expr(in - 1)); };
  auto to_index = [](Expr v) { return ir::cast(ir::DType::Index(), v); };
  RunTimeTaps taps;
  if (ct == "tf_crop_and_resize") taps.inside = s >= D(0) && s <= D(static_cast<double>(in - 1));
  if (mode == "nearest") {
    taps.index.push_back(clamp_index(to_index(NearestIndexExpr(nearest_mode, s))));
    taps.weight.push_back(D(1));
  } else if (mode == "linear") {
    Expr c = ir::min(ir::max(s, D(0)), D(static_cast<double>(in - 1)));
    Expr f = ir::floor(c);
    Expr i0 = to_index(f);
    taps.index = {i0, ir::min(i0 + Expr(int64_t{1}), Expr(in - 1))};
    taps.weight = {D(1) - (c - f), c - f};
  } else {  // cubic
    Expr f = ir::floor(s);
    Expr t = s - f;
    std::vector<Expr> w = {CubicWeightExpr(t + D(1), a), CubicWeightExpr(t, a), CubicWeightExpr(D(1) - t, a),
                           CubicWeightExpr(D(2) - t, a)};
    Expr total;
    for (int k = 0; k < 4; ++k) {
      Expr i = to_index(f) + Expr(int64_t{k - 1});
      if (exclude_outside) w[k] = ir::select(i < Expr(int64_t{0}) || i >= Expr(in), D(0), w[k]);
      total = total.defined() ? total + w[k] : w[k];
      taps.index.push_back(clamp_index(i));
    }
    for (int k = 0; k < 4; ++k) taps.weight.push_back(exclude_outside ? w[k] / total : w[k]);
  }
  return taps;
}

std::vector<Tensor> ResizeRunTimeScalesOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int scales_input = graph::RunTimeShapeOperandIndex(ctx.node());
  const Tensor& scales = ctx.input(scales_input);
  graph::Shape xs = StaticShape(x), os = ctx.output_type(0).shape;
  const int rank = static_cast<int>(xs.size());
  const std::string mode = ctx.attrs().GetString("mode", "nearest");
  const bool crop = ctx.attrs().GetString("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize";
  const double extrapolation = ctx.attrs().GetFloat("extrapolation_value", 0.0);
  // Not yet: linear and cubic taps of tf_half_pixel_for_nn computed in the kernel disagree with the
  // reference (TensorFlow's mode is meant for nearest; constant scales take the table path).
  AGATE_REQUIRE(mode == "nearest" ||
                    ctx.attrs().GetString("coordinate_transformation_mode", "half_pixel") != "tf_half_pixel_for_nn",
                kUnsupported)
      << ctx.Describe() << ": coordinate_transformation_mode=tf_half_pixel_for_nn with mode=" << mode
      << " and scales given at run time; give the scales as a constant";
  std::vector<int> resized, unchanged;
  int64_t combos = 1;
  for (int d = 0; d < rank; ++d) {
    if (xs[d] == os[d] && (!crop || xs[d] == 1)) {
      // Copied: every scale gives the identity for one element (inside any crop), scale 1 only for more.
      if (xs[d] > 1) unchanged.push_back(d);
      continue;
    }
    resized.push_back(d);
    AGATE_REQUIRE(ctx.attrs().GetInt("antialias", 0) == 0 || mode == "nearest" || os[d] >= xs[d], kUnsupported)
        << ctx.Describe() << ": antialiased downscaling with scales given at run time (axis " << d
        << "): the taps depend on the scale; give the scales as a constant";
    combos *= mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  }
  AGATE_REQUIRE(combos <= kMaxResizeTerms, kUnsupported)
      << ctx.Describe() << ": resizing reads " << combos << " input positions per output element; the operator "
      << "library unrolls at most " << kMaxResizeTerms;
  if (!unchanged.empty()) {
    std::string axes;
    for (int d : unchanged) axes += (axes.empty() ? "" : ", ") + std::to_string(d);
    ctx.CheckAtRunTime({scales_input}, [unchanged](const std::vector<ElementReader>& r) {
      Expr all = Expr(int64_t{0}) == Expr(int64_t{0});
      for (int d : unchanged) all = all && F64(r[0](d)) == D(1);
      return all;
    }, graph::DescribeRunTimeShapeOperand(ctx.node()) + " must be 1 on axes " + axes +
       ", whose extent the declared shape keeps (agate compiled them as copies)", true);
  }
  const graph::Node& node = ctx.node();
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    std::vector<RunTimeTaps> taps;
    for (int d : resized) {
      Expr scale = F64(scales(std::vector<Expr>{Expr(int64_t{d})}));
      taps.push_back(RunTimeResizeTaps(node, d, rank, xs[d], os[d], scale, o[d]));
    }
    Expr acc;
    for (int64_t c = 0; c < combos; ++c) {
      std::vector<Expr> idx = Exprs(o);
      Expr w;
      int64_t rest = c;
      for (size_t i = 0; i < resized.size(); ++i) {
        const int n = static_cast<int>(taps[i].index.size());
        const int k = static_cast<int>(rest % n);
        rest /= n;
        idx[resized[i]] = taps[i].index[k];
        if (n > 1) w = w.defined() ? w * taps[i].weight[k] : taps[i].weight[k];
      }
      Expr term = w.defined() ? x(idx) * ir::cast(x.dtype(), w) : x(idx);
      acc = acc.defined() ? acc + term : term;
    }
    if (crop) {
      Expr inside;
      for (const RunTimeTaps& t : taps) inside = inside.defined() ? inside && t.inside : t.inside;
      if (inside.defined()) acc = ir::select(inside, acc, ir::make_const(x.dtype(), extrapolation));
    }
    return acc;
  })};
}

std::vector<Tensor> ResizeOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  AGATE_REQUIRE(x.dtype().is_float(), kUnsupported) << ctx.Describe() << ": Resize of " << x.dtype();
  CheckShapeOperandAtRunTime(ctx);
  if (ctx.attrs().GetString(graph::kRunTimeOperandAttr, "") == "scales") return ResizeRunTimeScalesOp(ctx);
  graph::Shape xs = StaticShape(x), os = ctx.output_type(0).shape;
  int rank = static_cast<int>(xs.size());
  bool crop = ctx.attrs().GetString("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize";
  double extrapolation = ctx.attrs().GetFloat("extrapolation_value", 0.0);
  std::vector<double> scales = graph::ResizeScales(ctx.node(), xs, os);
  // Per resized axis: index table [out][taps] (int64), weight table [out][taps], inside flags [out].
  // Taps per axis: 1 nearest, 2 linear, 4 cubic, more with antialias when downscaling (the count
  // then varies per output coordinate: shorter rows are padded with weight-0 taps).
  struct Axis {
    int dim;
    int taps;
    Tensor index, weight, inside;
  };
  std::vector<Axis> axes;
  int64_t combos = 1;
  for (int d = 0; d < rank; ++d) {
    int64_t in = xs[d], out = os[d];
    graph::ResizeAxisTaps axis_taps = graph::ComputeResizeTaps(ctx.node(), d, rank, in, out, scales[d]);
    int taps = 1;
    for (const std::vector<graph::ResizeTap>& t : axis_taps.taps) taps = std::max(taps, static_cast<int>(t.size()));
    graph::Tensor index(ir::DType::Int(64), {out, taps}), weight(x.dtype(), {out, taps}), inside(x.dtype(), {out});
    bool identity = in == out;
    for (int64_t o = 0; o < out; ++o) {
      inside.SetDouble(o, axis_taps.outside[o] ? 0.0 : 1.0);
      const std::vector<graph::ResizeTap>& t = axis_taps.taps[o];
      for (int k = 0; k < taps; ++k) {
        graph::ResizeTap tap = k < static_cast<int>(t.size()) ? t[k] : graph::ResizeTap{0, 0.0};
        index.SetInt(o * taps + k, tap.index);
        weight.SetDouble(o * taps + k, tap.weight);
        identity &= (k == 0 ? tap.index == o && tap.weight == 1.0 : tap.weight == 0.0);
      }
      identity &= inside.GetDouble(o) == 1.0;
    }
    if (identity) continue;
    combos *= taps;
    // The taps of all resized axes are unrolled into one sum per output element.
    AGATE_REQUIRE(combos <= kMaxResizeTerms, kUnsupported)
        << ctx.Describe() << ": resizing reads " << combos << " input positions per output element (antialias at scale "
        << scales[d] << " on axis " << d << "); the operator library unrolls at most " << kMaxResizeTerms;
    std::string base = ctx.node().outputs[0] + "_axis" + std::to_string(d);
    axes.push_back(Axis{d, taps, ctx.AddConstant(base + "_index", index), ctx.AddConstant(base + "_weight", weight),
                        ctx.AddConstant(base + "_inside", inside)});
  }
  return {InjectiveCompute(ctx, 0, [&](const std::vector<Var>& o) {
    // Sum over the product of the taps of the resized axes (statically unrolled).
    Expr acc;
    for (int64_t c = 0; c < combos; ++c) {
      std::vector<Expr> idx = Exprs(o);
      Expr w;
      int64_t rest = c;
      for (const Axis& ax : axes) {
        int k = static_cast<int>(rest % ax.taps);
        rest /= ax.taps;
        idx[ax.dim] = ax.index(o[ax.dim], I(k));
        if (ax.taps > 1) {
          Expr wk = ax.weight(o[ax.dim], I(k));
          w = w.defined() ? w * wk : wk;
        }
      }
      Expr term = w.defined() ? x(idx) * w : x(idx);
      acc = acc.defined() ? acc + term : term;
    }
    if (crop) {
      Expr inside;
      for (const Axis& ax : axes) {
        Expr in = ax.inside(o[ax.dim]);
        inside = inside.defined() ? inside * in : in;
      }
      if (inside.defined()) acc = ir::select(inside > ir::make_zero(x.dtype()), acc, ir::make_const(x.dtype(), extrapolation));
    }
    return acc;
  })};
}

// ConstantOfShape is folded when its shape is a constant; here its shape is a run-time operand
// compiled for the declared shape (run_time_shape_operand.h).
std::vector<Tensor> ConstantOfShapeOp(const OpContext& ctx) {
  CheckShapeOperandAtRunTime(ctx);
  const graph::TensorType& type = ctx.output_type(0);
  double value = ctx.attrs().Has("value") ? ctx.attrs().GetTensor("value").GetDouble(0) : 0.0;
  return {te::compute(ToExprShape(type.shape), [&](const std::vector<Var>&) { return ir::make_const(type.dtype, value); },
                      ctx.node().outputs[0], tag::kInjective)};
}

// Range is folded when start, limit and delta are constants; here they are read at run time,
// compiled for the declared length, which the kernel first checks they give.
std::vector<Tensor> RangeOp(const OpContext& ctx) {
  const graph::TensorType& type = ctx.output_type(0);
  const int64_t n = type.shape[0];
  ctx.CheckAtRunTime({0, 1, 2}, [n](const std::vector<ElementReader>& r) {
    Expr start = F64(r[0](0)), limit = F64(r[1](0)), delta = F64(r[2](0));
    Expr count = ir::ceil((limit - start) / delta);
    return delta != D(0) && (n == 0 ? count <= D(0) : count == D(static_cast<double>(n)));
  }, "start, limit and delta ('" + ctx.node().inputs[0] + "', '" + ctx.node().inputs[1] + "', '" +
     ctx.node().inputs[2] + "', read when the model runs) do not give the " + std::to_string(n) +
     " elements the model declares and agate compiled for", true);
  auto scalar = [&](int i) { return ctx.input(i)(std::vector<Expr>(ctx.input_type(i).rank(), I(0))); };
  return {te::compute(ToExprShape(type.shape), [&](const std::vector<Var>& i) {
    if (type.dtype.is_float()) {
      return ir::cast(type.dtype, F64(scalar(0)) + ir::cast(ir::DType::Float(64), Expr(i[0])) * F64(scalar(2)));
    }
    Expr step = ir::cast(ir::DType::Int(64), Expr(i[0])) * ir::cast(ir::DType::Int(64), scalar(2));
    return ir::cast(type.dtype, ir::cast(ir::DType::Int(64), scalar(0)) + step);
  }, ctx.node().outputs[0], tag::kInjective)};
}

// HannWindow, HammingWindow, BlackmanWindow are folded when their size is a constant; here the
// size is a run-time operand compiled for the declared length (as graph_eval's Window computes).
std::vector<Tensor> WindowOp(const OpContext& ctx) {
  CheckShapeOperandAtRunTime(ctx);
  const graph::TensorType& type = ctx.output_type(0);
  const int64_t n = type.numel();
  const double denominator = ctx.attrs().GetInt("periodic", 1) != 0 ? n : n - 1;
  const std::string op = ctx.node().op;
  return {te::compute(ToExprShape(type.shape), [&](const std::vector<Var>& i) {
    Expr a = D(2 * M_PI) * ir::cast(ir::DType::Float(64), Expr(i[0])) / D(denominator);
    Expr c = ir::cos(a);
    Expr v = op == "HannWindow"      ? D(0.5) - D(0.5) * c
             : op == "HammingWindow" ? D(25.0 / 46) - D(1 - 25.0 / 46) * c
                                     : D(0.42) - D(0.5) * c + D(0.08) * ir::cos(a * D(2));
    return ir::cast(type.dtype, v);
  }, ctx.node().outputs[0], tag::kInjective)};
}

}  // namespace

void RegisterTransformOps(OpTable* t) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) t->Register(op, ReshapeLike);
  t->Register("Transpose", TransposeOp);
  t->Register("Concat", ConcatOp);
  t->Register("Split", SplitOp);
  t->Register("Slice", SliceOp);
  t->Register("Gather", GatherOp);
  t->Register("GatherElements", GatherElementsOp);
  t->Register("GatherND", GatherNDOp);
  t->Register("ScatterElements", ScatterElementsOp);
  t->Register("Scatter", ScatterElementsOp);  // opset 9-10 name of ScatterElements
  t->Register("ScatterND", ScatterNDOp);
  t->Register("TopK", TopKOp);
  t->Register("Tile", TileOp);
  t->Register("Pad", PadOp);
  t->Register("DepthToSpace", DepthToSpaceOp);
  t->Register("SpaceToDepth", SpaceToDepthOp);
  t->Register("Trilu", TriluOp);
  t->Register("EyeLike", EyeLikeOp);
  t->Register("OneHot", OneHotOp);
  t->Register("Resize", ResizeOp);
  t->Register("ConstantOfShape", ConstantOfShapeOp);
  t->Register("Range", RangeOp);
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) t->Register(op, WindowOp);
}

}  // namespace ops
}  // namespace agate
