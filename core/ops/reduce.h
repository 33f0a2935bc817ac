// Reductions: Reduce{Sum,Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare},
// ArgMax/ArgMin, and the index plumbing shared with softmax and the norms.
//
// Why the split into a reduction stage and a finishing stage: a te Reduce must
// be the whole body of its compute, so Mean's division, L2's sqrt or
// LogSumExp's log live in an elementwise stage after it. That stage is inlined
// into the group's output, and the reduction is computed at the output's outer
// loop (ScheduleAnchorDefault), so the reduced values never round-trip memory.
#ifndef AGATE_CORE_OPS_REDUCE_H_
#define AGATE_CORE_OPS_REDUCE_H_

#include <functional>
#include <vector>

#include "core/graph/tensor.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// Reduce axes for `axes` (sorted) of an input of `shape`.
std::vector<ir::IterVar> MakeReduceAxes(const graph::Shape& shape, const std::vector<int>& axes);

// The input index for output index `o` of a reduction over `axes`: reduced
// positions take the reduce variables, the others come from `o` (which has the
// reduced axes as extent-1 dims when keepdims, else lacks them).
std::vector<te::Expr> ReducedInputIndex(const std::vector<te::Var>& o, const std::vector<int>& axes,
                                        const std::vector<ir::IterVar>& r, size_t rank, bool keepdims);

// out = reduce(f(x[idx])) for `kind` in {"sum", "max", "min", "prod"}.
te::Tensor ReduceTensor(const te::Tensor& x, const std::vector<int>& axes, bool keepdims, const std::string& kind,
                        const std::function<te::Expr(te::Expr)>& f, const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_REDUCE_H_
