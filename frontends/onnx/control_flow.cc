#include "frontends/onnx/control_flow.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "core/graph/shape_rules.h"
#include "core/support/error.h"
#include "frontends/onnx/import_steps.h"
#include "frontends/onnx/tensor_proto.h"

namespace agate {
namespace onnx_frontend {

using graph::Graph;
using graph::Node;
using graph::Tensor;
using graph::TensorType;

bool IsControlFlow(const std::string& op_type) { return op_type == "If" || op_type == "Loop" || op_type == "Scan"; }

std::string CheckControlFlow(const onnx::NodeProto& proto, int opset, const std::string& base_dir) {
  std::set<std::string> graphs, allowed;
  if (proto.op_type() == "If") graphs = {"then_branch", "else_branch"};
  if (proto.op_type() == "Loop") graphs = {"body"};
  if (proto.op_type() == "Scan") {
    graphs = {"body"};
    allowed = opset < 9 ? std::set<std::string>{"num_scan_inputs", "directions"}
                        : std::set<std::string>{"num_scan_inputs", "scan_input_axes", "scan_input_directions",
                                                "scan_output_axes", "scan_output_directions"};
  }
  size_t found = 0;
  for (const auto& a : proto.attribute()) {
    if (allowed.count(a.name())) continue;
    if (!graphs.count(a.name())) return "attribute '" + a.name() + "' not supported";
    ++found;
    try {
      TranslateAll(a.g(), opset, base_dir);
    } catch (const Error& e) {
      return a.name() + ": " + e.message();
    }
  }
  return found == graphs.size() ? "" : "a subgraph attribute is missing";
}

namespace {

const onnx::GraphProto& SubgraphOf(const onnx::NodeProto& proto, const std::string& name) {
  for (const auto& a : proto.attribute())
    if (a.name() == name && a.type() == onnx::AttributeProto::GRAPH) return a.g();
  AGATE_THROW(kInvalidArgument) << "node '" << proto.name() << "' (" << proto.op_type() << ") has no '" << name
                                << "' subgraph";
}

Node MakeNode(const Graph& g, const std::string& name, const std::string& op, std::vector<std::string> inputs,
              std::vector<std::string> outputs) {
  Node node;
  node.name = g.FreshName(name);
  node.op = op;
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  return node;
}

// Imports `body` in place: its inputs bound to outer values, its outputs written
// to `outputs` (an empty name keeps a prefixed one), every other value of the body
// prefixed with `prefix` so names never collide. Bodies read outer values by name.
void InlineGraph(const onnx::GraphProto& body, const std::string& prefix,
                 const std::map<std::string, std::string>& bindings, const std::vector<std::string>& outputs,
                 int opset, const std::string& base_dir, Graph* result) {
  AGATE_REQUIRE(body.output_size() == static_cast<int>(outputs.size()), kInvalidArgument)
      << "subgraph '" << body.name() << "' has " << body.output_size() << " outputs, its node " << outputs.size();
  std::map<std::string, std::string> rename = bindings;
  for (const auto& init : body.initializer()) {
    rename[init.name()] = prefix + init.name();
    result->AddConstant(prefix + init.name(), TensorFromProto(init, base_dir));
  }
  for (const auto& n : body.node())
    for (const std::string& out : n.output())
      if (!out.empty()) rename[out] = prefix + out;
  std::vector<std::string> targets(outputs.size());
  std::set<std::string> produced_here;
  for (int i = 0; i < body.output_size(); ++i) {
    const std::string& out = body.output(i).name();
    targets[i] = outputs[i].empty() ? prefix + "output_" + std::to_string(i) : outputs[i];
    bool produced = false;
    for (const auto& n : body.node())
      for (const std::string& o : n.output()) produced |= o == out;
    if (produced && !produced_here.count(out)) {
      rename[out] = targets[i];
      produced_here.insert(out);
    }
  }
  onnx::GraphProto inlined;
  auto resolve = [&rename](const std::string& v) { return rename.count(v) ? rename.at(v) : v; };
  for (int i = 0; i < body.node_size(); ++i) {
    onnx::NodeProto n = body.node(i);
    n.set_name(prefix + NodeLabel(body.node(i), i));
    for (std::string& in : *n.mutable_input()) in = resolve(in);
    for (std::string& out : *n.mutable_output()) out = resolve(out);
    *inlined.add_node() = n;
  }
  for (int i = 0; i < body.output_size(); ++i) {  // outputs that pass an input or outer value through
    if (resolve(body.output(i).name()) == targets[i]) continue;
    onnx::NodeProto* copy = inlined.add_node();
    copy->set_op_type("Identity");
    copy->set_name(prefix + "output_copy_" + std::to_string(i));
    copy->add_input(resolve(body.output(i).name()));
    copy->add_output(targets[i]);
  }
  std::vector<Node> translated = TranslateAll(inlined, opset, base_dir);
  std::set<std::string> available;
  for (const auto& [name, type] : result->types) available.insert(name);
  for (int index : TopologicalOrder(inlined, available))
    ImportNode(inlined.node(index), translated[index], opset, base_dir, result);
}

// If with a compile-time condition: the taken branch replaces the node.
void InlineIf(const onnx::NodeProto& proto, const Node& node, int opset, const std::string& base_dir,
              Graph* result) {
  AGATE_REQUIRE(!node.inputs.empty() && result->IsConstant(node.inputs[0]), kUnsupported)
      << node.Describe() << ": the condition must be a compile-time constant (agate inlines the taken branch)";
  bool take_then = result->ConstantOf(node.inputs[0]).GetInt(0) != 0;
  InlineGraph(SubgraphOf(proto, take_then ? "then_branch" : "else_branch"), node.name + "/", {}, node.outputs, opset,
              base_dir, result);
}

// Stacks per-iteration values along `axis` (Unsqueeze each, then Concat) into `output`.
void Stack(const std::vector<std::string>& values, int64_t axis, const std::string& output, const std::string& where,
           Graph* result) {
  AGATE_REQUIRE(!values.empty(), kUnsupported) << where << ": a scan output of zero iterations has no static shape";
  std::vector<std::string> expanded;
  for (const std::string& v : values) {
    Node unsqueeze = MakeNode(*result, where + "/stack_unsqueeze", "Unsqueeze", {v}, {result->FreshName(v + "_1")});
    unsqueeze.attrs.Set("axes", std::vector<int64_t>{axis});
    expanded.push_back(unsqueeze.outputs[0]);
    AppendNode(unsqueeze, result);
  }
  Node concat = MakeNode(*result, where + "/stack_concat", "Concat", expanded, {output});
  concat.attrs.Set("axis", axis);
  AppendNode(concat, result);
}

void CopyTo(const std::string& value, const std::string& output, const std::string& where, Graph* result) {
  if (output.empty()) return;
  AppendNode(MakeNode(*result, where + "/copy", "Identity", {value}, {output}), result);
}

// Loop with a compile-time trip count and/or condition: the body is unrolled.
void UnrollLoop(const onnx::NodeProto& proto, const Node& node, int opset, const std::string& base_dir,
                Graph* result) {
  const onnx::GraphProto& body = SubgraphOf(proto, "body");
  std::string where = node.Describe();
  auto constant_input = [&](size_t i) -> const Tensor* {
    if (i >= node.inputs.size() || node.inputs[i].empty()) return nullptr;
    AGATE_REQUIRE(result->IsConstant(node.inputs[i]), kUnsupported)
        << where << ": the trip count and condition must be compile-time constants (agate unrolls loops)";
    return &result->ConstantOf(node.inputs[i]);
  };
  const Tensor* trip_count = constant_input(0);
  const Tensor* condition = constant_input(1);
  AGATE_REQUIRE(trip_count || condition, kUnsupported) << where << ": a loop without trip count or condition";
  size_t carried = node.inputs.size() - 2;
  AGATE_REQUIRE(body.input_size() == static_cast<int>(carried) + 2 && body.output_size() >= static_cast<int>(carried) + 1,
                kInvalidArgument)
      << where << ": the body's inputs and outputs do not match the loop's";
  size_t scans = body.output_size() - 1 - carried;
  std::vector<std::string> state(node.inputs.begin() + 2, node.inputs.end());
  std::vector<std::vector<std::string>> scanned(scans);
  bool keep_going = condition == nullptr || condition->GetInt(0) != 0;
  constexpr int64_t kMaxIterations = 10000;
  for (int64_t i = 0; keep_going && (trip_count == nullptr || i < trip_count->GetInt(0)); ++i) {
    AGATE_REQUIRE(i < kMaxIterations, kUnsupported) << where << ": more than " << kMaxIterations << " iterations";
    std::string prefix = node.name + "/iteration_" + std::to_string(i) + "/";
    result->AddConstant(prefix + "iteration", Tensor::FromInts(ir::DType::Int(64), {}, {i}));
    result->AddConstant(prefix + "condition", Tensor::FromInts(ir::DType::Bool(), {}, {1}));
    std::map<std::string, std::string> bindings{{body.input(0).name(), prefix + "iteration"},
                                                {body.input(1).name(), prefix + "condition"}};
    std::vector<std::string> outputs{prefix + "condition_out"};
    for (size_t k = 0; k < carried; ++k) {
      bindings[body.input(2 + k).name()] = state[k];
      outputs.push_back(prefix + "state_" + std::to_string(k));
    }
    for (size_t j = 0; j < scans; ++j) outputs.push_back(prefix + "scan_" + std::to_string(j));
    InlineGraph(body, prefix, bindings, outputs, opset, base_dir, result);
    AGATE_REQUIRE(result->IsConstant(outputs[0]), kUnsupported)
        << where << ": the loop condition must fold to a constant in every iteration";
    keep_going = result->ConstantOf(outputs[0]).GetInt(0) != 0;
    for (size_t k = 0; k < carried; ++k) state[k] = outputs[1 + k];
    for (size_t j = 0; j < scans; ++j) scanned[j].push_back(outputs[1 + carried + j]);
  }
  for (size_t k = 0; k < carried && k < node.outputs.size(); ++k) CopyTo(state[k], node.outputs[k], node.name, result);
  for (size_t j = 0; j < scans && carried + j < node.outputs.size(); ++j) {
    if (!node.outputs[carried + j].empty()) Stack(scanned[j], 0, node.outputs[carried + j], node.name, result);
  }
}

// A scan's body unrolled over `length` steps from `states`: step t binds each scan input's
// element t along its axis (from the end when its direction is 1). Returns the final states
// and, per scan output, its element of every step in step order.
struct ScanSteps {
  std::vector<std::string> states;
  std::vector<std::vector<std::string>> scanned;
};
ScanSteps UnrollScanBody(const onnx::GraphProto& body, const std::string& prefix, std::vector<std::string> states,
                         const std::vector<std::string>& scan_inputs, const std::vector<int64_t>& in_axes,
                         const std::vector<int64_t>& in_dirs, int64_t length, int opset, const std::string& base_dir,
                         Graph* result) {
  const int64_t n_states = static_cast<int64_t>(states.size());
  const int64_t n_inputs = static_cast<int64_t>(scan_inputs.size());
  ScanSteps steps;
  steps.scanned.resize(body.output_size() - n_states);
  for (int64_t t = 0; t < length; ++t) {
    std::string step = prefix + "step_" + std::to_string(t) + "/";
    std::map<std::string, std::string> bindings;
    for (int64_t k = 0; k < n_states; ++k) bindings[body.input(k).name()] = states[k];
    for (int64_t s = 0; s < n_inputs; ++s) {
      std::string index = step + "index_" + std::to_string(s);
      result->AddConstant(index, Tensor::FromInts(ir::DType::Int(64), {}, {in_dirs[s] ? length - 1 - t : t}));
      Node gather = MakeNode(*result, step + "slice", "Gather", {scan_inputs[s], index},
                             {step + "element_" + std::to_string(s)});
      gather.attrs.Set("axis", in_axes[s]);
      AppendNode(gather, result);
      bindings[body.input(n_states + s).name()] = gather.outputs[0];
    }
    std::vector<std::string> outputs;
    for (int64_t k = 0; k < n_states; ++k) outputs.push_back(step + "state_" + std::to_string(k));
    for (size_t j = 0; j < steps.scanned.size(); ++j) outputs.push_back(step + "scan_" + std::to_string(j));
    InlineGraph(body, step, bindings, outputs, opset, base_dir, result);
    for (int64_t k = 0; k < n_states; ++k) states[k] = outputs[k];
    for (size_t j = 0; j < steps.scanned.size(); ++j) steps.scanned[j].push_back(outputs[n_states + j]);
  }
  steps.states = states;
  return steps;
}

// Scan (opset >= 9): the sequence length is static, so the body is unrolled.
void UnrollScan(const onnx::NodeProto& proto, const Node& node, int opset, const std::string& base_dir,
                Graph* result) {
  const onnx::GraphProto& body = SubgraphOf(proto, "body");
  std::string where = node.Describe();
  int64_t scan_inputs = node.attrs.GetInt("num_scan_inputs");
  int64_t states = static_cast<int64_t>(node.inputs.size()) - scan_inputs;
  int64_t scan_outputs = body.output_size() - states;
  AGATE_REQUIRE(states >= 0 && scan_inputs > 0 && scan_outputs >= 0 && body.input_size() == states + scan_inputs,
                kInvalidArgument)
      << where << ": the body's inputs and outputs do not match the scan's";
  auto per = [&](const std::string& attr, int64_t n) {
    std::vector<int64_t> v = node.attrs.GetInts(attr, std::vector<int64_t>(n, 0));
    AGATE_REQUIRE(static_cast<int64_t>(v.size()) == n, kInvalidArgument) << where << ": " << attr << " needs " << n;
    return v;
  };
  std::vector<int64_t> in_axes = per("scan_input_axes", scan_inputs), in_dirs = per("scan_input_directions", scan_inputs);
  std::vector<int64_t> out_axes = per("scan_output_axes", scan_outputs);
  std::vector<int64_t> out_dirs = per("scan_output_directions", scan_outputs);
  int64_t length = -1;
  for (int64_t s = 0; s < scan_inputs; ++s) {
    const TensorType& t = result->TypeOf(node.inputs[states + s]);
    in_axes[s] = graph::NormalizeAxis(in_axes[s], t.rank(), where);
    AGATE_REQUIRE(length < 0 || t.shape[in_axes[s]] == length, kInvalidArgument)
        << where << ": scan inputs have different lengths";
    length = t.shape[in_axes[s]];
  }
  std::vector<std::string> initial(node.inputs.begin(), node.inputs.begin() + states);
  std::vector<std::string> inputs(node.inputs.begin() + states, node.inputs.end());
  ScanSteps steps =
      UnrollScanBody(body, node.name + "/", initial, inputs, in_axes, in_dirs, length, opset, base_dir, result);
  for (int64_t k = 0; k < states && k < static_cast<int64_t>(node.outputs.size()); ++k)
    CopyTo(steps.states[k], node.outputs[k], node.name, result);
  for (int64_t j = 0; j < scan_outputs && states + j < static_cast<int64_t>(node.outputs.size()); ++j) {
    const std::string& out = node.outputs[states + j];
    if (out.empty()) continue;
    std::vector<std::string> values = steps.scanned[j];
    if (out_dirs[j]) std::reverse(values.begin(), values.end());
    int64_t rank = values.empty() ? 1 : result->TypeOf(values[0]).rank() + 1;
    Stack(values, graph::NormalizeAxis(out_axes[j], static_cast<int>(rank), where), out, node.name, result);
  }
}

// Scan of opset 8: inputs (sequence_lens, states..., scan inputs...), every state and scan
// input with a batch axis 0, the scan inputs' sequence axis 1. Each batch element is scanned
// on its own (its states and inputs gathered at that element: opset 9's form with axis 0) and
// the final states and scan outputs (in step order) stacked back along the batch axis.
// sequence_lens, when given, must be a constant equal to the sequence length for every
// element: shorter sequences (outputs padded past their length) are refused by name.
void UnrollScan8(const onnx::NodeProto& proto, const Node& node, int opset, const std::string& base_dir,
                 Graph* result) {
  const onnx::GraphProto& body = SubgraphOf(proto, "body");
  std::string where = node.Describe();
  int64_t scan_inputs = node.attrs.GetInt("num_scan_inputs");
  int64_t states = static_cast<int64_t>(node.inputs.size()) - 1 - scan_inputs;
  int64_t scan_outputs = body.output_size() - states;
  AGATE_REQUIRE(!node.inputs.empty() && states >= 0 && scan_inputs > 0 && scan_outputs >= 0 &&
                    body.input_size() == states + scan_inputs,
                kInvalidArgument)
      << where << ": the body's inputs and outputs do not match the scan's (opset 8: sequence_lens, states, scan inputs)";
  std::vector<int64_t> dirs = node.attrs.GetInts("directions", std::vector<int64_t>(scan_inputs, 0));
  AGATE_REQUIRE(static_cast<int64_t>(dirs.size()) == scan_inputs, kInvalidArgument)
      << where << ": directions needs " << scan_inputs << " values";
  const TensorType& first = result->TypeOf(node.inputs[1 + states]);
  AGATE_REQUIRE(first.rank() >= 2, kInvalidArgument)
      << where << ": scan input '" << node.inputs[1 + states] << "' " << graph::ShapeToString(first.shape)
      << " needs a batch axis 0 and a sequence axis 1";
  const int64_t batch = first.shape[0], length = first.shape[1];
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    const TensorType& t = result->TypeOf(node.inputs[i]);
    bool scanned = static_cast<int64_t>(i) > states;
    AGATE_REQUIRE(t.rank() >= (scanned ? 2 : 1) && t.shape[0] == batch && (!scanned || t.shape[1] == length),
                  kInvalidArgument)
        << where << ": input '" << node.inputs[i] << "' " << graph::ShapeToString(t.shape) << " does not match the batch "
        << batch << (scanned ? " and sequence length " + std::to_string(length) : std::string());
  }
  if (!node.inputs[0].empty()) {
    AGATE_REQUIRE(result->IsConstant(node.inputs[0]), kUnsupported)
        << where << ": sequence_lens must be a compile-time constant (agate unrolls the scan)";
    const Tensor& lens = result->ConstantOf(node.inputs[0]);
    for (int64_t b = 0; b < lens.numel(); ++b) {
      AGATE_REQUIRE(lens.GetInt(b) == length, kUnsupported)
          << where << ": sequence_lens[" << b << "] = " << lens.GetInt(b) << " is shorter than the sequence length "
          << length << "; variable-length sequences (outputs padded past their length) are not supported";
    }
  }
  std::vector<std::vector<std::string>> final_states(states), outputs(scan_outputs);
  for (int64_t b = 0; b < batch; ++b) {
    std::string prefix = node.name + "/batch_" + std::to_string(b) + "/";
    std::string index = prefix + "index";
    result->AddConstant(index, Tensor::FromInts(ir::DType::Int(64), {}, {b}));
    auto element = [&](const std::string& value, const std::string& name) {
      Node gather = MakeNode(*result, prefix + "batch_element", "Gather", {value, index}, {prefix + name});
      gather.attrs.Set("axis", int64_t{0});
      AppendNode(gather, result);
      return gather.outputs[0];
    };
    std::vector<std::string> initial, inputs;
    for (int64_t k = 0; k < states; ++k) initial.push_back(element(node.inputs[1 + k], "state_" + std::to_string(k)));
    for (int64_t s = 0; s < scan_inputs; ++s)
      inputs.push_back(element(node.inputs[1 + states + s], "input_" + std::to_string(s)));
    ScanSteps steps = UnrollScanBody(body, prefix, initial, inputs, std::vector<int64_t>(scan_inputs, 0), dirs, length,
                                     opset, base_dir, result);
    for (int64_t k = 0; k < states; ++k) final_states[k].push_back(steps.states[k]);
    for (int64_t j = 0; j < scan_outputs; ++j) {
      std::string stacked = result->FreshName(prefix + "scan_" + std::to_string(j));
      Stack(steps.scanned[j], 0, stacked, prefix + "scan_" + std::to_string(j), result);
      outputs[j].push_back(stacked);
    }
  }
  for (int64_t k = 0; k < states && k < static_cast<int64_t>(node.outputs.size()); ++k) {
    if (!node.outputs[k].empty()) Stack(final_states[k], 0, node.outputs[k], node.name, result);
  }
  for (int64_t j = 0; j < scan_outputs && states + j < static_cast<int64_t>(node.outputs.size()); ++j) {
    if (!node.outputs[states + j].empty()) Stack(outputs[j], 0, node.outputs[states + j], node.name, result);
  }
}

}  // namespace

void ImportControlFlow(const onnx::NodeProto& proto, const Node& node, int opset, const std::string& base_dir,
                       Graph* result) {
  if (proto.op_type() == "If") return InlineIf(proto, node, opset, base_dir, result);
  if (proto.op_type() == "Loop") return UnrollLoop(proto, node, opset, base_dir, result);
  AGATE_CHECK(proto.op_type() == "Scan") << proto.op_type() << " is not control flow";
  if (opset < 9) return UnrollScan8(proto, node, opset, base_dir, result);
  UnrollScan(proto, node, opset, base_dir, result);
}

}  // namespace onnx_frontend
}  // namespace agate
