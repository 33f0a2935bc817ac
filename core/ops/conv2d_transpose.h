// ConvTranspose (any number of spatial axes, groups, strides, dilations,
// pads, output_padding / output_shape), computed as a gather: each output
// element sums the input positions whose window covers it.
//
// Why a gather rather than a scatter: a scatter (each input adds into a
// window of the output) has write conflicts between parallel iterations; the
// gather form is an ordinary reduction that any schedule may parallelize, with
// the stride condition (o + pad - k*d) % s == 0 folded into the reduction body.
#ifndef AGATE_CORE_OPS_CONV2D_TRANSPOSE_H_
#define AGATE_CORE_OPS_CONV2D_TRANSPOSE_H_

#include "core/graph/shape_rules.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// x: [N, C, in...], w: [C, OC/groups, k...] -> [N, OC, out...] (no bias).
te::Tensor ConvTranspose(const te::Tensor& x, const te::Tensor& w, const graph::WindowGeometry& g, int64_t groups,
                         const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_CONV2D_TRANSPOSE_H_
