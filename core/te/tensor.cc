#include "core/te/tensor.h"

#include <limits>

#include <unordered_set>

#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace te {

TensorNode::TensorNode(Operation op, int value_index) : op(std::move(op)), value_index(value_index) {}

std::string TensorNode::producer_name() const {
  return op->num_outputs() == 1 ? op->name : op->name + ".v" + std::to_string(value_index);
}
const std::vector<Expr>& TensorNode::producer_shape() const { return op->output_shape(value_index); }
DType TensorNode::producer_dtype() const { return op->output_dtype(value_index); }

bool Tensor::same_as(const Tensor& other) const {
  if (node_ == other.node_) return true;
  return node_ && other.node_ && node_->op == other.node_->op && node_->value_index == other.node_->value_index;
}

Expr Tensor::operator()(const std::vector<Expr>& indices) const {
  AGATE_REQUIRE(defined(), kInvalidArgument) << "reading an undefined tensor";
  std::vector<Expr> idx;
  for (const Expr& e : indices) {
    AGATE_REQUIRE(e.defined(), kInvalidArgument) << "tensor " << name() << ": undefined index";
    AGATE_REQUIRE(e.dtype().is_integer() && e.dtype().is_scalar(), kInvalidArgument)
        << "tensor " << name() << ": index " << e << " has dtype " << e.dtype() << ", not a scalar integer";
    idx.push_back(ir::cast(DType::Index(), e));
  }
  return ir::TensorRead::make(node_, idx);
}

Tensor AsTensor(const ir::Producer& producer) {
  auto t = std::dynamic_pointer_cast<const TensorNode>(producer);
  AGATE_CHECK(t != nullptr) << "producer " << (producer ? producer->producer_name() : "<null>") << " is not a te tensor";
  return Tensor(t);
}

Tensor OperationNode::output(int i) const {
  AGATE_REQUIRE(i >= 0 && i < num_outputs(), kInvalidArgument)
      << "operation " << name << " has " << num_outputs() << " output(s), asked for " << i;
  return Tensor(std::make_shared<TensorNode>(shared_from_this(), i));
}

namespace {

std::vector<Expr> ExtentsOf(const std::vector<IterVar>& axis) {
  std::vector<Expr> shape;
  for (const IterVar& iv : axis) shape.push_back(iv.dom().extent);
  return shape;
}

}  // namespace

ComputeOpNode::ComputeOpNode(std::string name, std::string tag, std::vector<IterVar> axis,
                             std::vector<IterVar> reduce_axis, std::vector<Expr> body)
    : OperationNode(OpKind::kCompute, std::move(name), std::move(tag)),
      axis(std::move(axis)), reduce_axis(std::move(reduce_axis)), body(std::move(body)), shape(ExtentsOf(this->axis)) {}

std::vector<IterVar> ComputeOpNode::root_iter_vars() const {
  std::vector<IterVar> all = axis;
  all.insert(all.end(), reduce_axis.begin(), reduce_axis.end());
  return all;
}

std::vector<Tensor> ComputeOpNode::InputTensors() const {
  std::vector<Tensor> inputs;
  for (const Expr& b : body) {
    ir::PostOrderVisit(b, [&](const Expr* e, const ir::Stmt*) {
      if (!e) return;
      if (const ir::TensorRead* r = e->as<ir::TensorRead>()) {
        Tensor t = AsTensor(r->producer);
        for (const Tensor& seen : inputs)
          if (seen.same_as(t)) return;
        inputs.push_back(t);
      }
    });
  }
  return inputs;
}

Tensor placeholder(const std::vector<Expr>& shape, DType dtype, const std::string& name) {
  std::vector<Expr> s;
  for (const Expr& e : shape) {
    AGATE_REQUIRE(e.defined() && e.dtype().is_integer() && e.dtype().is_scalar(), kInvalidArgument)
        << "placeholder " << name << ": shape entries must be scalar integers";
    s.push_back(ir::cast(DType::Index(), e));
  }
  AGATE_REQUIRE(dtype.is_scalar() && !dtype.is_void() && !dtype.is_handle(), kInvalidArgument)
      << "placeholder " << name << ": element dtype must be a scalar number type, got " << dtype;
  return std::make_shared<PlaceholderOpNode>(name, s, dtype)->output(0);
}

