#include "core/ops/norm.h"

#include <algorithm>

#include "core/graph/shape_rules.h"
#include "core/ops/cuda/cuda_schedules.h"
#include "core/ops/op_context.h"
#include "core/ops/reduce.h"
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

std::vector<Expr> Exprs(const std::vector<Var>& v) { return std::vector<Expr>(v.begin(), v.end()); }

std::vector<Expr> StatIndex(const std::vector<Var>& o, const std::vector<int>& axes) {
  std::vector<Expr> idx(o.begin(), o.end());
  for (int a : axes) idx[a] = Expr(int64_t{0});
  return idx;
}

// mean and (population) variance over `axes`, keepdims.
struct Moments {
  Tensor mean, var;       // elementwise, inlined into their readers
  Tensor sum, sq_dev;     // the reductions behind them
};

Moments ComputeMoments(const Tensor& x, const std::vector<int>& axes, const std::string& name) {
  graph::Shape xs = StaticShape(x);
  int64_t count = 1;
  for (int a : axes) count *= xs[a];
  ir::DType dt = x.dtype();
  Expr inv = ir::make_const(dt, 1.0 / static_cast<double>(count));
  Tensor sum = ReduceTensor(x, axes, true, "sum", [](Expr v) { return v; }, name + "_sum");
  Tensor mean = te::compute(sum.shape(), [&](const std::vector<Var>& o) { return sum(Exprs(o)) * inv; },
                            name + "_mean", tag::kElemwise);
  std::vector<ir::IterVar> r = MakeReduceAxes(xs, axes);
  Tensor sq = te::compute(sum.shape(), [&](const std::vector<Var>& o) {
    Expr d = x(ReducedInputIndex(o, axes, r, xs.size(), true)) - mean(Exprs(o));
    return te::sum(d * d, r);
  }, name + "_sqdev", tag::kReduce);
  Tensor var = te::compute(sum.shape(), [&](const std::vector<Var>& o) { return sq(Exprs(o)) * inv; },
                           name + "_var", tag::kElemwise);
  return {mean, var, sum, sq};
}

