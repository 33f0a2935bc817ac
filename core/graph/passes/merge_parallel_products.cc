#include "core/graph/passes/merge_parallel_products.h"

#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "core/graph/op_registry.h"
#include "core/graph/passes/rewrite.h"
#include "core/graph/shape_inference.h"

namespace agate {
namespace graph {
namespace {

// One product that may join its siblings.
struct Member {
  int node = -1;          // the MatMul/Gemm
  int64_t n = 0;          // its columns
  std::string weight;     // constant [K, N] (MatMul, Gemm transB = 0) or [N, K] (Gemm transB = 1)
  std::string gemm_bias;  // Gemm's C, or ""
  int add = -1;           // the Add of a constant bias that is the product's only reader, or -1
  std::string add_bias;   // that Add's constant operand
};

// What siblings must share to be one product.
using SiblingKey = std::tuple<std::string, std::string, std::string, int64_t, int64_t, double, double, bool>;

class Merger {
 public:
  explicit Merger(const Graph& graph) : g_(graph), consumers_(graph.Consumers()) {}

  Graph Run() {
    std::map<SiblingKey, std::vector<Member>> siblings;
    std::vector<SiblingKey> order;
    for (int i = 0; i < static_cast<int>(g_.nodes.size()); ++i) {
      Member m;
      SiblingKey key;
      if (!Candidate(i, &m, &key)) continue;
      if (!siblings.count(key)) order.push_back(key);
      siblings[key].push_back(m);
    }
    std::vector<std::vector<Member>> merges;
    for (const SiblingKey& key : order) {
      // Dropping a member may let the others' Adds merge, which changes what their slices write.
      std::vector<Member> members = siblings[key];
      for (size_t before = 0; before != members.size();) {
        before = members.size();
        bool adds = AllHaveAdds(members);
        std::vector<Member> readable;
        for (const Member& m : members)
          if (ReadInPlace(m, adds)) readable.push_back(m);
        members = readable;
      }
      if (members.size() >= 2) merges.push_back(members);
    }
    if (merges.empty()) return g_;
    return Rewrite(merges);
  }

 private:
  // Readers of `value` (nodes, graph outputs counted as one more).
  size_t Readers(const std::string& value) const {
    auto it = consumers_.find(value);
    size_t n = it == consumers_.end() ? 0 : it->second.size();
    return n + (g_.IsGraphOutput(value) ? 1 : 0);
  }

  // A constant only `node` reads, and only once.
  bool OwnConstant(const std::string& value, int node) const {
    if (value.empty() || !g_.IsConstant(value) || Readers(value) != 1) return false;
    int uses = 0;
    for (const std::string& in : g_.nodes[node].inputs) uses += in == value;
    return uses == 1;
  }

  bool Candidate(int i, Member* m, SiblingKey* key) const {
    const Node& node = g_.nodes[i];
    if (node.op != "MatMul" && node.op != "Gemm") return false;
    if (node.outputs.size() != 1 || node.inputs.size() < 2) return false;
    const std::string &x = node.inputs[0], &w = node.inputs[1];
    if (g_.IsConstant(x) || !OwnConstant(w, i)) return false;
    const TensorType &xt = g_.TypeOf(x), &wt = g_.TypeOf(w), &yt = g_.TypeOf(node.outputs[0]);
    if (wt.rank() != 2 || xt.dtype != wt.dtype || yt.rank() < 1) return false;
    bool trans_b = false;
    double alpha = 1.0, beta = 1.0;
    if (node.op == "Gemm") {
      if (node.attrs.GetInt("transA", 0) != 0) return false;
      trans_b = node.attrs.GetInt("transB", 0) != 0;
      alpha = node.attrs.GetFloat("alpha", 1.0);
      beta = node.attrs.GetFloat("beta", 1.0);
      if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
        m->gemm_bias = node.inputs[2];
        const TensorType& ct = g_.TypeOf(m->gemm_bias);
        int64_t n = trans_b ? wt.shape[0] : wt.shape[1];
        bool row = ct.shape == Shape{n} || ct.shape == Shape{1, n};
        if (!OwnConstant(m->gemm_bias, i) || ct.dtype != wt.dtype || !row) return false;
      }
    }
    int64_t k = trans_b ? wt.shape[1] : wt.shape[0];
    m->n = trans_b ? wt.shape[0] : wt.shape[1];
    if (yt.shape.back() != m->n || m->n <= 0) return false;
    m->node = i;
    m->weight = w;
    FindBiasAdd(i, m);
    std::string form = node.op + (m->gemm_bias.empty() ? "" : " with C");
    *key = SiblingKey{x, form, wt.dtype.ToString(), k, yt.rank(), alpha, beta, trans_b};
    return true;
  }

