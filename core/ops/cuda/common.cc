// The generic CUDA schedules: element-wise stages, reductions, the default
// anchor schedule and the final sweep over unbound stages (cuda_schedules.h).
#include "core/ops/cuda/cuda_schedules.h"

#include "core/ops/schedule_common.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace cuda {

using te::Expr;

namespace {

// A power of two from 32 to `max` (kThreads when 0), the smallest covering `work`.
int64_t ThreadsFor(int64_t work, int64_t max = 0) {
  if (max <= 0) max = kThreads;
  int64_t t = 32;
  while (t < max && t < work) t *= 2;
  return t;
}

int64_t Product(const std::vector<ir::IterVar>& axes) {
  int64_t n = 1;
  for (const ir::IterVar& iv : axes) n *= std::max<int64_t>(ConstExtent(iv), 1);
  return n;
}

const te::ComputeOpNode* ComputeOf(const te::Tensor& t) {
  return t.op()->kind == te::OpKind::kCompute ? static_cast<const te::ComputeOpNode*>(t.op().get()) : nullptr;
}

bool HasBoundAxis(const te::Stage& st) {
  for (const auto& [iv, attr] : st->iter_var_attrs)
    if (attr.for_kind == ir::ForKind::kThreadBinding) return true;
  return false;
}

// Splits the stage's (fused) reduce axes across `threads` threads of threadIdx.x.
void ReduceAcrossThreads(te::Stage st, const te::ComputeOpNode* op, int64_t threads) {
  std::vector<ir::IterVar> reduce;
  for (size_t i = 0; i < op->reduce_axis.size(); ++i) reduce.push_back(st.reduce_axis(i));
  ir::IterVar k = FuseRange(st, reduce);
  auto [ko, ki] = st.split(k, Expr(threads));
  st.bind(ki, "threadIdx.x");
}

}  // namespace

bool SplitAcrossThreads(int64_t reduce_total, int64_t outputs) {
  return reduce_total >= 1024 || (reduce_total >= 64 && outputs < 8192);
}

void FetchCooperatively(te::Stage st, int64_t ty, int64_t tx, int64_t tz) {
  std::vector<ir::IterVar> axes;
  for (size_t i = 0; i < st->op->output_shape(0).size(); ++i) axes.push_back(st.axis(i));
  ir::IterVar fused = FuseRange(st, axes);
  auto [fo, fi] = st.split(fused, te::Expr(tz * ty * tx));
  if (tz > 1) {
    auto [fz, fyx] = st.split(fi, te::Expr(ty * tx));
    st.bind(fz, "threadIdx.z");
    fi = fyx;
  }
  auto [fy, fx] = st.split(fi, te::Expr(tx));
  st.bind(fy, "threadIdx.y").bind(fx, "threadIdx.x");
}

ir::IterVar ScheduleInjective(te::Schedule& s, const te::Tensor& out, int64_t max_threads) {
  te::Stage st = s[out];
  size_t rank = out.ndim();
  if (rank == 0) return ir::IterVar();
  std::vector<ir::IterVar> axes;
  for (size_t i = 0; i < rank; ++i) axes.push_back(st.axis(i));
  int64_t total = Product(axes);
  ir::IterVar inner = axes.back();
  axes.pop_back();
  int64_t inner_extent = ConstExtent(inner);
  bool wide = out.dtype().element_bytes() == 4 && !out.dtype().is_bool() && inner_extent > 0 && inner_extent % 4 == 0 &&
              total >= 4 * 32;
  if (wide) {
    auto [io, ii] = st.split(inner, Expr(int64_t{4}));
    st.vectorize(ii);
    axes.push_back(io);
    total /= 4;
  } else {
    axes.push_back(inner);
  }
  ir::IterVar fused = FuseRange(st, axes);
  auto [blocks, threads] = st.split(fused, Expr(ThreadsFor(total, max_threads)));
  st.bind(blocks, "blockIdx.x").bind(threads, "threadIdx.x");
  return threads;
}

