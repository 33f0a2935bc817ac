// int8 convolutions for microcontrollers: the integer accumulator of ConvInteger
// and QLinearConv (core/ops/qlinear.h) computed straight from the 8-bit input,
// for targets without wide SIMD (the portable C backend, bare-metal Arm: Cortex-M).
//
// Why a separate template: the generic integer conv (qlinear.cc) widens the
// input to int32, centres it on its zero point and stages a padded copy of the
// whole widened input before the direct NCHW conv: on a microcontroller that copy
// is the largest buffer of the kernel (a 64x25x5 int8 feature map becomes a 47 KiB
// int32 workspace, more than the model's whole arena), and its vector tiling buys
// nothing on a CPU whose vectors are one 32-bit register. This template has no
// workspace at all:
//
//  * the input is read where it lies, one 8-bit element per tap; padding is a
//    bounds test per tap (the read takes the zero point outside the input), so no
//    padded copy exists; a conv without padding reads with no test;
//  * the input zero point is not subtracted per product: padding reads the zero
//    point, so sum (x - x_zp) * w = sum x * w - x_zp * sum w, and the second term
//    is a per-output-channel constant folded at compile time (as in the VNNI
//    template);
//  * weights (constant) are centred on their zero points once, at compile time, and
//    stored as int8 when the centred values fit (symmetric int8 weights: flash is one
//    byte per weight), else int16;
//  * the accumulator of one output element is computed at the output's innermost
//    loop: one int32 in a register, the requantisation of QLinearConv (fused by the
//    caller after the accumulator) applied to it before the 8-bit output is stored.
//  * where the target has Arm's DSP extension (Cortex-M4, M7, M33, M55: target feature
//    "dsp"), the products go two at a time through SMLAD (dot2_i16 with one lane): weights
//    stored as int16 pairs (one 32-bit load each), activations paired from two input
//    channels at one tap when a group has an even channel count, else from two taps of one
//    channel (the window flattened, its pairs unrolled so their offsets are constants, an
//    odd window's last pair completed by a zero weight). With channel pairs, 4 (or 2) output
//    channels share each activation pair, their accumulators in registers. On the int8
//    DS-CNN this executes 2.1x fewer instructions than one product per multiply-accumulate
//    (C backend on a Cortex-M4 under QEMU: benchmarks/mcu/kernel_instructions.py).
// Any group count (depthwise and 1x1 included), strides, dilations and asymmetric
// padding; 2-D only. The selection is by target (UseMcuIntegerConv); the choice of
// template stays in qlinear.cc.
#ifndef AGATE_CORE_OPS_QLINEAR_MCU_H_
#define AGATE_CORE_OPS_QLINEAR_MCU_H_

#include <string>

#include "core/ops/op_context.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// Input indices of the integer conv's operands in the node.
struct McuConvInputs {
  int x, x_zp, w, w_zp;
};

// True for the targets this template is for: the C backend and bare-metal Arm
// (Thumb) LLVM targets, which have no vector registers wider than 32 bits worth
// tiling for (Cortex-M55's MVE included: the saving in RAM is what matters there).
bool UseMcuIntegerConv(const target::Target& target);

// The int32 accumulator [N, OC, OH, OW] = sum (x - x_zp) * (w - w_zp), its schedule set
// on `ctx`; or an undefined tensor, with nothing created, when the target is not one
// of UseMcuIntegerConv's or the conv does not qualify (2-D, constant weights and weight
// zero points, a constant scalar input zero point).
te::Tensor McuIntegerConv(const OpContext& ctx, const McuConvInputs& in, const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_QLINEAR_MCU_H_