  // The product's only reader, Add(y, b) or Add(b, y), with b a constant row of the product's dtype.
  void FindBiasAdd(int i, Member* m) const {
    const std::string& y = g_.nodes[i].outputs[0];
    if (Readers(y) != 1 || !consumers_.count(y)) return;
    int a = consumers_.at(y).front();
    const Node& add = g_.nodes[a];
    if (add.op != "Add" || add.inputs.size() != 2 || add.inputs[0] == add.inputs[1]) return;
    const std::string& b = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
    if (!OwnConstant(b, a)) return;
    const TensorType &bt = g_.TypeOf(b), &yt = g_.TypeOf(y);
    if (bt.dtype != yt.dtype || bt.rank() < 1 || bt.rank() > yt.rank() || bt.shape.back() != m->n) return;
    for (int d = 0; d + 1 < bt.rank(); ++d)
      if (bt.shape[d] != 1) return;
    m->add = a;
    m->add_bias = b;
  }

  static bool AllHaveAdds(const std::vector<Member>& ms) {
    for (const Member& m : ms)
      if (m.add < 0) return false;
    return true;
  }

  // True when every reader of the member's result (the bias Add's output when all members'
  // Adds merge, else the product's) can take its slice into its own kernel: an elementwise,
  // broadcast or injective node (the fusion pass fuses the injective Slice into it, or into
  // the Attention kernel that a head split feeds) or an Attention node. Another product, a
  // normalization or a graph output would read a Slice copy kernel, a pass over the output
  // that the merge has not been measured to pay for (benchmarks/gemm/RESULTS.md).
  bool ReadInPlace(const Member& m, bool adds_merge) const {
    if (m.add >= 0 && !adds_merge) return true;  // its Add stays and reads the slice
    const std::string& result = g_.nodes[adds_merge ? m.add : m.node].outputs[0];
    if (g_.IsGraphOutput(result) || !consumers_.count(result)) return false;
    for (int c : consumers_.at(result)) {
      const Node& reader = g_.nodes[c];
      if (reader.op != "Attention" && KindOf(reader) > OpKind::kInjective) return false;
    }
    return true;
  }

  // The members' weights side by side along N: rows of each [K, N_i] weight
  // concatenated ([K, sum N]), or, for transposed weights [N_i, K], the weights one after the other.
  Tensor ConcatWeights(const std::vector<Member>& ms, bool trans_b) const {
    const Tensor& first = g_.ConstantOf(ms[0].weight);
    int64_t k = trans_b ? first.shape()[1] : first.shape()[0], total = 0;
    for (const Member& m : ms) total += m.n;
    Tensor out(first.dtype(), trans_b ? Shape{total, k} : Shape{k, total});
    size_t esz = first.dtype().element_bytes();
    char* dst = static_cast<char*>(out.mutable_raw_data());
    if (trans_b) {
      for (const Member& m : ms) {
        const Tensor& w = g_.ConstantOf(m.weight);
        std::memcpy(dst, w.raw_data(), w.nbytes());
        dst += w.nbytes();
      }
      return out;
    }
    for (int64_t row = 0; row < k; ++row) {
      for (const Member& m : ms) {
        const char* src = static_cast<const char*>(g_.ConstantOf(m.weight).raw_data()) + row * m.n * esz;
        std::memcpy(dst, src, m.n * esz);
        dst += m.n * esz;
      }
    }
    return out;
  }

