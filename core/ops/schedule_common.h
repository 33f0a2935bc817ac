// Schedules shared by every operator family: the injective schedule (for a
// group with no anchor, and for epilogues) and the attachment of an anchor to
// its fused epilogue.
//
// Why shared: every group ends in a root stage that writes the group's output
// once; how that stage is parallelized and vectorized does not depend on the
// operator that feeds it, only on its shape and the target's vector width.
#ifndef AGATE_CORE_OPS_SCHEDULE_COMMON_H_
#define AGATE_CORE_OPS_SCHEDULE_COMMON_H_

#include <string>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/target/target.h"

namespace agate {
namespace ops {

// Knobs of the generic schedules (an auto-tuner may set them).
struct InjectiveKnobs {
  int vector_lanes = 0;                 // 0: the target's native lanes for the dtype
  int64_t min_parallel_elements = 16384;  // smaller outputs run on one thread
  // A caller that computes a producer at the returned loop needs that loop to hold one vector
  // of the last axis (all axes fused). Otherwise the last axis's loop of vectors stays a serial
  // loop inside the parallel loop over the other axes (when those hold enough rows), so the
  // fused index is split into coordinates once per row rather than once per vector.
  bool attach_point_per_vector = false;
};

// Largest divisor of `n` not above `limit` (at least 1): a tile that needs no tail.
int64_t DivisorAtMost(int64_t n, int64_t limit);
// ceil(a / b) for a >= 0, b > 0: the tiles of extent b that cover a.
inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// For an extent no tile in [lo, hi] divides (Inception's 17 and 73 columns, 37x37
// Winograd tiles): the tile that computes the fewest elements in all
// (ceil(n/b)*b, the last tile guarded), the larger on ties; e.g. 17 -> 6
// (6+6+5 of 18 computed) where 8 would compute 24.
int64_t LeastWastefulTile(int64_t n, int64_t lo, int64_t hi);

// Static extent of an IterVar's domain, or -1 when symbolic.
int64_t ConstExtent(const ir::IterVar& iv);

// Lanes for `dtype` on `target`, 1 for targets without SIMD (C / Cortex-M).
int VectorLanes(const target::Target& target, ir::DType dtype);
bool ParallelAllowed(const target::Target& target);

// Schedules a root elementwise/injective stage: fuses the outer axes into one
// parallel loop (large outputs only), vectorizes the innermost axis when the
// lanes divide it. Returns the loop that a producer can be computed at (the
// fused outer loop), or an undefined IterVar when the stage has rank 0.
ir::IterVar ScheduleInjectiveStage(te::Schedule& s, const te::Tensor& out, const target::Target& target,
                                   const InjectiveKnobs& knobs = {});

// Accumulates the single-output reduction `reduction` in `lanes`-wide vector
// partials when its innermost reduce axis is a multiple of the lanes and
// contiguous in memory (a row sum or max over the last axis): rfactor over the
// lanes, the partials computed per output element at the reduction's innermost
// data loop (one vector of registers), only the final lanes combined serially.
// Without it such a reduction runs one scalar at a time (LLVM does not reorder
// floating-point sums). Call it before attaching `reduction` (rfactor resets its
// loops). False, with nothing changed, when it does not apply.
bool VectorizeReduction(te::Schedule& s, const te::Tensor& reduction, int lanes);

// Schedules a root reduction whose innermost data axis takes no vectors (a scalar, or
// [rows, 1]) but whose innermost reduce axis is a multiple of the lanes and contiguous in
// memory (the caller knows: a reduction over the input's last axis): the reduce axis is
// split by the lanes and rfactored into `lanes` vector partials computed at the fused data
// loop (parallel when large), so only the final lanes combine serially. Why: a scalar
// max/min/sum over a whole tensor otherwise runs one element per add latency (LLVM does not
// reorder floating-point reductions): DynamicQuantizeLinear's min and max of a 128x768
// activation took 0.1 ms each, 20x a pass over memory. Returns whether it applied (with
// nothing changed when not); `fused` receives the fused data loop (undefined for a scalar).
bool ScheduleReductionInVectorPartials(te::Schedule& s, const te::Tensor& out, const target::Target& target,
                                       const InjectiveKnobs& knobs, ir::IterVar* fused);

// Fuses leaf loops [begin, end) of `stage` (adjacent, outermost first) into one; returns it.
ir::IterVar FuseRange(te::Stage stage, const std::vector<ir::IterVar>& loops);

}  // namespace ops
}  // namespace agate

namespace agate {
namespace ops {

struct ScheduleRequest;

// Schedules a root reduction stage: the data-parallel axes are fused into one
// parallel loop; when the innermost data axis is a multiple of the lanes it is
// split, moved inside the reduction loops and vectorized. Returns the fused loop.
ir::IterVar ScheduleReductionStage(te::Schedule& s, const te::Tensor& out, const target::Target& target,
                                   const InjectiveKnobs& knobs = {});

// The default schedule for an anchor without a specialized template: with an
// epilogue, the epilogue gets the injective schedule and the anchor is computed
// at its outer loop (one pass over the output); without, every output gets the
// reduction or injective schedule. Returns the summary.
std::string ScheduleAnchorDefault(const ScheduleRequest& request, const std::string& what);

class OpContext;
// Sets ScheduleAnchorDefault for CPU targets and its GPU counterpart
// (cuda::ScheduleAnchorDefault) for cuda targets, anchored at `anchor`.
void SetDefaultSchedules(const OpContext& ctx, const std::string& what, const te::Tensor& anchor);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_SCHEDULE_COMMON_H_
