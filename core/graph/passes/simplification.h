// Algebraic simplification of the graph: removes Identity, inference-mode
// Dropout and Casts to the type they read, collapses chains of reshapes (Reshape/Flatten/Squeeze/Unsqueeze
// followed by Reshape) into one Reshape, drops reshapes to the same shape, and
// merges consecutive Transposes (removing both when they cancel), and folds a
// zero Pad of the spatial axes into the Conv or AveragePool it feeds.
//
// Why: exporters leave these everywhere (a PyTorch flatten becomes
// Shape/Gather/Unsqueeze/Concat/Reshape; attention blocks transpose back and
// forth). Each one left in place is a kernel launch or a copy; each removed
// one also widens what fusion can see.
#ifndef AGATE_CORE_GRAPH_PASSES_SIMPLIFICATION_H_
#define AGATE_CORE_GRAPH_PASSES_SIMPLIFICATION_H_

#include "core/graph/graph.h"

namespace agate {
namespace graph {

Graph Simplify(const Graph& graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_SIMPLIFICATION_H_
