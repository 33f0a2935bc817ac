#include "core/fusion/fusion.h"

#include <algorithm>
#include <deque>
#include <set>

#include "core/fusion/adaptive_fusion.h"
#include "core/fusion/conv_chain.h"
#include "core/fusion/node_graph.h"
#include "core/support/error.h"
#include "core/support/logging.h"
#include "core/support/parse_int.h"

namespace agate {
namespace fusion {

using graph::FusedGroup;
using graph::OpKind;

namespace {

// "adaptive" options: policy=FILE, fallback=rule.
FusionPolicy ParseAdaptive(const std::string& text, const std::vector<std::string>& options,
                           const std::string& target_text) {
  std::string file;
  bool fallback_rule = false;
  for (const std::string& option : options) {
    if (option.rfind("policy=", 0) == 0 && option.size() > 7) {
      file = option.substr(7);
    } else if (option == "fallback=rule") {
      fallback_rule = true;
    } else {
      AGATE_THROW(kInvalidArgument) << "fusion policy '" << text << "': unknown option '" << option
                                    << "' (adaptive takes policy=FILE and fallback=rule)";
    }
  }
  target::Target target = target_text.empty() ? target::Target::Host() : target::Target::Parse(target_text);
  FusionPolicy policy(FusionPolicy::kAdaptive);
  policy.text = text;
  try {
    if (file.empty()) {
      policy.adaptive = ShippedAdaptivePolicy(target);
      AGATE_REQUIRE(policy.adaptive != nullptr, kNotFound)
          << "no shipped adaptive fusion policy fits target '" << target
          << "' (shipped: " << ShippedPolicyTargets() << "; give one with adaptive,policy=FILE)";
    } else {
      policy.adaptive = LoadAdaptivePolicy(file);
      AGATE_REQUIRE(policy.adaptive->Fits(target), kVersionMismatch)
          << "fusion policy '" << file << "' was trained for '" << policy.adaptive->TargetText()
          << "', not for target '" << target << "'";
    }
  } catch (const Error& e) {
    if (!fallback_rule || e.code() == StatusCode::kInternal) throw;
    AGATE_LOG(WARNING) << e.message() << "; fusion falls back to rule (fallback=rule)";
    FusionPolicy rule(FusionPolicy::kRule);
    rule.text = text;
    return rule;
  }
  return policy;
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

}  // namespace

bool operator==(const FusionPolicy& a, const FusionPolicy& b) {
  return a.kind == b.kind && a.seed == b.seed && a.adaptive == b.adaptive && a.text == b.text;
}

FusionPolicy ParseFusionPolicy(const std::string& text, const std::string& target) {
  std::vector<std::string> parts = SplitCommas(text);
  std::vector<std::string> options(parts.begin() + 1, parts.end());
  const std::string& name = parts[0];
  if (options.empty()) {
    if (name == "rule") return FusionPolicy::kRule;
    if (name == "none") return FusionPolicy::kNone;
    if (name == "all") return FusionPolicy::kAll;
  }
  if (name == "adaptive") return ParseAdaptive(text, options, target);
  if (name == "random" && options.size() == 1 && options[0].rfind("seed=", 0) == 0) {
    int64_t seed = 0;
    AGATE_REQUIRE(ParseInt64(options[0].substr(5), &seed) && seed >= 0, kInvalidArgument)
        << "fusion policy '" << text << "': the seed is not a non-negative integer";
    FusionPolicy policy(FusionPolicy::kRandom);
    policy.seed = static_cast<uint64_t>(seed);
    policy.text = text;
    return policy;
  }
  AGATE_THROW(kInvalidArgument) << "unknown fusion policy '" << text
                                << "' (expected rule, none, all, adaptive[,policy=FILE][,fallback=rule] or "
                                   "random,seed=N)";
}

std::string FusionPolicySyntaxError(const std::string& text) {
  std::string name = text.substr(0, text.find(','));
  for (const char* known : {"rule", "none", "all", "adaptive", "random"})
    if (name == known) return "";
  return "unknown fusion policy '" + text + "' (rule, none, all, adaptive[,policy=FILE][,fallback=rule], random,seed=N)";
}

const char* FusionPolicyName(const FusionPolicy& policy) {
  switch (policy.kind) {
    case FusionPolicy::kRule: return "rule";
    case FusionPolicy::kNone: return "none";
    case FusionPolicy::kAll: return "all";
    case FusionPolicy::kAdaptive: return "adaptive";
    case FusionPolicy::kRandom: return "random";
  }
  return "?";
}

Partition PartitionNone(const graph::Graph& graph) {
  Partition partition;
  for (size_t i = 0; i < graph.nodes.size(); ++i) partition.push_back({static_cast<int>(i)});
  return partition;
}

Partition PartitionWith(const graph::Graph& graph, const FusionPolicy& policy) {
  switch (policy.kind) {
    case FusionPolicy::kRule: return PartitionRule(graph);
    case FusionPolicy::kNone: return PartitionNone(graph);
    case FusionPolicy::kAll: return PartitionAll(graph);
    case FusionPolicy::kAdaptive:
      AGATE_REQUIRE(policy.adaptive != nullptr, kInvalidArgument)
          << "fusion policy adaptive without a loaded policy (use ParseFusionPolicy)";
      return PartitionAdaptive(graph, *policy.adaptive);
    case FusionPolicy::kRandom: return PartitionRandom(graph, policy.seed);
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
    // A conv chain (conv_chain.h) is scheduled around its consumer, which computes the producer per row.
    if (ConvChain chain = FindConvChainIn(graph, group.nodes); chain.found()) group.anchor = chain.consumer;
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

graph::Graph FuseOperators(const graph::Graph& graph, const FusionPolicy& policy) {
  return FuseOperators(graph, [policy](const graph::Graph& g) { return PartitionWith(g, policy); });
}

}  // namespace fusion
}  // namespace agate
