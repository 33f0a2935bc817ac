// ScheduleOps: bound inference and loop-nest generation, the step that turns a
// te::Schedule into loops.
//
// Why one pass: where a stage is computed (compute_at) decides how much of it
// must be produced there (bound inference), and that region decides its loop
// extents, which in turn decide the regions of its own producers. So the pass
// walks stages from consumers to producers computing regions, then emits each
// stage's loop nest inside the loop it is attached to:
//
//   realize B([io*8, 8)) {          <- region of B needed by one C.io iteration
//     for (i.inner, 0, 8) { B(io*8 + i.inner) = ... }
//     for (i.inner, 0, 8) { C(io*8 + i.inner) = B(io*8 + i.inner) ... }
//   }
//
// The output is still at the tensor level (Realize / Provide / TensorRead);
// storage flattening (storage_flatten.h) maps it onto buffers. Leaf loops run
// from 0; a split that may not divide leaves a guard `if (offset < extent)` and
// every stage is guarded by its operation's domain, so over-approximated
// regions never compute or read outside a tensor. Illegal schedules (an axis
// that is no longer a loop, vectorize on a loop that is not innermost, a
// compute_at whose loop does not enclose every consumer, attachment cycles)
// throw kIllegalSchedule naming the stage and axis.
//
// Its steps live by concern (schedule_lowerer.h lists them): schedule_stages.cc (stages,
// inlining, validation), bound_inference.cc, loop_nest.cc and tensorize_nest.cc.
#ifndef AGATE_CORE_LOWER_SCHEDULE_OPS_H_
#define AGATE_CORE_LOWER_SCHEDULE_OPS_H_

#include <map>
#include <set>
#include <vector>

#include "core/ir/stmt.h"
#include "core/schedule/schedule.h"

namespace agate {
namespace lower {

// What later passes need to know about the stages.
struct StageStorageInfo {
  ir::MemoryScope scope = ir::MemoryScope::kGlobal;
  std::map<size_t, std::pair<int, int>> storage_align;  // dim -> (factor, offset)
};

// A block of a stage computed by a tensor intrinsic. The loop IR holds a marker
//   AttrStmt(attr::kTensorize, intrin name, IntImm(index into tensorize_calls),
//            Seq(Evaluate(offset) for every input offset in order, then the output's))
// and storage flattening replaces it by intrin->lower(...) on the real buffers.
// Why the offsets are in the IR and not only here: they are expressions in the loop
// variables around the call, and the passes between scheduling and flattening rewrite
// those (Simplify drops a loop of extent 1 by substituting its minimum, shape bindings
// substitute symbolic extents). Offsets kept outside the IR missed those rewrites and
// named variables no loop defined any more; in the marker, every pass sees them.
struct TensorizeCall {
  std::shared_ptr<const te::TensorIntrin> intrin;
  std::vector<te::Tensor> inputs;                 // real tensor bound to each intrinsic input, in desc input order
  std::vector<std::vector<ir::Expr>> input_offsets;  // block origin in each input (tensor coordinates), as scheduled
  te::Tensor output;
  std::vector<ir::Expr> output_offset;            // as scheduled
};

// The marker's body for `call`: its offsets, input by input then the output's, one
// Evaluate each (Evaluate(0) when there are none).
ir::Stmt TensorizeOffsetsStmt(const TensorizeCall& call);

// The offsets a marker's body holds now (after the passes that rewrote them), in the
// order TensorizeOffsetsStmt wrote them. Throws (internal) when their number does not
// match `call`'s.
std::vector<ir::Expr> TensorizeOffsetsOf(const ir::Stmt& marker_body, const TensorizeCall& call);

struct ScheduleOpsResult {
  ir::Stmt body;
  std::vector<TensorizeCall> tensorize_calls;
  // keyed by origin operation
  std::map<const te::OperationNode*, StageStorageInfo> storage;
};

// `arg_ops` are the origin operations whose tensors are kernel arguments: they
// are not realized (their storage is the caller's) and are computed over their
// whole domain.
ScheduleOpsResult ScheduleOps(const te::Schedule& sch, const std::set<const te::OperationNode*>& arg_ops);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_SCHEDULE_OPS_H_
