// The `rule` policy: TVM's operator-kind fusion over the post-dominator tree.
//
// For each node in topological order, its immediate post-dominator `dom` (the
// nearest node every path to the graph outputs passes through) is the only
// place it may fuse into, and only when every node on every path between them
// satisfies the kind condition of its phase: phase 0 fuses complex
// out-elementwise-fusable ops with their elementwise successors and
// elementwise/broadcast ops into injective or reduction consumers; phase 1
// fuses injective ops together, and injective chains into the Attention node
// they feed (the head split of Q, K and V). Before both, a widening elementwise
// node that only feeds a pool joins the pool (FuseWideningIntoPools); after them, one
// that ends its producer's group moves to the group that reads it
// (MoveWideningTailsToConsumers).
#include <algorithm>
#include <functional>

#include "core/fusion/fusion.h"
#include "core/fusion/node_graph.h"
#include "core/fusion/union_find.h"

namespace agate {
namespace fusion {
namespace {

using graph::OpKind;

// Immediate post-dominators; -1 when a node reaches a graph output directly or is dead.
std::vector<int> PostDominators(const NodeGraph& g) {
  int n = g.size();
  std::vector<int> ipdom(n, -1), depth(n, 0);
  auto lca = [&](int a, int b) {
    while (a != b) {
      if (a < 0 || b < 0) return -1;
      if (depth[a] < depth[b]) std::swap(a, b);
      a = ipdom[a];
    }
    return a;
  };
  for (int i = n - 1; i >= 0; --i) {
    if (g.feeds_output[i] || g.consumers[i].empty()) {
      ipdom[i] = -1;
      depth[i] = 1;
      continue;
    }
    int dom = g.consumers[i][0];
    for (size_t k = 1; k < g.consumers[i].size() && dom >= 0; ++k) dom = lca(dom, g.consumers[i][k]);
    ipdom[i] = dom;
    depth[i] = dom < 0 ? 1 : depth[dom] + 1;
  }
  return ipdom;
}

class RuleFuser {
 public:
  explicit RuleFuser(const graph::Graph& graph)
      : graph_(graph), g_(graph), sets_(g_.size()), pattern_(g_.kinds) {}

  Partition Run() {
    FuseOperandTransposes();
    FuseWideningIntoPools();
    std::vector<int> ipdom = PostDominators(g_);
    for (int phase = 0; phase < 2; ++phase) {
      for (int i = 0; i < g_.size(); ++i) {
        int dom = ipdom[i];
        if (dom < 0 || Find(i) == Find(dom)) continue;
        OpKind group = pattern_[Find(i)];
        if (group == OpKind::kOpaque || group == OpKind::kReduction) continue;
        OpKind path = PathPattern(i, dom);
        if (group == OpKind::kOutEWiseFusable) {
          // Only shape-preserving successors: a broadcast that expands the anchor's output would
          // recompute the anchor for every copy (TVM's "elementwise edge" condition).
          if (phase != 0 || path > OpKind::kBroadcast || !KeepsShape(i, dom)) continue;
          Fuse(i, dom, [](OpKind kind, bool) { return kind <= OpKind::kBroadcast; });
        } else if (group <= OpKind::kBroadcast) {
          if (!(path <= OpKind::kInjective || path == OpKind::kReduction)) continue;
          Fuse(i, dom, [](OpKind kind, bool is_sink) {
            return is_sink ? (kind <= OpKind::kInjective || kind == OpKind::kReduction) : kind <= OpKind::kInjective;
          });
        } else if (group == OpKind::kInjective) {
          if (phase != 1) continue;
          if (graph_.nodes[dom].op == "Attention") {
            // The head split (Reshape, Transpose, Slice, Gather) of Q, K and V: the attention
            // kernel reads its operands once, into its packed tiles, so the split is index arithmetic.
            Fuse(i, dom, [](OpKind kind, bool is_sink) { return is_sink || kind <= OpKind::kInjective; });
            continue;
          }
          Fuse(i, dom, [](OpKind kind, bool) { return kind <= OpKind::kInjective; });
        }
      }
    }
    return MoveWideningTailsToConsumers(sets_.Sets());
  }

