#include "core/fusion/conv_chain.h"

#include <algorithm>

#include "core/graph/op_registry.h"
#include "core/graph/shape_rules.h"

namespace agate {
namespace fusion {
namespace {

using graph::Node;
using graph::OpKind;

bool IsFloat32(const graph::Graph& graph, const std::string& value) {
  return graph.TypeOf(value).dtype == ir::DType::Float(32);
}

// A 2-D float32 Conv in NCHW<c>c with constant weights (and bias, when present):
// the blocked templates pre-pack them at compile time.
bool IsBlockedConv(const graph::Graph& graph, const Node& node) {
  if (node.op != "Conv" || node.inputs.size() < 2 || node.outputs.size() != 1) return false;
  if (graph::InputLayoutBlock(node) <= 0 || graph::OutputLayoutBlock(node) <= 0) return false;
  if (!graph.IsConstant(node.inputs[1])) return false;
  if (node.inputs.size() > 2 && !node.inputs[2].empty() && !graph.IsConstant(node.inputs[2])) return false;
  if (!IsFloat32(graph, node.inputs[0]) || !IsFloat32(graph, node.inputs[1])) return false;
  return graph.TypeOf(node.inputs[0]).shape.size() == 5 && graph.TypeOf(node.inputs[1]).shape.size() == 4;
}

// The NCHW<c>c depthwise template (core/ops/conv2d.cc): one filter per channel, in and out blocks equal.
bool IsBlockedDepthwise(const graph::Graph& graph, const Node& node) {
  if (!IsBlockedConv(graph, node)) return false;
  int64_t block = graph::InputLayoutBlock(node);
  if (graph::OutputLayoutBlock(node) != block) return false;
  const graph::Shape& xs = graph.TypeOf(node.inputs[0]).shape;
  const graph::Shape& ws = graph.TypeOf(node.inputs[1]).shape;
  int64_t channels = xs[1] * block;
  return channels > 1 && node.attrs.GetInt("group", 1) == channels && ws[0] == channels && ws[1] == 1;
}

// A group-1 1x1 conv, stride 1, no padding: a GEMM over pixels x channels reading one input pixel per output pixel.
bool IsBlockedPointwise(const graph::Graph& graph, const Node& node) {
  if (!IsBlockedConv(graph, node) || node.attrs.GetInt("group", 1) != 1) return false;
  const graph::Shape& xs = graph.TypeOf(node.inputs[0]).shape;
  const graph::Shape& ws = graph.TypeOf(node.inputs[1]).shape;
  if (ws[2] != 1 || ws[3] != 1) return false;
  int64_t block = graph::InputLayoutBlock(node);
  graph::Shape logical{xs[0], xs[1] * block, xs[2], xs[3]};
  graph::WindowGeometry g = graph::ComputeWindow(node, logical, {1, 1});
  for (size_t d = 0; d < 2; ++d)
    if (g.strides[d] != 1 || g.pad_begin[d] != 0 || g.pad_end[d] != 0 || g.out[d] != g.in[d]) return false;
  return true;
}

}  // namespace

ConvChain FindConvChain(const graph::Graph& graph, int producer, int consumer) {
  ConvChain none;
  int n = static_cast<int>(graph.nodes.size());
  if (producer < 0 || consumer < 0 || producer >= n || consumer >= n || producer == consumer) return none;
  const Node& dw = graph.nodes[producer];
  const Node& pw = graph.nodes[consumer];
  if (!IsBlockedDepthwise(graph, dw) || !IsBlockedPointwise(graph, pw)) return none;
  if (graph::InputLayoutBlock(pw) != graph::OutputLayoutBlock(dw)) return none;
  const graph::TensorType& dw_out = graph.TypeOf(dw.outputs[0]);
  std::map<std::string, std::vector<int>> readers = graph.Consumers();
  std::map<std::string, int> producers = graph.Producers();
  // Walk back from the consumer's input 0 to the producer's output.
  ConvChain chain;
  std::string value = pw.inputs[0];
  for (int steps = 0;; ++steps) {
    if (graph.IsGraphOutput(value) || readers[value].size() != 1 || graph.TypeOf(value) != dw_out) return none;
    auto it = producers.find(value);
    if (it == producers.end()) return none;
    int from = it->second;
    if (from == producer) break;
    if (steps >= kMaxConvChainPath) return none;
    const Node& node = graph.nodes[from];
    if (node.outputs.size() != 1 || graph::KindOf(node) > OpKind::kBroadcast) return none;
    // Exactly one operand comes from the chain; the others are constants (Clip's bounds, a scale).
    std::string next;
    for (const std::string& in : node.inputs) {
      if (in.empty() || graph.IsConstant(in)) continue;
      if (!next.empty()) return none;
      next = in;
    }
    if (next.empty()) return none;
    chain.path.push_back(from);
    value = next;
  }
  std::reverse(chain.path.begin(), chain.path.end());
  chain.producer = producer;
  chain.consumer = consumer;
  return chain;
}

ConvChain FindConvChainIn(const graph::Graph& graph, const std::vector<int>& group) {
  std::vector<int> anchors;
  for (int v : group) {
    OpKind kind = graph::KindOf(graph.nodes[v]);
    if (kind == OpKind::kReduction || kind == OpKind::kOutEWiseFusable) anchors.push_back(v);
  }
  if (anchors.size() != 2) return ConvChain();
  std::sort(anchors.begin(), anchors.end());
  ConvChain chain = FindConvChain(graph, anchors[0], anchors[1]);
  for (int v : chain.path)
    if (std::find(group.begin(), group.end(), v) == group.end()) return ConvChain();
  return chain;
}

}  // namespace fusion
}  // namespace agate
