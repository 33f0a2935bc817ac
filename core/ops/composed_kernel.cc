#include "core/ops/composed_kernel.h"

#include <algorithm>
#include <cctype>

#include "core/lower/verify.h"
#include "core/ops/op_context.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

// The parameters of `group` (one node, `node`), added to `func` and `kernel`: its inputs in order,
// then its outputs, each a buffer of the value's type named after it (as LowerGroup's tensor-
// expression kernels have them).
ComposedParams AddComposedParams(const graph::Graph& graph, const graph::FusedGroup& group, const graph::Node& node,
                                 const std::string& kernel_name, ir::LoweredFunc* func, GroupKernel* kernel);

}  // namespace

std::string IdentifierOf(const std::string& value_name) {
  std::string out;
  for (char c : value_name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v_" + out;
  return out;
}

ComposedKernel BeginComposedKernel(const graph::Graph& graph, const graph::FusedGroup& group,
                                   const target::Target& target, const std::string& kernel_name,
                                   const std::string& cpu_only_because) {
  AGATE_REQUIRE(!group.nodes.empty(), kInternal) << "kernel " << kernel_name << ": empty group";
  const graph::Node& node = graph.nodes.at(group.nodes[0]);
  AGATE_REQUIRE(target.kind() != target::TargetKind::kCUDA, kUnsupported)
      << node.Describe() << ": operator " << node.op << " has no schedule for target '" << target << "' ("
      << cpu_only_because << ")";
  ComposedKernel built;
  built.op = node.op;
  built.func.name = kernel_name;
  built.params = AddComposedParams(graph, group, node, kernel_name, &built.func, &built.kernel);
  return built;
}

ir::Buffer AddComposedConstant(ComposedKernel* built, const std::string& name, graph::Tensor value) {
  ir::Buffer b = ir::CreateBuffer(IdentifierOf(name), value.dtype(), {ir::make_const(ir::DType::Int(64), value.numel())});
  built->func.params.push_back(b);
  built->kernel.params.push_back(KernelParam{KernelParam::Kind::kConstant, "", std::move(value)});
  return b;
}

GroupKernel FinishComposedKernel(ComposedKernel built, const ir::Stmt& body, int64_t workspace_bytes,
                                 const std::string& summary) {
  built.func.body = body;
  built.func.workspace_bytes = workspace_bytes;
  lower::VerifyOptions verify;
  verify.unique_defs = true;
  lower::VerifyLoweredFunc(built.func, built.op + " composition", verify);
  built.kernel.func = std::move(built.func);
  built.kernel.schedule_summary = summary;
  return std::move(built.kernel);
}

namespace {

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

}  // namespace

}  // namespace ops
}  // namespace agate
