// Disjoint sets of graph nodes: the groups a fusion policy grows by merging.
//
// Why one helper: every policy (rule, all, and the adaptive policy to come) partitions the
// nodes by repeated merges and reads the groups off at the end; they must agree on how a
// merge picks the root (the `into` side's) and on the order of the resulting Partition
// (groups by root, nodes ascending), which the fused-group order downstream depends on.
// Per-group data (anchor counts, kind patterns) stays with the policy, indexed by root.
#ifndef AGATE_CORE_FUSION_UNION_FIND_H_
#define AGATE_CORE_FUSION_UNION_FIND_H_

#include <map>
#include <numeric>
#include <vector>

namespace agate {
namespace fusion {

class UnionFind {
 public:
  // n singleton sets {0}, ..., {n-1}.
  explicit UnionFind(int n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }

  // The root of i's set (compresses the path it walks).
  int Find(int i) { return parent_[i] == i ? i : parent_[i] = Find(parent_[i]); }

  // Merges the set of `from` into the set of `into`: the merged set keeps `into`'s root.
  void Merge(int from, int into) {
    int a = Find(from), b = Find(into);
    if (a != b) parent_[a] = b;
  }

  // Every set, ordered by root; each set's nodes ascending.
  std::vector<std::vector<int>> Sets() {
    std::map<int, std::vector<int>> sets;
    for (int i = 0; i < static_cast<int>(parent_.size()); ++i) sets[Find(i)].push_back(i);
    std::vector<std::vector<int>> out;
    for (auto& [root, nodes] : sets) out.push_back(std::move(nodes));
    return out;
  }

 private:
  std::vector<int> parent_;
};

}  // namespace fusion
}  // namespace agate

#endif  // AGATE_CORE_FUSION_UNION_FIND_H_
