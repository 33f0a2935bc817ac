#include "core/graph_eval/interpreter.h"

#include <algorithm>

#include "core/graph_eval/kernel.h"
#include "core/graph/shape_inference.h"
#include "core/support/error.h"

namespace agate {
namespace graph_eval {

using namespace graph;  // the graph IR is what this layer runs

bool HasKernel(const std::string& op) { return KernelRegistry::Global().Find(op) != nullptr; }

namespace {

// The output types of `node` on `inputs`, after checking that it can be evaluated at all.
std::vector<TensorType> OutputTypes(const Node& node, const std::vector<const Tensor*>& inputs) {
  AGATE_REQUIRE(KernelRegistry::Global().Find(node.op) != nullptr, kUnsupported)
      << node.Describe() << ": no reference kernel for " << node.op;
  AGATE_REQUIRE(!node.outputs.empty(), kInvalidArgument) << node.Describe() << " has no outputs";
  AGATE_CHECK(inputs.size() == node.inputs.size()) << node.Describe() << ": " << inputs.size() << " tensors for "
                                                   << node.inputs.size() << " inputs";
  std::map<std::string, TensorType> types;
  std::map<std::string, Tensor> constants;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr || node.inputs[i].empty()) continue;
    types[node.inputs[i]] = TensorType{inputs[i]->dtype(), inputs[i]->shape()};
    constants[node.inputs[i]] = *inputs[i];
  }
  return InferNodeTypes(node, types, constants);
}

std::vector<Tensor> RunKernel(const Node& node, const std::vector<const Tensor*>& inputs,
                              std::vector<TensorType> output_types) {
  const KernelFn* kernel = KernelRegistry::Global().Find(node.op);
  KernelContext ctx{node, inputs, std::move(output_types)};
  std::vector<Tensor> outputs;
  try {
    outputs = (*kernel)(ctx);
  } catch (const Error& e) {
    if (e.message().find(node.name) != std::string::npos) throw;
    throw Error(e.code(), node.Describe() + ": " + e.message());
  }
  AGATE_CHECK(outputs.size() >= node.outputs.size()) << node.Describe() << " kernel returned " << outputs.size();
  outputs.resize(node.outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    AGATE_CHECK(outputs[i].dtype() == ctx.outputs[i].dtype && outputs[i].shape() == ctx.outputs[i].shape)
        << node.Describe() << " output " << i << " is " << outputs[i].dtype() << ShapeToString(outputs[i].shape())
        << ", inferred " << ctx.outputs[i].ToString();
  }
  return outputs;
}

}  // namespace

std::vector<Tensor> EvaluateNode(const Node& node, const std::vector<const Tensor*>& inputs) {
  return RunKernel(node, inputs, OutputTypes(node, inputs));
}

bool FoldingIsBounded(int64_t largest_input_elements, const std::vector<TensorType>& outputs) {
  for (const TensorType& out : outputs)
    if (out.numel() > std::max(largest_input_elements, kMaxFoldedElementsFromSmallInputs)) return false;
  return true;
}

std::optional<std::vector<Tensor>> FoldNode(const Node& node, const std::vector<const Tensor*>& inputs) {
  std::vector<TensorType> types = OutputTypes(node, inputs);
  int64_t largest_input = 0;
  for (const Tensor* in : inputs)
    if (in != nullptr) largest_input = std::max(largest_input, in->numel());
  if (!FoldingIsBounded(largest_input, types)) return std::nullopt;
  return RunKernel(node, inputs, std::move(types));
}

std::map<std::string, Tensor> Interpret(const Graph& graph, const std::map<std::string, Tensor>& inputs) {
  return Interpret(graph, inputs, nullptr);
}

std::map<std::string, Tensor> Interpret(const Graph& graph, const std::map<std::string, Tensor>& inputs,
                                        const ValueObserver& observe) {
  std::map<std::string, Tensor> values = graph.constants;
  for (const std::string& name : graph.inputs) {
    auto it = inputs.find(name);
    AGATE_REQUIRE(it != inputs.end(), kInvalidArgument) << "no value given for graph input '" << name << "'";
    const TensorType& type = graph.TypeOf(name);
    AGATE_REQUIRE(it->second.dtype() == type.dtype && it->second.shape() == type.shape, kInvalidArgument)
        << "graph input '" << name << "' expects " << type.ToString() << ", got " << it->second.dtype()
        << ShapeToString(it->second.shape());
    values[name] = it->second;
    if (observe) observe(name, it->second);
  }
  // Free each intermediate after its last use so large graphs fit in memory.
  std::map<std::string, size_t> last_use;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& in : graph.nodes[i].inputs) last_use[in] = i;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    std::vector<const Tensor*> args;
    for (const std::string& in : node.inputs) {
      if (in.empty()) {
        args.push_back(nullptr);
        continue;
      }
      auto it = values.find(in);
      AGATE_REQUIRE(it != values.end(), kInvalidArgument) << node.Describe() << " reads undefined value '" << in << "'";
      args.push_back(&it->second);
    }
    std::vector<Tensor> outs = EvaluateNode(node, args);
    for (size_t o = 0; o < outs.size(); ++o) {
      if (node.outputs[o].empty()) continue;
      if (observe) observe(node.outputs[o], outs[o]);
      values[node.outputs[o]] = std::move(outs[o]);
    }
    for (const std::string& in : node.inputs) {
      if (!in.empty() && last_use[in] == i && !graph.IsGraphOutput(in) && !graph.IsConstant(in)) values.erase(in);
    }
  }
  std::map<std::string, Tensor> results;
  for (const std::string& out : graph.outputs) results[out] = values.at(out);
  return results;
}

}  // namespace graph_eval
}  // namespace agate
