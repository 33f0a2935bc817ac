// Small helpers shared by the graph passes for building a rewritten graph.
#ifndef AGATE_CORE_GRAPH_PASSES_REWRITE_H_
#define AGATE_CORE_GRAPH_PASSES_REWRITE_H_

#include <map>
#include <string>

#include "core/graph/graph.h"

namespace agate {
namespace graph {

// The graph with its nodes, fused groups and memory plan dropped (a pass that
// rewrites nodes invalidates the latter two) and the types of node outputs kept.
Graph WithoutNodes(const Graph& graph);

// Rewrites every node input and graph output through `renames` (value -> value).
void ApplyRenames(const std::map<std::string, std::string>& renames, Graph* graph);

// Drops types and constants no node, input or output refers to any more.
void DropUnusedValues(Graph* graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_REWRITE_H_
