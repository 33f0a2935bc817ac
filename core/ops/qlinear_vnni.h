// int8 convolutions with AVX512-VNNI: the integer accumulator of ConvInteger and
// QLinearConv (core/ops/qlinear.h) as vpdpbusd register tiles.
//
// Why a separate template: the generic integer conv widens operands to int32 and
// multiplies with vpmulld, 16 products per instruction; vpdpbusd (the loop-IR
// intrinsic dot4_u8s8, core/ir/expr.h) does 64 u8 x s8 products into 16 int32
// lanes per instruction, but needs both operands laid out in groups of four
// consecutive input channels. The layout this file picks:
//
//  * lanes are 16 consecutive output pixels of one output channel, so the
//    accumulator is NCHW like the output and the per-channel requantisation of
//    QLinearConv (fused by the caller after the accumulator) reads one scalar
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
//    is needed on either side);
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
// Applies where the target has avx512vnni, x is uint8 with a constant scalar zero
// point, w is constant int8 with zero zero points, group == 1, 2-D, and the output
// has more than 16 pixels. Everything else keeps the generic template.
#ifndef AGATE_CORE_OPS_QLINEAR_VNNI_H_
#define AGATE_CORE_OPS_QLINEAR_VNNI_H_

#include <string>

#include "core/ops/op_context.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// Input indices of the integer conv's operands in the node.
struct VnniConvInputs {
  int x, x_zp, w, w_zp;
};

// The int32 accumulator [N, OC, OH, OW] = sum (x - x_zp) * (w - w_zp) computed with
// vpdpbusd, its schedule set on `ctx`; or an undefined tensor when the conv does
// not qualify (see the header), in which case nothing was created.
te::Tensor VnniIntegerConv(const OpContext& ctx, const VnniConvInputs& in, const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_QLINEAR_VNNI_H_