namespace {

// Checks the reductions of a compute body: each element is either free of
// Reduce or a top-level Reduce; all top-level Reduces share their axes.
std::vector<IterVar> CheckReductions(const std::string& name, const std::vector<Expr>& body) {
  std::vector<IterVar> reduce_axis;
  for (size_t i = 0; i < body.size(); ++i) {
    const Expr& b = body[i];
    AGATE_REQUIRE(b.defined(), kInvalidArgument) << "compute " << name << ": the body is undefined";
    const ir::Reduce* top = b.as<ir::Reduce>();
    ir::PostOrderVisit(b, [&](const Expr* e, const ir::Stmt*) {
      if (e && e->as<ir::Reduce>() && !e->same_as(b)) {
        AGATE_THROW(kInvalidArgument) << "compute " << name
                                      << ": a reduction must be the whole body, not nested inside " << b;
      }
    });
    if (top) {
      if (i == 0) {
        reduce_axis = top->axis;
      } else {
        AGATE_REQUIRE(top->axis.size() == reduce_axis.size(), kInvalidArgument)
            << "compute " << name << ": outputs reduce over different axes";
        for (size_t k = 0; k < reduce_axis.size(); ++k)
          AGATE_REQUIRE(top->axis[k].same_as(reduce_axis[k]), kInvalidArgument)
              << "compute " << name << ": outputs reduce over different axes";
      }
    } else {
      AGATE_REQUIRE(reduce_axis.empty() && (i == 0 || !body[0].as<ir::Reduce>()), kInvalidArgument)
          << "compute " << name << ": either every output or none is a reduction";
    }
  }
  return reduce_axis;
}

std::vector<IterVar> MakeAxis(const std::vector<Expr>& shape, const std::string& name,
                              const std::vector<std::string>& axis_names) {
  std::vector<IterVar> axis;
  for (size_t d = 0; d < shape.size(); ++d) {
    AGATE_REQUIRE(shape[d].defined() && shape[d].dtype().is_integer() && shape[d].dtype().is_scalar(),
                  kInvalidArgument)
        << "compute " << name << ": shape entry " << d << " is not a scalar integer";
    std::string n = d < axis_names.size() ? axis_names[d] : "i" + std::to_string(d);
    axis.emplace_back(Range(ir::make_zero(DType::Index()), ir::cast(DType::Index(), shape[d])), Var(n),
                      ir::IterVarKind::kDataPar);
  }
  return axis;
}

std::vector<Var> VarsOf(const std::vector<IterVar>& axis) {
  std::vector<Var> vars;
  for (const IterVar& iv : axis) vars.push_back(iv.var());
  return vars;
}

Operation MakeCompute(const std::vector<Expr>& shape, const std::vector<Expr>& body_in, const std::vector<IterVar>& axis,
                      const std::string& name, const std::string& tag) {
  std::vector<IterVar> reduce_axis = CheckReductions(name, body_in);
  return std::make_shared<ComputeOpNode>(name, tag.empty() ? (reduce_axis.empty() ? "elemwise" : "reduction") : tag,
                                         axis, reduce_axis, body_in);
}

void RequireRank(const std::vector<Expr>& shape, size_t rank, const std::string& name) {
  AGATE_REQUIRE(shape.size() == rank, kInvalidArgument)
      << "compute " << name << ": shape has " << shape.size() << " dimension(s) but the function takes " << rank
      << " index variable(s)";
}

}  // namespace

Tensor compute(const std::vector<Expr>& shape, const std::function<Expr(const std::vector<Var>&)>& f,
               const std::string& name, const std::string& tag, const std::vector<std::string>& axis_names) {
  std::vector<IterVar> axis = MakeAxis(shape, name, axis_names);
  Expr body = f(VarsOf(axis));
  return MakeCompute(shape, {body}, axis, name, tag)->output(0);
}

