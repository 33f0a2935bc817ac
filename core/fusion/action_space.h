// The action space of adaptive fusion, legal by construction.
//
// Why a separate concept: a learned policy (adaptive_fusion.h) or a random one
// (the training data collector) must never propose a group that the lowering
// cannot compile well or that breaks the group graph. Instead of checking a
// proposal afterwards, the state offers only legal actions: the policy picks a
// granularity k and gets a legal group whatever k it picks.
//
// The walk: nodes in topological order (Graph::nodes order). The first node not
// yet grouped seeds an open group; its chain is the next (at most kMaxJoin)
// ungrouped nodes, in topological order, that each read a value of the group
// grown so far and may join it. Action k (0 <= k <= chain size) joins the first
// k of them and closes the group. Every prefix of the chain was checked when the
// chain was built, so every k is legal. A group holding an Attention node closes
// with the rest of the attention's head split, and an injective group with its
// injective producers that feed only it (AbsorbProducers).
//
// Joining node v to group G is legal when (the checks of `rule` and `all`):
//   - no cycle: no path leaves G and reaches v through a node outside G and v
//     (such a node's group would depend on G and G on it);
//   - neither is opaque (softmax, normalizations, data-dependent ops), except that
//     Attention absorbs a group of injective ops (the head split, as under rule);
//   - at most one anchor (complex or reduction op) per group: LowerGroup schedules
//     one anchor; a second one would stay an unscheduled root stage, a serial naive
//     loop nest. The one exception is a conv chain (conv_chain.h: a blocked
//     depthwise conv and its elementwise epilogue into a 1x1 conv), which
//     LowerGroup lowers as one kernel with the producer computed per output row
//     (core/ops/fused_conv_chain.h): the 1x1 conv may join a group holding the
//     depthwise conv and the whole path between them;
//   - no recomputation blow-up: after an anchor, only elementwise/broadcast ops
//     that keep the anchor's output shape (rule's condition: they run on the
//     anchor's output tile, once per element); before an anchor only injective
//     chains into a reduction (read once), or one Transpose into a MatMul/Gemm
//     operand (the GEMM template's packing reads it, as under rule); a conv or
//     pool would recompute an inlined producer once per window position.
#ifndef AGATE_CORE_FUSION_ACTION_SPACE_H_
#define AGATE_CORE_FUSION_ACTION_SPACE_H_

#include <vector>

#include "core/fusion/fusion.h"
#include "core/fusion/node_graph.h"
#include "core/fusion/union_find.h"
#include "core/graph/graph.h"

namespace agate {
namespace fusion {

class GranularityWalk {
 public:
  static constexpr int kMaxJoin = 6;

  // Keeps a reference to `graph`, which must outlive the walk.
  explicit GranularityWalk(const graph::Graph& graph);

  bool Done() const { return seed_ < 0; }
  // The open group's first node (-1 when done).
  int Seed() const { return seed_; }
  // The nodes that may join, in order; action k joins the first k.
  const std::vector<int>& Chain() const { return chain_; }
  // Joins the first k chain nodes to the seed, closes the group and opens the next.
  // Returns the closed group's nodes (ascending). kInvalidArgument when k is out of range.
  std::vector<int> Apply(int k);
  // The partition so far (ungrouped nodes as singletons).
  Partition Result() { return sets_.Sets(); }

  const NodeGraph& nodes() const { return g_; }

 private:
  // A closing group without an anchor (injective ops only, or an Attention node and its
  // head split) also takes its ungrouped injective producers whose every consumer is in
  // the group, transitively, as rule does, and earlier closed groups that are all such
  // producers (so an injective chain is never split). Why: the walk's chain only offers nodes that read
  // the group, so a Concat's other operand (Swin's cyclic shift: Slice, Slice, Concat) or
  // the K and V branches of an attention's head split could never join it, and a split
  // longer than the chain (GPT-2's Split + 3 Reshape + 3 Transpose) closes before the
  // attention is reached; left out, each is a kernel that copies its data.
  void AbsorbProducers(std::vector<int>* group);
  // The members of the closed group holding node v.
  std::vector<int> ClosedGroupOf(int v);
  // Whether `earlier` (a closed group) is only injective ops whose every consumer is in it
  // or in `in_group`, joinable without a cycle; if so, marks its nodes in `in_group`.
  bool OnlyFeedsGroup(const std::vector<int>& earlier, std::vector<bool>* in_group) const;
  bool CanJoin(const std::vector<int>& group, int v) const;
  bool ReachesAround(const std::vector<bool>& in_group, int v) const;
  void Open();

  const graph::Graph& graph_;
  NodeGraph g_;
  UnionFind sets_;
  std::vector<bool> grouped_;
  int seed_ = -1;
  std::vector<int> chain_;
};

}  // namespace fusion
}  // namespace agate

#endif  // AGATE_CORE_FUSION_ACTION_SPACE_H_
