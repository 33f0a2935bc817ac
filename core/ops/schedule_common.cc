#include "core/ops/schedule_common.h"

namespace agate {
namespace ops {

int64_t ConstExtent(const ir::IterVar& iv) {
  int64_t v = -1;
  if (iv.dom().extent.defined() && ir::is_const_int(iv.dom().extent, &v)) return v;
  return -1;
}

int VectorLanes(const target::Target& target, ir::DType dtype) {
  if (target.kind() != target::TargetKind::kLLVM) return 1;
  if (target.is_bare_metal()) return 1;
  return std::max(1, target.NativeLanes(dtype.element_of()));
}

bool ParallelAllowed(const target::Target& target) {
  return target.kind() == target::TargetKind::kLLVM && !target.is_bare_metal();
}

ir::IterVar FuseRange(te::Stage stage, const std::vector<ir::IterVar>& loops) {
  if (loops.empty()) return ir::IterVar();
  ir::IterVar fused = loops[0];
  for (size_t i = 1; i < loops.size(); ++i) fused = stage.fuse(fused, loops[i]);
  return fused;
}

ir::IterVar ScheduleInjectiveStage(te::Schedule& s, const te::Tensor& out, const target::Target& target,
                                   const InjectiveKnobs& knobs) {
  te::Stage stage = s[out];
  size_t rank = out.ndim();
  if (rank == 0) return ir::IterVar();
  int64_t total = 1;
  for (size_t i = 0; i < rank; ++i) total *= std::max<int64_t>(ConstExtent(stage.axis(i)), 1);
  int lanes = knobs.vector_lanes > 0 ? knobs.vector_lanes : VectorLanes(target, out.dtype());
  ir::IterVar inner = stage.axis(rank - 1);
  int64_t inner_extent = ConstExtent(inner);
  bool vectorize = lanes > 1 && inner_extent > 0 && inner_extent % lanes == 0 && !out.dtype().is_bool();
  std::vector<ir::IterVar> outer;
  for (size_t i = 0; i + 1 < rank; ++i) outer.push_back(stage.axis(i));
  if (vectorize) {
    auto [io, ii] = stage.split(inner, lanes);
    outer.push_back(io);
    stage.vectorize(ii);
  } else if (rank == 1) {
    // A single axis: split it so there is an outer loop to parallelize and attach to.
    auto [io, ii] = stage.split(inner, 64);
    outer.push_back(io);
  }
  ir::IterVar fused = FuseRange(stage, outer);
  if (!fused.defined()) fused = inner;
  if (ParallelAllowed(target) && total >= knobs.min_parallel_elements) stage.parallel(fused);
  return fused;
}

}  // namespace ops
}  // namespace agate