Tensor compute(const std::vector<Expr>& shape, const std::function<Expr(Var)>& f, const std::string& name,
               const std::string& tag) {
  RequireRank(shape, 1, name);
  return compute(shape, [&](const std::vector<Var>& v) { return f(v[0]); }, name, tag, {"i"});
}
Tensor compute(const std::vector<Expr>& shape, const std::function<Expr(Var, Var)>& f, const std::string& name,
               const std::string& tag) {
  RequireRank(shape, 2, name);
  return compute(shape, [&](const std::vector<Var>& v) { return f(v[0], v[1]); }, name, tag, {"i", "j"});
}
Tensor compute(const std::vector<Expr>& shape, const std::function<Expr(Var, Var, Var)>& f, const std::string& name,
               const std::string& tag) {
  RequireRank(shape, 3, name);
  return compute(shape, [&](const std::vector<Var>& v) { return f(v[0], v[1], v[2]); }, name, tag, {"i", "j", "k"});
}
Tensor compute(const std::vector<Expr>& shape, const std::function<Expr(Var, Var, Var, Var)>& f,
               const std::string& name, const std::string& tag) {
  RequireRank(shape, 4, name);
  return compute(shape, [&](const std::vector<Var>& v) { return f(v[0], v[1], v[2], v[3]); }, name, tag,
                 {"n", "c", "h", "w"});
}
Tensor compute(const std::vector<Expr>& shape, const std::function<Expr(Var, Var, Var, Var, Var)>& f,
               const std::string& name, const std::string& tag) {
  RequireRank(shape, 5, name);
  return compute(shape, [&](const std::vector<Var>& v) { return f(v[0], v[1], v[2], v[3], v[4]); }, name, tag);
}

std::vector<Tensor> compute_multi(const std::vector<Expr>& shape,
                                  const std::function<std::vector<Expr>(const std::vector<Var>&)>& f,
                                  const std::string& name, const std::string& tag) {
  std::vector<IterVar> axis = MakeAxis(shape, name, {});
  std::vector<Expr> body = f(VarsOf(axis));
  AGATE_REQUIRE(!body.empty(), kInvalidArgument) << "compute " << name << ": no outputs";
  Operation op = MakeCompute(shape, body, axis, name, tag);
  std::vector<Tensor> outs;
  for (int i = 0; i < op->num_outputs(); ++i) outs.push_back(op->output(i));
  return outs;
}

IterVar reduce_axis(const Range& dom, const std::string& name) {
  AGATE_REQUIRE(dom.min.defined() && dom.extent.defined(), kInvalidArgument)
      << "reduce_axis " << name << ": the range needs a min and an extent";
  AGATE_REQUIRE(dom.min.dtype().is_integer() && dom.extent.dtype().is_integer(), kInvalidArgument)
      << "reduce_axis " << name << ": the range must be integer";
  Range r(ir::cast(DType::Index(), dom.min), ir::cast(DType::Index(), dom.extent));
  return IterVar(r, Var(name), ir::IterVarKind::kCommReduce);
}

ir::CommReducer MakeCommReducer(
    const std::vector<DType>& dtypes,
    const std::function<std::vector<Expr>(const std::vector<Var>& lhs, const std::vector<Var>& rhs)>& fcombine,
    const std::vector<Expr>& identity) {
  ir::CommReducer r;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    r.lhs.push_back(Var("lhs" + std::to_string(i), dtypes[i]));
    r.rhs.push_back(Var("rhs" + std::to_string(i), dtypes[i]));
  }
  r.result = fcombine(r.lhs, r.rhs);
  AGATE_REQUIRE(r.result.size() == dtypes.size() && identity.size() == dtypes.size(), kInvalidArgument)
      << "comm_reducer: " << dtypes.size() << " dtypes but " << r.result.size() << " results and " << identity.size()
      << " identity elements";
  for (size_t i = 0; i < dtypes.size(); ++i) {
    AGATE_REQUIRE(r.result[i].defined() && r.result[i].dtype() == dtypes[i], kInvalidArgument)
        << "comm_reducer: result " << i << " is not " << dtypes[i];
    r.identity_element.push_back(ir::cast(dtypes[i], identity[i]));
  }
  return r;
}

