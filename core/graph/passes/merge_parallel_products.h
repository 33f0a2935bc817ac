// Sibling products as one GEMM (TVM's CombineParallelDense): MatMul/Gemm nodes
// that read the same activation through constant weights of the same K become
// one product whose weight is the weights concatenated along N (the biases
// likewise), followed by one Slice per original output along the last axis.
//
// Why: every transformer projects its hidden state three times, Q, K and V,
// each a [S, d] x [d, d] product. Three GEMMs pack and stream the activation
// three times and each has only N = d columns to spread over register tiles
// and threads; one [S, d] x [d, 3d] GEMM streams it once and gets the wider N.
// The slices must cost no pass over memory, so a member joins only when every
// reader of its result reads the slice in place: a Slice is injective, so the
// fusion pass puts it into the group of the Attention node that the head split
// (Reshape, Transpose) feeds, where it is index arithmetic, or into an
// elementwise or injective reader's kernel. A member read by another product,
// an opaque op or as a graph output stays as it is (its Slice would be a copy
// kernel, which the merge has not been measured to pay for).
//
// Exact: each output element is the same dot product, accumulated over k in
// the same order with the same fused multiply-adds whatever N is (a K slice
// carries the accumulators on, never restarts them), plus the same bias
// element; the zoo's BERT and ViT outputs are bit-identical with and without.
//
// Merged (per activation X, in graph order of the first member):
//   MatMul(X, W_i)            W_i constant [K, N_i], one K, one dtype for all
//   Gemm(X, W_i[, C_i])       transA = 0, equal alpha, beta and transB, C_i a
//                             constant [N_i] or [1, N_i] for all or for none
//   then, when every member's only reader is Add(., b_i) with b_i a constant
//   of shape [.., 1, N_i] (rank at most the product's), the Adds merge too.
// Refused: a member whose result another product, an opaque op or a graph
// output reads (above), run-time weights, a weight (or bias) another node also reads or
// that is a graph output (concatenating would keep both copies), different K,
// mixed dtypes, fewer than two members.
#ifndef AGATE_CORE_GRAPH_PASSES_MERGE_PARALLEL_PRODUCTS_H_
#define AGATE_CORE_GRAPH_PASSES_MERGE_PARALLEL_PRODUCTS_H_

#include "core/graph/graph.h"

namespace agate {
namespace graph {

Graph MergeParallelProducts(const Graph& graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_MERGE_PARALLEL_PRODUCTS_H_
