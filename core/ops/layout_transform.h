// LayoutTransform: NCHW <-> NCHW<c>c, the conversions the layout pass
// (core/graph/passes/layout_transformation) inserts at the borders of a
// blocked region.
//
// Why its own file: it is the one operator whose meaning is a layout, and the
// blocked convolution's pre-packing of weights (conv2d.h) is its compile-time
// twin for constants.
#ifndef AGATE_CORE_OPS_LAYOUT_TRANSFORM_H_
#define AGATE_CORE_OPS_LAYOUT_TRANSFORM_H_

#include "core/te/tensor.h"

namespace agate {
namespace ops {

// [N, C, H, W] -> [N, C/b, H, W, b].
te::Tensor ToBlocked(const te::Tensor& x, int64_t block, const std::string& name);
// [N, C/b, H, W, b] -> [N, C, H, W].
te::Tensor FromBlocked(const te::Tensor& x, const std::string& name);
// [N, C/a, H, W, a] -> [N, C/b, H, W, b]: between the blocks of two convs.
te::Tensor Reblock(const te::Tensor& x, int64_t block, const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_LAYOUT_TRANSFORM_H_