ReducerFn comm_reducer(const ir::CommReducer& reducer) {
  return [reducer](const std::vector<Expr>& source, const std::vector<IterVar>& axis, const Expr& condition) {
    std::vector<Expr> out;
    for (size_t i = 0; i < source.size(); ++i)
      out.push_back(ir::Reduce::make(reducer, source, axis, condition, static_cast<int>(i)));
    return out;
  };
}

namespace {

Expr SimpleReduce(const char* what, const Expr& source, const std::vector<IterVar>& axis, const Expr& condition,
                  const Expr& init,
                  const std::function<Expr(const Expr&, const Expr&)>& combine,
                  const std::function<Expr(DType)>& identity) {
  AGATE_REQUIRE(source.defined(), kInvalidArgument) << what << ": undefined source";
  AGATE_REQUIRE(!axis.empty(), kInvalidArgument) << what << " of " << source << ": no reduction axis";
  DType t = source.dtype();
  ir::CommReducer r = MakeCommReducer(
      {t}, [&](const std::vector<Var>& l, const std::vector<Var>& rr) { return std::vector<Expr>{combine(l[0], rr[0])}; },
      {identity(t)});
  std::vector<Expr> inits;
  if (init.defined()) inits.push_back(ir::cast(t, init));
  return ir::Reduce::make(r, {source}, axis, condition, 0, inits);
}

}  // namespace

Expr sum(const Expr& source, const std::vector<IterVar>& axis, const Expr& condition, const Expr& init) {
  return SimpleReduce("sum", source, axis, condition, init, [](const Expr& a, const Expr& b) { return a + b; },
                      [](DType t) { return ir::make_zero(t); });
}
Expr max(const Expr& source, const std::vector<IterVar>& axis, const Expr& condition, const Expr& init) {
  // The identity of max is -inf for floats (not the lowest finite value), so a
  // reduction over -inf, or over nothing, yields -inf; the lowest value for integers.
  return SimpleReduce("max", source, axis, condition, init, [](const Expr& a, const Expr& b) { return ir::max(a, b); },
                      [](DType t) {
                        return t.is_float() ? ir::make_const(t, -std::numeric_limits<double>::infinity())
                                            : ir::min_value(t);
                      });
}
Expr min(const Expr& source, const std::vector<IterVar>& axis, const Expr& condition, const Expr& init) {
  return SimpleReduce("min", source, axis, condition, init, [](const Expr& a, const Expr& b) { return ir::min(a, b); },
                      [](DType t) {
                        return t.is_float() ? ir::make_const(t, std::numeric_limits<double>::infinity())
                                            : ir::max_value(t);
                      });
}
Expr prod(const Expr& source, const std::vector<IterVar>& axis, const Expr& condition, const Expr& init) {
  return SimpleReduce("prod", source, axis, condition, init, [](const Expr& a, const Expr& b) { return a * b; },
                      [](DType t) { return ir::make_const(t, 1); });
}

std::vector<Expr> argmax(const Expr& index, const Expr& value, const std::vector<IterVar>& axis,
                         const Expr& condition) {
  AGATE_REQUIRE(index.defined() && value.defined(), kInvalidArgument) << "argmax: undefined index or value";
  AGATE_REQUIRE(index.dtype().is_integer(), kInvalidArgument) << "argmax: index must be an integer, got " << index.dtype();
  ir::CommReducer r = MakeCommReducer(
      {index.dtype(), value.dtype()},
      [](const std::vector<Var>& l, const std::vector<Var>& rr) {
        // Take rhs when its value is larger, or equal with a smaller index. The identity's index
        // -1 means "no candidate yet" and loses to any candidate: its value (the dtype's lowest
        // finite number) would otherwise beat an element that is -inf, and report index -1.
        Expr zero = ir::make_zero(l[0].dtype());
        Expr better = rr[1] > l[1] || (rr[1] == l[1] && rr[0] < l[0]);
        Expr take_rhs = rr[0] >= zero && (l[0] < zero || better);
        return std::vector<Expr>{ir::select(take_rhs, rr[0], l[0]), ir::select(take_rhs, rr[1], l[1])};
      },
      {ir::make_const(index.dtype(), -1), ir::min_value(value.dtype())});
  return comm_reducer(r)({index, value}, axis, condition);
}

}  // namespace te
}  // namespace agate
