#include "core/fusion/action_space.h"

#include <algorithm>

#include "core/fusion/conv_chain.h"
#include "core/support/error.h"

namespace agate {
namespace fusion {
namespace {

using graph::OpKind;

bool IsAnchorKind(OpKind kind) { return kind == OpKind::kReduction || kind == OpKind::kOutEWiseFusable; }

}  // namespace

GranularityWalk::GranularityWalk(const graph::Graph& graph)
    : graph_(graph), g_(graph), sets_(g_.size()), grouped_(g_.size(), false) {
  Open();
}

std::vector<int> GranularityWalk::Apply(int k) {
  AGATE_REQUIRE(!Done(), kInvalidArgument) << "fusion walk: every node is grouped already";
  AGATE_REQUIRE(k >= 0 && k <= static_cast<int>(chain_.size()), kInvalidArgument)
      << "fusion walk: action " << k << " at node '" << graph_.nodes[seed_].name << "' (legal: 0 to "
      << chain_.size() << ")";
  std::vector<int> group = {seed_};
  for (int i = 0; i < k; ++i) {
    sets_.Merge(chain_[i], seed_);
    grouped_[chain_[i]] = true;
    group.push_back(chain_[i]);
  }
  AbsorbProducers(&group);
  std::sort(group.begin(), group.end());
  Open();
  return group;
}

void GranularityWalk::AbsorbProducers(std::vector<int>* group) {
  std::vector<bool> in_group(g_.size(), false);
  for (int u : *group) in_group[u] = true;
  bool attention = false, injective = true;
  for (int u : *group) {
    attention = attention || graph_.nodes[u].op == "Attention";
    injective = injective && g_.kinds[u] <= OpKind::kInjective;
  }
  // Only into a group without an anchor: before a conv or a product an inlined producer would be
  // recomputed per window position or column (CanJoin's rule).
  if (!attention && !injective) return;
  std::vector<int> work = *group;
  while (!work.empty()) {
    int u = work.back();
    work.pop_back();
    for (int p : g_.producers[u]) {
      if (in_group[p]) continue;
      if (grouped_[p]) {
        // Closed before this group was reached (a chain longer than the walk's, as GPT-2's
        // Split + 3 Reshape + 3 Transpose before its attention): the whole earlier group joins
        // when it is only injective producers of this one.
        std::vector<int> earlier = ClosedGroupOf(p);
        if (OnlyFeedsGroup(earlier, &in_group)) {
          for (int v : earlier) {
            sets_.Merge(v, seed_);
            group->push_back(v);
            work.push_back(v);
          }
        }
        continue;
      }
      if (g_.kinds[p] > OpKind::kInjective || g_.feeds_output[p]) continue;
      bool only_into_group = true;
      for (int c : g_.consumers[p]) only_into_group = only_into_group && in_group[c];
      if (!only_into_group || ReachesAround(in_group, p)) continue;
      sets_.Merge(p, seed_);
      grouped_[p] = true;
      in_group[p] = true;
      group->push_back(p);
      work.push_back(p);
    }
  }
}

void GranularityWalk::Open() {
  seed_ = -1;
  chain_.clear();
  for (int v = 0; v < g_.size(); ++v) {
    if (!grouped_[v]) {
      seed_ = v;
      break;
    }
  }
  if (seed_ < 0) return;
  grouped_[seed_] = true;
  std::vector<int> tentative = {seed_};
  for (int u = seed_ + 1; u < g_.size() && static_cast<int>(chain_.size()) < kMaxJoin; ++u) {
    if (grouped_[u] || !CanJoin(tentative, u)) continue;
    chain_.push_back(u);
    tentative.push_back(u);
  }
}

std::vector<int> GranularityWalk::ClosedGroupOf(int v) {
  std::vector<int> members;
  int root = sets_.Find(v);
  for (int u = 0; u < g_.size(); ++u)
    if (grouped_[u] && sets_.Find(u) == root) members.push_back(u);
  return members;
}

bool GranularityWalk::OnlyFeedsGroup(const std::vector<int>& earlier, std::vector<bool>* in_group) const {
  std::vector<bool> joined = *in_group;
  for (int v : earlier) {
    if (g_.kinds[v] > OpKind::kInjective || g_.feeds_output[v]) return false;
    joined[v] = true;
  }
  for (int v : earlier)
    for (int c : g_.consumers[v])
      if (!joined[c]) return false;
  for (int v : earlier)
    if (ReachesAround(joined, v)) return false;
  *in_group = joined;
  return true;
}

bool GranularityWalk::CanJoin(const std::vector<int>& group, int v) const {
  std::vector<bool> in_group(g_.size(), false);
  for (int u : group) in_group[u] = true;
  bool reads_group = false;
  for (int p : g_.producers[v]) reads_group = reads_group || in_group[p];
  if (!reads_group) return false;

  int anchor = -1;
  OpKind group_kind = OpKind::kElemWise;
  for (int u : group) {
    if (g_.kinds[u] == OpKind::kOpaque) return false;  // opaque ops (Attention included) close their group
    if (IsAnchorKind(g_.kinds[u])) anchor = u;
    group_kind = std::max(group_kind, g_.kinds[u]);
  }
  const graph::Node& node = graph_.nodes[v];
  OpKind kind = g_.kinds[v];
  if (kind == OpKind::kOpaque) {
    // Attention reads its head-split producers in place (as under rule and all); other opaque ops never fuse.
    if (node.op != "Attention" || group_kind > OpKind::kInjective) return false;
  } else if (IsAnchorKind(kind)) {
    if (anchor >= 0) {
      // A second anchor only as the consumer of a lowerable conv chain (conv_chain.h) whose producer and
      // path the group holds; a third never.
      std::vector<int> joined = group;
      joined.push_back(v);
      return FindConvChainIn(graph_, joined).found() && !ReachesAround(in_group, v);
    }
    if (kind == OpKind::kReduction) {
      if (group_kind > OpKind::kInjective) return false;
    } else {
      // A complex op would recompute inlined producers per window position or output column;
      // only a lone Transpose feeding a product's operand is read by the GEMM packing instead.
      bool product = node.op == "MatMul" || node.op == "Gemm";
      int only = group.size() == 1 ? group[0] : -1;
      if (!product || only < 0 || graph_.nodes[only].op != "Transpose" || g_.consumers[only].size() != 1 ||
          g_.feeds_output[only]) {
        return false;
      }
    }
  } else if (anchor >= 0) {
    // The anchor's epilogue: elementwise/broadcast on the anchor's output tile, shape kept.
    if (kind > OpKind::kBroadcast) return false;
    if (graph_.TypeOf(node.outputs[0]).shape != graph_.TypeOf(graph_.nodes[anchor].outputs[0]).shape) return false;
  }
  return !ReachesAround(in_group, v);
}

bool GranularityWalk::ReachesAround(const std::vector<bool>& in_group, int v) const {
  std::vector<bool> seen(g_.size(), false);
  std::vector<int> stack;
  for (int u = 0; u < v; ++u) {
    if (!in_group[u]) continue;
    for (int c : g_.consumers[u]) {
      if (!in_group[c] && c != v && c < v && !seen[c]) {
        seen[c] = true;
        stack.push_back(c);
      }
    }
  }
  while (!stack.empty()) {
    int u = stack.back();
    stack.pop_back();
    for (int c : g_.consumers[u]) {
      if (c == v) return true;
      if (c < v && !in_group[c] && !seen[c]) {
        seen[c] = true;
        stack.push_back(c);
      }
    }
  }
  return false;
}

}  // namespace fusion
}  // namespace agate
