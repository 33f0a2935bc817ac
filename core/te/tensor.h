// Tensor expressions: the algorithm half of agate's "algorithm + schedule" split.
//
// Why: an operator is described once as what each output element is
// (C(i, j) = sum over k of A(i, k) * B(k, j)), with no loops or memory layout.
// Schedules (core/schedule) then decide loop order, tiling, vectorization and
// where intermediates live, and lowering (core/lower) turns the pair into loops.
//
//   Var M("M");  // or a constant: Expr M = 64;
//   Tensor A = placeholder({M, K}, DType::Float(32), "A");
//   IterVar k = reduce_axis({0, K}, "k");
//   Tensor C = compute({M, N}, [&](Var i, Var j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
//
// Shapes are expressions: a variable extent stays a variable until bound.
#ifndef AGATE_CORE_TE_TENSOR_H_
#define AGATE_CORE_TE_TENSOR_H_

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/expr.h"

namespace agate {
namespace te {

using ir::DType;
using ir::Expr;
using ir::IterVar;
using ir::Range;
using ir::Var;

class OperationNode;
using Operation = std::shared_ptr<const OperationNode>;

// The output `value_index` of an operation. Read it with operator().
class TensorNode : public ir::ProducerNode {
 public:
  TensorNode(Operation op, int value_index);
  std::string producer_name() const override;
  const std::vector<Expr>& producer_shape() const override;
  DType producer_dtype() const override;

  const Operation op;
  const int value_index;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<const TensorNode> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  const TensorNode* get() const { return node_.get(); }
  const TensorNode* operator->() const { return node_.get(); }
  const std::shared_ptr<const TensorNode>& node_ptr() const { return node_; }

  const Operation& op() const { return node_->op; }
  int value_index() const { return node_->value_index; }
  const std::vector<Expr>& shape() const { return node_->producer_shape(); }
  DType dtype() const { return node_->producer_dtype(); }
  std::string name() const { return node_->producer_name(); }
  size_t ndim() const { return shape().size(); }

  // The same tensor: same operation and output index.
  bool same_as(const Tensor& other) const;

  // Element read: A(i, j). Throws kInvalidArgument on the wrong number of indices.
  Expr operator()(const std::vector<Expr>& indices) const;
  template <typename... Args>
  Expr operator()(Args... indices) const {
    return (*this)(std::vector<Expr>{Expr(indices)...});
  }

 private:
  std::shared_ptr<const TensorNode> node_;
};

// The Tensor a TensorRead/Provide/Realize producer refers to (kInternal when it is not a te tensor).
Tensor AsTensor(const ir::Producer& producer);

enum class OpKind : uint8_t { kPlaceholder, kCompute };

class OperationNode : public std::enable_shared_from_this<OperationNode> {
 public:
  OperationNode(OpKind kind, std::string name, std::string tag) : kind(kind), name(std::move(name)), tag(std::move(tag)) {}
  virtual ~OperationNode() = default;
  virtual int num_outputs() const = 0;
  virtual DType output_dtype(int i) const = 0;
  virtual const std::vector<Expr>& output_shape(int i) const = 0;
  // Output i as a Tensor.
  Tensor output(int i) const;
  // The tensors this operation reads (each once, in first-read order).
  virtual std::vector<Tensor> InputTensors() const = 0;

  const OpKind kind;
  const std::string name;
  const std::string tag;  // e.g. "elemwise", "reduction", "conv2d": for schedule templates
};

// An input: data that exists before the kernel runs.
class PlaceholderOpNode : public OperationNode {
 public:
  PlaceholderOpNode(std::string name, std::vector<Expr> shape, DType dtype)
      : OperationNode(OpKind::kPlaceholder, std::move(name), ""), shape(std::move(shape)), dtype(dtype) {}
  int num_outputs() const override { return 1; }
  DType output_dtype(int) const override { return dtype; }
  const std::vector<Expr>& output_shape(int) const override { return shape; }
  std::vector<Tensor> InputTensors() const override { return {}; }

  const std::vector<Expr> shape;
  const DType dtype;
};

// out(axis...) = body[i] for each output i. When the body is a reduction, the
// Reduce is the top-level expression of every body element and reduce_axis
// lists its axes.
class ComputeOpNode : public OperationNode {
 public:
  ComputeOpNode(std::string name, std::string tag, std::vector<IterVar> axis, std::vector<IterVar> reduce_axis,
                std::vector<Expr> body);
  int num_outputs() const override { return static_cast<int>(body.size()); }
  DType output_dtype(int i) const override { return body.at(i).dtype(); }
  const std::vector<Expr>& output_shape(int) const override { return shape; }
  std::vector<Tensor> InputTensors() const override;
  bool is_reduction() const { return !reduce_axis.empty(); }
  // Every root axis: data-parallel axes then reduce axes.
  std::vector<IterVar> root_iter_vars() const;