 private:
  int Find(int i) { return sets_.Find(i); }

  // Rows of a MatMul/Gemm product per batch after the operator library folds a
  // batch that B lacks into the rows (core/ops/gemm.h GemmRows); 0 for other ops.
  int64_t ProductRows(const graph::Node& node) {
    if (node.op != "MatMul" && node.op != "Gemm") return 0;
    const graph::Shape& a = graph_.TypeOf(node.inputs[0]).shape;
    const graph::Shape& b = graph_.TypeOf(node.inputs[1]).shape;
    if (a.size() < 2 || b.size() < 2) return 0;
    if (node.op == "Gemm") return node.attrs.GetInt("transA", 0) != 0 ? a[1] : a[0];
    int64_t rows = a[a.size() - 2];
    bool b_batched = false;
    for (size_t i = 0; i + 2 < b.size(); ++i) b_batched = b_batched || b[i] != 1;
    if (!b_batched)
      for (size_t i = 0; i + 2 < a.size(); ++i) rows *= a[i];
    return rows;
  }

  // A Transpose feeding only an operand of a product with more than one row
  // joins the product's group: the GEMM template reads A in place and packs B
  // into panels, so the transpose becomes the packing's (or the row reads')
  // access pattern instead of a kernel that copies the tensor (attention's K^T,
  // the head split of Q). Products with one row stay matrix-vector products,
  // which read B contiguously, so their transposes stay kernels of their own.
  void FuseOperandTransposes() {
    for (int i = 0; i < g_.size(); ++i) {
      const graph::Node& node = graph_.nodes[i];
      if (ProductRows(node) <= 1) continue;
      for (int p : g_.producers[i]) {
        const graph::Node& producer = graph_.nodes[p];
        bool operand = producer.outputs[0] == node.inputs[0] || producer.outputs[0] == node.inputs[1];
        if (producer.op != "Transpose" || !operand || g_.feeds_output[p] || g_.consumers[p].size() != 1) continue;
        if (Find(p) != p) continue;  // already part of another group
        sets_.Merge(p, i);
        pattern_[Find(i)] = std::max(pattern_[Find(i)], g_.kinds[i]);
      }
    }
  }

  // An elementwise node whose output elements are wider than its input's (DequantizeLinear
  // of 8-bit data, a Cast to float) and that feeds only a pool joins the pool's group: the
  // pool widens each element as it reads it, so only the narrow tensor is stored. Left to
  // the rules below, the producer's epilogue would take it and store the wide tensor (an
  // int8 network's last feature map as float32 before its average pooling: four times the
  // bytes, the largest buffer of a microcontroller model). A pool reads each input element
  // a few times at most, so nothing is recomputed that matters.
  void FuseWideningIntoPools() {
    for (int i = 0; i < g_.size(); ++i) {
      const std::string& op = graph_.nodes[i].op;
      if (op.size() < 4 || op.compare(op.size() - 4, 4, "Pool") != 0) continue;
      for (int p : g_.producers[i]) {
        const graph::Node& producer = graph_.nodes[p];
        if (!IsWidening(p) || g_.feeds_output[p] || g_.consumers[p].size() != 1) continue;
        if (producer.outputs[0] != graph_.nodes[i].inputs[0] || Find(p) != p) continue;
        sets_.Merge(p, i);
        pattern_[Find(i)] = std::max(pattern_[Find(i)], g_.kinds[i]);
      }
    }
  }

