// Matrix products on a GPU: shared-memory tiles, register blocking (cuda_schedules.h).
#include <sstream>

#include "core/graph/shape_rules.h"
#include "core/ops/cuda/cuda_schedules.h"
#include "core/ops/schedule_common.h"

namespace agate {
namespace ops {
namespace cuda {

using te::Expr;
using te::Tensor;

namespace {

// Few rows and a long k (batch-1 fully connected layers, ResNet-50's 1x2048x1000): a thread per
// output would stream k elements one after another with few threads in all (1.1 ms on an H100);
// a block per output splits k across its threads, reading rows of B coalesced when B is [N, K],
// and combines them with warp shuffles.
bool FewRowsLongDepth(const Tensor& anchor) {
  graph::Shape shape = StaticShape(anchor);
  auto* op = static_cast<const te::ComputeOpNode*>(anchor.op().get());
  if (shape.size() < 2 || op->reduce_axis.size() != 1) return false;
  int64_t outputs = 1;
  for (int64_t d : shape) outputs *= d;
  return shape[shape.size() - 2] < 32 && SplitAcrossThreads(ConstExtent(op->reduce_axis[0]), outputs);
}

}  // namespace

std::string ScheduleDense(const ScheduleRequest& r) {
  te::Schedule s = r.schedule;
  if (FewRowsLongDepth(r.anchor)) return cuda::ScheduleAnchorDefault(r, "dense");
  Tensor out, acc;
  if (r.epilogue.defined() && StaticShape(r.epilogue) == StaticShape(r.anchor)) {
    out = r.epilogue;
    acc = r.anchor;
  } else if (r.outputs.size() == 1 && r.outputs[0].same_as(r.anchor)) {
    out = r.anchor;
    acc = s.cache_write(r.anchor, ir::MemoryScope::kLocal);
  } else {
    return cuda::ScheduleAnchorDefault(r, "dense");
  }
  graph::Shape os = StaticShape(out);
  size_t rank = os.size();
  int64_t m = os[rank - 2], n = os[rank - 1];
  te::Stage o = s[out];
  te::Stage a = s[acc];
  int64_t k = ConstExtent(a.reduce_axis(0));
  if (m < 32 || n < 32 || k < 16) {
    // Few rows (batch-1 fully connected layers): a thread per output streams its
    // column of B; consecutive threads read consecutive columns.
    ir::IterVar t = ScheduleInjective(s, out, r.options->cuda_threads);
    if (t.defined()) a.compute_at(o, t);
    return "dense (cuda): a thread per output";
  }
  const int64_t tm = 4, tn = 4;
  int64_t bk = r.options->cuda_k_step > 0 ? r.options->cuda_k_step : 16;
  int64_t bm = m >= 64 ? 64 : 32, bn = n >= 64 ? 64 : 32;
  if (r.options->cuda_tile > 0) bm = bn = r.options->cuda_tile;
  int64_t ty = bm / tm, tx = bn / tn;
  auto tile = o.tile(o.axis(rank - 2), o.axis(rank - 1), Expr(bm), Expr(bn));
  auto [thread_y, reg_m] = o.split(tile[2], Expr(tm));
  auto [thread_x, reg_n] = o.split(tile[3], Expr(tn));
  std::vector<ir::IterVar> batch;
  for (size_t i = 0; i + 2 < rank; ++i) batch.push_back(o.axis(i));
  std::vector<ir::IterVar> order = batch;
  order.insert(order.end(), {tile[0], tile[1], thread_y, thread_x, reg_m, reg_n});
  o.reorder(order);
  if (!batch.empty()) o.bind(FuseRange(o, batch), "blockIdx.z");
  o.bind(tile[0], "blockIdx.y").bind(tile[1], "blockIdx.x").bind(thread_y, "threadIdx.y").bind(thread_x, "threadIdx.x");

  a.compute_at(o, thread_x);
  auto [ko, ki] = a.split(a.reduce_axis(0), Expr(bk));
  std::vector<ir::IterVar> acc_order;
  for (size_t i = 0; i + 2 < rank; ++i) acc_order.push_back(a.axis(i));
  acc_order.insert(acc_order.end(), {ko, ki, a.axis(rank - 2), a.axis(rank - 1)});
  a.reorder(acc_order);
  a.unroll(a.axis(rank - 2)).unroll(a.axis(rank - 1));
  std::vector<Tensor> inputs = s[acc]->op->InputTensors();
  std::vector<Tensor> staged;
  for (const Tensor& in : inputs) {
    if (in.ndim() < 2) continue;
    Tensor copy = s.cache_read(in, ir::MemoryScope::kShared, {acc});
    te::Stage c = s[copy];
    c.compute_at(a, ko);
    FetchCooperatively(c, ty, tx);
    staged.push_back(copy);
  }
  std::ostringstream text;
  text << (rank > 2 ? "batch_matmul" : "dense") << " (cuda): " << bm << "x" << bn << " tiles per block, " << tm << "x"
       << tn << " per thread, k steps of " << bk << " staged in shared memory (" << staged.size() << " operands)"
       << (r.epilogue.defined() ? ", epilogue fused" : "");
  return text.str();
}

}  // namespace cuda
}  // namespace ops
}  // namespace agate
