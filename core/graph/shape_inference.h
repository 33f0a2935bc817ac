// Static shape and dtype inference over the graph IR.
//
// Why: agate compiles for static shapes. Every value must have a dtype and a
// concrete shape before layout, fusion and memory planning can reason about it,
// and a shape mismatch must be reported at compile time naming the node.
#ifndef AGATE_CORE_GRAPH_SHAPE_INFERENCE_H_
#define AGATE_CORE_GRAPH_SHAPE_INFERENCE_H_

#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace graph {

// Output types of one node given the types of the graph so far and its constants.
// Throws agate::Error (kInvalidArgument for a mismatch, kUnsupported for an
// unsupported configuration) whose message names the node.
std::vector<TensorType> InferNodeTypes(const Node& node, const std::map<std::string, TensorType>& types,
                                       const std::map<std::string, Tensor>& constants);

// Recomputes the type of every node output, in order. Inputs and constants keep theirs.
Graph InferShapes(const Graph& graph);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_SHAPE_INFERENCE_H_
