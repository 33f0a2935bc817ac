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
//   adaptive[,policy=FILE][,fallback=rule]
//         learned granularity (adaptive_fusion.h): a trained policy chooses,
//         group by group, how many of the next legal operators join the group
//         (action_space.h). Without policy=, the policy shipped for the target
//         (x86-64 with AVX-512); no fitting policy, or a missing, corrupt or
//         foreign file, is an error naming it unless fallback=rule is given.
//   random,seed=N
//         a random legal granularity per group (the same action space): the
//         training data collector's groupings (tools/fusion).
#ifndef AGATE_CORE_FUSION_FUSION_H_
#define AGATE_CORE_FUSION_FUSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace fusion {

struct AdaptivePolicy;  // adaptive_fusion.h

// A fusion policy and what it needs. Implicitly built from its kind, so
// FusionPolicy::kRule reads as a policy.
struct FusionPolicy {
  enum Kind { kRule, kNone, kAll, kAdaptive, kRandom };
  FusionPolicy(Kind k = kRule) : kind(k) {}  // NOLINT: implicit on purpose
  Kind kind;
  std::shared_ptr<const AdaptivePolicy> adaptive;  // kAdaptive: the loaded, validated policy
  uint64_t seed = 0;                              // kRandom
  std::string text;                               // as the user wrote it (empty: the kind's name)
};
bool operator==(const FusionPolicy& a, const FusionPolicy& b);
inline bool operator!=(const FusionPolicy& a, const FusionPolicy& b) { return !(a == b); }

// "rule", "none", "all", "adaptive[,policy=FILE][,fallback=rule]", "random,seed=N";
// throws kInvalidArgument naming the text otherwise. `target` (a target string,
// core/target; empty: the host) is the target `adaptive` picks or checks its policy for.
// A policy file that is missing (kNotFound), corrupt (kCorrupt) or trained for another
// target (kVersionMismatch) is an error naming the file, unless fallback=rule was given:
// then a warning says so and the policy is `rule`.
FusionPolicy ParseFusionPolicy(const std::string& text, const std::string& target = "");
const char* FusionPolicyName(const FusionPolicy& policy);
// Empty when `text` names a known policy (the part before its first comma); otherwise what is
// wrong. The command line validates flags with it before anything is loaded.
std::string FusionPolicySyntaxError(const std::string& text);

// A grouping decision: node indices per group (any order; MakeGroups sorts).
using Partition = std::vector<std::vector<int>>;
// A fusion policy is any function from a graph to a partition (an adaptive,
// cost-model-driven policy plugs in here).
using PartitionFn = std::function<Partition(const graph::Graph&)>;

Partition PartitionNone(const graph::Graph& graph);
Partition PartitionRule(const graph::Graph& graph);
Partition PartitionAll(const graph::Graph& graph);
Partition PartitionWith(const graph::Graph& graph, const FusionPolicy& policy);

// Turns a partition into FusedGroups in a topological order of the groups, with
// anchors, external inputs and outputs. Throws kInvalidArgument when the
// partition does not cover every node exactly once or is not convex (two
// groups would depend on each other).
std::vector<graph::FusedGroup> MakeGroups(const graph::Graph& graph, const Partition& partition);

// The fusion pass: the graph with `groups` set.
graph::Graph FuseOperators(const graph::Graph& graph, const FusionPolicy& policy);
graph::Graph FuseOperators(const graph::Graph& graph, const PartitionFn& policy);

}  // namespace fusion
}  // namespace agate

#endif  // AGATE_CORE_FUSION_FUSION_H_
