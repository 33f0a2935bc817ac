// Operator fusion: partitions the graph's nodes into fused groups, each of
// which becomes one kernel (its producers inlined into the anchor's loop nest
// through tensor expressions, one schedule per group).
//
// Why a pass that only groups: the decision of *what* to fuse is separate from
// *how* a group is lowered. A policy is a function Graph -> Partition; the
// lowering sees only FusedGroups (ordered nodes, anchor, external inputs and
// outputs), so an adaptive (cost-model driven) policy can plug in later as one
// more Partition function.
//
// Policies (--fusion):
//   rule  TVM's rules over operator kinds (graph.h OpKind): elementwise and
//         broadcast ops fuse into the injective/reduction op that post-dominates
//         them; a complex out-elementwise-fusable op (Conv, Gemm, MatMul, pools)
//         absorbs the elementwise/broadcast chain after it; injective chains
//         fuse together; opaque ops are never fused.
//   none  every operator is its own kernel.
//   all   naive maximal fusion: every producer-consumer edge between
//         non-opaque operators is fused whenever the result stays a legal
//         kernel (acyclic group graph, at most one complex or reduction anchor).
#ifndef AGATE_CORE_FUSION_FUSION_H_
#define AGATE_CORE_FUSION_FUSION_H_

#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace fusion {

enum class FusionPolicy { kRule, kNone, kAll };

// "rule", "none", "all"; throws kInvalidArgument naming the text otherwise.
FusionPolicy ParseFusionPolicy(const std::string& text);
const char* FusionPolicyName(FusionPolicy policy);

// A grouping decision: node indices per group (any order; MakeGroups sorts).
using Partition = std::vector<std::vector<int>>;
// A fusion policy is any function from a graph to a partition (an adaptive,
// cost-model-driven policy plugs in here).
using PartitionFn = std::function<Partition(const graph::Graph&)>;

Partition PartitionNone(const graph::Graph& graph);
Partition PartitionRule(const graph::Graph& graph);
Partition PartitionAll(const graph::Graph& graph);
Partition PartitionWith(const graph::Graph& graph, FusionPolicy policy);

// Turns a partition into FusedGroups in a topological order of the groups, with
// anchors, external inputs and outputs. Throws kInvalidArgument when the
// partition does not cover every node exactly once or is not convex (two
// groups would depend on each other).
std::vector<graph::FusedGroup> MakeGroups(const graph::Graph& graph, const Partition& partition);

// The fusion pass: the graph with `groups` set.
graph::Graph FuseOperators(const graph::Graph& graph, FusionPolicy policy);
graph::Graph FuseOperators(const graph::Graph& graph, const PartitionFn& policy);

}  // namespace fusion
}  // namespace agate

#endif  // AGATE_CORE_FUSION_FUSION_H_