// Statistics at the row loop of the output when the normalized axes are the innermost ones.
std::string ScheduleNorm(const ScheduleRequest& r, const std::vector<Tensor>& stats, const std::vector<int>& axes,
                         size_t rank, const std::string& what) {
  te::Schedule s = r.schedule;
  InjectiveKnobs knobs;
  knobs.vector_lanes = r.options->vector_lanes;
  if (!r.options->allow_parallel) knobs.min_parallel_elements = INT64_MAX;
  bool trailing = !axes.empty() && axes.back() == static_cast<int>(rank) - 1 &&
                  axes.front() == static_cast<int>(rank - axes.size()) && axes.front() > 0;
  if (r.outputs.size() != 1 || !trailing) {
    for (const Tensor& st : stats) {
      if (static_cast<const te::ComputeOpNode*>(st.op().get())->is_reduction()) {
        ScheduleReductionStage(s, st, *r.target, knobs);
      }
    }
    for (const Tensor& out : r.outputs) ScheduleInjectiveStage(s, out, *r.target, knobs);
    return what + ": vectorized statistics, then normalize";
  }
  const Tensor& out = r.outputs[0];
  te::Stage o = s[out];
  std::vector<ir::IterVar> rows;
  for (int d = 0; d < axes.front(); ++d) rows.push_back(o.axis(d));
  ir::IterVar row = FuseRange(o, rows);
  int lanes = VectorLanes(*r.target, out.dtype());
  int64_t inner = ConstExtent(o.axis(rank - 1));
  if (lanes > 1 && inner > 0 && inner % lanes == 0) {
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
  return what + ": statistics at the row loop" + (vector_stats ? " in vector partials" : "");
}

// Scale, bias, mean and variance hold one value per channel (axis 1 of x). Shape inference
// checks this for graphs; operators built directly (LowerGroup on a hand-made group) get the
// same error instead of reading out of bounds.
void CheckPerChannelInputs(const OpContext& ctx) {
  graph::Shape xs = StaticShape(ctx.input(0));
  AGATE_REQUIRE(xs.size() >= 2, kInvalidArgument)
      << ctx.Describe() << ": input " << graph::ShapeToString(xs) << " needs rank >= 2 (N, C, ...)";
  for (int i = 1; i < 5; ++i) {
    graph::Shape s = StaticShape(ctx.input(i));
    AGATE_REQUIRE(s == graph::Shape{xs[1]}, kInvalidArgument)
        << ctx.Describe() << ": input " << i << " is " << graph::ShapeToString(s) << ", expected [" << xs[1]
        << "] (one value per channel of x " << graph::ShapeToString(xs) << ")";
  }
}

// Inference: the stored statistics make it a per-channel affine map, fused like any broadcast op.
std::vector<Tensor> BatchNormInference(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  double eps = ctx.attrs().GetFloat("epsilon", 1e-5);
  const Tensor &scale = ctx.input(1), &bias = ctx.input(2), &mean = ctx.input(3), &var = ctx.input(4);
  return {te::compute(x.shape(), [&](const std::vector<Var>& o) {
    Expr c = o[1];
    Expr k = scale(c) * ir::rsqrt(var(c) + ir::make_const(x.dtype(), eps));
    return (x(Exprs(o)) - mean(c)) * k + bias(c);
  }, ctx.node().outputs[0], tag::kBroadcast)};
}

// Training (ONNX opset 14+): Y is normalized with the batch's own mean and population variance
// over every axis but the channel; the optional outputs blend them into the running statistics:
// running = input * momentum + batch * (1 - momentum).
std::vector<Tensor> BatchNormTraining(const OpContext& ctx) {
  AGATE_REQUIRE(ctx.num_outputs() <= 3, kUnsupported)
      << ctx.Describe() << ": " << ctx.num_outputs()
      << " outputs; training mode gives Y, running_mean, running_var (the saved statistics of opset < 14 are not "
         "supported)";
  const Tensor& x = ctx.input(0);
  ir::DType dt = x.dtype();
  double eps = ctx.attrs().GetFloat("epsilon", 1e-5);
  double momentum = ctx.attrs().GetFloat("momentum", 0.9);
  std::vector<int> axes = {0};
  for (size_t d = 2; d < x.ndim(); ++d) axes.push_back(static_cast<int>(d));
  std::string name = ctx.node().outputs[0];
  Moments m = ComputeMoments(x, axes, name);
  Tensor inv_std = te::compute(m.var.shape(), [&](const std::vector<Var>& o) {
    return ir::rsqrt(m.var(Exprs(o)) + ir::make_const(dt, eps));
  }, name + "_inv_std", tag::kElemwise);
  const Tensor &scale = ctx.input(1), &bias = ctx.input(2);
  Tensor y = te::compute(x.shape(), [&](const std::vector<Var>& o) {
    std::vector<Expr> si = StatIndex(o, axes);
    return (x(Exprs(o)) - m.mean(si)) * inv_std(si) * scale(o[1]) + bias(o[1]);
  }, name, tag::kOpaque);
  std::vector<Tensor> outs{y};
  for (int i = 1; i < ctx.num_outputs(); ++i) {
    if (ctx.node().outputs[i].empty()) {  // an absent optional output
      outs.emplace_back();
      continue;
    }
    const Tensor& batch = i == 1 ? m.mean : m.var;
    const Tensor& running = ctx.input(i + 2);
    outs.push_back(te::compute(running.shape(), [&](const std::vector<Var>& c) {
      std::vector<Expr> si(x.ndim(), Expr(int64_t{0}));
      si[1] = c[0];
      return running(c[0]) * ir::make_const(dt, momentum) + batch(si) * ir::make_const(dt, 1.0 - momentum);
    }, ctx.node().outputs[i], tag::kElemwise));
  }
  std::vector<Tensor> stats = {m.sum, m.sq_dev, inv_std};
  size_t rank = x.ndim();
  ctx.SetSchedule([stats, axes, rank](const ScheduleRequest& r) {
    return ScheduleNorm(r, stats, axes, rank, "batch_norm_training");
  }, y);
  ctx.SetCudaSchedule([stats, axes, rank](const ScheduleRequest& r) {
    return cuda::ScheduleRows(r, stats, axes, rank, "batch_norm_training");
  });
  return outs;
}

std::vector<Tensor> BatchNormOp(const OpContext& ctx) {
  CheckPerChannelInputs(ctx);
  if (ctx.attrs().GetInt("training_mode", 0) != 0) return BatchNormTraining(ctx);
  return BatchNormInference(ctx);
}

std::vector<Tensor> InstanceNormOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  double eps = ctx.attrs().GetFloat("epsilon", 1e-5);
  std::vector<int> axes;
  for (size_t d = 2; d < x.ndim(); ++d) axes.push_back(static_cast<int>(d));
  std::string name = ctx.node().outputs[0];
  Moments m = ComputeMoments(x, axes, name);
  const Tensor &scale = ctx.input(1), &bias = ctx.input(2);
  Tensor inv_std = te::compute(m.var.shape(), [&](const std::vector<Var>& o) {
    return ir::rsqrt(m.var(Exprs(o)) + ir::make_const(x.dtype(), eps));
  }, name + "_inv_std", tag::kElemwise);
  Tensor out = te::compute(x.shape(), [&](const std::vector<Var>& o) {
    std::vector<Expr> si = StatIndex(o, axes);
    return (x(Exprs(o)) - m.mean(si)) * inv_std(si) * scale(o[1]) + bias(o[1]);
  }, name, tag::kOpaque);
  std::vector<Tensor> stats = {m.sum, m.sq_dev, inv_std};
  size_t rank = x.ndim();
  ctx.SetSchedule([stats, axes, rank](const ScheduleRequest& r) {
    return ScheduleNorm(r, stats, axes, rank, "instance_norm");
  }, out);
  ctx.SetCudaSchedule([stats, axes, rank](const ScheduleRequest& r) {
    return cuda::ScheduleRows(r, stats, axes, rank, "instance_norm");
  });
  return {out};
}

