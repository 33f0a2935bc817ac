// Normalization fusion (layer norm, RMS norm): the decompositions exporters emit become one
// LayerNormalization / RMSNormalization node.
//
// Why: PyTorch's opset < 17 exports spell nn.LayerNorm as ReduceMean, Sub, Pow,
// ReduceMean, Add, Sqrt, Div, Mul, Add, and hand-written RMSNorms (LLaMA, T5) as
// Pow, ReduceMean, Add, Sqrt, Div (or Reciprocal / Div(1, .) and Mul), Mul. Left
// alone they run as several kernels that each stream the activation through
// memory; fused, the operator library computes the statistics and the result in
// one kernel per row block (core/ops/norm.cc).
//
// Matched (every intermediate single-use, operands of Add/Mul in any order, every
// constant checked):
//   d = x - ReduceMean(x, A)         (LayerNorm only; d read by the square and the quotient)
//   v = ReduceMean(d^2, A)           (Pow(d, 2) or Mul(d, d); A the same trailing axes, keepdims)
//   n = d / Sqrt(v + eps)            (or d * Reciprocal(Sqrt(.)), d * (1 / Sqrt(.)))
//   y = n * gamma + beta             (each optional; gamma, beta broadcast over the normalized axes only)
// RMSNorm is the same with d = x. A mean over other axes than the variance, a
// square of something else, a negative epsilon, a scale that broadcasts over
// the batch axes: all stay unfused.
#ifndef AGATE_CORE_GRAPH_PASSES_NORM_FUSION_H_
#define AGATE_CORE_GRAPH_PASSES_NORM_FUSION_H_

#include "core/graph/graph.h"

namespace agate {
namespace graph {

// Both rewrites (a centred numerator makes it a layer norm, else an RMS norm).
Graph FuseNormalizations(const Graph& graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_NORM_FUSION_H_
