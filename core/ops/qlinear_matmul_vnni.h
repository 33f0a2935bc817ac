// int8 matrix products with AVX512-VNNI (or AVX2, or AArch64's dotprod): the integer
// accumulator of MatMulInteger and QLinearMatMul (core/ops/qlinear.h) as vpdpbusd (or
// vpmaddwd, or sdot: uint8 A shifted by -128 into int8, core/ops/vnni_common.h) register tiles.
//
// Why a template of its own: the generic integer product widens both operands to
// int32 and multiplies with vpmulld (16 products per instruction, and four times
// the bytes of B streamed); vpdpbusd (the loop-IR intrinsic dot4_u8s8,
// core/ir/expr.h) does 64 u8 x s8 products into 16 int32 lanes per instruction.
// This is the product of dynamically quantized transformers (DynamicQuantizeLinear,
// MatMulInteger with constant int8 weights, a scale multiply), and of QOperator
// models' QLinearMatMul. The layout:
//
//  * B (constant, [K, N]) is packed once at compile time into column panels of nr =
//    16 * v columns, 4-deep in K: Bp[N/nr][K/4][nr][4] (int8; a uint8 B is stored
//    as b - 128 with its zero point moved by 128; zero past K and N), so one 64-byte
//    load is the four K values of 16 columns, vpdpbusd's second operand;
//  * A (uint8 or int8, any batch dimensions folded into the rows) is packed per call
//    into Ap[Mp][4 * ceil(K/4)] (uint8; an int8 A is stored as a + 128, its zero point moved
//    by 128; rows past M repeat row M-1, K past the end is 0): four bytes of one row,
//    broadcast to every lane (the embedded {1to16} broadcast of vpdpbusd);
//  * the register tile is mr rows x v vectors of 16 columns (mr * v accumulators,
//    v loaded B vectors and a broadcast within the 32 vector registers), accumulating
//    all of K; the tile is computed inside the epilogue's loop over tiles, in a local
//    buffer, as in the VNNI conv (qlinear_vnni.h);
//  * zero points: sum_k (a - za)(b - zb[n]) = sum_k a*b - za * (sum_k b[k, n] - K * zb[n])
//    - zb[n] * sum_k a[m, k]. The first correction is a per-column constant times a's
//    zero point (a constant table when za is a constant, else the run-time scalar times
//    a table: DynamicQuantizeLinear's zero point); the row sums of A are computed (one
//    pass over A) only where some zb[n] is not 0 (a symmetric int8 weight, or a uint8
//    one at 128, needs none);
//  * the caller's epilogue (QLinearMatMul's requantisation) is applied at the register
//    tile to planes tile_out[Mp][Np] of the output type, and the output [.., M, N] is a
//    copy of their valid part (inlined into whatever the group computes after it).
//
// Without VNNI (AVX2, or AVX-512BW) the same tiles use vpmaddwd (dot2_i16,
// core/ops/vnni_common.h): K in pairs, A packed per call as int16 a - za (za constant or
// the run-time scalar), B at compile time as int16 b - zb[n]: no zero-point terms and no
// row sums remain; 8-lane vectors and 15 registers with AVX2.
//
// Applies where the target has avx512vnni (or avx2), A is uint8 or int8 of rank >= 2 with a
// scalar zero point (constant or run-time), B is a constant uint8 or int8 matrix
// (rank 2) with constant zero points (scalar or per column). Everything else keeps the
// generic integer product (qlinear.cc).
#ifndef AGATE_CORE_OPS_QLINEAR_MATMUL_VNNI_H_
#define AGATE_CORE_OPS_QLINEAR_MATMUL_VNNI_H_

#include <string>

#include "core/ops/op_context.h"
#include "core/ops/vnni_common.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// Input indices of the integer product's operands in the node (-1 or absent: no zero point).
struct VnniMatMulInputs {
  int a, a_zp, b, b_zp;
};

// epilogue(acc, column) as [a_batch..., M, N], acc = sum_k (a - a_zp) * (b - b_zp)
// computed with vpdpbusd, its schedule set on `ctx`; or an undefined tensor when the
// product does not qualify (see the header), in which case nothing was created.
te::Tensor VnniIntegerMatMul(const OpContext& ctx, const VnniMatMulInputs& in, const TileEpilogue& epilogue,
                             const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_QLINEAR_MATMUL_VNNI_H_
