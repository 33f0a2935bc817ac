#include "core/graph/op_registry.h"

#include <algorithm>

#include "core/support/error.h"

namespace agate {
namespace graph {

const TensorType& InferContext::input(int i) const {
  AGATE_REQUIRE(has_input(i), kInvalidArgument) << node_.Describe() << " needs input " << i;
  return *inputs_[i];
}

const OpRegistry& OpRegistry::Global() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterElementwiseOps(r);
    RegisterTensorOps(r);
    RegisterNnOps(r);
    RegisterReduceOps(r);
    RegisterQuantizeOps(r);
    RegisterSignalOps(r);
    RegisterLossOps(r);
    RegisterSequenceOps(r);
    RegisterSpatialOps(r);
    RegisterLinalgOps(r);
    RegisterRecurrentOps(r);
    RegisterTextOps(r);
    return r;
  }();
  return *registry;
}

const OpDef* OpRegistry::Find(const std::string& op) const {
  auto it = defs_.find(op);
  return it == defs_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::Ops() const {
  std::vector<std::string> ops;
  for (const auto& [op, def] : defs_) ops.push_back(op);
  return ops;
}

void OpRegistry::Register(OpDef def) {
  AGATE_CHECK(!defs_.count(def.op)) << "operator " << def.op << " registered twice";
  std::string op = def.op;
  defs_.emplace(op, std::move(def));
}

OpKind KindOf(const Node& node) {
  const OpDef* def = OpRegistry::Global().Find(node.op);
  if (def == nullptr) return OpKind::kOpaque;
  return def->node_kind ? def->node_kind(node) : def->kind;
}

std::string UnsupportedReason(const Node& node) {
  const OpDef* def = OpRegistry::Global().Find(node.op);
  if (def == nullptr) return "operator not supported";
  int n = static_cast<int>(node.inputs.size());
  if (n < def->min_inputs || (def->max_inputs >= 0 && n > def->max_inputs)) {
    return "takes " + std::to_string(def->min_inputs) + " to " + std::to_string(def->max_inputs) + " inputs, got " +
           std::to_string(n);
  }
  for (const auto& [name, value] : node.attrs.all()) {
    if (std::find(def->attributes.begin(), def->attributes.end(), name) == def->attributes.end()) {
      return "attribute '" + name + "' not supported";
    }
  }
  if (def->check) return def->check(node);
  return "";
}

OpDef Def(const std::string& op, OpKind kind, int min_inputs, int max_inputs, std::vector<std::string> attrs,
          InferFn infer, std::vector<StaticOperand> static_operands) {
  OpDef def;
  def.op = op;
  def.kind = kind;
  def.min_inputs = min_inputs;
  def.max_inputs = max_inputs;
  def.attributes = std::move(attrs);
  def.infer = std::move(infer);
  def.static_operands = std::move(static_operands);
  return def;
}

std::string Where(const InferContext& ctx) { return ctx.node().Describe(); }

}  // namespace graph
}  // namespace agate
