#include "core/graph/passes/constant_folding.h"

#include <optional>

#include "core/graph/passes/rewrite.h"
#include "core/graph_eval/interpreter.h"

namespace agate {
namespace graph {

Graph FoldConstants(const Graph& graph) {
  Graph result = WithoutNodes(graph);
  for (const Node& node : graph.nodes) {
    bool foldable = graph_eval::HasKernel(node.op);
    std::vector<const Tensor*> args;
    for (const std::string& in : node.inputs) {
      if (in.empty()) {
        args.push_back(nullptr);
      } else if (result.IsConstant(in)) {
        args.push_back(&result.constants.at(in));
      } else {
        foldable = false;
      }
    }
    std::optional<std::vector<Tensor>> outs;
    if (foldable) outs = graph_eval::FoldNode(node, args);
    if (!outs) {
      result.nodes.push_back(node);
      continue;
    }
    for (size_t i = 0; i < outs->size(); ++i)
      if (!node.outputs[i].empty()) result.AddConstant(node.outputs[i], (*outs)[i]);
  }
  DropUnusedValues(&result);
  return result;
}

}  // namespace graph
}  // namespace agate
