#include "core/graph/passes/layout_transformation.h"

#include <map>
#include <set>

#include "core/graph/op_registry.h"
#include "core/graph/passes/rewrite.h"
#include "core/graph/shape_inference.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

class LayoutRewriter {
 public:
  LayoutRewriter(const Graph& graph, int64_t block) : source_(graph), result_(WithoutNodes(graph)) {
    // The preferred block, then halves down to 8: a layer whose channels the
    // preferred block does not divide (MobileNetV2's 24) still runs blocked.
    for (int64_t b = block; b >= 2 && (b == block || b >= 8); b /= 2) candidates_.push_back(b);
  }

  Graph Run() {
    FindChannelsLastBlocks();
    for (const Node& node : source_.nodes) {
      auto member = block_of_.find(&node);
      if (member != block_of_.end() && Converted(member->second, node)) {
        EmitChannelsLast(node);
      } else if (node.op == "Conv" && AnchorsConv(node)) {
        EmitConv(node);
      } else if (bool pool = AnchorsPool(node); pool || FollowsBlocked(node) || ConcatsBlockedChannels(node)) {
        EmitBlocked(node, HomeBlock(node.inputs[FirstBlockedInput(node)]), pool);
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
  static std::string LayoutName(int64_t block) { return block ? "NCHW" + std::to_string(block) + "c" : "NCHW"; }

  // The largest candidate block dividing `channels`, or 0.
  int64_t BlockFor(int64_t channels) const {
    for (int64_t b : candidates_)
      if (channels > 0 && channels % b == 0) return b;
    return 0;
  }

  Shape ShapeOf(const std::string& value) const { return source_.TypeOf(value).shape; }
  bool IsBlocked(const std::string& value) const { return home_.count(value) != 0; }
  int64_t HomeBlock(const std::string& value) const { return home_.at(value); }

  // The block a 2-D conv's input is read in: the block it was produced in, or
  // the best block for its channels (0: NCHW, the conv reads one channel at a
  // time, e.g. an RGB image).
  int64_t ConvInputBlock(const Node& node) const {
    const std::string& x = node.inputs[0];
    return IsBlocked(x) ? HomeBlock(x) : BlockFor(ShapeOf(x)[1]);
  }

  // A depthwise conv with one filter per channel: blocked, each channel block is
  // one vector and every tap a contiguous load (ops' depthwise_nchwc).
  bool IsDepthwise(const Node& node) const {
    int64_t groups = node.attrs.GetInt("group", 1);
    const Shape& in = ShapeOf(node.inputs[0]);
    const Shape& w = ShapeOf(node.inputs[1]);
    return groups > 1 && in[1] == groups && w.size() == 4 && w[0] == groups && w[1] == 1;
  }

  // 2-D convs whose output channels block start (or continue) a region; a
  // depthwise conv keeps its input's block.
  bool AnchorsConv(const Node& node) const {
    if (node.attrs.GetString("data_layout", "NCHW") != "NCHW") return false;
    if (ShapeOf(node.inputs[0]).size() != 4 || ShapeOf(node.outputs[0]).size() != 4) return false;
    if (BlockFor(ShapeOf(node.outputs[0])[1]) == 0) return false;
    if (node.attrs.GetInt("group", 1) == 1) return true;
    return IsDepthwise(node) && ConvInputBlock(node) != 0;
  }

  // Pools continue a region whose input is already blocked.
  bool AnchorsPool(const Node& node) const {
    bool pool = node.op == "MaxPool" || node.op == "AveragePool" || node.op == "GlobalAveragePool" ||
                node.op == "GlobalMaxPool";
    if (!pool || node.attrs.GetString("data_layout", "NCHW") != "NCHW") return false;
    return node.outputs.size() == 1 && ShapeOf(node.inputs[0]).size() == 4 && IsBlocked(node.inputs[0]);
  }

  size_t FirstBlockedInput(const Node& node) const {
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (!node.inputs[i].empty() && IsBlocked(node.inputs[i])) return i;
    return 0;
  }

  // A constant of shape [C,1,1] or [1,C,1,1]: one value per channel of a C-channel activation.
  bool IsPerChannelConstant(const std::string& value, int64_t channels) const {
    if (!source_.IsConstant(value)) return false;
    Shape shape = ShapeOf(value);
    if (shape.size() == 4 && shape[0] == 1) shape.erase(shape.begin());
    return shape == Shape{channels, 1, 1};
  }

  // Elementwise ops continue a region when every operand is blocked (all in one
  // block), a scalar, or a per-channel constant.
  bool FollowsBlocked(const Node& node) const {
    if (KindOf(node) > OpKind::kBroadcast || node.outputs.size() != 1) return false;
    if (node.op == "BatchNormalization" || node.op == "PRelu" || node.op == "Dropout") return false;
    int64_t block = 0;
    bool full = false;
    const Shape& out = ShapeOf(node.outputs[0]);
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      if (IsBlocked(in)) {
        // The full activation, or a blocked per-channel value [N, C, 1, 1] (a squeeze-and-excitation
        // scale: [N, C/c, 1, 1, c] broadcasts against the blocked activation as it is).
        const Shape& shape = ShapeOf(in);
        bool per_channel = shape.size() == 4 && out.size() == 4 && shape[1] == out[1] && shape[2] == 1 &&
                           shape[3] == 1 && (shape[0] == out[0] || shape[0] == 1);
        if (shape != out && !per_channel) return false;
        full = full || shape == out;
        if (block != 0 && HomeBlock(in) != block) return false;
        block = HomeBlock(in);
      } else if (source_.TypeOf(in).numel() != 1 && !IsPerChannelConstant(in, OutputChannels(node))) {
        return false;
      }
    }
    return block != 0 && full;
  }

  // A channel concat of values blocked in one block (each input's channels a
  // multiple of it) is the same concat along the 5-D layout's channel-chunk
  // axis: Inception's branch concats stay inside the region.
  bool ConcatsBlockedChannels(const Node& node) const {
    if (node.op != "Concat" || node.outputs.size() != 1 || ShapeOf(node.outputs[0]).size() != 4) return false;
    int64_t axis = node.attrs.GetInt("axis", 0);
    if (axis != 1 && axis != -3) return false;
    int64_t block = 0;
    for (const std::string& in : node.inputs) {
      if (in.empty() || !IsBlocked(in) || (block != 0 && HomeBlock(in) != block)) return false;
      block = HomeBlock(in);
    }
    return block != 0;
  }

  int64_t OutputChannels(const Node& node) const {
    const Shape& shape = ShapeOf(node.outputs[0]);
    return shape.size() == 4 ? shape[1] : -1;
  }

  // A per-channel constant laid out as [1, C/block, 1, 1, block], which broadcasts against blocked activations.
  std::string BlockedConstant(const std::string& value, int64_t block) {
    std::string& twin = twins_[value][block];
    if (!twin.empty()) return twin;
    const Tensor& plain = source_.ConstantOf(value);
    int64_t channels = plain.numel();
    Tensor blocked(plain.dtype(), {1, channels / block, 1, 1, block});
    for (int64_t c = 0; c < channels; ++c) blocked.SetDouble(c, plain.GetDouble(c));  // same linear order
    twin = result_.FreshName(value + "_" + LayoutName(block));
    result_.AddConstant(twin, blocked);
    return twin;
  }

  // The blocked twin of an NCHW value, inserting NCHW -> blocked at a region's entry.
  // A value produced in another block converts directly between the two blocks (one copy, not
  // blocked -> NCHW -> blocked).
  std::string Blocked(const std::string& value, int64_t block) {
    std::string& twin = twins_[value][block];
    if (!twin.empty()) return twin;
    twin = result_.FreshName(value + "_" + LayoutName(block));
    std::string twin_name = twin;  // Transform() may grow twins_
    if (IsBlocked(value) && !plain_ready_.count(value)) {
      int64_t home = HomeBlock(value);
      Transform(twins_[value][home], twin_name, LayoutName(home), LayoutName(block));
    } else {
      Transform(Plain(value), twin_name, "NCHW", LayoutName(block));
    }
    return twin_name;
  }

  // The NCHW form of a value, inserting blocked -> NCHW at a region's exit.
  std::string Plain(const std::string& value) {
    if (!IsBlocked(value) || plain_ready_.count(value)) return value;
    int64_t block = HomeBlock(value);
    Transform(twins_[value][block], value, LayoutName(block), "NCHW");
    plain_ready_.insert(value);
    return value;
  }

  void Transform(const std::string& from, const std::string& to, const std::string& src, const std::string& dst) {
    Node transform;
    transform.name = result_.FreshName((dst == "NCHW" ? "from_" + src : "to_" + dst) + "_" + from);
    transform.op = "LayoutTransform";
    transform.inputs = {from};
    transform.outputs = {to};
    transform.attrs.Set("src_layout", src);
    transform.attrs.Set("dst_layout", dst);
    Emit(transform);
  }

  void EmitConv(const Node& node) {
    int64_t in_block = ConvInputBlock(node);
    int64_t out_block = IsDepthwise(node) ? in_block : BlockFor(ShapeOf(node.outputs[0])[1]);
    Node copy = node;
    if (in_block) copy.inputs[0] = IsBlocked(node.inputs[0]) && HomeBlock(node.inputs[0]) == in_block
                                       ? twins_[node.inputs[0]][in_block]
                                       : Blocked(node.inputs[0], in_block);
    else copy.inputs[0] = Plain(node.inputs[0]);
    for (size_t i = 1; i < copy.inputs.size(); ++i)
      if (!copy.inputs[i].empty()) copy.inputs[i] = Plain(copy.inputs[i]);
    copy.attrs.Set("data_layout", LayoutName(in_block));
    if (out_block != in_block) copy.attrs.Set("out_layout", LayoutName(out_block));
    EmitWithBlockedOutput(copy, node.outputs[0], out_block);
  }

  // A pool or elementwise op of a region, computed in `block`.
  void EmitBlocked(const Node& node, int64_t block, bool pool) {
    Node copy = node;
    for (size_t i = 0; i < copy.inputs.size(); ++i) {
      std::string& in = copy.inputs[i];
      if (in.empty()) continue;
      if (pool && i > 0) {
        in = Plain(in);
      } else if (IsBlocked(in)) {
        in = twins_[in][block];
      } else if (source_.IsConstant(in) && source_.TypeOf(in).numel() != 1) {
        in = BlockedConstant(in, block);
      } else if (source_.TypeOf(in).numel() != 1) {
        in = Blocked(in, block);
      }
    }
    if (pool) copy.attrs.Set("data_layout", LayoutName(block));
    if (node.op == "Concat") copy.attrs.Set("axis", int64_t{1});  // channel chunks (a negative axis would shift)
    EmitWithBlockedOutput(copy, node.outputs[0], block);
  }

  void EmitWithBlockedOutput(Node node, const std::string& out, int64_t block) {
    std::string twin = result_.FreshName(out + "_" + LayoutName(block));
    node.outputs[0] = twin;
    Emit(node);
    twins_[out][block] = twin;
    home_[out] = block;
  }

  void Emit(const Node& node) {
    std::vector<TensorType> types = InferNodeTypes(node, result_.types, result_.constants);
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (!node.outputs[i].empty()) result_.types[node.outputs[i]] = types[i];
    result_.nodes.push_back(node);
  }

  // ---- channels-last blocks
  //
  // A block: Transpose(X, 0,2,3,1) of an NCHW activation, then only per-pixel ops on the
  // channels-last values (LayerNormalization over the last axis, MatMul by a constant
  // [C, C'], elementwise ops with per-channel constants or each other), leaving through
  // Transpose(., 0,3,1,2). Converted, it runs in the blocked layout of the convolutions
  // around it: the layer norm per pixel over the channels (data_layout), each MatMul as a 1x1
  // conv, the elementwise ops on the blocked twins, and both Transposes disappear.
  struct ChannelsLastBlock {
    const Node* entry = nullptr;
    std::vector<const Node*> exits;
    std::set<const Node*> nodes;
    bool active = false;
  };

  static bool IsPerm(const Node& node, const std::vector<int64_t>& perm) {
    return node.op == "Transpose" && node.outputs.size() == 1 && node.attrs.GetInts("perm", {}) == perm;
  }

  // A constant that broadcasts over the last (channel) axis of a [N, H, W, C] value only.
  bool IsChannelConstant(const std::string& value, int64_t channels) const {
    if (!source_.IsConstant(value)) return false;
    const Shape& shape = ShapeOf(value);
    if (NumElements(shape) == 1) return true;
    if (shape.empty() || shape.back() != channels || NumElements(shape) != channels || shape.size() > 4) return false;
    return true;
  }

  // The role of `node` reading channels-last values; false when the block cannot hold it.
  bool JoinsBlock(const Node& node, const std::set<std::string>& cl) const {
    if (node.outputs.size() != 1) return false;
    const std::string& out = node.outputs[0];
    if (IsPerm(node, {0, 3, 1, 2})) return true;
    if (source_.IsGraphOutput(out) || ShapeOf(out).size() != 4) return false;
    int64_t channels = ShapeOf(out)[3];
    if (node.op == "LayerNormalization") {
      int64_t axis = node.attrs.GetInt("axis", -1);
      if ((axis != -1 && axis != 3) || node.attrs.Has("data_layout") || !cl.count(node.inputs[0])) return false;
      for (size_t i = 1; i < node.inputs.size(); ++i)
        if (!node.inputs[i].empty() && (cl.count(node.inputs[i]) || ShapeOf(node.inputs[i]) != Shape{channels}))
          return false;
      return true;
    }
    if (node.op == "MatMul") {
      const std::string& w = node.inputs[1];
      return cl.count(node.inputs[0]) && source_.IsConstant(w) && ShapeOf(w).size() == 2 &&
             source_.ConstantOf(w).dtype() == DType::Float(32) && BlockFor(ShapeOf(w)[1]) != 0;
    }
    if (KindOf(node) > OpKind::kBroadcast || node.op == "BatchNormalization" || node.op == "PRelu" ||
        node.op == "Dropout")
      return false;
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      if (cl.count(in) ? ShapeOf(in) != ShapeOf(out) : !IsChannelConstant(in, channels)) return false;
    }
    return true;
  }

  void FindChannelsLastBlocks() {
    std::map<std::string, std::vector<int>> consumers = source_.Consumers();
    for (const Node& entry : source_.nodes) {
      if (!IsPerm(entry, {0, 2, 3, 1}) || ShapeOf(entry.inputs[0]).size() != 4) continue;
      if (BlockFor(ShapeOf(entry.inputs[0])[1]) == 0) continue;
      ChannelsLastBlock block;
      block.entry = &entry;
      block.nodes.insert(&entry);
      std::set<std::string> cl = {entry.outputs[0]};
      std::vector<std::string> work = {entry.outputs[0]};
      bool ok = !source_.IsGraphOutput(entry.outputs[0]);
      while (ok && !work.empty()) {
        std::string value = work.back();
        work.pop_back();
        for (int c : consumers[value]) {
          const Node& n = source_.nodes[c];
          if (block.nodes.count(&n)) continue;
          if (!JoinsBlock(n, cl) || block_of_.count(&n)) {
            ok = false;
            break;
          }
          block.nodes.insert(&n);
          if (IsPerm(n, {0, 3, 1, 2})) {
            block.exits.push_back(&n);
          } else {
            cl.insert(n.outputs[0]);
            work.push_back(n.outputs[0]);
          }
        }
      }
      // Every input of a member is the entry's value, a block value or a constant.
      for (const Node* n : block.nodes) {
        if (n == &entry) continue;
        for (const std::string& in : n->inputs)
          ok = ok && (in.empty() || cl.count(in) || source_.IsConstant(in));
      }
      if (!ok || block.exits.empty()) continue;
      blocks_.push_back(block);
      for (const Node* n : block.nodes) block_of_[n] = blocks_.size() - 1;
    }
  }

  // Decided at the block's entry, when the layout of X is known: convert when X is blocked. The
  // estimated cost of leaving the block channels-last is two full copies (blocked -> NHWC at the
  // entry, NHWC -> blocked at each exit, where the convolutions go on); converted, the same ops
  // run blocked with no copy (the MatMuls as 1x1 convs, the same FLOPs).
  bool Converted(size_t index, const Node& node) {
    ChannelsLastBlock& block = blocks_[index];
    if (&node == block.entry) {
      const std::string& x = node.inputs[0];
      int64_t copies_channels_last = IsBlocked(x) ? ShapeOf(x)[0] * ShapeOf(x)[1] * ShapeOf(x)[2] * ShapeOf(x)[3] : 0;
      for (const Node* exit : block.exits) copies_channels_last += NumElements(ShapeOf(exit->outputs[0]));
      int64_t copies_blocked = IsBlocked(x) ? 0 : copies_channels_last;
      block.active = IsBlocked(x) && copies_blocked < copies_channels_last;
    }
    return block.active;
  }

  // The blocked twin of channels-last value `value` (in `block`), converting blocks if needed.
  std::string ClTwin(const std::string& value, int64_t block) {
    auto [name, home] = cl_twin_.at(value);
    if (home == block) return name;
    std::string& twin = cl_converted_[name][block];
    if (twin.empty()) {
      twin = result_.FreshName(name + "_" + LayoutName(block));
      std::string target = twin;
      Transform(name, target, LayoutName(home), LayoutName(block));
    }
    return twin;
  }

  void EmitChannelsLast(const Node& node) {
    if (&node == blocks_[block_of_.at(&node)].entry) {
      const std::string& x = node.inputs[0];
      cl_twin_[node.outputs[0]] = {twins_[x][HomeBlock(x)], HomeBlock(x)};
      return;
    }
    if (IsPerm(node, {0, 3, 1, 2})) {  // exit: the NCHW value is the blocked twin itself
      auto [name, block] = cl_twin_.at(node.inputs[0]);
      twins_[node.outputs[0]][block] = name;
      home_[node.outputs[0]] = block;
      return;
    }
    Node copy = node;
    const std::string& out = node.outputs[0];
    int64_t block = 0;
    for (const std::string& in : node.inputs)
      if (!block && cl_twin_.count(in)) block = cl_twin_.at(in).second;
    if (node.op == "MatMul") {
      const Tensor& w = source_.ConstantOf(node.inputs[1]);
      int64_t cin = w.shape()[0], cout = w.shape()[1];
      Tensor filter(w.dtype(), {cout, cin, 1, 1});
      for (int64_t i = 0; i < cin; ++i)
        for (int64_t o = 0; o < cout; ++o) filter.SetDouble(o * cin + i, w.GetDouble(i * cout + o));
      std::string filter_name = result_.FreshName(node.inputs[1] + "_1x1");
      result_.AddConstant(filter_name, filter);
      int64_t out_block = BlockFor(cout);
      copy.op = "Conv";
      copy.inputs = {ClTwin(node.inputs[0], block), filter_name};
      copy.attrs = Attributes();
      copy.attrs.Set("kernel_shape", std::vector<int64_t>{1, 1});
      copy.attrs.Set("data_layout", LayoutName(block));
      if (out_block != block) copy.attrs.Set("out_layout", LayoutName(out_block));
      block = out_block;
    } else if (node.op == "LayerNormalization") {
      copy.inputs[0] = ClTwin(node.inputs[0], block);
      copy.attrs.Set("axis", int64_t{1});
      copy.attrs.Set("data_layout", LayoutName(block));
    } else {
      for (std::string& in : copy.inputs) {
        if (in.empty()) continue;
        if (cl_twin_.count(in)) {
          in = ClTwin(in, block);
        } else if (NumElements(ShapeOf(in)) != 1) {
          in = BlockedConstant(in, block);  // a per-channel constant, same linear order as [C]
        }
      }
    }
    std::string twin = result_.FreshName(out + "_" + LayoutName(block));
    copy.outputs = {twin};
    Emit(copy);
    cl_twin_[out] = {twin, block};
  }

  const Graph& source_;
  Graph result_;
  std::vector<ChannelsLastBlock> blocks_;
  std::map<const Node*, size_t> block_of_;
  std::map<std::string, std::pair<std::string, int64_t>> cl_twin_;  // channels-last value -> (blocked twin, block)
  std::map<std::string, std::map<int64_t, std::string>> cl_converted_;
  std::vector<int64_t> candidates_;                              // blocks to try, largest first
  std::map<std::string, std::map<int64_t, std::string>> twins_;  // NCHW value -> block -> its blocked twin
  std::map<std::string, int64_t> home_;                          // values produced blocked -> their block
  std::set<std::string> plain_ready_;                            // blocked values whose NCHW form exists
};

// The pass's promise: no layout transform reads another one (a chain of copies where one would
// do, or two that cancel); kInternal names the pair when that is broken.
void CheckNoBackToBackTransforms(const Graph& g) {
  std::map<std::string, int> producers = g.Producers();
  for (const Node& node : g.nodes) {
    if (node.op != "LayoutTransform") continue;
    auto p = producers.find(node.inputs[0]);
    if (p == producers.end()) continue;
    const Node& before = g.nodes[p->second];
    AGATE_REQUIRE(before.op != "LayoutTransform", kInternal)
        << "layout transformation left " << before.Describe() << " (" << before.attrs.GetString("src_layout") << " -> "
        << before.attrs.GetString("dst_layout") << ") feeding " << node.Describe() << " ("
        << node.attrs.GetString("src_layout") << " -> " << node.attrs.GetString("dst_layout") << ")";
  }
}

}  // namespace

Graph TransformLayout(const Graph& graph, int64_t block) {
  if (block <= 1) return graph;
  Graph result = LayoutRewriter(graph, block).Run();
  DropUnusedValues(&result);
  CheckNoBackToBackTransforms(result);
  return result;
}

}  // namespace graph
}  // namespace agate