  // The members' bias rows one after the other: [sum N].
  Tensor ConcatBiases(const std::vector<Member>& ms, const std::string Member::*bias) const {
    int64_t total = 0;
    for (const Member& m : ms) total += m.n;
    Tensor out(g_.ConstantOf(ms[0].*bias).dtype(), Shape{total});
    char* dst = static_cast<char*>(out.mutable_raw_data());
    for (const Member& m : ms) {
      const Tensor& b = g_.ConstantOf(m.*bias);
      std::memcpy(dst, b.raw_data(), b.nbytes());
      dst += b.nbytes();
    }
    return out;
  }

  // The merged product, its merged bias Add when every member had one, and a Slice per member
  // that writes the member's result value.
  std::vector<Node> MergedNodes(const std::vector<Member>& ms, Graph* result) {
    const Node& first = g_.nodes[ms[0].node];
    bool trans_b = first.op == "Gemm" && first.attrs.GetInt("transB", 0) != 0;
    bool merge_adds = AllHaveAdds(ms);
    std::string base = Fresh(first.name + "_merged");
    Node product = first;
    product.name = base;
    product.inputs[1] = Fresh(base + "_weight");
    result->AddConstant(product.inputs[1], ConcatWeights(ms, trans_b));
    if (!ms[0].gemm_bias.empty()) {
      product.inputs[2] = Fresh(base + "_c");
      result->AddConstant(product.inputs[2], ConcatBiases(ms, &Member::gemm_bias));
    }
    product.outputs = {Fresh(base + "_y")};
    std::vector<Node> nodes = {product};
    std::string merged = product.outputs[0];
    if (merge_adds) {
      Node add;
      add.op = "Add";
      add.name = Fresh(base + "_bias_add");
      add.inputs = {merged, Fresh(base + "_bias")};
      result->AddConstant(add.inputs[1], ConcatBiases(ms, &Member::add_bias));
      add.outputs = {Fresh(base + "_biased")};
      merged = add.outputs[0];
      nodes.push_back(add);
      for (const Member& m : ms) removed_.insert(m.add);
    }
    int64_t axis = g_.TypeOf(first.outputs[0]).rank() - 1, offset = 0;
    for (const Member& m : ms) {
      removed_.insert(m.node);
      const Node& last = g_.nodes[merge_adds ? m.add : m.node];
      Node slice;
      slice.op = "Slice";
      slice.name = Fresh(last.name + "_slice");
      slice.inputs = {merged};
      slice.outputs = last.outputs;
      slice.attrs.Set("starts", std::vector<int64_t>{offset});
      slice.attrs.Set("ends", std::vector<int64_t>{offset + m.n});
      slice.attrs.Set("axes", std::vector<int64_t>{axis});
      slice.attrs.Set("steps", std::vector<int64_t>{1});
      offset += m.n;
      nodes.push_back(slice);
    }
    return nodes;
  }

  Graph Rewrite(const std::vector<std::vector<Member>>& merges) {
    Graph result = WithoutNodes(g_);
    std::map<int, std::vector<Node>> at;  // the first member's index -> the nodes replacing it
    for (const std::vector<Member>& ms : merges) at[ms[0].node] = MergedNodes(ms, &result);
    for (int i = 0; i < static_cast<int>(g_.nodes.size()); ++i) {
      auto it = at.find(i);
      if (it != at.end()) result.nodes.insert(result.nodes.end(), it->second.begin(), it->second.end());
      if (!removed_.count(i)) result.nodes.push_back(g_.nodes[i]);
    }
    DropUnusedValues(&result);
    return InferShapes(result);
  }

  std::string Fresh(const std::string& base) {
    std::string name = g_.FreshName(base);
    for (int i = 1; taken_.count(name); ++i) name = g_.FreshName(base + "_" + std::to_string(i));
    taken_.insert(name);
    return name;
  }

  const Graph& g_;
  std::map<std::string, std::vector<int>> consumers_;
  std::set<int> removed_;
  std::set<std::string> taken_;
};

}  // namespace

Graph MergeParallelProducts(const Graph& graph) { return Merger(graph).Run(); }

}  // namespace graph
}  // namespace agate
