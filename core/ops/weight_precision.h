// --precision fp32|fp16|bf16: the element type that compile-time packed weights are stored in.
//
// Why a file of its own: batch-1 dense layers, decoder steps and most convolutions of a small
// batch are bound by reading their weights, and the weights are constants the operator library
// already rewrites at compile time (packed panels and blocked layouts, in gemm.cc, dense.cc and
// conv2d.cc). Storing those packed copies as float16 or bfloat16 halves the bytes a kernel reads
// and the module's size; the kernel widens each loaded vector back to float32 (vcvtph2ps with
// F16C, fcvtl on AArch64, a 16-bit shift for bfloat16) and accumulates, adds the bias and runs
// the epilogue in float32, so inputs, outputs and activations keep the model's dtypes and the
// only error is the rounding of the weights themselves (2^-11 relative for float16, 2^-8 for
// bfloat16). One place decides what "narrow" means, which targets can read it, and how a
// kernel reads it back, so every operator family narrows alike.
//
// cuda kernels read their weights unpacked: there the constant is stored narrow in its own
// layout (dense.cc NarrowRightOperand, conv2d.cc NarrowGpuWeights) and widened as it is staged.
// Weights that do not fit (a float16 overflows past 65504) and weights no packing function
// rewrites (Winograd's transformed weights, unblocked CPU convs, run-time operands, non-float32
// models) stay float32.
#ifndef AGATE_CORE_OPS_WEIGHT_PRECISION_H_
#define AGATE_CORE_OPS_WEIGHT_PRECISION_H_

#include <string>

#include "core/graph/tensor.h"
#include "core/ir/dtype.h"
#include "core/target/target.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// "fp32" -> float32, "fp16" -> float16, "bf16" -> bfloat16; kInvalidArgument naming the value
// and the accepted ones otherwise.
ir::DType ParseWeightPrecision(const std::string& name);
// The inverse: "fp32", "fp16", "bf16".
std::string WeightPrecisionName(ir::DType precision);

// Throws kUnsupported, naming the target and why, when kernels for `target` cannot read weights
// stored as `precision`: float16 on LLVM targets needs F16C on x86-64, or AArch64 (other LLVM
// targets would call a soft-float helper per element; the C target converts in portable C);
// cuda kernels read their weights unpacked, in float32.
void CheckWeightPrecision(ir::DType precision, const target::Target& target);

// A packed float32 weight tensor stored as `precision`, rounded to nearest even; `packed`
// itself when precision is float32, the tensor is not float32, or a value would overflow the
// narrow type (then the tensor stays exact rather than becoming infinite).
graph::Tensor NarrowWeights(const graph::Tensor& packed, ir::DType precision);

// How a kernel reads an element of a (possibly narrowed) weight: widened to `compute`, the
// type it multiplies with (no cast when it already is that type).
te::Expr WidenedWeight(const te::Expr& element, ir::DType compute);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_WEIGHT_PRECISION_H_