  const std::vector<IterVar> axis;
  const std::vector<IterVar> reduce_axis;
  const std::vector<Expr> body;
  const std::vector<Expr> shape;  // extents of axis
};

// ---------------------------------------------------------------- building

Tensor placeholder(const std::vector<Expr>& shape, DType dtype = DType::Float(32), const std::string& name = "placeholder");

// compute(shape, f): f receives one index Var per dimension (named i0, i1... or
// from `axis_names`). Throws kInvalidArgument when f's result is undefined or a
// reduction is nested inside arithmetic.
Tensor compute(const std::vector<Expr>& shape, const std::function<Expr(const std::vector<Var>&)>& f,
               const std::string& name = "compute", const std::string& tag = "",
               const std::vector<std::string>& axis_names = {});
Tensor compute(const std::vector<Expr>& shape, const std::function<Expr(Var)>& f, const std::string& name = "compute",
               const std::string& tag = "");
Tensor compute(const std::vector<Expr>& shape, const std::function<Expr(Var, Var)>& f,
               const std::string& name = "compute", const std::string& tag = "");
Tensor compute(const std::vector<Expr>& shape, const std::function<Expr(Var, Var, Var)>& f,
               const std::string& name = "compute", const std::string& tag = "");
Tensor compute(const std::vector<Expr>& shape, const std::function<Expr(Var, Var, Var, Var)>& f,
               const std::string& name = "compute", const std::string& tag = "");
Tensor compute(const std::vector<Expr>& shape, const std::function<Expr(Var, Var, Var, Var, Var)>& f,
               const std::string& name = "compute", const std::string& tag = "");

// A compute with several outputs of the same shape (tuple reductions such as
// argmax): f returns one expression per output; reductions must share axes and combiner.
std::vector<Tensor> compute_multi(const std::vector<Expr>& shape,
                                  const std::function<std::vector<Expr>(const std::vector<Var>&)>& f,
                                  const std::string& name = "compute", const std::string& tag = "");

// A reduction axis over `dom` ([min, min + extent)).
IterVar reduce_axis(const Range& dom, const std::string& name = "rv");

// Reductions over `axis` where `condition` holds (default everywhere).
Expr sum(const Expr& source, const std::vector<IterVar>& axis, const Expr& condition = Expr(), const Expr& init = Expr());
Expr max(const Expr& source, const std::vector<IterVar>& axis, const Expr& condition = Expr(), const Expr& init = Expr());
Expr min(const Expr& source, const std::vector<IterVar>& axis, const Expr& condition = Expr(), const Expr& init = Expr());
Expr prod(const Expr& source, const std::vector<IterVar>& axis, const Expr& condition = Expr(), const Expr& init = Expr());
// Brace-list forms, so sum(x, {k}) and max(x, {k}) pick the reduction rather than ir::max(Expr, Expr).
inline Expr sum(const Expr& source, std::initializer_list<IterVar> axis, const Expr& condition = Expr(),
                const Expr& init = Expr()) {
  return sum(source, std::vector<IterVar>(axis), condition, init);
}
inline Expr max(const Expr& source, std::initializer_list<IterVar> axis, const Expr& condition = Expr(),
                const Expr& init = Expr()) {
  return max(source, std::vector<IterVar>(axis), condition, init);
}
inline Expr min(const Expr& source, std::initializer_list<IterVar> axis, const Expr& condition = Expr(),
                const Expr& init = Expr()) {
  return min(source, std::vector<IterVar>(axis), condition, init);
}
inline Expr prod(const Expr& source, std::initializer_list<IterVar> axis, const Expr& condition = Expr(),
                 const Expr& init = Expr()) {
  return prod(source, std::vector<IterVar>(axis), condition, init);
}

// A user-defined commutative reducer: fcombine(lhs, rhs) -> results and
// fidentity(dtypes) -> identity elements. The returned function builds
// Reduce expressions; for tuple reducers it returns element value_index of the tuple.
using ReducerFn = std::function<std::vector<Expr>(const std::vector<Expr>& source, const std::vector<IterVar>& axis,
                                                  const Expr& condition)>;
ir::CommReducer MakeCommReducer(
    const std::vector<DType>& dtypes,
    const std::function<std::vector<Expr>(const std::vector<Var>& lhs, const std::vector<Var>& rhs)>& fcombine,
    const std::vector<Expr>& identity);
ReducerFn comm_reducer(const ir::CommReducer& reducer);

// argmax over axis of `value` with index expression `index` (>= 0): a tuple reduction
// yielding (index, value), ties resolved to the smaller index. Every counted element is a
// candidate, -inf included; the result is (-1, lowest) only when no element is counted.
std::vector<Expr> argmax(const Expr& index, const Expr& value, const std::vector<IterVar>& axis,
                         const Expr& condition = Expr());

}  // namespace te
}  // namespace agate

#endif  // AGATE_CORE_TE_TENSOR_H_
