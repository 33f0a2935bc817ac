// Helpers of the kernels whose outputs have extents known only when the model runs
// (RunTimeSlice, RunTimeSplit, RunTimeTopK, RunTimeNonZero, RunTimeCompress, RunTimeUnique;
// Graph::run_time_extents): such an output is typed with upper bounds, written compact at its
// run-time extents (row-major over the actual extents, at the front of the buffer), and
// followed by an int64 tensor of those extents, which the runtime reads as the output's shape.
//
// Why shared: every such kernel writes its extents and walks its output the same way; one
// definition keeps their layouts identical to what the runtime and the reference expect.
// RunTimeRowExtents (registered here) gives the extents of a value computed row for row from
// such an output, on its upper bound (a Gather of NonMaxSuppression's selected rows);
// RunTimeToBoundLayout and RunTimeToCompactLayout (also here) move such a value between the
// compact layout and the bound layout (each element at its coordinates in the upper-bound
// shape), for rows that follow an axis longer than 1 (core/graph/ops_tensor.cc).
#ifndef AGATE_CORE_OPS_RUN_TIME_EXTENTS_H_
#define AGATE_CORE_OPS_RUN_TIME_EXTENTS_H_

#include <string>
#include <vector>

#include "core/graph/tensor.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// The int64 tensor [rank] holding `extents` (index expressions), named `name`.
te::Tensor ExtentsTensor(const std::vector<te::Expr>& extents, const std::string& name);

// The index at run-time `extents` of element `flat` of a compact output, each coordinate
// clamped into `bounds` (flat offsets past the actual elements read in bounds; what they write
// lies past the data and is never read).
std::vector<te::Expr> CompactIndex(te::Expr flat, const std::vector<te::Expr>& extents, const graph::Shape& bounds);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_RUN_TIME_EXTENTS_H_
