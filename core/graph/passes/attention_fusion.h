// Attention fusion: scaled-dot-product attention as exporters spell it becomes
// one Attention node (ONNX opset 23's, 4-D form), which the operator library
// compiles to one flash-attention-style kernel (core/ops/attention.cc) that
// never writes the score matrix.
//
// Why: exported attention is MatMul(Q, K^T), a scale, masks, Softmax and
// MatMul(P, V): five kernels that write and re-read the [heads, Sq, Skv] scores
// several times. Fused, the scores of a block of queries against a tile of keys
// live in L1 and the softmax runs online (running max and sum, rescaled per key
// tile).
//
// Matched (from each Softmax over the last axis whose only reader is the left
// operand of a MatMul with V):
//   scores = MatMul(Q', K')           Q' [..., Sq, D], K' [..., D, Skv], rank 2 to 4, equal batch dims
//   Q' = Q * c or Q / c, K' = K^T * c  (scalar constants, folded into the scale)
//   then, towards the Softmax, any chain of
//     * c, / c                          (scalar constants: the scale)
//     + M                               (a mask: a constant, or one run-time value broadcastable to the scores)
//     Where(cond, s, fill)              (constant cond, fill <= -1e30: the same as adding a 0 / fill mask)
//     Reshape                           (to another view and back: Swin's per-window masks are added on a 5-D view)
//   Inference Dropout between Softmax and MatMul is removed by simplification first.
// Constant masks are folded into one compile-time tensor; a mask that is exactly
// causal (0 on and below the diagonal, <= -1e30 above) becomes is_causal=1. K'
// becomes K through a Transpose that composes with the head-split Transpose
// feeding it; rank-2 and rank-3 operands are reshaped to [B, H, S, D] around the
// node. The head split/merge Reshape and Transpose nodes stay in the graph and
// the fusion pass puts the splits into the attention's kernel (rule_fusion.cc),
// where they become index arithmetic. A scale applied to a run-time mask, a
// Where that keeps a finite fill, a Softmax over another axis: all stay unfused.
#ifndef AGATE_CORE_GRAPH_PASSES_ATTENTION_FUSION_H_
#define AGATE_CORE_GRAPH_PASSES_ATTENTION_FUSION_H_

#include "core/graph/graph.h"

namespace agate {
namespace graph {

Graph FuseAttention(const Graph& graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_ATTENTION_FUSION_H_
