#include "core/fusion/fusion.h"

#include <algorithm>
#include <deque>
#include <set>

#include "core/fusion/node_graph.h"
#include "core/support/error.h"

namespace agate {
namespace fusion {

using graph::FusedGroup;
using graph::OpKind;

FusionPolicy ParseFusionPolicy(const std::string& text) {
  if (text == "rule") return FusionPolicy::kRule;
  if (text == "none") return FusionPolicy::kNone;
  if (text == "all") return FusionPolicy::kAll;
  AGATE_THROW(kInvalidArgument) << "unknown fusion policy '" << text << "' (expected rule, none or all)";
}

const char* FusionPolicyName(FusionPolicy policy) {
  switch (policy) {
    case FusionPolicy::kRule: return "rule";
    case FusionPolicy::kNone: return "none";
    case FusionPolicy::kAll: return "all";
  }
  return "?";
}

Partition PartitionNone(const graph::Graph& graph) {
  Partition partition;
  for (size_t i = 0; i < graph.nodes.size(); ++i) partition.push_back({static_cast<int>(i)});
  return partition;
}

Partition PartitionWith(const graph::Graph& graph, FusionPolicy policy) {
  switch (policy) {
    case FusionPolicy::kRule: return PartitionRule(graph);
    case FusionPolicy::kNone: return PartitionNone(graph);
    case FusionPolicy::kAll: return PartitionAll(graph);
  }
  return PartitionNone(graph);
}

std::vector<FusedGroup> MakeGroups(const graph::Graph& graph, const Partition& partition) {
  NodeGraph g(graph);
  int n = g.size();
  std::vector<int> group_of(n, -1);
  for (size_t k = 0; k < partition.size(); ++k) {
    for (int v : partition[k]) {
      AGATE_REQUIRE(v >= 0 && v < n && group_of[v] < 0, kInvalidArgument)
          << "partition group " << k << " names node " << v << " that is out of range or already grouped";
      group_of[v] = static_cast<int>(k);
    }
  }
  for (int v = 0; v < n; ++v)
    AGATE_REQUIRE(group_of[v] >= 0, kInvalidArgument) << "partition leaves node '" << graph.nodes[v].name << "' out";
  // Order the groups topologically; a leftover means two groups depend on each other.
  int m = static_cast<int>(partition.size());
  std::vector<std::set<int>> successors(m);
  std::vector<int> pending(m, 0);
  for (int v = 0; v < n; ++v)
    for (int c : g.consumers[v])
      if (group_of[c] != group_of[v] && successors[group_of[v]].insert(group_of[c]).second) ++pending[group_of[c]];
  std::deque<int> ready;
  for (int k = 0; k < m; ++k)
    if (pending[k] == 0) ready.push_back(k);
  std::vector<int> order;
  while (!ready.empty()) {
    // Smallest first node first, so the order is deterministic and close to the node order.
    auto it = std::min_element(ready.begin(), ready.end(), [&](int a, int b) {
      return *std::min_element(partition[a].begin(), partition[a].end()) <
             *std::min_element(partition[b].begin(), partition[b].end());
    });
    int k = *it;
    ready.erase(it);
    order.push_back(k);
    for (int s : successors[k])
      if (--pending[s] == 0) ready.push_back(s);
  }
  AGATE_REQUIRE(static_cast<int>(order.size()) == m, kInvalidArgument)
      << "the partition is not convex: some groups depend on each other";

  std::vector<FusedGroup> groups;
  std::map<std::string, std::vector<int>> consumers = graph.Consumers();
  for (int k : order) {
    FusedGroup group;
    group.nodes = partition[k];
    std::sort(group.nodes.begin(), group.nodes.end());
    std::set<std::string> produced, seen_inputs;
    for (int v : group.nodes) {
      const graph::Node& node = graph.nodes[v];
      for (const std::string& in : node.inputs)
        if (!in.empty() && !produced.count(in) && seen_inputs.insert(in).second) group.inputs.push_back(in);
      for (const std::string& out : node.outputs) {
        if (out.empty()) continue;
        produced.insert(out);
        bool used_outside = graph.IsGraphOutput(out);
        for (int c : consumers[out]) used_outside |= group_of[c] != k;
        if (used_outside) group.outputs.push_back(out);
      }
    }
    // The anchor owns the group's schedule: its most complex node (reduction or beyond).
    OpKind best = OpKind::kElemWise;
    for (int v : group.nodes) best = std::max(best, g.kinds[v]);
    if (best >= OpKind::kReduction) {
      for (int v : group.nodes) {
        if (g.kinds[v] == best) {
          group.anchor = v;
          break;
        }
      }
    }
    group.kind = best;
    groups.push_back(group);
  }
  return groups;
}

graph::Graph FuseOperators(const graph::Graph& graph, const PartitionFn& policy) {
  graph::Graph result = graph;
  result.memory_plan = graph::MemoryPlan();
  result.groups = MakeGroups(graph, policy(graph));
  return result;
}

graph::Graph FuseOperators(const graph::Graph& graph, FusionPolicy policy) {
  return FuseOperators(graph, [policy](const graph::Graph& g) { return PartitionWith(g, policy); });
}

}  // namespace fusion
}  // namespace agate
