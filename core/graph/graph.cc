#include "core/graph/graph.h"

#include <algorithm>
#include <set>

#include "core/support/error.h"

namespace agate {
namespace graph {

std::string TensorType::ToString() const { return dtype.ToString() + ShapeToString(shape); }

std::string Node::Describe() const { return op + " '" + name + "'"; }

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kElemWise: return "elemwise";
    case OpKind::kBroadcast: return "broadcast";
    case OpKind::kInjective: return "injective";
    case OpKind::kReduction: return "reduction";
    case OpKind::kOutEWiseFusable: return "out-elemwise-fusable";
    case OpKind::kOpaque: return "opaque";
  }
  return "?";
}

void Graph::AddInput(const std::string& value, TensorType type) {
  AGATE_REQUIRE(!HasValue(value), kInvalidArgument) << "graph input '" << value << "' is defined twice";
  inputs.push_back(value);
  types[value] = std::move(type);
}

void Graph::AddConstant(const std::string& value, Tensor tensor) {
  types[value] = TensorType{tensor.dtype(), tensor.shape()};
  constants[value] = std::move(tensor);
}

void Graph::AddNode(Node node) { nodes.push_back(std::move(node)); }

bool Graph::IsGraphInput(const std::string& value) const {
  return std::find(inputs.begin(), inputs.end(), value) != inputs.end();
}

bool Graph::IsGraphOutput(const std::string& value) const {
  return std::find(outputs.begin(), outputs.end(), value) != outputs.end();
}

const TensorType& Graph::TypeOf(const std::string& value) const {
  auto it = types.find(value);
  AGATE_REQUIRE(it != types.end(), kNotFound) << "value '" << value << "' has no type in graph '" << name << "'";
  return it->second;
}

const Tensor& Graph::ConstantOf(const std::string& value) const {
  auto it = constants.find(value);
  AGATE_REQUIRE(it != constants.end(), kNotFound) << "value '" << value << "' is not a constant";
  return it->second;
}

std::map<std::string, int> Graph::Producers() const {
  std::map<std::string, int> producers;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& out : nodes[i].outputs)
      if (!out.empty()) producers[out] = static_cast<int>(i);
  return producers;
}

std::map<std::string, std::vector<int>> Graph::Consumers() const {
  std::map<std::string, std::vector<int>> consumers;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::set<std::string> seen;
    for (const std::string& in : nodes[i].inputs)
      if (!in.empty() && seen.insert(in).second) consumers[in].push_back(static_cast<int>(i));
  }
  return consumers;
}

std::string Graph::FreshName(const std::string& base) const {
  std::set<std::string> used;
  for (const auto& [value, type] : types) used.insert(value);
  for (const Node& n : nodes) used.insert(n.name);
  if (!used.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!used.count(candidate)) return candidate;
  }
}

bool Graph::IsRunTimeExtents(const std::string& value) const {
  for (const auto& [data, extents] : run_time_extents)
    if (extents == value) return true;
  return false;
}

std::vector<std::string> Graph::VisibleOutputs() const {
  std::vector<std::string> visible;
  for (const std::string& out : outputs)
    if (!IsRunTimeExtents(out)) visible.push_back(out);
  return visible;
}

void Graph::Verify() const {
  std::set<std::string> defined;
  for (const std::string& in : inputs) {
    AGATE_REQUIRE(defined.insert(in).second, kInvalidArgument) << "graph input '" << in << "' is defined twice";
    AGATE_REQUIRE(!IsConstant(in), kInvalidArgument) << "graph input '" << in << "' is also a constant";
  }
  for (const auto& [value, tensor] : constants) {
    AGATE_REQUIRE(defined.insert(value).second, kInvalidArgument) << "constant '" << value << "' is defined twice";
  }
  std::set<std::string> node_names;
  for (const Node& node : nodes) {
    AGATE_REQUIRE(!node.name.empty() && node_names.insert(node.name).second, kInvalidArgument)
        << "node name '" << node.name << "' (" << node.op << ") is empty or not unique";
    for (const std::string& in : node.inputs) {
      AGATE_REQUIRE(in.empty() || defined.count(in), kInvalidArgument)
          << node.Describe() << " reads '" << in << "', which no earlier node, input or constant defines";
    }
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      AGATE_REQUIRE(defined.insert(out).second, kInvalidArgument)
          << node.Describe() << " redefines value '" << out << "'";
    }
  }
  for (const std::string& value : defined) {
    AGATE_REQUIRE(types.count(value), kInvalidArgument) << "value '" << value << "' has no type";
  }
  for (const std::string& out : outputs) {
    AGATE_REQUIRE(defined.count(out), kInvalidArgument) << "graph output '" << out << "' is never defined";
  }
  for (const auto& [value, extents] : run_time_extents) {
    AGATE_REQUIRE(IsGraphOutput(value) && IsGraphOutput(extents), kInvalidArgument)
        << "value '" << value << "' with run-time extents '" << extents << "': both must be graph outputs";
    const TensorType& e = TypeOf(extents);
    AGATE_REQUIRE(e.dtype == DType::Int(64) && e.shape == Shape{TypeOf(value).rank()}, kInvalidArgument)
        << "run-time extents '" << extents << "' of '" << value << "' must be int64[" << TypeOf(value).rank()
        << "], not " << e.ToString();
    // A reader of the value computes on its upper bound, row for row (the importer checks that);
    // only the operators that count its rows or change its layout read the extents.
    for (const Node& node : nodes) {
      for (const std::string& in : node.inputs) {
        AGATE_REQUIRE(in != extents || node.op == "RunTimeRowExtents" || node.op == "RunTimeToBoundLayout" ||
                          node.op == "RunTimeToCompactLayout",
                      kInvalidArgument)
            << node.Describe() << " reads '" << in << "', which holds the extents of '" << value
            << "', known only after a run";
      }
    }
  }
  std::set<int> grouped;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int n : groups[g].nodes) {
      AGATE_REQUIRE(n >= 0 && n < static_cast<int>(nodes.size()) && grouped.insert(n).second, kInvalidArgument)
          << "fused group " << g << " names node index " << n << " that is out of range or in another group";
    }
  }
}

}  // namespace graph
}  // namespace agate
