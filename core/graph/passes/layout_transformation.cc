#include "core/graph/passes/layout_transformation.h"

#include <map>
#include <set>

#include "core/graph/op_registry.h"
#include "core/graph/passes/rewrite.h"
#include "core/graph/shape_inference.h"

namespace agate {
namespace graph {
namespace {

class LayoutRewriter {
 public:
  LayoutRewriter(const Graph& graph, int64_t block)
      : source_(graph), result_(WithoutNodes(graph)), block_(block), layout_("NCHW" + std::to_string(block) + "c") {}

  Graph Run() {
    for (const Node& node : source_.nodes) {
      if (Anchors(node)) {
        EmitBlocked(node);
      } else if (FollowsBlocked(node)) {
        EmitBlocked(node);
      } else {
        Node copy = node;
        for (std::string& in : copy.inputs)
          if (!in.empty()) in = Plain(in);
        result_.nodes.push_back(copy);
      }
    }
    for (const std::string& out : result_.outputs) Plain(out);
    return result_;
  }

 private:
  bool IsBlockable4D(const std::string& value) const {
    const TensorType& t = source_.TypeOf(value);
    return t.rank() == 4 && t.shape[1] % block_ == 0 && t.shape[1] > 0;
  }

  // Ops that start a blocked region.
  bool Anchors(const Node& node) const {
    bool windowed = node.op == "Conv" || node.op == "MaxPool" || node.op == "AveragePool" ||
                    node.op == "GlobalAveragePool" || node.op == "GlobalMaxPool";
    if (!windowed || node.attrs.GetString("data_layout", "NCHW") != "NCHW") return false;
    if (node.op == "Conv") {
      return node.attrs.GetInt("group", 1) == 1 && IsBlockable4D(node.inputs[0]) && IsBlockable4D(node.outputs[0]);
    }
    if (node.op == "MaxPool" || node.op == "AveragePool") {
      return node.outputs.size() == 1 && IsBlockable4D(node.inputs[0]) && blocked_.count(node.inputs[0]);
    }
    if (node.op == "GlobalAveragePool" || node.op == "GlobalMaxPool") {
      return IsBlockable4D(node.inputs[0]) && blocked_.count(node.inputs[0]);
    }
    return false;
  }

  // A constant of shape [C,1,1] or [1,C,1,1]: one value per channel of a C-channel activation.
  bool IsPerChannelConstant(const std::string& value, int64_t channels) const {
    if (!source_.IsConstant(value)) return false;
    Shape shape = source_.TypeOf(value).shape;
    if (shape.size() == 4 && shape[0] == 1) shape.erase(shape.begin());
    return shape == Shape{channels, 1, 1};
  }

  // Elementwise ops continue a region when every operand is blocked, a scalar, or a per-channel constant.
  bool FollowsBlocked(const Node& node) const {
    if (KindOf(node) > OpKind::kBroadcast || node.outputs.size() != 1) return false;
    if (node.op == "BatchNormalization" || node.op == "PRelu" || node.op == "Dropout") return false;
    bool any_blocked = false;
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      if (blocked_.count(in)) {
        if (source_.TypeOf(in).shape != source_.TypeOf(node.outputs[0]).shape) return false;
        any_blocked = true;
      } else if (source_.TypeOf(in).numel() != 1 && !IsPerChannelConstant(in, OutputChannels(node))) {
        return false;
      }
    }
    return any_blocked;
  }

  int64_t OutputChannels(const Node& node) const {
    const Shape& shape = source_.TypeOf(node.outputs[0]).shape;
    return shape.size() == 4 ? shape[1] : -1;
  }

  // A per-channel constant laid out as [1, C/block, 1, 1, block], which broadcasts against blocked activations.
  std::string BlockedConstant(const std::string& value) {
    auto it = blocked_.find(value);
    if (it != blocked_.end()) return it->second;
    const Tensor& plain = source_.ConstantOf(value);
    int64_t channels = plain.numel();
    Tensor blocked(plain.dtype(), {1, channels / block_, 1, 1, block_});
    for (int64_t c = 0; c < channels; ++c) blocked.SetDouble(c, plain.GetDouble(c));  // same linear order
    std::string name = result_.FreshName(value + "_" + layout_);
    result_.AddConstant(name, blocked);
    blocked_[value] = name;
    plain_ready_.insert(value);
    return name;
  }

  // The blocked twin of a value, inserting NCHW -> blocked at a region's entry.
  std::string Blocked(const std::string& value) {
    auto it = blocked_.find(value);
    if (it != blocked_.end()) return it->second;
    std::string name = result_.FreshName(value + "_" + layout_);
    Node transform;
    transform.name = result_.FreshName("to_" + layout_ + "_" + value);
    transform.op = "LayoutTransform";
    transform.inputs = {value};
    transform.outputs = {name};
    transform.attrs.Set("src_layout", "NCHW");
    transform.attrs.Set("dst_layout", layout_);
    Emit(transform);
    blocked_[value] = name;
    plain_ready_.insert(value);
    return name;
  }

  // The NCHW form of a value, inserting blocked -> NCHW at a region's exit.
  std::string Plain(const std::string& value) {
    auto it = blocked_.find(value);
    if (it == blocked_.end() || plain_ready_.count(value)) return value;
    Node transform;
    transform.name = result_.FreshName("from_" + layout_ + "_" + value);
    transform.op = "LayoutTransform";
    transform.inputs = {it->second};
    transform.outputs = {value};
    transform.attrs.Set("src_layout", layout_);
    transform.attrs.Set("dst_layout", "NCHW");
    Emit(transform);
    plain_ready_.insert(value);
    return value;
  }

  void EmitBlocked(const Node& node) {
    Node copy = node;
    bool is_anchor = node.op == "Conv" || node.op == "MaxPool" || node.op == "AveragePool" ||
                     node.op == "GlobalAveragePool" || node.op == "GlobalMaxPool";
    for (size_t i = 0; i < copy.inputs.size(); ++i) {
      std::string& in = copy.inputs[i];
      if (in.empty()) continue;
      if (is_anchor) {
        if (i == 0) in = Blocked(in);
      } else if (source_.IsConstant(in) && !blocked_.count(in) && source_.TypeOf(in).numel() != 1) {
        in = BlockedConstant(in);
      } else if (blocked_.count(in) || source_.TypeOf(in).numel() != 1) {
        in = Blocked(in);
      }
    }
    if (is_anchor) copy.attrs.Set("data_layout", layout_);
    std::string out = node.outputs[0];
    std::string blocked_name = result_.FreshName(out + "_" + layout_);
    copy.outputs[0] = blocked_name;
    Emit(copy);
    blocked_[out] = blocked_name;
  }

  void Emit(const Node& node) {
    std::vector<TensorType> types = InferNodeTypes(node, result_.types, result_.constants);
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (!node.outputs[i].empty()) result_.types[node.outputs[i]] = types[i];
    result_.nodes.push_back(node);
  }

  const Graph& source_;
  Graph result_;
  int64_t block_;
  std::string layout_;
  std::map<std::string, std::string> blocked_;  // NCHW value -> its blocked twin
  std::set<std::string> plain_ready_;           // NCHW values that exist in the result
};

}  // namespace

Graph TransformLayout(const Graph& graph, int64_t block) {
  if (block <= 1) return graph;
  Graph result = LayoutRewriter(graph, block).Run();
  DropUnusedValues(&result);
  return result;
}

}  // namespace graph
}  // namespace agate