// Per pixel over the channels of a 4-D activation (the layout pass's form of a channels-last
// block's layer norm, graph/ops_nn.cc): NCHW, or NCHW{b}c where the channels are the chunk axis
// and the lanes. Loops (n, h) in parallel, then each pixel: its statistics (over the chunks, in
// vectors of lanes), then its chunks normalized, a vector of lanes at a time.
std::string ScheduleChannelNorm(const ScheduleRequest& r, const std::vector<Tensor>& stats, bool blocked) {
  te::Schedule s = r.schedule;
  if (r.outputs.size() != 1) return ScheduleAnchorDefault(r, "channel_norm (several outputs: default schedule)");
  const Tensor& out = r.outputs[0];
  te::Stage o = s[out];
  int lanes = VectorLanes(*r.target, out.dtype());
  ir::IterVar row;
  ir::IterVar pixel;
  if (blocked) {
    o.reorder({o.axis(0), o.axis(2), o.axis(3), o.axis(1), o.axis(4)});
    row = o.fuse(o.axis(0), o.axis(2));
    pixel = o.axis(3);
    int64_t block = ConstExtent(o.axis(4));
    if (lanes > 1 && block % lanes == 0) {
      auto [lo, li] = o.split(o.axis(4), Expr(int64_t{lanes}));
      o.vectorize(li);
    } else if (lanes > 1 && block <= lanes) {
      o.vectorize(o.axis(4));
    }
  } else {
    o.reorder({o.axis(0), o.axis(2), o.axis(3), o.axis(1)});
    row = o.fuse(o.axis(0), o.axis(2));
    pixel = o.axis(3);
  }
  if (ParallelAllowed(*r.target) && r.options->allow_parallel) o.parallel(row);
  bool vector_stats = false;
  for (const Tensor& st : stats) {
    if (blocked) vector_stats |= VectorizeReduction(s, st, lanes);
    s[st].compute_at(o, pixel);
  }
  return std::string("channel_norm: statistics per pixel") + (vector_stats ? " in vector partials" : "");
}

