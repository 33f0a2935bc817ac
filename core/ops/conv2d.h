// Convolutions: direct NCHW convolution (any number of spatial axes, groups,
// depthwise, strides, dilations, asymmetric padding) and the channel-blocked
// NCHW<c>c convolution the layout pass selects for group-1 2-D convs.
//
// Schedule selection (SelectConvSchedule):
//   * NCHW<c>c input (layout attribute set): conv2d_nchwc. Weights are
//     pre-packed once at compile time into [OC/c, IC/c, KH, KW, c, c] (a
//     kConstant kernel parameter) so the inner loop reads one contiguous
//     vector of output channels per input channel; the accumulator tile
//     (ow_block x c) stays in registers and the fused epilogue (bias, relu,
//     residual add...) is applied to the tile before it is stored, so the
//     output is written once. 1x1 convs use the same template: it is a GEMM
//     over (ow, ic) x (ic, oc) with the packed weights as the B panel.
//   * NCHW: direct_nchw, vectorized along output columns with a few output
//     channels per register tile (covers grouped and depthwise convs and the
//     first layer of a network, whose 3 input channels do not block).
// Padding is a separate stage computed once per kernel call (or inlined when
// there is none), so the inner loops have no bounds checks.
#ifndef AGATE_CORE_OPS_CONV2D_H_
#define AGATE_CORE_OPS_CONV2D_H_

#include "core/graph/shape_rules.h"
#include "core/graph/tensor.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// out[n, oc, o...] = sum over ic in the group, k... of x_pad * w (no bias).
te::Tensor ConvNCHW(const te::Tensor& x, const te::Tensor& w, const graph::WindowGeometry& g, int64_t groups,
                    const std::string& name);

// x: [N, IC/b, H, W, b], packed w: [OC/b, IC/b, KH, KW, b, b] -> [N, OC/b, OH, OW, b].
te::Tensor ConvNCHWc(const te::Tensor& x, const te::Tensor& packed_w, const graph::WindowGeometry& g,
                     const std::string& name);

// OIHW weights -> [OC/b, IC/b, KH, KW, b_in, b_out] (compile-time packing).
graph::Tensor PackConvWeightsNCHWc(const graph::Tensor& w, int64_t block);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_CONV2D_H_
