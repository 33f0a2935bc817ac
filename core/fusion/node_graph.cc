#include "core/fusion/node_graph.h"

#include <algorithm>
#include <set>

#include "core/graph/op_registry.h"

namespace agate {
namespace fusion {

NodeGraph::NodeGraph(const graph::Graph& graph) {
  int n = static_cast<int>(graph.nodes.size());
  consumers.assign(n, {});
  producers.assign(n, {});
  feeds_output.assign(n, false);
  kinds.assign(n, graph::OpKind::kOpaque);
  std::map<std::string, int> producer = graph.Producers();
  for (int i = 0; i < n; ++i) {
    const graph::Node& node = graph.nodes[i];
    kinds[i] = graph::KindOf(node);
    std::set<int> from;
    for (const std::string& in : node.inputs) {
      auto it = producer.find(in);
      if (!in.empty() && it != producer.end()) from.insert(it->second);
    }
    producers[i].assign(from.begin(), from.end());
    for (int p : from) consumers[p].push_back(i);
    for (const std::string& out : node.outputs)
      if (!out.empty() && graph.IsGraphOutput(out)) feeds_output[i] = true;
  }
}

}  // namespace fusion
}  // namespace agate
