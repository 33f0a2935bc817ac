// Batch-norm folding: an inference-mode BatchNormalization that follows a Conv
// or a dense layer (Gemm, 2-D MatMul) with constant weights is folded into that
// layer's weights and bias.
//
// Why: y = gamma * (conv(x, W) + b - mean) / sqrt(var + eps) + beta is again a
// convolution, with W' = W * s and b' = (b - mean) * s + beta, s = gamma /
// sqrt(var + eps) per output channel. Folding removes a whole elementwise pass
// over the activation at zero accuracy cost.
#ifndef AGATE_CORE_GRAPH_PASSES_BATCHNORM_FOLDING_H_
#define AGATE_CORE_GRAPH_PASSES_BATCHNORM_FOLDING_H_

#include "core/graph/graph.h"

namespace agate {
namespace graph {

Graph FoldBatchNorm(const Graph& graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_BATCHNORM_FOLDING_H_
