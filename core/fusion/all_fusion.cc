// The `all` policy: naive maximal-granularity fusion. Every producer-consumer
// edge between non-opaque operators is fused, in topological order, unless the
// merged group would (a) hold two anchors (complex or reduction ops: one
// kernel has one schedule), except a lowerable conv chain (conv_chain.h: a
// depthwise conv into a 1x1 conv, lowered as one kernel), or (b) make the group
// graph cyclic (a path leaving the group and coming back through another group).
#include <algorithm>
#include <functional>
#include <set>

#include "core/fusion/conv_chain.h"
#include "core/fusion/fusion.h"
#include "core/fusion/node_graph.h"
#include "core/fusion/union_find.h"

namespace agate {
namespace fusion {
namespace {

using graph::OpKind;

bool IsAnchorKind(OpKind kind) { return kind == OpKind::kReduction || kind == OpKind::kOutEWiseFusable; }

class AllFuser {
 public:
  explicit AllFuser(const graph::Graph& graph) : graph_(graph), g_(graph), sets_(g_.size()), anchors_(g_.size(), 0) {
    for (int i = 0; i < g_.size(); ++i)
      anchors_[i] = IsAnchorKind(g_.kinds[i]) || graph.nodes[i].op == "Attention" ? 1 : 0;
  }

  Partition Run() {
    for (int c = 0; c < g_.size(); ++c) {
      // Attention takes its injective producers (the head split of Q, K, V), as under `rule`.
      bool attention = graph_.nodes[c].op == "Attention";
      if (g_.kinds[c] == OpKind::kOpaque && !attention) continue;
      for (int p : g_.producers[c]) {
        if (g_.kinds[p] == OpKind::kOpaque || (attention && g_.kinds[p] > OpKind::kInjective)) continue;
        int a = Find(p), b = Find(c);
        if (a == b || ReachesThroughOther(a, b)) continue;
        if (anchors_[a] + anchors_[b] > 1 && !ChainsInto(a, b, c)) continue;
        sets_.Merge(a, b);
        anchors_[b] = std::min(1, anchors_[b] + anchors_[a]);  // a conv chain is one kernel schedule
      }
    }
    return sets_.Sets();
  }

 private:
  int Find(int i) { return sets_.Find(i); }

  // True when merging group `a` into the group `b` of its consumer node `c` makes exactly a lowerable
  // conv chain: `a` holds one anchor, the producer, and `b` only `c`, the consumer (so that the
  // path between them is in `a` and nothing else joins a chain's kernel as a second anchor).
  bool ChainsInto(int a, int b, int c) {
    if (anchors_[a] != 1 || anchors_[b] != 1) return false;
    std::vector<int> merged;
    for (int v = 0; v < g_.size(); ++v)
      if (Find(v) == a || Find(v) == b) merged.push_back(v);
    return Find(c) == b && FindConvChainIn(graph_, merged).found();
  }

  // True when some path from group `a` to group `b` passes through a third group.
  bool ReachesThroughOther(int a, int b) {
    std::vector<bool> seen(g_.size(), false);
    std::vector<int> stack;
    // Start from the nodes outside a and b that a feeds.
    for (int v = 0; v < g_.size(); ++v) {
      if (Find(v) != a) continue;
      for (int c : g_.consumers[v]) {
        int gc = Find(c);
        if (gc != a && gc != b && !seen[c]) {
          seen[c] = true;
          stack.push_back(c);
        }
      }
    }
    while (!stack.empty()) {
      int v = stack.back();
      stack.pop_back();
      for (int c : g_.consumers[v]) {
        if (Find(c) == b) return true;
        if (!seen[c] && Find(c) != a) {
          seen[c] = true;
          stack.push_back(c);
        }
      }
    }
    return false;
  }

  const graph::Graph& graph_;
  NodeGraph g_;
  UnionFind sets_;
  std::vector<int> anchors_;  // valid at roots
};

}  // namespace

Partition PartitionAll(const graph::Graph& graph) { return AllFuser(graph).Run(); }

}  // namespace fusion
}  // namespace agate
