// Inline expansions of the math functions kernels use (exp, log, tanh, sigmoid, erf...).
//
// Why not call libm: a call per lane stops the vectorizer (a 16-lane exp becomes
// 16 scalar calls), and microcontrollers may have no libm at all. These are
// straight-line polynomial and bit-manipulation sequences on LLVM values, so they
// work unchanged for scalars and for any vector width, and LLVM maps them to
// the target's SIMD instructions (vfmadd, vrndscale, vscalef...).
//
// Accuracy for float32 (tested in math_functions_test.cc against libm):
// exp, log, sigmoid: a few ulp; tanh, erf: absolute error below 3e-7.
#ifndef AGATE_CORE_CODEGEN_LLVM_MATH_FUNCTIONS_H_
#define AGATE_CORE_CODEGEN_LLVM_MATH_FUNCTIONS_H_

#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>

namespace agate {
namespace codegen {

// True when EmitMathFunction knows `name`: exp, exp2, log, log2, log10, tanh,
// sigmoid, erf, sqrt, rsqrt, fabs, floor, ceil, round, trunc, pow, fmin, fmax,
// sin, cos.
bool IsMathFunction(const std::string& name);

// The value of name(args...) for float scalars or vectors (float16/bfloat16 are
// computed in float32; float64 uses LLVM's intrinsics where LLVM has one).
// Throws agate::Error(kUnsupported) naming the function and type otherwise.
llvm::Value* EmitMathFunction(llvm::IRBuilder<>& builder, const std::string& name,
                              const std::vector<llvm::Value*>& args);

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_LLVM_MATH_FUNCTIONS_H_
