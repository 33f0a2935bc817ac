// Row-wise normalizations on a GPU: softmax, layer and instance norm (cuda_schedules.h).
#include "core/ops/cuda/cuda_schedules.h"

#include <sstream>

#include "core/ops/schedule_common.h"

namespace agate {
namespace ops {
namespace cuda {

using te::Expr;

std::string ScheduleRows(const ScheduleRequest& r, const std::vector<te::Tensor>& stats, const std::vector<int>& axes,
                         size_t rank, const std::string& what) {
  te::Schedule s = r.schedule;
  bool trailing = !axes.empty() && axes.back() == static_cast<int>(rank) - 1 &&
                  axes.front() == static_cast<int>(rank - axes.size());
  if (r.outputs.size() != 1 || !trailing || axes.front() == 0) {
    // Statistics and output as separate launches (the remaining stages are bound by the sweep).
    for (const te::Tensor& st : stats) {
      auto* op = static_cast<const te::ComputeOpNode*>(st.op().get());
      if (op->is_reduction()) ScheduleReduction(s, st, r.options->cuda_threads);
    }
    for (const te::Tensor& out : r.outputs) ScheduleInjective(s, out, r.options->cuda_threads);
    return what + " (cuda): statistics, then normalize, as separate launches";
  }
  const te::Tensor& out = r.outputs[0];
  te::Stage o = s[out];
  std::vector<ir::IterVar> rows, cols;
  for (int d = 0; d < axes.front(); ++d) rows.push_back(o.axis(d));
  for (size_t d = axes.front(); d < rank; ++d) cols.push_back(o.axis(d));
  int64_t width = 1;
  for (const ir::IterVar& iv : cols) width *= std::max<int64_t>(ConstExtent(iv), 1);
  int64_t max_threads = r.options->cuda_threads > 0 ? r.options->cuda_threads : kThreads;
  int64_t threads = 32;
  while (threads < max_threads && threads < width) threads *= 2;
  ir::IterVar row = FuseRange(o, rows);
  ir::IterVar col = FuseRange(o, cols);
  auto [co, ci] = o.split(col, Expr(threads));
  o.bind(row, "blockIdx.x").bind(ci, "threadIdx.x");
  for (const te::Tensor& st : stats) {
    te::Stage stage = s[st];
    stage.compute_at(o, row);
    auto* op = static_cast<const te::ComputeOpNode*>(st.op().get());
    if (!op->is_reduction()) continue;
    std::vector<ir::IterVar> reduce;
    for (size_t i = 0; i < op->reduce_axis.size(); ++i) reduce.push_back(stage.reduce_axis(i));
    auto [ko, ki] = stage.split(FuseRange(stage, reduce), Expr(threads));
    stage.bind(ki, "threadIdx.x");
  }
  std::ostringstream text;
  text << what << " (cuda): a block of " << threads << " threads per row, statistics reduced across them";
  return text.str();
}

}  // namespace cuda
}  // namespace ops
}  // namespace agate
