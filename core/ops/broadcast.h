// Broadcast operators: binary arithmetic, comparison and logic with numpy
// broadcasting, the variadic Max/Min/Sum/Mean, PRelu, Where and Expand.
//
// Why separate from elementwise: these read operands of different shapes, so
// each operand read goes through BroadcastRead (op_context.h), which maps the
// output index to the operand's index. Like elementwise ops they only provide
// expressions; they are inlined into whatever consumes them.
#ifndef AGATE_CORE_OPS_BROADCAST_H_
#define AGATE_CORE_OPS_BROADCAST_H_

#include <functional>
#include <string>
#include <vector>

#include "core/graph/tensor.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// out(i...) = f(a[bcast(i)], b[bcast(i)]) over `out_shape`.
te::Tensor BroadcastBinary(const te::Tensor& a, const te::Tensor& b, const graph::Shape& out_shape,
                           const std::function<te::Expr(te::Expr, te::Expr)>& f, const std::string& name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_BROADCAST_H_
