// Softmax, LogSoftmax and Hardmax (opset 13 single axis, and the opset < 13
// "coerce to 2-D" form that normalizes over every axis from `axis` on).
//
// Why its own schedule: softmax is opaque to fusion (its own group), and it is
// three passes over a row (max, sum of exp, normalize). When the normalized
// axes are the innermost ones, the row statistics are computed at the output's
// row loop (compute_at), so a row is read from cache, not memory, by the
// second and third pass; otherwise the statistics are vectorized reductions
// across the outer axes.
#ifndef AGATE_CORE_OPS_SOFTMAX_H_
#define AGATE_CORE_OPS_SOFTMAX_H_

#include <vector>

#include "core/te/tensor.h"

namespace agate {
namespace ops {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

// The normalized result over `axes` (sorted); `stats` receives the reduction stages.
te::Tensor Softmax(const te::Tensor& x, const std::vector<int>& axes, SoftmaxKind kind, const std::string& name,
                   std::vector<te::Tensor>* stats);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_SOFTMAX_H_
