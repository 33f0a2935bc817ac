// The operator registry: for every operator the graph IR supports, its fusion
// kind, the attributes agate understands, and its shape/type inference rule.
//
// Why one table: the frontend asks it which nodes are unsupported (so it can list
// all of them at once), shape inference asks it for output types, fusion asks it
// for the operator kind, and the reference interpreter (core/graph_eval) has
// one kernel per entry. An operator that is not here does not exist for agate.
//
// Static operands: operands that decide an output shape (Reshape's shape, Slice's
// starts/ends/axes/steps, Squeeze's axes, ...) are attributes in the graph IR. The
// ONNX frontend moves them from constant inputs into attributes (StaticOperands).
// An operand that decides behaviour but not a shape (Trilu's k, CumSum's axis) is
// `run_time`: when it is not a constant it stays an input, which the operator
// library's kernel and the reference interpreter read when the model runs.
// A shape-deciding operand that is not a constant, where the model declares the
// output's static shape, is compiled for that shape and stays the node's last
// input, checked when the model runs (run_time_shape_operand.h).
#ifndef AGATE_CORE_GRAPH_OP_REGISTRY_H_
#define AGATE_CORE_GRAPH_OP_REGISTRY_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace graph {

// What an inference rule sees: the node, its input types (nullptr for an absent
// optional input) and the constant values of inputs that are constants.
class InferContext {
 public:
  InferContext(const Node& node, std::vector<const TensorType*> inputs, std::vector<const Tensor*> values)
      : node_(node), inputs_(std::move(inputs)), values_(std::move(values)) {}
  const Node& node() const { return node_; }
  const Attributes& attrs() const { return node_.attrs; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs_[i] != nullptr; }
  // Throws kInvalidArgument naming the node when input i is absent.
  const TensorType& input(int i) const;
  // The constant value of input i, or nullptr when it is only known at run time.
  const Tensor* value(int i) const { return i < static_cast<int>(values_.size()) ? values_[i] : nullptr; }
  int num_outputs() const { return static_cast<int>(node_.outputs.size()); }

 private:
  const Node& node_;
  std::vector<const TensorType*> inputs_;
  std::vector<const Tensor*> values_;
};

using InferFn = std::function<std::vector<TensorType>(const InferContext&)>;
// Returns "" when the node's attributes are supported, else why not (e.g. "mode=cubic").
using AttributeCheckFn = std::function<std::string(const Node&)>;

// A static operand: ONNX input `input` of the operator is moved into attribute `attribute`.
// `as_floats` selects a float(s) attribute (else int(s)). An empty attribute name means the
// whole node must be computable at compile time (Range, ConstantOfShape).
struct StaticOperand {
  int input;
  std::string attribute;
  bool as_floats = false;
  bool scalar = false;  // a one-element operand becomes an int/float attribute, not a list
  bool required = true;  // false: a runtime operand is dropped instead of rejected (Dropout's ratio)
  // true: a runtime operand stays the node's input `input` (read by the kernel at run time);
  // the OpDef's max_inputs counts it.
  bool run_time = false;
};

struct OpDef {
  std::string op;
  OpKind kind = OpKind::kOpaque;
  int min_inputs = 1;
  int max_inputs = 1;
  std::vector<std::string> attributes;        // every attribute agate implements for the op
  std::vector<StaticOperand> static_operands;  // ONNX inputs that become attributes
  InferFn infer;
  AttributeCheckFn check;                     // optional extra attribute-value checks
  // Optional: the kind of a particular node when attributes change it (training-mode BatchNormalization).
  std::function<OpKind(const Node&)> node_kind;
};

// An OpDef from its parts: the op tables in ops_*.cc register one line per operator.
OpDef Def(const std::string& op, OpKind kind, int min_inputs, int max_inputs, std::vector<std::string> attrs,
          InferFn infer, std::vector<StaticOperand> static_operands = {});

// "node 'name' (Op)": how shape rules name the node in their errors.
std::string Where(const InferContext& ctx);

// The fusion kind of a node: its OpDef's kind (or node_kind), kOpaque for unknown operators.
OpKind KindOf(const Node& node);

class OpRegistry {
 public:
  static const OpRegistry& Global();
  // nullptr when agate does not support the operator.
  const OpDef* Find(const std::string& op) const;
  std::vector<std::string> Ops() const;
  void Register(OpDef def);

 private:
  std::map<std::string, OpDef> defs_;
};

// Checks a node against its OpDef without types: the op exists, the input count
// is in range, every attribute is known and its values are supported. Returns ""
// or the reason the node is unsupported.
std::string UnsupportedReason(const Node& node);

// Registration of each operator family (ops_*.cc).
void RegisterElementwiseOps(OpRegistry* registry);
void RegisterTensorOps(OpRegistry* registry);
void RegisterNnOps(OpRegistry* registry);
void RegisterReduceOps(OpRegistry* registry);
void RegisterQuantizeOps(OpRegistry* registry);
void RegisterSignalOps(OpRegistry* registry);
void RegisterLossOps(OpRegistry* registry);
void RegisterSequenceOps(OpRegistry* registry);
void RegisterSpatialOps(OpRegistry* registry);
void RegisterLinalgOps(OpRegistry* registry);
void RegisterRecurrentOps(OpRegistry* registry);
void RegisterTextOps(OpRegistry* registry);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_OP_REGISTRY_H_