std::vector<Tensor> ChannelLayerNormOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t block = LayoutBlock(ctx.node());
  AGATE_REQUIRE(x.ndim() == (block ? 5u : 4u) && ctx.num_outputs() == 1, kInvalidArgument)
      << ctx.Describe() << ": a channel layer norm needs a 4-D activation (NCHW or NCHW{c}c) and one output";
  double eps = ctx.attrs().GetFloat("epsilon", 1e-5);
  std::vector<int> axes = block ? std::vector<int>{1, 4} : std::vector<int>{1};
  std::string name = ctx.node().outputs[0];
  Moments m = ComputeMoments(x, axes, name);
  Tensor inv_std = te::compute(m.var.shape(), [&](const std::vector<Var>& o) {
    return ir::rsqrt(m.var(Exprs(o)) + ir::make_const(x.dtype(), eps));
  }, name + "_inv_std", tag::kElemwise);
  const Tensor& scale = ctx.input(1);
  Tensor bias = ctx.has_input(2) ? ctx.input(2) : Tensor();
  Tensor out = te::compute(x.shape(), [&](const std::vector<Var>& o) {
    std::vector<Expr> si = StatIndex(o, axes);
    Expr channel = block ? o[1] * block + o[4] : Expr(o[1]);
    Expr y = (x(Exprs(o)) - m.mean(si)) * inv_std(si) * scale(channel);
    if (bias.defined()) y = y + bias(channel);
    return y;
  }, name, tag::kOpaque);
  std::vector<Tensor> stats = {m.sum, m.sq_dev, inv_std};
  bool blocked = block != 0;
  ctx.SetSchedule([stats, blocked](const ScheduleRequest& req) { return ScheduleChannelNorm(req, stats, blocked); },
                  out);
  return {out};
}

std::vector<Tensor> LayerNormOp(const OpContext& ctx) {
  if (ctx.attrs().Has("data_layout")) return ChannelLayerNormOp(ctx);
  const Tensor& x = ctx.input(0);
  int rank = static_cast<int>(x.ndim());
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", -1), rank, ctx.Describe());
  double eps = ctx.attrs().GetFloat("epsilon", 1e-5);
  std::vector<int> axes;
  for (int d = axis; d < rank; ++d) axes.push_back(d);
  std::string name = ctx.node().outputs[0];
  Moments m = ComputeMoments(x, axes, name);
  Tensor inv_std = te::compute(m.var.shape(), [&](const std::vector<Var>& o) {
    return ir::rsqrt(m.var(Exprs(o)) + ir::make_const(x.dtype(), eps));
  }, name + "_inv_std", tag::kElemwise);
  const Tensor& scale = ctx.input(1);
  Tensor bias = ctx.has_input(2) ? ctx.input(2) : Tensor();
  Tensor out = te::compute(x.shape(), [&](const std::vector<Var>& o) {
    std::vector<Expr> si = StatIndex(o, axes);
    std::vector<Var> normalized(o.begin() + axis, o.end());
    Expr y = (x(Exprs(o)) - m.mean(si)) * inv_std(si) * BroadcastRead(scale, normalized);
    if (bias.defined()) y = y + BroadcastRead(bias, normalized);
    return y;
  }, name, tag::kOpaque);
  std::vector<Tensor> outs{out};
  std::vector<Tensor> stats = {m.sum, m.sq_dev, inv_std};
  if (ctx.num_outputs() > 1) {
    // Optional Mean and InvStdDev outputs (stash type float32 = the input's here).
    auto copy = [&](const Tensor& t, int i) {
      return te::compute(t.shape(), [&](const std::vector<Var>& o) { return ir::cast(ctx.output_type(i).dtype, t(Exprs(o))); },
                         ctx.node().outputs[i], tag::kElemwise);
    };
    outs.push_back(copy(m.mean, 1));
    if (ctx.num_outputs() > 2) outs.push_back(copy(inv_std, 2));
  }
  size_t r = static_cast<size_t>(rank);
  ctx.SetSchedule([stats, axes, r](const ScheduleRequest& req) {
    return ScheduleNorm(req, stats, axes, r, "layer_norm");
  }, out);
  ctx.SetCudaSchedule([stats, axes, r](const ScheduleRequest& req) {
    return cuda::ScheduleRows(req, stats, axes, r, "layer_norm");
  });
  return outs;
}

