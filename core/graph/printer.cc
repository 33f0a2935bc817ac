#include "core/graph/printer.h"

#include <sstream>

namespace agate {
namespace graph {
namespace {

std::string TypedValue(const Graph& graph, const std::string& value) {
  if (value.empty()) return "_";  // an optional output the model does not use
  auto it = graph.types.find(value);
  return "%" + value + ": " + (it == graph.types.end() ? std::string("?") : it->second.ToString());
}

std::string ValueList(const std::vector<std::string>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + (values[i].empty() ? "_" : "%" + values[i]);
  return s;
}

}  // namespace

std::string PrintNode(const Graph& graph, const Node& node) {
  std::ostringstream os;
  for (size_t i = 0; i < node.outputs.size(); ++i) os << (i ? ", " : "") << TypedValue(graph, node.outputs[i]);
  os << " = " << node.op << "(" << ValueList(node.inputs) << ")";
  if (!node.attrs.empty()) os << " " << node.attrs.ToString();
  os << "  # " << node.name;
  return os.str();
}

std::string PrintGraph(const Graph& graph) {
  std::ostringstream os;
  os << "graph " << graph.name << "(";
  for (size_t i = 0; i < graph.inputs.size(); ++i) os << (i ? ", " : "") << TypedValue(graph, graph.inputs[i]);
  os << ") -> (" << ValueList(graph.outputs) << ") {\n";
  for (const auto& [value, extents] : graph.run_time_extents) {
    os << "  extents %" << value << " <= " << graph.TypeOf(value).ToString() << " at run time: %" << extents << "\n";
  }
  for (const auto& [value, tensor] : graph.constants) {
    os << "  const %" << value << " = " << tensor.ToString(tensor.numel() <= 16 ? 16 : 4) << "\n";
  }
  for (const Node& node : graph.nodes) os << "  " << PrintNode(graph, node) << "\n";
  for (size_t g = 0; g < graph.groups.size(); ++g) {
    const FusedGroup& group = graph.groups[g];
    os << "  group " << g << " <" << OpKindName(group.kind) << ">";
    if (group.anchor >= 0) os << " anchor " << graph.nodes[group.anchor].name;
    os << ": [";
    for (size_t i = 0; i < group.nodes.size(); ++i) os << (i ? ", " : "") << graph.nodes[group.nodes[i]].name;
    os << "] (" << ValueList(group.inputs) << ") -> (" << ValueList(group.outputs) << ")\n";
  }
  if (graph.memory_plan.planned) {
    const MemoryPlan& plan = graph.memory_plan;
    os << "  memory plan: arena " << plan.arena_bytes << " bytes for " << plan.buffers.size()
       << " intermediates of " << plan.total_intermediate_bytes << " bytes in all\n";
    for (const BufferAssignment& b : plan.buffers) {
      os << "    %" << b.value << " @" << b.offset << " +" << b.bytes << " live [" << b.first_step << ", "
         << b.last_step << "]\n";
    }
  }
  os << "}\n";
  return os.str();
}

}  // namespace graph
}  // namespace agate
