#include "core/ops/pool.h"

#include <limits>
#include <memory>

#include "core/ops/max_pool_plane.h"
#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/ops/window.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

namespace {

// Number of k in [0, kernel) with lo <= base + k*dil < hi.
Expr CountValid(Expr base, int64_t kernel, int64_t dil, int64_t lo, int64_t hi) {
  Expr kmin = ir::max(ir::floordiv(Expr(lo) - base + (dil - 1), Expr(dil)), Expr(int64_t{0}));
  Expr kmax = ir::min(ir::floordiv(Expr(hi) - base + (dil - 1), Expr(dil)), Expr(kernel));
  return ir::max(kmax - kmin, Expr(int64_t{0}));
}

// True where every spatial index lies inside the input (undefined when no index can leave it).
Expr InsideInput(const std::vector<Expr>& idx, const graph::WindowGeometry& g) {
  Expr inside;
  for (size_t d = 0; d < g.in.size(); ++d) {
    int64_t last = (g.out[d] - 1) * g.strides[d] + (g.kernel[d] - 1) * g.dilations[d] - g.pad_begin[d];
    if (g.pad_begin[d] == 0 && last < g.in[d]) continue;  // every window lies inside (ceil_mode may overhang)
    Expr ok = idx[2 + d] >= Expr(int64_t{0}) && idx[2 + d] < Expr(g.in[d]);
    inside = inside.defined() ? (inside && ok) : ok;
  }
  return inside;
}

// The start of a max: -inf for floats, so that a window of -inf (or one wholly in the padding)
// yields -inf rather than the lowest finite number; the lowest value for integers.
Expr MaxStart(ir::DType dt) {
  if (dt.is_float()) return ir::make_const(dt, -std::numeric_limits<double>::infinity());
  return ir::min_value(dt);
}

}  // namespace

Tensor Pool(const Tensor& x, const graph::WindowGeometry& g, PoolType type, bool count_include_pad, int p,
            const std::string& name) {
  graph::Shape xs = StaticShape(x);
  size_t nsp = g.kernel.size();
  graph::Shape out = xs;
  for (size_t d = 0; d < nsp; ++d) out[2 + d] = g.out[d];
  std::vector<ir::IterVar> k;
  for (size_t d = 0; d < nsp; ++d) k.push_back(te::reduce_axis({Expr(int64_t{0}), Expr(g.kernel[d])}, "k" + std::to_string(d)));
  ir::DType dt = x.dtype();
  Expr pad_value = type == PoolType::kMax ? MaxStart(dt) : ir::make_zero(dt);
  return te::compute(
      ToExprShape(out),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx(o.begin(), o.end());
        for (size_t d = 0; d < nsp; ++d) idx[2 + d] = o[2 + d] * g.strides[d] + k[d] * g.dilations[d] - g.pad_begin[d];
        Expr v = PaddedRead(x, idx, 2, g.in, pad_value);
        if (type == PoolType::kMax) return te::max(v, k);  // starts from -inf for floats
        if (type == PoolType::kLp) {
          Expr a = p == 2 ? v * v : (p == 1 ? ir::abs(v) : ir::pow(ir::abs(v), ir::make_const(dt, p)));
          Expr s = te::sum(a, k);
          return s;
        }
        return te::sum(v, k);
      },
      name, tag::kPool);
}

