#include "core/ops/pool.h"

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
  Expr pad_value = type == PoolType::kMax ? ir::min_value(dt) : ir::make_zero(dt);
  return te::compute(
      ToExprShape(out),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx(o.begin(), o.end());
        for (size_t d = 0; d < nsp; ++d) idx[2 + d] = o[2 + d] * g.strides[d] + k[d] * g.dilations[d] - g.pad_begin[d];
        Expr v = PaddedRead(x, idx, 2, g.in, pad_value);
        if (type == PoolType::kMax) return te::max(v, k);
        if (type == PoolType::kLp) {
          Expr a = p == 2 ? v * v : (p == 1 ? ir::abs(v) : ir::pow(ir::abs(v), ir::make_const(dt, p)));
          Expr s = te::sum(a, k);
          return s;
        }
        return te::sum(v, k);
      },
      name, tag::kPool);
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

std::vector<Tensor> PoolOp(const OpContext& ctx, PoolType type) {
  AGATE_REQUIRE(ctx.num_outputs() == 1, kUnsupported) << ctx.Describe() << ": the Indices output of MaxPool";
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
  ctx.SetSchedule([](const ScheduleRequest& r) { return ScheduleAnchorDefault(r, "pool"); }, acc);
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
  ctx.SetSchedule([](const ScheduleRequest& r) { return ScheduleAnchorDefault(r, "global_pool"); }, acc);
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
