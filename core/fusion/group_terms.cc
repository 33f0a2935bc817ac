#include "core/fusion/group_terms.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

#include "core/support/error.h"

namespace agate {
namespace fusion {
namespace {

float Log2p1(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }

// Multiply-adds of one node, roughly: a product's output times its reduction length; one per element otherwise.
double NodeFlops(const graph::Graph& graph, const graph::Node& node) {
  const graph::TensorType& out = graph.TypeOf(node.outputs[0]);
  double elements = static_cast<double>(out.numel());
  if ((node.op == "Conv" || node.op == "MatMul" || node.op == "Gemm") && node.inputs.size() > 1) {
    const graph::Shape& w = graph.TypeOf(node.inputs[1]).shape;
    double reduce = 1;
    if (node.op == "Conv") {
      // Weight elements per output channel: OIHW has I*H*W; a blocked OIHW{i}i{o}o the same over o.
      double o = w.empty() ? 1 : static_cast<double>(w[0]) * (w.size() == 6 ? static_cast<double>(w[5]) : 1.0);
      double total = 1;
      for (int64_t d : w) total *= static_cast<double>(d);
      reduce = total / std::max(1.0, o);
    } else {
      const graph::Shape& a = graph.TypeOf(node.inputs[0]).shape;
      bool trans_a = node.op == "Gemm" && node.attrs.GetInt("transA", 0) != 0;
      reduce = a.empty() ? 1 : static_cast<double>(trans_a ? a[0] : a.back());
    }
    return 2 * elements * reduce;
  }
  return elements;
}

}  // namespace

std::vector<std::string> GroupTermNames() {
  return {"in_log2_bytes", "out_log2_bytes", "over_l1_log2", "over_l2_log2", "over_l3_log2", "inner_log2_bytes",
          "log2_flops",    "parallel_per_thread_log2", "ragged", "nodes", "anchors"};
}

std::vector<float> GroupTerms(const graph::Graph& graph, const NodeGraph& g, const std::vector<int>& nodes,
                              const target::Target& target) {
  AGATE_REQUIRE(!nodes.empty(), kInvalidArgument) << "group terms of an empty group";
  std::set<int> members(nodes.begin(), nodes.end());
  std::map<std::string, std::vector<int>> consumers = graph.Consumers();
  std::set<std::string> produced, read;
  double in_bytes = 0, out_bytes = 0, inner_bytes = 0, flops = 0;
  int anchor = -1, anchors = 0;
  for (int v : members) {
    const graph::Node& node = graph.nodes[v];
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      produced.insert(out);
      bool outside = graph.IsGraphOutput(out);
      for (int c : consumers[out]) outside = outside || !members.count(c);
      (outside ? out_bytes : inner_bytes) += static_cast<double>(graph.TypeOf(out).bytes());
    }
    if (g.kinds[v] == graph::OpKind::kOutEWiseFusable || g.kinds[v] == graph::OpKind::kReduction) {
      anchor = v;  // the last one: a conv chain's consumer (conv_chain.h), which writes the group's output
      ++anchors;
    }
    flops += NodeFlops(graph, node);
  }
  for (int v : members)
    for (const std::string& in : graph.nodes[v].inputs)
      if (!in.empty() && !produced.count(in) && read.insert(in).second)
        in_bytes += static_cast<double>(graph.TypeOf(in).bytes());

  double moved = in_bytes + out_bytes;
  auto over = [&](int64_t cache) {
    return cache > 0 ? static_cast<float>(std::log2(std::max(moved, 1.0) / static_cast<double>(cache))) : 0.0f;
  };
  // The outer parallel extent: the written output's elements outside its two innermost dimensions.
  int main = anchor >= 0 ? anchor : *members.rbegin();
  const graph::Shape& shape = graph.TypeOf(graph.nodes[main].outputs[0]).shape;
  double outer = 1;
  for (size_t d = 0; d + 2 < shape.size(); ++d) outer *= static_cast<double>(shape[d]);
  if (shape.size() == 2) outer = static_cast<double>(shape[0]);
  int threads = target.num_threads() > 0 ? target.num_threads()
                                         : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  double per_thread = std::min(64.0, outer / threads);
  int lanes = target.NativeLanes(ir::DType::Float(32));
  bool ragged = !shape.empty() && lanes > 1 && shape.back() % lanes != 0;
  return {Log2p1(in_bytes),
          Log2p1(out_bytes),
          over(target.l1d_cache_bytes()),
          over(target.l2_cache_bytes()),
          over(target.l3_cache_bytes()),
          Log2p1(inner_bytes),
          Log2p1(flops),
          Log2p1(per_thread),
          ragged ? 1.0f : 0.0f,
          static_cast<float>(members.size()),
          static_cast<float>(anchors)};
}

}  // namespace fusion
}  // namespace agate
