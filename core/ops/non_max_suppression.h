// RunTimeNonMaxSuppression (ONNX NonMaxSuppression with boxes, scores or an operand known only when
// the model runs) compiled into one kernel of hand-written loop IR.
//
// Why a kernel builder of its own instead of an entry in the operator table: the greedy
// suppression is sequential (a box is kept only when no box kept before it overlaps it, and
// which boxes were kept depends on the earlier steps), which a tensor expression, a pure function
// of its inputs, cannot say; the recurrent operators (recurrent.h) are built the same way. The
// kernel, per batch and class, serially:
//
//   gather the candidates (score > score_threshold when one is given)  N steps
//   rank each candidate by counting the candidates ahead of it (higher score, or the same score
//     and a lower index; NaN after every number): its position in `order`   K * K comparisons
//   walk `order`: a box is kept unless one of the boxes kept so far overlaps it by
//     IoU > iou_threshold (core/graph/value_selection.h, NmsSuppresses, step by step in float32);
//     each kept box is appended to the output as [batch, class, box]   N * min(N, max) IoUs
//   until max_output_boxes_per_class are kept; then the extents [rows, 3].
//
// So B * C * (N + K^2 + K * min(K, max)) steps for K candidates per class, on one thread: with
// a detector's score threshold K is tens to hundreds of the thousands of boxes; without one K = N
// and the quadratic ranking dominates (a sort would make it N log N; not built). The rows
// are written in ONNX's order (batch, class, then selection) with a running count. The output
// holds at most B * C * min(N, max) rows (its type, the upper bound), so every write is in bounds.
// max_output_boxes_per_class, iou_threshold and score_threshold are attributes when they were
// constants, else read by the kernel; a run-time iou_threshold outside [0, 1] fails the kernel's
// check at its top, naming the node.
#ifndef AGATE_CORE_OPS_NON_MAX_SUPPRESSION_H_
#define AGATE_CORE_OPS_NON_MAX_SUPPRESSION_H_

#include <string>

#include "core/graph/graph.h"
#include "core/ops/lower_group.h"
#include "core/target/target.h"

namespace agate {
namespace ops {

// True for the op LowerNonMaxSuppressionGroup builds (RunTimeNonMaxSuppression).
bool IsNonMaxSuppressionOp(const std::string& op);

// Lowers a group holding one RunTimeNonMaxSuppression node to one kernel (see the header
// comment). kUnsupported for cuda targets (run-time extents are host-only).
GroupKernel LowerNonMaxSuppressionGroup(const graph::Graph& graph, const graph::FusedGroup& group,
                                        const target::Target& target, const std::string& kernel_name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_NON_MAX_SUPPRESSION_H_
