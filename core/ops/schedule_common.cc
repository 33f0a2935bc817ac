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

namespace {

// Splits the innermost reduce axis of the unscheduled single-output reduction `reduction` by
// `lanes` and rfactors the lanes into partials: (lane, data axes...) x (the kept half, the other
// reduce axes), reordered so the lanes are innermost and vectorized. The reduction then combines
// the lanes. Returns the partials' stage (its caller attaches it).
te::Stage RfactorIntoLanes(te::Schedule& s, const te::Tensor& reduction, int lanes) {
  te::Stage stage = s[reduction];
  auto* compute = static_cast<const te::ComputeOpNode*>(stage->op.get());
  const size_t ndata = compute->axis.size(), nreduce = compute->reduce_axis.size();
  auto [ko, ki] = stage.split(stage.reduce_axis(nreduce - 1), ir::Expr(int64_t{lanes}));
  (void)ko;
  te::Stage partials = s[s.rfactor(reduction, ki)];
  std::vector<ir::IterVar> order;
  for (size_t i = 1; i <= ndata; ++i) order.push_back(partials.axis(i));
  for (size_t i = 1; i < nreduce; ++i) order.push_back(partials.reduce_axis(i));
  order.push_back(partials.reduce_axis(0));
  order.push_back(partials.axis(0));
  partials.reorder(order);
  partials.vectorize(partials.axis(0));
  return partials;
}

// The single-output reduction `reduction`, not scheduled yet, whose innermost reduce axis is a
// whole number (> 0) of `lanes`-wide vectors.
const te::ComputeOpNode* UnscheduledReductionOverVectors(te::Schedule& s, const te::Tensor& reduction, int lanes) {
  te::Stage stage = s[reduction];
  auto* compute = dynamic_cast<const te::ComputeOpNode*>(stage->op.get());
  if (!compute || !compute->is_reduction() || compute->num_outputs() != 1 || lanes <= 1) return nullptr;
  const size_t nreduce = compute->reduce_axis.size();
  if (stage->leaf_iter_vars.size() != compute->axis.size() + nreduce) return nullptr;  // scheduled
  const int64_t extent = ConstExtent(stage.reduce_axis(nreduce - 1));
  return extent >= lanes && extent % lanes == 0 ? compute : nullptr;
}

}  // namespace

bool VectorizeReduction(te::Schedule& s, const te::Tensor& reduction, int lanes) {
  const te::ComputeOpNode* compute = UnscheduledReductionOverVectors(s, reduction, lanes);
  if (compute == nullptr || compute->axis.empty()) return false;
  te::Stage stage = s[reduction];
  te::Stage partials = RfactorIntoLanes(s, reduction, lanes);
  partials.compute_at(stage, stage.axis(compute->axis.size() - 1));
  return true;
}

bool ScheduleReductionInVectorPartials(te::Schedule& s, const te::Tensor& out, const target::Target& target,
                                       const InjectiveKnobs& knobs, ir::IterVar* fused) {
  const int lanes = knobs.vector_lanes > 0 ? knobs.vector_lanes : VectorLanes(target, out.dtype());
  const te::ComputeOpNode* compute = UnscheduledReductionOverVectors(s, out, lanes);
  if (compute == nullptr) return false;
  te::Stage stage = s[out];
  const size_t ndata = compute->axis.size();
  const int64_t inner_data = ndata == 0 ? 1 : ConstExtent(stage.axis(ndata - 1));
  if (inner_data < 0 || inner_data % lanes == 0) return false;  // the data axis takes the vectors
  int64_t total = 1, reduce_total = 1;
  for (size_t i = 0; i < ndata; ++i) total *= std::max<int64_t>(ConstExtent(stage.axis(i)), 1);
  for (size_t i = 0; i < compute->reduce_axis.size(); ++i)
    reduce_total *= std::max<int64_t>(ConstExtent(stage.reduce_axis(i)), 1);
  te::Stage partials = RfactorIntoLanes(s, out, lanes);
  stage = s[out];  // rfactor reset its loops: data axes, then the lanes
  std::vector<ir::IterVar> data;
  for (size_t i = 0; i < ndata; ++i) data.push_back(stage.axis(i));
  *fused = FuseRange(stage, data);
  if (fused->defined()) {
    partials.compute_at(stage, *fused);
    if (ParallelAllowed(target) && total > 1 && total * reduce_total >= knobs.min_parallel_elements) {
      stage.parallel(*fused);
    }
  }
  return true;
}

