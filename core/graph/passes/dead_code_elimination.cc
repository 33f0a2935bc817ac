#include "core/graph/passes/dead_code_elimination.h"

#include <set>

#include "core/graph/passes/rewrite.h"

namespace agate {
namespace graph {

Graph EliminateDeadCode(const Graph& graph) {
  std::set<std::string> live(graph.outputs.begin(), graph.outputs.end());
  std::vector<bool> keep(graph.nodes.size(), false);
  for (int i = static_cast<int>(graph.nodes.size()) - 1; i >= 0; --i) {
    const Node& node = graph.nodes[i];
    for (const std::string& out : node.outputs)
      if (!out.empty() && live.count(out)) keep[i] = true;
    if (!keep[i]) continue;
    for (const std::string& in : node.inputs)
      if (!in.empty()) live.insert(in);
  }
  Graph result = WithoutNodes(graph);
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (keep[i]) result.nodes.push_back(graph.nodes[i]);
  DropUnusedValues(&result);
  return result;
}

}  // namespace graph
}  // namespace agate