  // A widening elementwise node (DequantizeLinear of 8-bit data, a Cast to a wider type)
  // that ends its producer's group, while everything that reads it lies in one other
  // group, moves into that group: the producer then stores the narrow tensor and the
  // consumer widens each element as it reads it. (ResNet's int8 downsampling blocks: the
  // last conv's DequantizeLinear feeds the Add that the shortcut conv's group took, and
  // the conv wrote 3.2 MB of float32 for 0.8 MB of uint8.) Only where no path leads
  // from the consuming group back to the node's producer (the groups stay acyclic).
  Partition MoveWideningTailsToConsumers(Partition parts) {
    std::vector<int> group_of(g_.size(), -1);
    for (size_t k = 0; k < parts.size(); ++k)
      for (int v : parts[k]) group_of[v] = static_cast<int>(k);
    for (int d = 0; d < g_.size(); ++d) {
      if (!IsWidening(d) || g_.feeds_output[d] || g_.consumers[d].empty() || g_.producers[d].size() != 1) continue;
      int from = group_of[d], producer = g_.producers[d][0], to = group_of[g_.consumers[d][0]];
      if (parts[from].size() < 2 || group_of[producer] != from || to == from) continue;
      bool one_group = true;
      for (int c : g_.consumers[d]) one_group = one_group && group_of[c] == to;
      if (!one_group || Reaches(parts[to], producer)) continue;
      parts[from].erase(std::find(parts[from].begin(), parts[from].end(), d));
      parts[to].insert(std::upper_bound(parts[to].begin(), parts[to].end(), d), d);
      group_of[d] = to;
    }
    return parts;
  }

  // An elementwise node whose output elements are wider than its first input's
  // (DequantizeLinear of 8-bit data, a Cast to float).
  bool IsWidening(int v) const {
    const graph::Node& node = graph_.nodes[v];
    if (g_.kinds[v] != OpKind::kElemWise || node.inputs.empty() || node.outputs.size() != 1) return false;
    return graph_.TypeOf(node.outputs[0]).dtype.bits() > graph_.TypeOf(node.inputs[0]).dtype.bits();
  }

  // True when a path of consumers leads from a node of `nodes` to `target`.
  bool Reaches(const std::vector<int>& nodes, int target) {
    std::vector<bool> seen(g_.size(), false);
    std::vector<int> stack(nodes.begin(), nodes.end());
    while (!stack.empty()) {
      int v = stack.back();
      stack.pop_back();
      if (v == target) return true;
      if (seen[v]) continue;
      seen[v] = true;
      for (int c : g_.consumers[v])
        if (!seen[c]) stack.push_back(c);
    }
    return false;
  }

  // Nodes strictly after `src` on paths to `sink`, sink included.
  std::vector<int> PathNodes(int src, int sink) {
    std::vector<int> on_path;
    std::vector<int> state(g_.size(), 0);  // 0 unvisited, 1 reaches sink, 2 does not
    std::function<bool(int)> visit = [&](int v) -> bool {
      if (v == sink) return true;
      if (state[v]) return state[v] == 1;
      bool reaches = false;
      for (int c : g_.consumers[v])
        if (c <= sink && visit(c)) reaches = true;
      state[v] = reaches ? 1 : 2;
      if (reaches && v != src) on_path.push_back(v);
      return reaches;
    };
    visit(src);
    on_path.push_back(sink);
    return on_path;
  }

  bool KeepsShape(int src, int sink) {
    const graph::Shape& shape = graph_.TypeOf(graph_.nodes[src].outputs[0]).shape;
    for (int v : PathNodes(src, sink))
      if (graph_.TypeOf(graph_.nodes[v].outputs[0]).shape != shape) return false;
    return true;
  }

  OpKind PathPattern(int src, int sink) {
    OpKind kind = OpKind::kElemWise;
    for (int v : PathNodes(src, sink)) kind = std::max(kind, g_.kinds[v]);
    return kind;
  }

  void Fuse(int src, int sink, const std::function<bool(OpKind, bool)>& allowed) {
    std::vector<int> path = PathNodes(src, sink);
    for (int v : path)
      if (!allowed(pattern_[Find(v)], v == sink)) return;
    int target = Find(sink);
    OpKind kind = pattern_[target];
    for (int v : path) kind = std::max(kind, pattern_[Find(v)]);
    kind = std::max(kind, pattern_[Find(src)]);
    for (int v : path) sets_.Merge(v, target);
    sets_.Merge(src, target);
    pattern_[Find(target)] = kind;
  }

  const graph::Graph& graph_;
  NodeGraph g_;
  UnionFind sets_;
  std::vector<OpKind> pattern_;  // valid at roots
};

}  // namespace

Partition PartitionRule(const graph::Graph& graph) { return RuleFuser(graph).Run(); }

}  // namespace fusion
}  // namespace agate
