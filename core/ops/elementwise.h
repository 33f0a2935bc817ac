// Elementwise operators: out[i] = f(in[i]) — unary math, activations, Cast,
// Clip, Dropout (inference), quantize/dequantize.
//
// Why expressions and no schedules of their own: an elementwise op is almost
// never a kernel by itself; it is inlined (compute_inline) into the anchor or
// the injective op that consumes it, so all it contributes is the scalar
// expression f. When a group is nothing but elementwise ops, the injective
// schedule (schedule_injective.h) runs the last one.
#ifndef AGATE_CORE_OPS_ELEMENTWISE_H_
#define AGATE_CORE_OPS_ELEMENTWISE_H_

#include <functional>
#include <string>

#include "core/te/tensor.h"

namespace agate {
namespace ops {

// out(i...) = f(in(i...)) with the output dtype of f's result.
te::Tensor Map(const te::Tensor& in, const std::function<te::Expr(te::Expr)>& f, const std::string& name,
               const std::string& tag = "elemwise");

// The activations as scalar functions (used by fused epilogues and tests).
te::Expr Relu(te::Expr x);
te::Expr Gelu(te::Expr x);  // 0.5 x (1 + erf(x / sqrt 2))
// atan(x) in float32 precision (Cephes-style range reduction + odd polynomial).
te::Expr Atan(te::Expr x);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_ELEMENTWISE_H_