ir::IterVar FuseRange(te::Stage stage, const std::vector<ir::IterVar>& loops) {
  if (loops.empty()) return ir::IterVar();
  ir::IterVar fused = loops[0];
  for (size_t i = 1; i < loops.size(); ++i) fused = stage.fuse(fused, loops[i]);
  return fused;
}

int64_t DivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

int64_t LeastWastefulTile(int64_t n, int64_t lo, int64_t hi) {
  int64_t best = hi;
  for (int64_t b = hi; b >= lo; --b)
    if ((n + b - 1) / b * b < (n + best - 1) / best * best) best = b;
  return best;
}

namespace {
// Rows below this keep the fused vector loop: a thread should get several rows to balance.
constexpr int64_t kMinParallelRows = 64;
}  // namespace

ir::IterVar ScheduleInjectiveStage(te::Schedule& s, const te::Tensor& out, const target::Target& target,
                                   const InjectiveKnobs& knobs) {
  // A stage with reduce axes (a selection's running index, say) keeps them inside its vector
  // lanes' loop: the reduction schedule reorders before it vectorizes.
  if (out.op()->kind == te::OpKind::kCompute && static_cast<const te::ComputeOpNode*>(out.op().get())->is_reduction()) {
    return ScheduleReductionStage(s, out, target, knobs);
  }
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
    stage.vectorize(ii);
    // Rows of several vectors, and rows enough to share among threads: the row loop is the
    // parallel one and the vectors of a row a plain inner loop. Fusing the vector loop in too
    // made every vector recompute its coordinates from the fused index (a 64-bit division per
    // axis: ~40 scalar instructions per vector of a [1, 384, 56, 56] GELU).
    const int64_t rows = total / inner_extent, row_vectors = inner_extent / lanes;
    if (!knobs.attach_point_per_vector && rank >= 2 && row_vectors >= 2 && rows >= kMinParallelRows) {
      ir::IterVar fused = FuseRange(stage, outer);
      if (ParallelAllowed(target) && total >= knobs.min_parallel_elements) stage.parallel(fused);
      return fused;
    }
    outer.push_back(io);
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

#include "core/ops/cuda/cuda_schedules.h"
#include "core/ops/op_context.h"

namespace agate {
namespace ops {

ir::IterVar ScheduleReductionStage(te::Schedule& s, const te::Tensor& out, const target::Target& target,
                                   const InjectiveKnobs& knobs) {
  te::Stage stage = s[out];
  auto* compute = static_cast<const te::ComputeOpNode*>(out.op().get());
  size_t rank = compute->axis.size();
  int64_t total = 1;
  for (size_t i = 0; i < rank; ++i) total *= std::max<int64_t>(ConstExtent(stage.axis(i)), 1);
  int64_t reduce_total = 1;
  for (size_t i = 0; i < compute->reduce_axis.size(); ++i)
    reduce_total *= std::max<int64_t>(ConstExtent(stage.reduce_axis(i)), 1);
  if (rank == 0) return ir::IterVar();
  int lanes = knobs.vector_lanes > 0 ? knobs.vector_lanes : VectorLanes(target, out.dtype());
  ir::IterVar inner = stage.axis(rank - 1);
  int64_t inner_extent = ConstExtent(inner);
  std::vector<ir::IterVar> outer;
  for (size_t i = 0; i + 1 < rank; ++i) outer.push_back(stage.axis(i));
  if (lanes > 1 && inner_extent > 0 && inner_extent % lanes == 0 && out->op->num_outputs() == 1) {
    auto [io, ii] = stage.split(inner, lanes);
    outer.push_back(io);
    std::vector<ir::IterVar> order = outer;
    for (size_t i = 0; i < compute->reduce_axis.size(); ++i) order.push_back(stage.reduce_axis(i));
    order.push_back(ii);
    stage.reorder(order);
    stage.vectorize(ii);
  } else {
    outer.push_back(inner);
  }
  ir::IterVar fused = FuseRange(stage, outer);
  if (ParallelAllowed(target) && total * reduce_total >= knobs.min_parallel_elements && total > 1) {
    stage.parallel(fused);
  }
  return fused;
}

std::string ScheduleAnchorDefault(const ScheduleRequest& r, const std::string& what) {
  te::Schedule s = r.schedule;
  InjectiveKnobs knobs;
  knobs.vector_lanes = r.options->vector_lanes;
  if (!r.options->allow_parallel) knobs.min_parallel_elements = INT64_MAX;
  if (r.epilogue.defined()) {
    InjectiveKnobs attach = knobs;
    attach.attach_point_per_vector = true;  // the anchor is computed a vector at a time at `at`
    ir::IterVar at = ScheduleInjectiveStage(s, r.epilogue, *r.target, attach);
    if (!at.defined()) return what + ", epilogue inlined, computed at the output's outer loop";
    te::Stage anchor = s[r.anchor];
    anchor.compute_at(s[r.epilogue], at);
    // The epilogue's loop `at` holds one vector of its last axis: a reduction anchor of the
    // same shape (a pool before its division by the window size) computes that vector with
    // its reduce axes outside the lanes, so each tap is one vector operation. Left scalar,
    // Inception-v3's 3x3 average pools on NCHW8c ran 4-5x slower than ONNX Runtime's.
    auto* compute = static_cast<const te::ComputeOpNode*>(r.anchor.op().get());
    const size_t rank = compute->axis.size();
    int lanes = knobs.vector_lanes > 0 ? knobs.vector_lanes : VectorLanes(*r.target, r.epilogue.dtype());
    int64_t inner = rank > 0 ? ConstExtent(anchor.axis(rank - 1)) : 0;
    if (compute->is_reduction() && r.anchor->op->num_outputs() == 1 && lanes > 1 && inner > 0 && inner % lanes == 0 &&
        !r.epilogue.dtype().is_bool() && StaticShape(r.anchor) == StaticShape(r.epilogue)) {
      std::vector<ir::IterVar> order;
      for (size_t i = 0; i + 1 < rank; ++i) order.push_back(anchor.axis(i));
      for (size_t i = 0; i < compute->reduce_axis.size(); ++i) order.push_back(anchor.reduce_axis(i));
      order.push_back(anchor.axis(rank - 1));
      anchor.reorder(order);
      anchor.vectorize(anchor.axis(rank - 1));
      return what + ", epilogue inlined, computed a vector at a time at the output's outer loop";
    }
    return what + ", epilogue inlined, computed at the output's outer loop";
  }
  for (const te::Tensor& out : r.outputs) {
    auto* compute = static_cast<const te::ComputeOpNode*>(out.op().get());
    if (compute->is_reduction()) {
      ScheduleReductionStage(s, out, *r.target, knobs);
    } else {
      ScheduleInjectiveStage(s, out, *r.target, knobs);
    }
  }
  return what;
}

void SetDefaultSchedules(const OpContext& ctx, const std::string& what, const te::Tensor& anchor) {
  ctx.SetSchedule([what](const ScheduleRequest& r) { return ScheduleAnchorDefault(r, what); }, anchor);
  ctx.SetCudaSchedule([what](const ScheduleRequest& r) { return cuda::ScheduleAnchorDefault(r, what); }, anchor);
}

}  // namespace ops
}  // namespace agate
