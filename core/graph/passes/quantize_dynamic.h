// DynamicQuantizeLinear decomposed: the data-dependent scale and zero point computed by a
// reduction and a few scalar operators, then an ordinary QuantizeLinear.
//
// Why a decomposition and not a kernel: DynamicQuantizeLinear is a whole-tensor reduction (min and
// max) followed by an elementwise quantize that needs the reduction's result; every piece already
// has a reference kernel, a compiled kernel on every target and a fusion rule. As ONNX defines it
// (uint8, qmin 0, qmax 255):
//   x_min = min(0, ReduceMin(x)),  x_max = max(0, ReduceMax(x))
//   y_scale = (x_max - x_min) / 255
//   y_zero_point = Cast<uint8>(Round(Clip(-x_min / y_scale, 0, 255)))
//   y = QuantizeLinear(x, y_scale, y_zero_point)
// The node's three outputs keep their names, so readers are untouched. An all-zero x gives y_scale 0
// and a NaN zero point, as ONNX's reference computes it.
#ifndef AGATE_CORE_GRAPH_PASSES_QUANTIZE_DYNAMIC_H_
#define AGATE_CORE_GRAPH_PASSES_QUANTIZE_DYNAMIC_H_

#include "core/graph/graph.h"

namespace agate {
namespace graph {

Graph DecomposeDynamicQuantize(const Graph& graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_QUANTIZE_DYNAMIC_H_
