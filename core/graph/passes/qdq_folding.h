// QDQ folding: the QuantizeLinear/DequantizeLinear pairs of a QDQ model around a
// convolution or matrix product become one integer operator.
//
// Why: a QDQ model (what ONNX Runtime's quantizer, PyTorch's and TensorFlow's
// exporters write) is a float graph in which every quantized tensor passes through
// DequantizeLinear, and every quantized result through QuantizeLinear. Run as
// written it is slower than the float model. As ONNX Runtime's QDQ transformer
// does, the pass turns
//
//   DequantizeLinear(x_q) ─┐
//   DequantizeLinear(W_q) ─┼─ Conv [+ Relu | Clip] ─ QuantizeLinear ─ y_q
//   [bias]               ──┘
//
// into QLinearConv(x_q, W_q, int32 bias) [+ Max/Min on the 8-bit result], and the
// same around MatMul (QLinearMatMul) and Gemm (MatMulInteger, the int32 bias added,
// and QLinearConv's float32 requantisation spelled as Cast, Mul, Round, Add,
// Max/Min, Cast: bit for bit a QLinearConv's result, on the integer matrix-product
// template; a classifier's 1x1 QLinearConv over one pixel took the generic conv
// template). The integer operator computes the
// accumulators exactly and requantises once (core/ops/qlinear.h); the float graph
// it replaces computes the same sums in float and quantizes them, so results agree
// up to float rounding (a unit of the output's last place at a rounding tie).
// Q(relu(y)) = max(Q(y), y_zero_point) and Q(clip(y, lo, hi)) = min(max(Q(y),
// Q(lo)), Q(hi)) hold exactly because quantization is monotonic.
//
// Folded only when: x, W and y are 8-bit with constant scales and zero points
// (x and y per tensor; W per tensor or per output channel: axis 0 of a conv
// weight, the column axis of a matrix), W a constant, every intermediate read
// only by the pattern, the bias a float constant (quantized with scale x_scale *
// w_scale[c]) or DequantizeLinear of an int32 constant with that scale and zero
// point 0, Gemm with alpha = beta = 1 and no transA. A candidate that misses one
// of these (an operator with dequantized inputs whose result is quantized) stays
// float and a warning names the node and the reason: never a silently wrong
// integer kernel.
//
// Bad quantization parameters are errors, not warnings: a constant scale of any
// QuantizeLinear/DequantizeLinear that is zero, negative or not finite, or a
// constant zero point outside the range of the quantized type, is refused with
// kInvalidArgument naming the tensor and the node.
#ifndef AGATE_CORE_GRAPH_PASSES_QDQ_FOLDING_H_
#define AGATE_CORE_GRAPH_PASSES_QDQ_FOLDING_H_

#include "core/graph/graph.h"

namespace agate {
namespace graph {

Graph FoldQDQ(const Graph& graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_QDQ_FOLDING_H_