MaxPoolOutputs MaxPoolWithIndices(const Tensor& x, const graph::WindowGeometry& g, bool column_major,
                                  const std::string& values_name, const std::string& indices_name) {
  graph::Shape xs = StaticShape(x);
  size_t nsp = g.kernel.size();
  graph::Shape out = xs;
  for (size_t d = 0; d < nsp; ++d) out[2 + d] = g.out[d];
  std::vector<ir::IterVar> k;
  for (size_t d = 0; d < nsp; ++d) k.push_back(te::reduce_axis({Expr(int64_t{0}), Expr(g.kernel[d])}, "k" + std::to_string(d)));
  ir::DType i64 = ir::DType::Int(64);
  std::vector<Tensor> tuple = te::compute_multi(
      ToExprShape(out),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx(o.begin(), o.end());
        for (size_t d = 0; d < nsp; ++d) idx[2 + d] = o[2 + d] * g.strides[d] + k[d] * g.dilations[d] - g.pad_begin[d];
        // Row-major offset of the element in the whole input (meaningful only where it is inside).
        // Offsets grow in window order, so the reducer's "smaller index wins a tie" picks the first
        // maximum in window order; column-major offsets are derived afterwards so that storage_order
        // never changes which element wins.
        Expr flat = ir::cast(i64, idx[0]);
        for (size_t d = 1; d < xs.size(); ++d) flat = flat * Expr(xs[d]) + ir::cast(i64, idx[d]);
        Expr v = PaddedRead(x, idx, 2, g.in, ir::min_value(x.dtype()));
        return te::argmax(flat, v, k, InsideInput(idx, g));
      },
      values_name + "_argmax", tag::kPool);
  const Tensor& arg = tuple[0];
  const Tensor& max = tuple[1];
  Tensor values = te::compute(max.shape(), [&](const std::vector<Var>& o) {
    return max(std::vector<Expr>(o.begin(), o.end()));
  }, values_name, tag::kElemwise);
  int64_t plane = 1;
  for (size_t d = 0; d < nsp; ++d) plane *= g.in[d];
  Tensor indices = te::compute(arg.shape(), [&](const std::vector<Var>& o) {
    Expr r = arg(std::vector<Expr>(o.begin(), o.end()));
    if (!column_major) return r;
    // Split the spatial offset into coordinates (row-major), then recombine them column-major.
    Expr spatial = ir::floormod(r, Expr(plane));
    std::vector<Expr> coord(nsp);
    for (size_t d = nsp; d-- > 0;) {
      coord[d] = ir::floormod(spatial, Expr(g.in[d]));
      spatial = ir::floordiv(spatial, Expr(g.in[d]));
    }
    Expr col = coord[nsp - 1];
    for (size_t d = nsp - 1; d-- > 0;) col = col * Expr(g.in[d]) + coord[d];
    // -1 (a window wholly in the padding: nothing was a candidate) stays -1.
    return ir::select(r >= Expr(int64_t{0}), r - ir::floormod(r, Expr(plane)) + col, r);
  }, indices_name, tag::kElemwise);
  return {values, indices, arg};
}

Tensor GlobalPool(const Tensor& x, size_t spatial_axes, bool is_max, const std::string& name) {
  graph::Shape xs = StaticShape(x);
  graph::Shape out = xs;
  std::vector<ir::IterVar> k;
  for (size_t d = 0; d < spatial_axes; ++d) {
    out[2 + d] = 1;
    k.push_back(te::reduce_axis({Expr(int64_t{0}), Expr(xs[2 + d])}, "r" + std::to_string(d)));
  }
  return te::compute(
      ToExprShape(out),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx(o.begin(), o.end());
        for (size_t d = 0; d < spatial_axes; ++d) idx[2 + d] = k[d];
        return is_max ? te::max(x(idx), k) : te::sum(x(idx), k);
      },
      name, tag::kPool);
}

namespace {

// MaxPool with its Indices output (the layout pass leaves such a node in NCHW).
std::vector<Tensor> MaxPoolIndicesOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  AGATE_REQUIRE(LayoutBlock(ctx.node()) == 0, kUnsupported)
      << ctx.Describe() << ": the Indices output of MaxPool in a channel-blocked layout";
  graph::Shape xs = StaticShape(x);
  AGATE_REQUIRE(xs.size() >= 3, kInvalidArgument)
      << ctx.Describe() << ": input " << graph::ShapeToString(xs) << " needs rank >= 3 (N, C, spatial...)";
  graph::WindowGeometry g = graph::ComputeWindow(ctx.node(), xs, ctx.attrs().GetInts("kernel_shape"));
  int64_t storage_order = ctx.attrs().GetInt("storage_order", 0);
  AGATE_REQUIRE(storage_order == 0 || storage_order == 1, kInvalidArgument)
      << ctx.Describe() << ": storage_order " << storage_order << " (0: row-major, 1: column-major)";
  MaxPoolOutputs outs = MaxPoolWithIndices(x, g, storage_order == 1, ctx.node().outputs[0], ctx.node().outputs[1]);
  SetDefaultSchedules(ctx, "max_pool_indices", outs.argmax);
  return {outs.values, outs.indices};
}

