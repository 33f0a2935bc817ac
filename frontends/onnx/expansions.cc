#include "frontends/onnx/expansions.h"

#include <algorithm>

#include "core/graph/shape_rules.h"
#include "core/support/error.h"
#include "frontends/onnx/import_steps.h"

namespace agate {
namespace onnx_frontend {

using graph::Graph;
using graph::Node;
using graph::Shape;
using graph::Tensor;

namespace {

// Emits one graph node named after the expanded node; returns its (single) output.
std::string Emit(Graph* g, const Node& from, const std::string& op, std::vector<std::string> inputs,
                 graph::Attributes attrs = {}, const std::string& output = "") {
  Node node;
  node.name = g->FreshName(from.name + "_" + op);
  node.op = op;
  node.inputs = std::move(inputs);
  node.outputs = {output.empty() ? g->FreshName(from.outputs[0] + "_" + op) : output};
  node.attrs = std::move(attrs);
  AppendNode(node, g);
  return node.outputs[0];
}

graph::Attributes Attrs(std::initializer_list<std::pair<const char*, graph::Attribute>> items) {
  graph::Attributes attrs;
  for (const auto& [name, value] : items) attrs.Set(name, value);
  return attrs;
}

const graph::TensorType& InputType(const Node& node, int i, const Graph& g) {
  AGATE_REQUIRE(i < static_cast<int>(node.inputs.size()) && !node.inputs[i].empty(), kInvalidArgument)
      << node.Describe() << ": input " << i << " is missing";
  return g.TypeOf(node.inputs[i]);
}

void ExpandMish(const Node& node, Graph* g) {
  std::string x = node.inputs[0];
  std::string softplus = Emit(g, node, "Softplus", {x});
  std::string tanh = Emit(g, node, "Tanh", {softplus});
  Emit(g, node, "Mul", {x, tanh}, {}, node.outputs[0]);
}

std::string Constant(Graph* g, const Node& from, const std::string& what, ir::DType dtype, Shape shape, double value) {
  std::string name = g->FreshName(from.name + "_" + what);
  int64_t n = graph::NumElements(shape);
  g->AddConstant(name, Tensor::FromDoubles(dtype, std::move(shape), std::vector<double>(n, value)));
  return name;
}

void ExpandGroupNormalization(const Node& node, int opset, Graph* g) {
  const graph::TensorType& x = InputType(node, 0, *g);
  InputType(node, 1, *g);
  InputType(node, 2, *g);
  std::string where = node.Describe();
  AGATE_REQUIRE(x.rank() >= 3, kInvalidArgument) << where << ": input rank must be >= 3, got " << x.ToString();
  int64_t groups = node.attrs.GetInt("num_groups");
  int64_t channels = x.shape[1];
  AGATE_REQUIRE(groups > 0 && channels % groups == 0, kInvalidArgument)
      << where << ": num_groups=" << groups << " does not divide the " << channels << " channels";
  int64_t per_group = x.numel() / (x.shape[0] * groups);
  double epsilon = node.attrs.GetFloat("epsilon", 1e-5);
  std::vector<int64_t> grouped{x.shape[0], groups, per_group};
  std::string reshaped = Emit(g, node, "Reshape", {node.inputs[0]}, Attrs({{"shape", grouped}}));
  std::vector<int64_t> back(x.shape.begin(), x.shape.end());
  if (opset < 21) {
    // Opset 18: scale and bias are per group, exactly InstanceNormalization's over [N, G, K].
    std::string normalized = Emit(g, node, "InstanceNormalization", {reshaped, node.inputs[1], node.inputs[2]},
                                  Attrs({{"epsilon", epsilon}}));
    Emit(g, node, "Reshape", {normalized}, Attrs({{"shape", back}}), node.outputs[0]);
    return;
  }
  // Opset 21: normalize per group, then scale and shift per channel.
  std::string ones = Constant(g, node, "ones", x.dtype, {groups}, 1.0);
  std::string zeros = Constant(g, node, "zeros", x.dtype, {groups}, 0.0);
  std::string normalized =
      Emit(g, node, "InstanceNormalization", {reshaped, ones, zeros}, Attrs({{"epsilon", epsilon}}));
  std::string restored = Emit(g, node, "Reshape", {normalized}, Attrs({{"shape", back}}));
  std::vector<int64_t> per_channel(x.rank() - 1, 1);
  per_channel[0] = channels;
  std::string scale = Emit(g, node, "Reshape", {node.inputs[1]}, Attrs({{"shape", per_channel}}));
  std::string bias = Emit(g, node, "Reshape", {node.inputs[2]}, Attrs({{"shape", per_channel}}));
  std::string scaled = Emit(g, node, "Mul", {restored, scale});
  Emit(g, node, "Add", {scaled, bias}, {}, node.outputs[0]);
}

void ExpandCenterCropPad(const Node& node, Graph* g) {
  const graph::TensorType& x = InputType(node, 0, *g);
  std::string where = node.Describe();
  InputType(node, 1, *g);
  AGATE_REQUIRE(g->IsConstant(node.inputs[1]), kUnsupported)
      << where << ": input 1 ('" << node.inputs[1]
      << "') must be a compile-time constant (it decides the output shape); it is computed at run time";
  std::vector<int64_t> target = g->ConstantOf(node.inputs[1]).ToInts();
  std::vector<int> axes;
  if (node.attrs.Has("axes")) {
    axes = graph::NormalizeAxes(node.attrs.GetInts("axes"), x.rank(), where);
  } else {
    for (int d = 0; d < x.rank(); ++d) axes.push_back(d);
  }
  AGATE_REQUIRE(target.size() == axes.size(), kInvalidArgument)
      << where << ": shape has " << target.size() << " values for " << axes.size() << " axes";
  std::vector<int64_t> starts, ends, crop_axes;
  std::vector<int64_t> pads(2 * x.rank(), 0);
  bool pad = false;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t in = x.shape[axes[i]], want = target[i];
    AGATE_REQUIRE(want >= 0, kInvalidArgument) << where << ": negative target extent " << want;
    if (in > want) {  // crop: the window's start rounds down
      int64_t start = (in - want) / 2;
      starts.push_back(start);
      ends.push_back(start + want);
      crop_axes.push_back(axes[i]);
    } else if (in < want) {  // pad: the leading pad rounds down
      pads[axes[i]] = (want - in) / 2;
      pads[axes[i] + x.rank()] = want - in - (want - in) / 2;
      pad = true;
    }
  }
  std::string value = node.inputs[0];
  if (!crop_axes.empty()) {
    value = Emit(g, node, "Slice", {value}, Attrs({{"starts", starts}, {"ends", ends}, {"axes", crop_axes}}),
                 pad ? "" : node.outputs[0]);
  }
  if (pad) value = Emit(g, node, "Pad", {value}, Attrs({{"pads", pads}}), node.outputs[0]);
  if (crop_axes.empty() && !pad) Emit(g, node, "Identity", {value}, {}, node.outputs[0]);
}

std::string UnknownAttribute(const Node& node, const std::vector<std::string>& known) {
  for (const auto& [name, value] : node.attrs.all())
    if (std::find(known.begin(), known.end(), name) == known.end()) return "attribute '" + name + "' not supported";
  return "";
}

}  // namespace

bool IsExpandedOp(const std::string& op) {
  return op == "Mish" || op == "GroupNormalization" || op == "CenterCropPad";
}

std::string CheckExpandedOp(const Node& node, int opset) {
  int inputs = static_cast<int>(node.inputs.size());
  if (node.outputs.size() != 1) return "expects one output, got " + std::to_string(node.outputs.size());
  if (node.op == "Mish") {
    if (inputs != 1) return "expects one input";
    return UnknownAttribute(node, {});
  }
  if (node.op == "CenterCropPad") {
    if (inputs != 2) return "expects two inputs (input, shape)";
    return UnknownAttribute(node, {"axes"});
  }
  // GroupNormalization
  if (inputs != 3) return "expects three inputs (X, scale, bias)";
  if (!node.attrs.Has("num_groups")) return "attribute 'num_groups' is required";
  int64_t stash = node.attrs.GetInt("stash_type", 1);
  if (stash != 1) return "stash_type=" + std::to_string(stash) + " not supported (only 1, float32)";
  (void)opset;
  return UnknownAttribute(node, {"epsilon", "num_groups", "stash_type"});
}

void ExpandNode(const Node& node, int opset, Graph* g) {
  for (const std::string& in : node.inputs) {
    AGATE_REQUIRE(in.empty() || g->HasValue(in), kInvalidArgument)
        << node.Describe() << ": input '" << in << "' is not defined";
  }
  if (node.op == "Mish") return ExpandMish(node, g);
  if (node.op == "GroupNormalization") return ExpandGroupNormalization(node, opset, g);
  if (node.op == "CenterCropPad") return ExpandCenterCropPad(node, g);
  AGATE_THROW(kInternal) << node.Describe() << " has no expansion";
}

}  // namespace onnx_frontend
}  // namespace agate
