// The node-level dataflow edges fusion reasons about (values between nodes;
// graph inputs and constants are not edges), plus each node's OpKind.
#ifndef AGATE_CORE_FUSION_NODE_GRAPH_H_
#define AGATE_CORE_FUSION_NODE_GRAPH_H_

#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace fusion {

struct NodeGraph {
  std::vector<std::vector<int>> consumers;  // node -> nodes that read one of its outputs (unique, sorted)
  std::vector<std::vector<int>> producers;  // node -> nodes whose outputs it reads (unique, sorted)
  std::vector<bool> feeds_output;           // node -> one of its outputs is a graph output
  std::vector<graph::OpKind> kinds;

  explicit NodeGraph(const graph::Graph& graph);
  int size() const { return static_cast<int>(kinds.size()); }
};

}  // namespace fusion
}  // namespace agate

#endif  // AGATE_CORE_FUSION_NODE_GRAPH_H_
