#include "core/ops/composed_kernel.h"

#include <algorithm>
#include <cctype>

#include "core/ops/op_context.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
std::string IdentifierOf(const std::string& value_name) {
  std::string out;
  for (char c : value_name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v_" + out;
  return out;
}

ComposedParams AddComposedParams(const graph::Graph& graph, const graph::FusedGroup& group, const graph::Node& node,
                                 const std::string& kernel_name, ir::LoweredFunc* func, GroupKernel* kernel) {
  AGATE_REQUIRE(group.nodes.size() == 1, kInternal)
      << "kernel " << kernel_name << ": " << node.op << " fused with other operators";
  ComposedParams params;
  for (const std::string& value : group.inputs) {
    const graph::TensorType& type = graph.TypeOf(value);
    ir::Buffer b = ir::CreateBuffer(IdentifierOf(value), type.dtype, ToExprShape(type.shape));
    params.inputs[value] = b;
    func->params.push_back(b);
    kernel->params.push_back(KernelParam{KernelParam::Kind::kValue, value, graph::Tensor()});
  }
  for (const std::string& in : node.inputs) {
    AGATE_REQUIRE(in.empty() || params.inputs.count(in), kInternal)
        << node.Describe() << ": input '" << in << "' is not an input of its group";
  }
  for (const std::string& value : group.outputs) {
    auto it = std::find(node.outputs.begin(), node.outputs.end(), value);
    AGATE_REQUIRE(it != node.outputs.end(), kInternal) << "kernel " << kernel_name << ": output " << value;
    const graph::TensorType& type = graph.TypeOf(value);
    ir::Buffer b = ir::CreateBuffer(IdentifierOf(value) + "_out", type.dtype, ToExprShape(type.shape));
    params.outputs[static_cast<int>(it - node.outputs.begin())] = b;
    func->params.push_back(b);
    kernel->params.push_back(KernelParam{KernelParam::Kind::kValue, value, graph::Tensor()});
  }
  return params;
}

}  // namespace ops
}  // namespace agate
