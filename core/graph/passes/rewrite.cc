#include "core/graph/passes/rewrite.h"

#include <set>

namespace agate {
namespace graph {

Graph WithoutNodes(const Graph& graph) {
  Graph result = graph;
  result.nodes.clear();
  result.groups.clear();
  result.memory_plan = MemoryPlan();
  return result;
}

void ApplyRenames(const std::map<std::string, std::string>& renames, Graph* graph) {
  auto resolve = [&renames](std::string value) {
    for (int guard = 0; guard < 1000; ++guard) {
      auto it = renames.find(value);
      if (it == renames.end()) break;
      value = it->second;
    }
    return value;
  };
  for (Node& node : graph->nodes)
    for (std::string& in : node.inputs)
      if (!in.empty()) in = resolve(in);
  for (std::string& out : graph->outputs) out = resolve(out);
}

void DropUnusedValues(Graph* graph) {
  std::set<std::string> used(graph->inputs.begin(), graph->inputs.end());
  used.insert(graph->outputs.begin(), graph->outputs.end());
  for (const Node& node : graph->nodes) {
    used.insert(node.inputs.begin(), node.inputs.end());
    used.insert(node.outputs.begin(), node.outputs.end());
  }
  for (auto it = graph->constants.begin(); it != graph->constants.end();)
    it = used.count(it->first) ? std::next(it) : graph->constants.erase(it);
  for (auto it = graph->types.begin(); it != graph->types.end();)
    it = used.count(it->first) ? std::next(it) : graph->types.erase(it);
}

}  // namespace graph
}  // namespace agate