// A 2-D max pool in NCHW whose input is the kernel's input (core/ops/max_pool_plane.h): each
// (n, c) plane one tensorized call, the planes in parallel. A group that computes something
// after the pool (an epilogue) keeps the generic schedule, which computes the pool at the
// epilogue's loops.
void SetMaxPoolPlaneSchedule(const OpContext& ctx, const Tensor& x, const graph::WindowGeometry& g,
                              const Tensor& acc, const std::string& name) {
  graph::Shape xs = StaticShape(x);
  ir::DType dt = x.dtype();
  Tensor plane = te::placeholder(ToExprShape({1, 1, xs[2], xs[3]}), dt, name + "_plane_in");
  auto intrin = std::make_shared<te::TensorIntrin>();
  intrin->name = "max_pool_plane";
  intrin->desc = Pool(plane, g, PoolType::kMax, false, 2, name + "_plane");
  int lanes = VectorLanes(ctx.target(), dt);
  Expr empty = MaxStart(dt);
  intrin->lower = [g, lanes, empty](const std::vector<ir::Buffer>& inputs, const std::vector<Expr>& offsets,
                                    const ir::Buffer& out, const Expr& out_offset) {
    return LowerMaxPoolPlane(g, inputs[0], offsets[0], out, out_offset, empty, lanes);
  };
  int64_t work = xs[0] * xs[1] * g.out[0] * g.out[1] * g.kernel[0] * g.kernel[1];
  ctx.SetSchedule(
      [intrin, acc, work](const ScheduleRequest& r) {
        if (r.epilogue.defined() || r.outputs.size() != 1 || !r.outputs[0].same_as(acc))
          return ScheduleAnchorDefault(r, "pool");
        te::Stage stage = r.schedule[acc];
        auto [n_outer, n_inner] = stage.split(stage.axis(0), Expr(int64_t{1}));
        auto [c_outer, c_inner] = stage.split(stage.axis(1), Expr(int64_t{1}));
        stage.reorder({n_outer, c_outer, n_inner, c_inner, stage.axis(2), stage.axis(3), stage.reduce_axis(0),
                       stage.reduce_axis(1)});
        ir::IterVar plane_loop = FuseRange(stage, {n_outer, c_outer});
        if (ParallelAllowed(*r.target) && r.options->allow_parallel && work >= InjectiveKnobs().min_parallel_elements)
          stage.parallel(plane_loop);
        stage.tensorize(n_inner, *intrin);
        return std::string("pool, one plane per call of the max_pool_plane intrinsic");
      },
      acc);
}

// A 2-D pool on NCHW<c>c: the planes (n, channel block) in parallel, then the output rows and
// columns as serial loops, each output one vector of the block's channels with the window's
// taps outside its lanes (an average's division computed at that vector). The loop partition
// pass then cuts the row and column loops where windows stop reaching into the padding, so
// the interior's taps are plain vector loads. The generic schedule fused every axis into one
// loop, from which each tap computed its row and column (floordiv, floormod), its padding
// tests and clamped indices: Inception-v3's 3x3 average pools on NCHW8c ran at half ONNX
// Runtime's speed. Rows join the parallel loop when there are fewer than 8 planes.
std::string ScheduleBlockedPool(const ScheduleRequest& r, const Tensor& acc) {
  const Tensor out = r.epilogue.defined() ? r.epilogue : (r.outputs.size() == 1 ? r.outputs[0] : Tensor());
  const int lanes = r.options->vector_lanes > 0 ? r.options->vector_lanes : VectorLanes(*r.target, acc.dtype());
  if (!out.defined() || r.outputs.size() != 1 || out.ndim() != 5 || StaticShape(out) != StaticShape(acc) ||
      (!r.epilogue.defined() && !out.same_as(acc)) || lanes <= 1 || StaticShape(acc)[4] % lanes != 0) {
    return ScheduleAnchorDefault(r, "pool");
  }
  te::Schedule s = r.schedule;
  te::Stage e = s[out];
  const graph::Shape shape = StaticShape(out);
  auto [ci_outer, ci] = e.split(e.axis(4), Expr(int64_t{lanes}));
  std::vector<ir::IterVar> planes{e.axis(0), e.axis(1)};
  if (shape[0] * shape[1] < 8) planes.push_back(e.axis(2));
  std::vector<ir::IterVar> order = planes;
  for (int axis = static_cast<int>(planes.size()); axis < 4; ++axis) order.push_back(e.axis(axis));
  order.push_back(ci_outer);
  if (!r.epilogue.defined()) {
    for (size_t k = 0; k < 2; ++k) order.push_back(e.reduce_axis(k));
  }
  order.push_back(ci);
  e.reorder(order);
  e.vectorize(ci);
  ir::IterVar parallel = FuseRange(e, planes);
  int64_t total = 1;
  for (int64_t extent : shape) total *= extent;
  if (ParallelAllowed(*r.target) && r.options->allow_parallel && total >= InjectiveKnobs().min_parallel_elements) {
    e.parallel(parallel);
  }
  if (r.epilogue.defined()) {
    te::Stage anchor = s[acc];
    anchor.compute_at(e, ci_outer);
    anchor.reorder({anchor.axis(0), anchor.axis(1), anchor.axis(2), anchor.axis(3), anchor.reduce_axis(0),
                    anchor.reduce_axis(1), anchor.axis(4)});
    anchor.vectorize(anchor.axis(4));
  }
  return "pool, planes in parallel, rows and columns partitioned at the padding, a vector of channels per output";
}

