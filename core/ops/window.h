// Helpers shared by the sliding-window operators (convolutions and pools):
// the channel-blocked layout attribute, and reads of a zero- (or -inf-) padded
// input without materializing the padding.
//
// Why: every window op must read outside the input near the borders. Reading
// x at a clamped index and selecting the pad value keeps every load in bounds
// (the loop-IR interpreter checks that) and lets a schedule either inline the
// padding or compute a padded copy once.
#ifndef AGATE_CORE_OPS_WINDOW_H_
#define AGATE_CORE_OPS_WINDOW_H_

#include <vector>

#include "core/graph/graph.h"
#include "core/graph/shape_rules.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// Channel block of the node's "data_layout" attribute: 0 for NCHW, c for NCHW<c>c.
int64_t LayoutBlock(const graph::Node& node);

// x read at `index` (physical rank of x) where the spatial axes [first_spatial,
// first_spatial + in.size()) may lie outside [0, in): those reads give `pad_value`.
te::Expr PaddedRead(const te::Tensor& x, const std::vector<te::Expr>& index, size_t first_spatial,
                    const std::vector<int64_t>& in, te::Expr pad_value);

// A stage holding x padded by `pad_begin`/`pad_end` on the spatial axes
// (tag "pad"), or x itself when there is no padding.
te::Tensor PadSpatial(const te::Tensor& x, size_t first_spatial, const std::vector<int64_t>& pad_begin,
                      const std::vector<int64_t>& pad_end, te::Expr pad_value, const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_WINDOW_H_
