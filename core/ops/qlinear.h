// Integer convolutions and matrix products: ConvInteger and MatMulInteger
// (int32 out), QLinearConv and QLinearMatMul (8-bit out, requantised).
//
// Why one family: the four share their arithmetic. Operands are widened to
// int32 and centered on their zero points (per tensor, or per output channel
// of the weight: axis 0 of a conv weight, the last axis of a matrix operand),
// the products accumulate exactly in int32, and the QLinear forms requantise
// in the kernel's epilogue, at the accumulator tile, so the 8-bit output is
// written once:
//
//   y = saturate(round_half_even(float(acc + bias) * float(M[c])) + y_zero_point)
//   M[c] = double(x_scale) * double(w_scale[c]) / double(y_scale)
//
// M is computed in double (at compile time when the three scales are constants, a
// kConstant kernel parameter, else in the kernel with the same operations) and rounded
// to float32 once; the product and its rounding are float32, as ONNX Runtime's MLAS and
// PyTorch's fbgemm requantise. (Until 2026-11 every step was double: twice the vector
// work per output, 2 zmm registers per 16 lanes, and soft-float on Cortex-M4; the int8
// ResNet-50's kernels took 7% longer on AVX-512.) The reference interpreter
// (core/graph_eval/quantize.cc) computes the same expression, so compiled integer
// outputs match it bit for bit.
//
// Constant weights are centered once, at compile time (stored as int16). Convs use
// the direct NCHW template (conv2d.h: any group count, depthwise included) and
// products the register-tiled matrix template (dense.h), both vectorized at
// the int32 accumulator's width. On targets with AVX512-VNNI, convs with uint8
// activations and constant symmetric int8 weights (group 1) take the vpdpbusd
// template of qlinear_vnni.h instead, and depthwise convs its widened 16-pixel
// tiles, both with the requantisation at the register tile; on microcontrollers
// (the C backend, bare-metal Arm) 2-D convs with constant weights take
// qlinear_mcu.h's, which reads the 8-bit input in place (no widened, padded copy).
// Matrix products with a constant B take qlinear_matmul_vnni.h's vpdpbusd tiles on
// targets with AVX512-VNNI (B packed at compile time, zero points folded into a
// per-column constant and, where B has them, row sums of A; QLinearMatMul's
// requantisation at the register tile).
#ifndef AGATE_CORE_OPS_QLINEAR_H_
#define AGATE_CORE_OPS_QLINEAR_H_

#include <string>

#include "core/te/tensor.h"

namespace agate {
namespace ops {

// Registered in registry.h (RegisterQLinearOps).

// saturate(round_half_even(float(acc) * float(multiplier)) + zero_point) as `out`
// (int8 or uint8): the requantisation of every QLinear operator.
te::Expr Requantize(const te::Expr& acc, const te::Expr& multiplier, const te::Expr& zero_point, ir::DType out);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_QLINEAR_H_
