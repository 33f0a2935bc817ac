// The quantization pass: QuantizeLinear/DequantizeLinear inserted around the convolutions and
// matrix products of a float graph, from calibrated activation ranges, so that the QDQ folding
// pass (core/graph/passes/qdq_folding.h) turns each into an integer operator.
//
// Why QDQ and not integer operators directly: the QDQ graph is the quantized model in the form
// ONNX Runtime's and PyTorch's quantizers write, so one folding pass (with its checks, its warnings
// for what cannot fold, and its bit-exact reference) serves imported and agate-quantized models
// alike, and the graph printed after this pass (--dump-ir) reads as the quantization decisions.
//
// For each Conv, MatMul (2-D constant weight) and Gemm (constant weight, alpha = beta = 1, no
// transA) not kept in float:
//   - weights: int8, symmetric (zero point 0), one scale per output channel = max|W_c| / 127
//     (values in [-127, 127]: the u8 x s8 pair sums of VNNI's vpdpbusd and SMLAD never saturate);
//   - activations (its input, and its result after a single following Relu/Clip): uint8 per
//     tensor, scale = (max - min) / 255 and zero point round(-min / scale) over the calibrated
//     range (which holds 0). uint8 because the x86 int8 instructions (vpdpbusd, vpmaddubsw)
//     multiply unsigned by signed bytes, as fbgemm and ONNX Runtime's x86 default choose; a
//     range of width 0 (a tensor that is always 0) gets scale 1, never 0;
//   - bias: int32 at scale input_scale x weight_scale[c], zero point 0 (as ONNX's QLinearConv).
// A value is quantized once: one QuantizeLinear -> DequantizeLinear pair that every reader not
// kept in float reads; a graph output keeps its name and float dtype (the DequantizeLinear writes
// it). A node kept in float (`keep_float`: op types or node names) is not quantized: it computes
// in fp32 (as ONNX Runtime's nodes_to_exclude). It reads its inputs unquantized, except the result
// of a quantized node, which it reads dequantized (that result must reach only the QuantizeLinear
// for the node to fold); to keep such an input exact too, keep its producer in float as well.
#ifndef AGATE_CORE_QUANTIZE_INSERT_QDQ_H_
#define AGATE_CORE_QUANTIZE_INSERT_QDQ_H_

#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/quantize/calibration.h"

namespace agate {
namespace quantize {

struct QuantizeReport {
  int candidates = 0;                    // Conv/MatMul/Gemm nodes of the graph
  std::vector<std::string> quantized;    // "Conv 'conv1'"
  std::vector<std::string> kept_float;   // "Conv 'conv9': --keep-float", "... : <reason>"
  // "7 of 8 Conv/MatMul/Gemm nodes int8 (weights int8 per output channel, activations uint8 per
  // tensor); kept float: ...".
  std::string Summary() const;
};

// Throws kInvalidArgument naming the first entry of `keep_float` that is neither a node name of
// `graph` nor an operator type agate knows.
void CheckKeepFloat(const graph::Graph& graph, const std::vector<std::string>& keep_float);

// The graph with Q/DQ pairs inserted as described above. `ranges` holds the calibrated range of
// float values (calibration.h); a node whose activation has none stays float (reported).
graph::Graph InsertQDQ(const graph::Graph& graph, const std::map<std::string, ValueRange>& ranges,
                       const std::vector<std::string>& keep_float, QuantizeReport* report);

// The uint8 scale and zero point of a range (exposed for tests).
struct ActivationParams {
  float scale = 1;
  int zero_point = 0;
};
ActivationParams ActivationParamsOf(const ValueRange& range);

}  // namespace quantize
}  // namespace agate

#endif  // AGATE_CORE_QUANTIZE_INSERT_QDQ_H_
