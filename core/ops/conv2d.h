// Convolutions: direct NCHW convolution (any number of spatial axes, groups,
// depthwise, strides, dilations, asymmetric padding) and the channel-blocked
// NCHW<c>c convolution the layout pass selects for group-1 2-D convs.
//
// Schedule selection (SelectConvSchedule):
//   * NCHW<c>c input or output (layout attributes set), group 1: conv2d_nchwc.
//     Input and output blocks may differ (out_layout), and an NCHW input is
//     read as one channel per block (first layers). Weights are pre-packed
//     once at compile time into [OC/co, IC/ci, KH, KW, ci, co] (a
//     kConstant kernel parameter) so the inner loop reads contiguous vectors
//     of output channels per input channel; the accumulator tile (oc_tile x
//     ow_block: two channel blocks x 7-8 columns on AVX-512, knobs
//     conv_oc_block / conv_ow_block) stays in registers and the fused epilogue
//     (bias, relu, residual add...) is applied to the tile before it is
//     stored, so the output is written once. 1x1 convs use the same template:
//     a GEMM over (ow, ic) x (ic, oc) with the packed weights as the B panel.
//   * NCHW<c>c stride-1 3x3, 5x5, 1xr and rx1 (r = 3, 5, 7) convs with
//     constant weights and enough output tiles: Winograd F(4x4 or 2x2, 3x3),
//     F(2x2, 5x5), F(1x4, 1xr) / F(4x1, rx1) (winograd.h; knob conv_winograd).
//   * NCHW<c>c depthwise (group == channels): depthwise_nchwc, one channel
//     block per vector, weights packed to [C/c, KH, KW, c].
//   * NCHW depthwise: vectorized along output columns; rows that do not fill
//     whole vectors are over-computed to a vector multiple, and strided convs
//     read a phase-split copy of the padded input so loads stay contiguous.
//   * Other NCHW convs (grouped, 1-D/3-D, the first layer of a network whose
//     3 input channels do not block): direct_nchw, vectorized along output
//     columns with 4 output channels per register tile.
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
// `split_column_phases`: a 2-D conv strided along the columns reads its input
// split by column phase (contiguous CPU vectors); GPUs read the padded input.
te::Tensor ConvNCHW(const te::Tensor& x, const te::Tensor& w, const graph::WindowGeometry& g, int64_t groups,
                    const std::string& name, bool split_column_phases = true);

// x: [N, IC/bi, H, W, bi] (or NCHW, read as bi = 1), packed w: [OC/bo, IC/bi, KH, KW, bi, bo]
// -> [N, OC/bo, OH, OW, bo]. Input and output blocks may differ.
te::Tensor ConvNCHWc(const te::Tensor& x, const te::Tensor& packed_w, const graph::WindowGeometry& g,
                     const std::string& name);

struct ScheduleRequest;
struct LowerGroupOptions;

// The register tile of the blocked conv template (knobs conv_oc_block /
// conv_ow_block): channel blocks per tile (one or two) and output columns per
// tile. The defaults keep oc_tile/lanes * ow_block accumulators (14-16 on
// AVX-512, of 32 registers; 12 on AVX2, of 16) plus the weight vectors and a
// broadcast in registers. Two register-wide channel blocks per tile make each
// broadcast input pixel feed two FMAs; with one, the tile issues a load per FMA.
struct NCHWcTile {
  int64_t oc_blocks = 1;  // channel blocks (of the layout's block size) per tile
  int64_t ow_block = 1;
};
// For an output of shape [N, OC/b, OH, OW, b], `lanes` float32 lanes and the target's
// `registers` vector registers (target::Target::vector_registers).
NCHWcTile ChooseNCHWcTile(const graph::Shape& out, int lanes, int registers, const LowerGroupOptions& options);

// The direct NCHW template (vectorized along output columns, a register tile of
// output channels, the epilogue at the tile) for the 2-D conv stage `conv`;
// `lanes` 0: the target's lanes for the output's dtype (integer convs pass the
// accumulator's). Other ranks get the default schedule.
std::string ScheduleDirectNCHW(const ScheduleRequest& request, const te::Tensor& conv, int lanes = 0);

// OIHW weights -> [OC/b_out, IC/b_in, KH, KW, b_in, b_out] (compile-time packing).
graph::Tensor PackConvWeightsNCHWc(const graph::Tensor& w, int64_t in_block, int64_t out_block);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_CONV2D_H_