// RMSNormalization: x / sqrt(mean(x^2 over [axis, rank)) + eps) * scale; one statistic per row.
std::vector<Tensor> RmsNormOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  int rank = static_cast<int>(x.ndim());
  int axis = graph::NormalizeAxis(ctx.attrs().GetInt("axis", -1), rank, ctx.Describe());
  double eps = ctx.attrs().GetFloat("epsilon", 1e-5);
  std::vector<int> axes;
  for (int d = axis; d < rank; ++d) axes.push_back(d);
  graph::Shape xs = StaticShape(x);
  int64_t count = 1;
  for (int a : axes) count *= xs[a];
  std::string name = ctx.node().outputs[0];
  Tensor sq = ReduceTensor(x, axes, true, "sum", [](Expr v) { return v * v; }, name + "_sumsq");
  Tensor inv = te::compute(sq.shape(), [&](const std::vector<Var>& o) {
    return ir::rsqrt(sq(Exprs(o)) * (1.0 / static_cast<double>(count)) + ir::make_const(x.dtype(), eps));
  }, name + "_inv_rms", tag::kElemwise);
  const Tensor& scale = ctx.input(1);
  Tensor out = te::compute(x.shape(), [&](const std::vector<Var>& o) {
    std::vector<Var> normalized(o.begin() + axis, o.end());
    return x(Exprs(o)) * inv(StatIndex(o, axes)) * BroadcastRead(scale, normalized);
  }, name, tag::kOpaque);
  std::vector<Tensor> stats = {sq, inv};
  size_t r = static_cast<size_t>(rank);
  ctx.SetSchedule([stats, axes, r](const ScheduleRequest& req) { return ScheduleNorm(req, stats, axes, r, "rms_norm"); },
                  out);
  ctx.SetCudaSchedule([stats, axes, r](const ScheduleRequest& req) {
    return cuda::ScheduleRows(req, stats, axes, r, "rms_norm");
  });
  return {out};
}

std::vector<Tensor> MvnOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  int rank = static_cast<int>(x.ndim());
  std::vector<int> axes = graph::NormalizeAxes(ctx.attrs().GetInts("axes", {0, 2, 3}), rank, ctx.Describe());
  std::sort(axes.begin(), axes.end());
  std::string name = ctx.node().outputs[0];
  Moments m = ComputeMoments(x, axes, name);
  Tensor out = te::compute(x.shape(), [&](const std::vector<Var>& o) {
    std::vector<Expr> si = StatIndex(o, axes);
    return (x(Exprs(o)) - m.mean(si)) / (ir::sqrt(m.var(si)) + ir::make_const(x.dtype(), 1e-9));
  }, name, tag::kOpaque);
  std::vector<Tensor> stats = {m.sum, m.sq_dev};
  size_t r = static_cast<size_t>(rank);
  ctx.SetSchedule([stats, axes, r](const ScheduleRequest& req) { return ScheduleNorm(req, stats, axes, r, "mvn"); },
                  out);
  ctx.SetCudaSchedule([stats, axes, r](const ScheduleRequest& req) {
    return cuda::ScheduleRows(req, stats, axes, r, "mvn");
  });
  return {out};
}

std::vector<Tensor> LrnOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  graph::Shape xs = StaticShape(x);
  double alpha = ctx.attrs().GetFloat("alpha", 1e-4), beta = ctx.attrs().GetFloat("beta", 0.75);
  double bias = ctx.attrs().GetFloat("bias", 1.0);
  int64_t size = ctx.attrs().GetInt("size");
  ir::DType dt = x.dtype();
  std::string name = ctx.node().outputs[0];
  ir::IterVar r = te::reduce_axis({Expr(int64_t{0}), Expr(size)}, "rc");
  Tensor sq = te::compute(x.shape(), [&](const std::vector<Var>& o) {
    std::vector<Expr> idx = Exprs(o);
    Expr c = o[1] + r - (size - 1) / 2;
    idx[1] = ir::min(ir::max(c, Expr(int64_t{0})), Expr(xs[1] - 1));
    Expr v = x(idx);
    Expr inside = c >= Expr(int64_t{0}) && c < Expr(xs[1]);
    return te::sum(ir::select(inside, v * v, ir::make_zero(dt)), {r});
  }, name + "_sqsum", tag::kReduce);
  Tensor out = te::compute(x.shape(), [&](const std::vector<Var>& o) {
    Expr s = sq(Exprs(o)) * (alpha / size) + ir::make_const(dt, bias);
    return x(Exprs(o)) / ir::pow(s, ir::make_const(dt, beta));
  }, name, tag::kElemwise);
  SetDefaultSchedules(ctx, "lrn", sq);
  return {out};
}

}  // namespace

void RegisterNormOps(OpTable* t) {
  t->Register("BatchNormalization", BatchNormOp);
  t->Register("InstanceNormalization", InstanceNormOp);
  t->Register("LayerNormalization", LayerNormOp);
  t->Register("RMSNormalization", RmsNormOp);
  t->Register("MeanVarianceNormalization", MvnOp);
  t->Register("LRN", LrnOp);
}

}  // namespace ops
}  // namespace agate
