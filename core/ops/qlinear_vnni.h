// int8 convolutions with AVX512-VNNI (or AVX2, or AArch64's dotprod): the integer accumulator
// of ConvInteger and QLinearConv (core/ops/qlinear.h) as vpdpbusd (or vpmaddwd, or sdot)
// register tiles.
//
// Why a separate template: the generic integer conv widens operands to int32 and
// multiplies with vpmulld, 16 products per instruction; vpdpbusd (the loop-IR
// intrinsic dot4_u8s8, core/ir/expr.h) does 64 u8 x s8 products into 16 int32
// lanes per instruction, but needs both operands laid out in groups of four
// consecutive input channels. The layout this file picks:
//
//  * lanes are 16 consecutive output pixels of one output channel, so the
//    accumulator is NCHW like the output and the per-channel requantisation of
//    QLinearConv (the caller's epilogue, below) reads one scalar
//    multiplier per vector;
//  * activations (uint8) are packed per call into xp[n][c/4][phase][q][c%4], planes
//    of "wide" pixels: for a KxK conv with strides (sh, sw) the padded input is split
//    into sh*sw stride phases (rows r*sh + ph, columns c*sw + pw), each a plane of
//    Ws = ceil(Wp/sw) columns, so the input of output pixel p = oh*Ws + ow under
//    kernel tap (kh, kw) is phase (kh*dh % sh, kw*dw % sw) at
//    q = p + (kh*dh / sh)*Ws + kw*dw / sw, and 16 consecutive p are one 64-byte load
//    (the Ws - OW extra columns per row are computed and never read); a 1x1 conv of
//    any stride packs only the pixels it reads, q = p = oh*OW + ow. Padding holds
//    the input zero point. (NCHW-like planes rather than NHWC: the output is NCHW,
//    the per-channel requantisation reads one scalar per vector, and no transpose
//    is needed on either side). On small maps with 32 registers the planes may be one
//    per kernel tap instead (im2col, `tap_planes` in the summary): plane kh*KW + kw
//    holds at q = oh*OW + ow the pixel that tap reads, so no junk columns are computed,
//    where that computes at least a fifth fewer pixels and the taps fit 1 MiB
//    (ResNet-50's 7x7 3x3 convs: 64 pixels for 49 instead of 96, 0.61 -> 0.49 ms each). When the input is the kernel's input buffer, the
//    packing is tensorized per channel group (per image when the channels are not
//    whole groups: the missing ones hold the zero point) and written row by row: the
//    padding columns of a row are known at compile time (zero-point fills), the
//    columns between are 16-pixel vector loads per channel;
//  * weights (int8, constant) are packed once at compile time into
//    wp[oc][kh][kw][c/4][c%4] (channels padded to 4 with zeros): four bytes of one
//    output channel, broadcast to every lane;
//  * the input zero point's contribution, x_zp * sum(w[oc]), is a per-channel
//    constant subtracted after the dot products (weights are symmetric: their
//    zero point must be 0).
// The accumulator stage is tensorized (core/schedule TensorIntrin) over a block of
// oc_block channels x 16 * px_vectors pixels and the whole reduction: the block is
// a loop over (kh, kw, c/4) issuing oc_block x px_vectors vpdpbusd into
// accumulators that live in registers (a local array with constant indices).
//
// The caller's epilogue (QLinearConv's bias and requantisation) is applied at the
// register tile: the int32 tile is computed inside the epilogue's loop over tiles
// (a local buffer, never the whole accumulator in memory), the epilogue writes the
// output type in the tile layout, and the NCHW output is a copy of that (one byte
// per element instead of an int32 written and read back).
//
// Depthwise convs (group == channels, one output channel per input channel) use the
// same planes, packing, tiles and epilogue with groups of one channel: xp[n][c][phase][q],
// and per tap a 16-pixel uint8 load widened to int32 times the channel's weight (the
// weights centered on their zero points at compile time, any constant zero points),
// accumulated in registers: every output width vectorizes (wide rows) and strided
// convs read contiguous phase planes. (vpdpbusd would need four taps of one pixel
// interleaved: a copy of the input per tap group.)
//
// Without VNNI (AVX2, or AVX-512BW) the same planes, packing, tiles and epilogue use
// vpmaddwd (dot2_i16, core/ops/vnni_common.h): channels in pairs, both operands packed as
// int16 minus their zero points (x - x_zp in the planes, padding 0; w - w_zp at compile
// time), so no compensation term remains and any constant weight zero points work; 8-lane
// vectors with AVX2 (16 registers: at most 3 pixel vectors, 12 accumulators). A depthwise
// conv packs its planes centred too.
//
// On AArch64 with dotprod (Cortex-A55/A76-class phones) the same planes, packing, tiles and
// epilogue use sdot (dot4_s8s8): 4-lane int32 vectors, 32 registers, both operands int8;
// uint8 activations are packed minus 128 (bit 7 flipped), the zero point with them, so the
// padding and the compensation term are VNNI's with the shifted zero point (int8 activations
// on VNNI are packed plus 128 the same way).
//
// Applies where the target has avx512vnni or (AArch64) dotprod, x is uint8 or int8 with a
// constant scalar zero point, w is constant int8 (with zero zero points unless depthwise),
// group == 1 or depthwise, 2-D, and the output has more than one vector of pixels; with
// AVX2 or AVX-512BW, w may also be uint8 and its constant zero points anything.
// Everything else keeps the generic template.
#ifndef AGATE_CORE_OPS_QLINEAR_VNNI_H_
#define AGATE_CORE_OPS_QLINEAR_VNNI_H_

#include <string>

#include "core/ops/op_context.h"
#include "core/ops/vnni_common.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// Input indices of the integer conv's operands in the node.
struct VnniConvInputs {
  int x, x_zp, w, w_zp;
};

// epilogue(acc) as [N, OC, OH, OW], acc = sum (x - x_zp) * (w - w_zp) computed with
// vpdpbusd, its schedule set on `ctx`; or an undefined tensor when the conv does
// not qualify (see the header), in which case nothing was created.
te::Tensor VnniIntegerConv(const OpContext& ctx, const VnniConvInputs& in, const TileEpilogue& epilogue,
                           const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_QLINEAR_VNNI_H_
