// Constant folding: every node whose inputs are all constants is evaluated with
// the reference interpreter at compile time and replaced by its results.
//
// Why: exporters emit shape arithmetic and weight preprocessing (transposes of
// weights, casts); batch-norm folding and layout transformation create more.
// None of it should become a kernel. Nodes without a reference kernel stay, and
// so do nodes whose outputs would be far larger than their inputs (a huge
// ConstantOfShape or Expand: graph_eval::FoldingIsBounded), which cost less to
// compute when the module runs than to store in it.
#ifndef AGATE_CORE_GRAPH_PASSES_CONSTANT_FOLDING_H_
#define AGATE_CORE_GRAPH_PASSES_CONSTANT_FOLDING_H_

#include "core/graph/graph.h"

namespace agate {
namespace graph {

Graph FoldConstants(const Graph& graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_CONSTANT_FOLDING_H_