ir::IterVar ScheduleReduction(te::Schedule& s, const te::Tensor& out, int64_t max_threads) {
  te::Stage st = s[out];
  const te::ComputeOpNode* op = ComputeOf(out);
  AGATE_CHECK(op && op->is_reduction()) << "ScheduleReduction of " << out.name();
  std::vector<ir::IterVar> data, reduce;
  for (size_t i = 0; i < op->axis.size(); ++i) data.push_back(st.axis(i));
  for (size_t i = 0; i < op->reduce_axis.size(); ++i) reduce.push_back(st.reduce_axis(i));
  int64_t outputs = Product(data), reduce_total = Product(reduce);
  if (SplitAcrossThreads(reduce_total, outputs) || data.empty()) {
    ReduceAcrossThreads(st, op, ThreadsFor(reduce_total, max_threads));
    if (data.empty()) return ir::IterVar();
    ir::IterVar row = FuseRange(st, data);
    st.bind(row, "blockIdx.x");
    return row;
  }
  ir::IterVar fused = FuseRange(st, data);
  auto [blocks, threads] = st.split(fused, Expr(ThreadsFor(outputs, max_threads)));
  st.bind(blocks, "blockIdx.x").bind(threads, "threadIdx.x");
  return threads;
}

std::string ScheduleAnchorDefault(const ScheduleRequest& r, const std::string& what) {
  te::Schedule s = r.schedule;
  const int64_t max_threads = r.options ? r.options->cuda_threads : 0;
  if (r.epilogue.defined()) {
    const te::ComputeOpNode* anchor = ComputeOf(r.anchor);
    te::Stage a = s[r.anchor];
    if (anchor && anchor->is_reduction()) {
      std::vector<ir::IterVar> reduce;
      for (size_t i = 0; i < anchor->reduce_axis.size(); ++i) reduce.push_back(a.reduce_axis(i));
      std::vector<ir::IterVar> out_axes;
      for (size_t i = 0; i < r.epilogue.ndim(); ++i) out_axes.push_back(s[r.epilogue].axis(i));
      int64_t reduce_total = Product(reduce), outputs = Product(out_axes);
      if (SplitAcrossThreads(reduce_total, outputs) && !out_axes.empty()) {
        // One block per output element: the block's threads reduce, one writes the epilogue.
        te::Stage e = s[r.epilogue];
        ir::IterVar row = FuseRange(e, out_axes);
        e.bind(row, "blockIdx.x");
        a.compute_at(e, row);
        ReduceAcrossThreads(a, anchor, ThreadsFor(reduce_total, max_threads));
        return what + " (cuda): reduction across the threads of a block per output, epilogue fused";
      }
    }
    ir::IterVar at = ScheduleInjective(s, r.epilogue, max_threads);
    if (at.defined()) a.compute_at(s[r.epilogue], at);
    return what + " (cuda): a thread per output, epilogue fused";
  }
  for (const te::Tensor& out : r.outputs) {
    const te::ComputeOpNode* op = ComputeOf(out);
    if (op && op->is_reduction()) {
      ScheduleReduction(s, out, max_threads);
    } else {
      ScheduleInjective(s, out, max_threads);
    }
  }
  return what + " (cuda)";
}

void BindRemainingStages(te::Schedule& s, int64_t max_threads) {
  for (const te::Stage& stage : s->stages) {
    if (stage->op->kind != te::OpKind::kCompute || stage->attach_type != te::AttachType::kRoot) continue;
    if (HasBoundAxis(stage)) continue;
    te::Tensor t = stage->origin_op->output(0);
    AGATE_CHECK(stage->relations.empty()) << "stage " << stage.name()
                                          << " was split or fused for a GPU but none of its loops is bound";
    const te::ComputeOpNode* op = static_cast<const te::ComputeOpNode*>(stage->op.get());
    if (op->is_reduction()) {
      ScheduleReduction(s, t, max_threads);
    } else {
      ScheduleInjective(s, t, max_threads);
    }
  }
}

}  // namespace cuda
}  // namespace ops
}  // namespace agate
