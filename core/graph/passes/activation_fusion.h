// Activation fusion: exporters' decompositions of GELU, SiLU/Swish and
// HardSwish become one Gelu / Swish / HardSwish node.
//
// Why: PyTorch before opset 20 has no GELU operator to export to: nn.GELU
// arrives as Div, Erf, Add, Mul, Mul (approximate="none") or as the tanh
// formula's seven nodes, nn.SiLU as Sigmoid and Mul, nn.Hardswish before opset
// 14 as HardSigmoid and Mul; hand-written models use x * relu6(x + 3) / 6. One
// node is one vectorized expression in whatever kernel it fuses into instead of
// a chain the fusion rules may cut, and `agate inspect` shows the model's
// intent.
//
// Matched, with products and sums flattened (pattern.h), every intermediate
// single-use and every constant checked:
//   Gelu(x)              0.5 * x * (1 + erf(x / sqrt(2)))           (or x * (1/sqrt 2))
//   Gelu(x, tanh)        0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))   (x^3: Pow or Mul)
//   Swish(x, alpha)      x * sigmoid(alpha * x)
//   HardSwish(x)         x * HardSigmoid(x, alpha=1/6, beta=0.5),  x * clip(x + 3, 0, 6) / 6
#ifndef AGATE_CORE_GRAPH_PASSES_ACTIVATION_FUSION_H_
#define AGATE_CORE_GRAPH_PASSES_ACTIVATION_FUSION_H_

#include "core/graph/graph.h"

namespace agate {
namespace graph {

Graph FuseActivations(const Graph& graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_ACTIVATION_FUSION_H_