std::vector<Tensor> PoolOp(const OpContext& ctx, PoolType type) {
  bool wants_indices = ctx.num_outputs() > 1 && !ctx.node().outputs[1].empty();
  if (type == PoolType::kMax && wants_indices) return MaxPoolIndicesOp(ctx);
  const Tensor& x = ctx.input(0);
  int64_t block = LayoutBlock(ctx.node());
  graph::Shape xs = StaticShape(x);
  graph::Shape logical = xs;
  if (block) logical = {xs[0], xs[1] * block, xs[2], xs[3]};
  graph::WindowGeometry g = graph::ComputeWindow(ctx.node(), logical, ctx.attrs().GetInts("kernel_shape"));
  bool include_pad = ctx.attrs().GetInt("count_include_pad", 0) != 0;
  int p = static_cast<int>(ctx.attrs().GetInt("p", 2));
  std::string name = ctx.node().outputs[0];
  Tensor acc = Pool(x, g, type, include_pad, p, name + "_acc");
  ir::DType dt = x.dtype();
  Tensor out;
  if (type == PoolType::kMax) {
    out = acc;
  } else {
    size_t nsp = g.kernel.size();
    out = te::compute(acc.shape(), [&](const std::vector<Var>& o) {
      Expr v = acc(std::vector<Expr>(o.begin(), o.end()));
      if (type == PoolType::kLp) {
        return p == 2 ? ir::sqrt(v) : (p == 1 ? v : ir::pow(v, ir::make_const(dt, 1.0 / p)));
      }
      Expr count;
      for (size_t d = 0; d < nsp; ++d) {
        Expr base = o[2 + d] * g.strides[d] - g.pad_begin[d];
        Expr c = include_pad ? CountValid(base, g.kernel[d], g.dilations[d], -g.pad_begin[d], g.in[d] + g.pad_end[d])
                             : CountValid(base, g.kernel[d], g.dilations[d], 0, g.in[d]);
        count = count.defined() ? count * c : c;
      }
      return v / ir::cast(dt, count);
    }, name, tag::kElemwise);
  }
  SetDefaultSchedules(ctx, "pool", acc);
  if (block > 0 && g.kernel.size() == 2) {
    ctx.SetSchedule([acc](const ScheduleRequest& r) { return ScheduleBlockedPool(r, acc); }, acc);
  }
  if (type == PoolType::kMax && block == 0 && x.op()->kind == te::OpKind::kPlaceholder && MaxPoolPlaneApplies(g))
    SetMaxPoolPlaneSchedule(ctx, x, g, acc, name);  // the CPU schedule only
  if (ctx.num_outputs() > 1) return {out, Tensor()};  // an unnamed (absent) Indices output
  return {out};
}

std::vector<Tensor> GlobalPoolOp(const OpContext& ctx, bool is_max) {
  const Tensor& x = ctx.input(0);
  int64_t block = LayoutBlock(ctx.node());
  size_t nsp = block ? 2 : x.ndim() - 2;
  std::string name = ctx.node().outputs[0];
  Tensor acc = GlobalPool(x, nsp, is_max, is_max ? name : name + "_sum");
  Tensor out = acc;
  if (!is_max) {
    graph::Shape xs = StaticShape(x);
    int64_t count = 1;
    for (size_t d = 0; d < nsp; ++d) count *= xs[2 + d];
    out = te::compute(acc.shape(), [&](const std::vector<Var>& o) {
      return acc(std::vector<Expr>(o.begin(), o.end())) / ir::make_const(x.dtype(), static_cast<double>(count));
    }, name, tag::kElemwise);
  }
  SetDefaultSchedules(ctx, "global_pool", acc);
  return {out};
}

}  // namespace

void RegisterPoolOps(OpTable* t) {
  t->Register("MaxPool", [](const OpContext& ctx) { return PoolOp(ctx, PoolType::kMax); });
  t->Register("AveragePool", [](const OpContext& ctx) { return PoolOp(ctx, PoolType::kAverage); });
  t->Register("LpPool", [](const OpContext& ctx) { return PoolOp(ctx, PoolType::kLp); });
  t->Register("GlobalAveragePool", [](const OpContext& ctx) { return GlobalPoolOp(ctx, false); });
  t->Register("GlobalMaxPool", [](const OpContext& ctx) { return GlobalPoolOp(ctx, true); });
}

}  // namespace ops
}  // namespace agate
