#include "core/ops/op_context.h"

#include "core/support/error.h"

namespace agate {
namespace ops {

const te::Tensor& OpContext::input(int i) const {
  AGATE_REQUIRE(has_input(i), kInvalidArgument) << Describe() << ": input " << i << " is absent";
  return inputs_[i];
}

const graph::TensorType& OpContext::input_type(int i) const {
  AGATE_REQUIRE(i < static_cast<int>(node_.inputs.size()) && !node_.inputs[i].empty(), kInvalidArgument)
      << Describe() << ": input " << i << " is absent";
  return graph_.TypeOf(node_.inputs[i]);
}

const graph::Tensor* OpContext::constant(int i) const {
  if (i >= static_cast<int>(node_.inputs.size()) || node_.inputs[i].empty()) return nullptr;
  if (!graph_.IsConstant(node_.inputs[i])) return nullptr;
  return &graph_.ConstantOf(node_.inputs[i]);
}

void OpContext::CheckAtRunTime(const std::vector<int>& inputs,
                               std::function<ir::Expr(const std::vector<ElementReader>& operands)> condition,
                               const std::string& message, bool raw_elements) const {
  AGATE_REQUIRE(checks_ != nullptr, kInternal) << Describe() << ": cannot add run-time checks here";
  std::vector<te::Tensor> operands;
  for (int i : inputs) {
    const te::Tensor& operand = input(i);
    AGATE_REQUIRE(operand.op()->kind == te::OpKind::kPlaceholder, kInternal)
        << Describe() << ": a run-time check reads kernel inputs, and input " << i << " is computed in the kernel";
    operands.push_back(operand);
  }
  checks_->push_back(RunTimeCheck{std::move(operands), std::move(condition), Describe() + ": " + message, raw_elements});
}

te::Tensor OpContext::AddConstant(const std::string& name, graph::Tensor value) const {
  AGATE_REQUIRE(created_ != nullptr, kInternal) << Describe() << ": cannot create constants here";
  te::Tensor p = te::placeholder(ToExprShape(value.shape()), value.dtype(), name);
  created_->push_back(CreatedConstant{p, std::move(value)});
  return p;
}

std::vector<te::Expr> ToExprShape(const graph::Shape& shape) {
  std::vector<te::Expr> out;
  for (int64_t d : shape) out.push_back(te::Expr(d));
  return out;
}

graph::Shape StaticShape(const te::Tensor& tensor) {
  graph::Shape out;
  for (const te::Expr& e : tensor.shape()) {
    int64_t v = 0;
    AGATE_REQUIRE(ir::is_const_int(e, &v), kUnsupported) << "tensor " << tensor.name() << " has a symbolic shape";
    out.push_back(v);
  }
  return out;
}

te::Expr BroadcastRead(const te::Tensor& tensor, const std::vector<te::Expr>& out_index) {
  graph::Shape shape = StaticShape(tensor);
  size_t rank = shape.size();
  AGATE_REQUIRE(rank <= out_index.size(), kInternal)
      << "broadcast read of " << tensor.name() << " of rank " << rank << " at rank " << out_index.size();
  size_t lead = out_index.size() - rank;
  std::vector<te::Expr> idx;
  for (size_t i = 0; i < rank; ++i) {
    idx.push_back(shape[i] == 1 ? te::Expr(int64_t{0}) : out_index[lead + i]);
  }
  return tensor(idx);
}

te::Expr BroadcastRead(const te::Tensor& tensor, const std::vector<te::Var>& out_index) {
  return BroadcastRead(tensor, std::vector<te::Expr>(out_index.begin(), out_index.end()));
}

}  // namespace ops
}  // namespace agate
