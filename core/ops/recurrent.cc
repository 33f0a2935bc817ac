#include "core/ops/recurrent.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <sstream>

#include "core/graph/shape_inference.h"
#include "core/ir/functor.h"
#include "core/lower/lower.h"
#include "core/lower/verify.h"
#include "core/ops/op_context.h"
#include "core/ops/schedule_common.h"
#include "core/support/error.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

namespace {

// ------------------------------------------------------------ attributes

// One activation function with its alpha/beta (ONNX's recurrent activation list).
struct Activation {
  std::string name;
  double alpha = 0;
  double beta = 0;
};

bool TakesAlpha(const std::string& n) {
  return n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" || n == "HardSigmoid" ||
         n == "Elu";
}
bool TakesBeta(const std::string& n) { return n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid"; }
double DefaultAlpha(const std::string& n) {
  if (n == "LeakyRelu") return 0.01;
  if (n == "HardSigmoid") return 0.2;
  return 1.0;  // Affine, ThresholdedRelu, ScaledTanh, Elu
}
double DefaultBeta(const std::string& n) {
  if (n == "HardSigmoid") return 0.5;
  if (n == "ScaledTanh") return 1.0;
  return 0.0;  // Affine
}

Expr Activate(const Activation& a, const Expr& x) {
  ir::DType t = x.dtype();
  Expr alpha = ir::make_const(t, a.alpha), beta = ir::make_const(t, a.beta);
  Expr zero = ir::make_zero(t), one = ir::make_const(t, 1.0);
  if (a.name == "Sigmoid") return ir::sigmoid(x);
  if (a.name == "Tanh") return ir::tanh(x);
  if (a.name == "Relu") return ir::max(x, zero);
  if (a.name == "Affine") return alpha * x + beta;
  if (a.name == "LeakyRelu") return ir::select(x >= zero, x, alpha * x);
  if (a.name == "ThresholdedRelu") return ir::select(x > alpha, x, zero);
  if (a.name == "ScaledTanh") return alpha * ir::tanh(beta * x);
  if (a.name == "HardSigmoid") return ir::max(zero, ir::min(one, alpha * x + beta));
  if (a.name == "Elu") return ir::select(x >= zero, x, alpha * (ir::exp(x) - one));
  if (a.name == "Softsign") return x / (one + ir::abs(x));
  if (a.name == "Softplus") return ir::log(one + ir::exp(x));
  AGATE_THROW(kInternal) << "activation " << a.name << " was not checked";
}

// Sizes and settings of one recurrent node.
struct Spec {
  std::string op, where;
  int64_t T = 0, B = 0, I = 0, H = 0, D = 1, G = 1;
  bool batch_major = false, linear_before_reset = false, input_forget = false;
  double clip = 0;  // <= 0: none
  std::vector<bool> reverse;                    // per direction
  std::vector<std::vector<Activation>> act;     // [direction][f, g, h]
  ir::DType dtype = ir::DType::Float(32);
  int64_t GH() const { return G * H; }
};

Spec ReadSpec(const graph::Graph& graph, const graph::Node& node) {
  Spec s;
  s.op = node.op;
  s.where = node.Describe();
  const graph::TensorType& x = graph.TypeOf(node.inputs.at(0));
  const graph::TensorType& r = graph.TypeOf(node.inputs.at(2));
  AGATE_REQUIRE(x.dtype == ir::DType::Float(32), kUnsupported)
      << s.where << ": the compiled " << node.op << " takes float32 X, got " << x.dtype;
  s.dtype = x.dtype;
  s.batch_major = node.attrs.GetInt("layout", 0) != 0;
  s.T = s.batch_major ? x.shape[1] : x.shape[0];
  s.B = s.batch_major ? x.shape[0] : x.shape[1];
  s.I = x.shape[2];
  s.H = r.shape[2];
  s.G = node.op == "LSTM" ? 4 : node.op == "GRU" ? 3 : 1;
  std::string direction = node.attrs.GetString("direction", "forward");
  s.D = direction == "bidirectional" ? 2 : 1;
  for (int64_t d = 0; d < s.D; ++d) s.reverse.push_back(direction == "reverse" || d == 1);
  s.clip = node.attrs.GetFloat("clip", 0.0);
  s.linear_before_reset = node.attrs.GetInt("linear_before_reset", 0) != 0;
  s.input_forget = node.attrs.GetInt("input_forget", 0) != 0;
  AGATE_REQUIRE(s.T > 0 && s.B > 0 && s.H > 0, kUnsupported)
      << s.where << ": empty sequence, batch or hidden size (" << x.ToString() << ")";

  std::vector<std::string> defaults = node.op == "LSTM"  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                      : node.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                         : std::vector<std::string>{"Tanh"};
  std::vector<std::string> given = node.attrs.GetStrings("activations", {});
  std::vector<double> alphas = node.attrs.GetFloats("activation_alpha", {});
  std::vector<double> betas = node.attrs.GetFloats("activation_beta", {});
  // alpha/beta are consumed in the order of the listed activations, by those that take them (as ONNX Runtime does).
  std::vector<Activation> listed;
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : given) {
    Activation a{name, DefaultAlpha(name), DefaultBeta(name)};
    static const char* known[] = {"Sigmoid", "Tanh", "Relu", "Affine", "LeakyRelu", "ThresholdedRelu",
                                  "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
    AGATE_REQUIRE(std::find(std::begin(known), std::end(known), name) != std::end(known), kUnsupported)
        << s.where << ": activation '" << name << "' is not one ONNX defines for recurrent operators";
    if (TakesAlpha(name) && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (TakesBeta(name) && next_beta < betas.size()) a.beta = betas[next_beta++];
    listed.push_back(a);
  }
  for (int64_t d = 0; d < s.D; ++d) {
    std::vector<Activation> per;
    for (size_t k = 0; k < defaults.size(); ++k) {
      size_t index = d * defaults.size() + k;
      per.push_back(index < listed.size() ? listed[index] : Activation{defaults[k], 0, 0});
    }
    s.act.push_back(per);
  }
  return s;
}

// Activation k of direction d (a select between the two directions when they differ).
Expr ActivateFor(const Spec& s, int k, const Expr& d, const Expr& x) {
  Expr forward = Activate(s.act[0][k], x);
  if (s.D == 1) return forward;
  const Activation& a0 = s.act[0][k];
  const Activation& a1 = s.act[1][k];
  if (a0.name == a1.name && a0.alpha == a1.alpha && a0.beta == a1.beta) return forward;
  return ir::select(d == Expr(int64_t{1}), Activate(a1, x), forward);
}

Expr Clip(const Spec& s, const Expr& x) {
  if (s.clip <= 0) return x;
  Expr c = ir::make_const(x.dtype(), s.clip);
  return ir::min(ir::max(x, -c), c);
}

// Time step and validity of batch row b at step `step` of direction d; `length` is its sequence length.
struct StepIndex {
  Expr valid;  // step < length
  Expr time;   // the time index the step reads X at and writes Y at (clamped into [0, T))
};
StepIndex StepOf(const Spec& s, const Expr& d, const Expr& step, const Expr& length) {
  StepIndex r;
  r.valid = step < length;
  Expr backward = ir::max(length - Expr(int64_t{1}) - step, Expr(int64_t{0}));
  Expr rev = s.D == 2 ? (d == Expr(int64_t{1})) : Expr();
  Expr t;
  if (s.D == 2) {
    t = ir::select(rev, backward, step);
  } else {
    t = s.reverse[0] ? backward : step;
  }
  // A padding step (past the row's length) writes Y's zero at `step` itself, so every slot is written once.
  if (s.reverse[s.D - 1]) t = ir::select(r.valid, t, step);
  r.time = ir::min(t, Expr(s.T - 1));
  return r;
}

// Row of the flattened X (and of XW) for time t, batch row b.
Expr XRow(const Spec& s, const Expr& t, const Expr& b) {
  return s.batch_major ? b * Expr(s.T) + t : t * Expr(s.B) + b;
}

// ------------------------------------------------------------ loop-IR composition

// Where a buffer of a separately lowered piece lives in the composed kernel.
struct Binding {
  ir::Buffer target;
  int64_t offset = 0;  // elements
};

Expr AddOffset(const Expr& index, int64_t offset) {
  if (offset == 0) return index;
  if (const auto* ramp = index.as<ir::Ramp>()) {
    return ir::Ramp::make(ramp->base + Expr(offset), ramp->stride, ramp->lanes);
  }
  if (index.dtype().lanes() > 1) return index + ir::Broadcast::make(Expr(offset), index.dtype().lanes());
  return index + Expr(offset);
}

ir::Buffer Retarget(const ir::Buffer& view, const Binding& binding) {
  auto node = std::make_shared<ir::BufferNode>(*view.get());
  node->data = binding.target->data;
  node->scope = binding.target->scope;
  node->alignment = std::min(view->alignment, binding.target->alignment);
  return ir::Buffer(node);
}

// Re-points the buffers of a lowered piece at the composed kernel's buffers, and
// replaces reads of the step placeholder by the time loop's variable.
class Rebinder : public ir::IRMutator {
 public:
  std::map<const ir::VarNode*, Binding> bindings;
  const ir::VarNode* step = nullptr;
  Expr step_value;

  using ir::IRMutator::VisitExpr_;
  using ir::IRMutator::VisitStmt_;

  Expr VisitExpr_(const ir::Load* op, const Expr& self) override {
    if (step != nullptr && op->buffer->data.get() == step) {
      int lanes = op->dtype.lanes();
      return lanes > 1 ? ir::Broadcast::make(step_value, lanes) : step_value;
    }
    Expr index = VisitExpr(op->index);
    Expr predicate = MutateOptional(op->predicate);
    auto it = bindings.find(op->buffer->data.get());
    if (it == bindings.end()) {
      if (index.same_as(op->index) && predicate.same_as(op->predicate)) return self;
      return ir::Load::make(op->buffer, index, predicate);
    }
    return ir::Load::make(Retarget(op->buffer, it->second), AddOffset(index, it->second.offset), predicate);
  }

  ir::Stmt VisitStmt_(const ir::Store* op, const ir::Stmt& self) override {
    Expr value = VisitExpr(op->value);
    Expr index = VisitExpr(op->index);
    Expr predicate = MutateOptional(op->predicate);
    auto it = bindings.find(op->buffer->data.get());
    if (it == bindings.end()) {
      if (value.same_as(op->value) && index.same_as(op->index) && predicate.same_as(op->predicate)) return self;
      return ir::Store::make(op->buffer, value, index, predicate);
    }
    return ir::Store::make(Retarget(op->buffer, it->second), value, AddOffset(index, it->second.offset), predicate);
  }

  Expr VisitExpr_(const ir::VarNode* op, const Expr& self) override {
    auto it = bindings.find(op);
    if (it == bindings.end()) return self;
    AGATE_CHECK(it->second.offset == 0) << "buffer " << op->name << " is used other than by Load/Store at an offset";
    return it->second.target->data;
  }
};

// A loop nest over `extents` (fresh variables) around body(indices).
ir::Stmt Nest(const std::vector<int64_t>& extents, const std::string& prefix,
              const std::function<ir::Stmt(const std::vector<Expr>&)>& body) {
  std::vector<Var> vars;
  for (size_t i = 0; i < extents.size(); ++i) vars.emplace_back(prefix + std::to_string(i));
  ir::Stmt s = body(std::vector<Expr>(vars.begin(), vars.end()));
  for (size_t i = extents.size(); i-- > 0;) {
    s = ir::For::make(vars[i], Expr(int64_t{0}), Expr(extents[i]), ir::ForKind::kSerial, s);
  }
  return s;
}

std::string Sanitize(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v_" + out;
  return out;
}

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// The kernel being composed: its parameters and the buffers of its pieces.
struct Composer {
  GroupKernel kernel;
  std::vector<ir::Buffer> params;
  std::map<std::string, ir::Buffer> values;  // graph value -> parameter buffer
  std::vector<std::pair<ir::Buffer, graph::Tensor>> constants;
  int64_t piece_workspace = 0;               // the most workspace any lowered piece takes
  std::vector<std::string> summaries;

  ir::Buffer AddConstant(const std::string& name, const graph::Tensor& value) {
    ir::Buffer b = ir::CreateBuffer(Sanitize(name), value.dtype(), ToExprShape(value.shape()));
    constants.push_back({b, value});
    return b;
  }
};

// ------------------------------------------------------------ the input projection

// XW[d] = X W[d]^T for every time step, through LowerGroup's GEMM template on a
// MatMul of a one-node graph; its output lands in `xw` at d * xw_stride.
ir::Stmt BuildInputProjection(const Spec& s, const graph::Graph& graph, const graph::Node& node,
                              const target::Target& target, const std::string& name,
                              const LowerGroupOptions& options, const ir::Buffer& xw, int64_t xw_stride,
                              Composer* c) {
  std::vector<ir::Stmt> stmts;
  const std::string& w_value = node.inputs[1];
  bool w_constant = graph.IsConstant(w_value);
  int64_t rows = s.T * s.B, gh = s.GH();
  // Constant W: one product per direction against W[d]^T made now (packed by the GEMM at compile
  // time). Run-time W: one batched product over directions reading W through a transpose.
  int pieces = w_constant ? static_cast<int>(s.D) : 1;
  for (int piece = 0; piece < pieces; ++piece) {
    graph::Graph g;
    g.name = name + "_xw";
    g.AddInput("x", graph::TensorType{s.dtype, {rows, s.I}});
    graph::FusedGroup group;
    if (w_constant) {
      const graph::Tensor& w = graph.ConstantOf(w_value);
      std::vector<double> wt(s.I * gh);
      for (int64_t n = 0; n < gh; ++n)
        for (int64_t i = 0; i < s.I; ++i) wt[i * gh + n] = w.GetDouble((piece * gh + n) * s.I + i);
      g.AddConstant("wt", graph::Tensor::FromDoubles(s.dtype, {s.I, gh}, wt));
      g.AddNode(graph::Node{"xw_matmul", "MatMul", {"x", "wt"}, {"xw"}, {}});
      group.nodes = {0};
      group.inputs = {"x", "wt"};
    } else {
      g.AddInput("w", graph::TensorType{s.dtype, {s.D, gh, s.I}});
      graph::Node transpose{"w_transpose", "Transpose", {"w"}, {"wt"}, {}};
      transpose.attrs.Set("perm", std::vector<int64_t>{0, 2, 1});
      g.AddNode(transpose);
      g.AddNode(graph::Node{"xw_matmul", "MatMul", {"x", "wt"}, {"xw"}, {}});
      group.nodes = {0, 1};
      group.inputs = {"x", "w"};
    }
    g.outputs = {"xw"};
    g = graph::InferShapes(g);
    group.anchor = static_cast<int>(g.nodes.size()) - 1;
    group.kind = graph::OpKind::kOutEWiseFusable;
    group.outputs = {"xw"};
    GroupKernel k = LowerGroup(g, group, target, name + "_xw" + std::to_string(piece), options);
    c->summaries.push_back("XW " + k.schedule_summary);
    c->piece_workspace = std::max(c->piece_workspace, k.func.workspace_bytes);
    Rebinder rebind;
    for (size_t i = 0; i < k.params.size(); ++i) {
      const KernelParam& p = k.params[i];
      const ir::Buffer& buffer = k.func.params[i];
      Binding binding;
      if (p.kind == KernelParam::Kind::kConstant) {
        binding.target = c->AddConstant(name + "_packed_w", p.constant);
      } else if (p.value == "x") {
        binding.target = c->values.at(node.inputs[0]);
      } else if (p.value == "w") {
        binding.target = c->values.at(w_value);
      } else if (p.value == "wt") {
        binding.target = c->AddConstant(name + "_wt", g.ConstantOf("wt"));
      } else if (p.value == "xw") {
        binding.target = xw;
        binding.offset = piece * xw_stride;
      } else {
        AGATE_THROW(kInternal) << s.where << ": the input projection has an unexpected parameter " << p.value;
      }
      rebind.bindings[buffer->data.get()] = binding;
    }
    stmts.push_back(rebind.VisitStmt(k.func.body));
  }
  return ir::Seq::make(stmts);
}

// ------------------------------------------------------------ the cell

// The tensor expressions of one time step, reading the state and writing it back
// in place (c first for LSTM, then h).
struct Cell {
  Tensor xw, r, bias, lens, peephole, h, c, step;
  Tensor rt;                    // R^T [D, H, rows of hR] made at compile time when R is constant
  graph::Tensor rt_value;
  Tensor hr;
  std::vector<Tensor> outputs;  // c_new (LSTM), h_new
  std::vector<Tensor> reductions;
  std::vector<Tensor> elementwise;  // materialised per-element stages other than the outputs
};

Cell BuildCell(const Spec& s, const graph::Graph& graph, const graph::Node& node, int64_t xw_stride) {
  Cell cell;
  auto has = [&](size_t i) { return i < node.inputs.size() && !node.inputs[i].empty(); };
  int64_t H = s.H, GH = s.GH();
  cell.xw = te::placeholder({Expr(s.D), Expr(xw_stride)}, s.dtype, "xw");
  cell.r = te::placeholder({Expr(s.D), Expr(GH), Expr(H)}, s.dtype, "R");
  if (has(3)) cell.bias = te::placeholder({Expr(s.D), Expr(2 * GH)}, s.dtype, "B");
  if (has(4)) cell.lens = te::placeholder({Expr(s.B)}, graph.TypeOf(node.inputs[4]).dtype, "sequence_lens");
  if (node.op == "LSTM" && has(7)) cell.peephole = te::placeholder({Expr(s.D), Expr(3 * H)}, s.dtype, "P");
  cell.h = te::placeholder({Expr(s.D), Expr(s.B), Expr(H)}, s.dtype, "h_state");
  if (node.op == "LSTM") cell.c = te::placeholder({Expr(s.D), Expr(s.B), Expr(H)}, s.dtype, "c_state");
  cell.step = te::placeholder({Expr(int64_t{1})}, ir::DType::Index(), "step");
  Expr step = cell.step(Expr(int64_t{0}));
  auto length = [&](const Expr& b) {
    return cell.lens.defined() ? ir::cast(ir::DType::Index(), cell.lens(b)) : Expr(s.T);
  };

  // h R^T over the gate rows the step needs (GRU without linear_before_reset applies R_h after the reset).
  int64_t hr_rows = (s.op == "GRU" && !s.linear_before_reset) ? 2 * H : GH;
  // With a constant R, read R^T (rows contiguous for each k) so the product vectorizes over the rows.
  if (graph.IsConstant(node.inputs[2])) {
    const graph::Tensor& r = graph.ConstantOf(node.inputs[2]);
    std::vector<double> rt(s.D * H * hr_rows);
    for (int64_t d = 0; d < s.D; ++d)
      for (int64_t n = 0; n < hr_rows; ++n)
        for (int64_t kk = 0; kk < H; ++kk) rt[(d * H + kk) * hr_rows + n] = r.GetDouble((d * GH + n) * H + kk);
    cell.rt_value = graph::Tensor::FromDoubles(s.dtype, {s.D, H, hr_rows}, rt);
    cell.rt = te::placeholder({Expr(s.D), Expr(H), Expr(hr_rows)}, s.dtype, "Rt");
  }
  ir::IterVar k = te::reduce_axis(ir::Range(Expr(int64_t{0}), Expr(H)), "k");
  Tensor hr = te::compute({Expr(s.D), Expr(s.B), Expr(hr_rows)}, [&](Var d, Var b, Var n) {
    Expr weight = cell.rt.defined() ? cell.rt(d, k.var(), n) : cell.r(d, n, k.var());
    return te::sum(cell.h(d, b, k.var()) * weight, {k});
  }, "hR");
  cell.hr = hr;
  cell.reductions.push_back(hr);

  // Pre-activation of gate g: X W^T + h R^T + Wb + Rb (the recurrent part optional for GRU's h gate).
  auto x_part = [&](const Expr& d, const Expr& b, int g, const Expr& j) {
    StepIndex at = StepOf(s, d, step, length(b));
    Expr v = cell.xw(d, XRow(s, at.time, b) * Expr(GH) + Expr(g * H) + j);
    if (cell.bias.defined()) v = v + cell.bias(d, Expr(g * H) + j);
    return v;
  };
  auto r_bias = [&](const Expr& d, int g, const Expr& j) {
    return cell.bias.defined() ? cell.bias(d, Expr(GH + g * H) + j) : ir::make_zero(s.dtype);
  };
  auto pre = [&](const Expr& d, const Expr& b, int g, const Expr& j) {
    return x_part(d, b, g, j) + hr(d, b, Expr(g * H) + j) + r_bias(d, g, j);
  };
  auto valid = [&](const Expr& d, const Expr& b) { return StepOf(s, d, step, length(b)).valid; };
  std::vector<Expr> shape{Expr(s.D), Expr(s.B), Expr(H)};

  if (s.op == "RNN") {
    cell.outputs.push_back(te::compute(shape, [&](Var d, Var b, Var j) {
      Expr next = ActivateFor(s, 0, d, Clip(s, pre(d, b, 0, j)));
      return ir::select(valid(d, b), next, cell.h(d, b, j));
    }, "h_next"));
  } else if (s.op == "GRU") {  // gates z, r, h
    Expr one = ir::make_const(s.dtype, 1.0);
    Tensor reset = te::compute(shape, [&](Var d, Var b, Var j) {
      return ActivateFor(s, 0, d, Clip(s, pre(d, b, 1, j)));
    }, "reset_gate");
    Tensor hr_h;
    if (!s.linear_before_reset) {
      cell.elementwise.push_back(reset);
      ir::IterVar kk = te::reduce_axis(ir::Range(Expr(int64_t{0}), Expr(H)), "kh");
      hr_h = te::compute(shape, [&](Var d, Var b, Var j) {
        return te::sum(reset(d, b, kk.var()) * cell.h(d, b, kk.var()) * cell.r(d, Expr(2 * H) + j, kk.var()), {kk});
      }, "rhR");
      cell.reductions.push_back(hr_h);
    }
    cell.outputs.push_back(te::compute(shape, [&](Var d, Var b, Var j) {
      Expr z = ActivateFor(s, 0, d, Clip(s, pre(d, b, 0, j)));
      Expr recurrent = s.linear_before_reset ? reset(d, b, j) * (hr(d, b, Expr(2 * H) + j) + r_bias(d, 2, j))
                                             : hr_h(d, b, j) + r_bias(d, 2, j);
      Expr candidate = ActivateFor(s, 1, d, Clip(s, x_part(d, b, 2, j) + recurrent));
      Expr prev = cell.h(d, b, j);
      return ir::select(valid(d, b), (one - z) * candidate + z * prev, prev);
    }, "h_next"));
  } else {  // LSTM gates i, o, f, c
    Expr one = ir::make_const(s.dtype, 1.0);
    auto peep = [&](const Expr& d, int gate, const Expr& j) {
      return cell.peephole.defined() ? cell.peephole(d, Expr(gate * H) + j) : ir::make_zero(s.dtype);
    };
    Tensor c_next = te::compute(shape, [&](Var d, Var b, Var j) {
      Expr prev = cell.c(d, b, j);
      Expr in_gate = ActivateFor(s, 0, d, Clip(s, pre(d, b, 0, j) + peep(d, 0, j) * prev));
      Expr forget = s.input_forget ? one - in_gate
                                   : ActivateFor(s, 0, d, Clip(s, pre(d, b, 2, j) + peep(d, 2, j) * prev));
      Expr candidate = ActivateFor(s, 1, d, Clip(s, pre(d, b, 3, j)));
      return ir::select(valid(d, b), forget * prev + in_gate * candidate, prev);
    }, "c_next");
    cell.outputs.push_back(c_next);
    cell.outputs.push_back(te::compute(shape, [&](Var d, Var b, Var j) {
      Expr state = c_next(d, b, j);
      Expr out_gate = ActivateFor(s, 0, d, Clip(s, pre(d, b, 1, j) + peep(d, 1, j) * state));
      return ir::select(valid(d, b), out_gate * ActivateFor(s, 2, d, state), cell.h(d, b, j));
    }, "h_next"));
  }
  return cell;
}

// ------------------------------------------------------------ hand-written glue

// Index of Y[time, d, b, j] (layout 0: [T, D, B, H]; layout 1: [B, T, D, H]).
Expr YIndex(const Spec& s, const Expr& t, const Expr& d, const Expr& b, const Expr& j) {
  if (s.batch_major) return ((b * Expr(s.T) + t) * Expr(s.D) + d) * Expr(s.H) + j;
  return ((t * Expr(s.D) + d) * Expr(s.B) + b) * Expr(s.H) + j;
}
// Index of a state tensor [D, B, H] (layout 0) or [B, D, H] (layout 1).
Expr StateIndex(const Spec& s, const Expr& d, const Expr& b, const Expr& j) {
  if (s.batch_major) return (b * Expr(s.D) + d) * Expr(s.H) + j;
  return (d * Expr(s.B) + b) * Expr(s.H) + j;
}
Expr Compact(const Spec& s, const Expr& d, const Expr& b, const Expr& j) {
  return (d * Expr(s.B) + b) * Expr(s.H) + j;
}

}  // namespace

bool IsRecurrentOp(const std::string& op) { return op == "LSTM" || op == "GRU" || op == "RNN"; }

GroupKernel LowerRecurrentGroup(const graph::Graph& graph, const graph::FusedGroup& group,
                                const target::Target& target, const std::string& kernel_name,
                                const LowerGroupOptions& options) {
  AGATE_REQUIRE(group.nodes.size() == 1, kInternal) << "kernel " << kernel_name << ": a recurrent node fused with others";
  const graph::Node& node = graph.nodes.at(group.nodes[0]);
  AGATE_REQUIRE(target.kind() != target::TargetKind::kCUDA, kUnsupported)
      << node.Describe() << ": operator " << node.op << " has no schedule for target '" << target
      << "' (it compiles for CPU targets only)";
  Spec s = ReadSpec(graph, node);
  auto has = [&](size_t i) { return i < node.inputs.size() && !node.inputs[i].empty(); };

  Composer c;
  // Parameters: the group's inputs (every one is an input of the node), constants, outputs.
  for (const std::string& value : group.inputs) {
    const graph::TensorType& type = graph.TypeOf(value);
    ir::Buffer b = ir::CreateBuffer(Sanitize(value), type.dtype, ToExprShape(type.shape));
    c.values[value] = b;
    c.params.push_back(b);
    c.kernel.params.push_back(KernelParam{KernelParam::Kind::kValue, value, graph::Tensor()});
  }
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    AGATE_REQUIRE(node.inputs[i].empty() || c.values.count(node.inputs[i]), kInternal)
        << node.Describe() << ": input '" << node.inputs[i] << "' is not an input of its group";
  }
  std::map<int, ir::Buffer> outputs;  // node output index -> parameter
  std::vector<ir::Buffer> output_params;
  for (const std::string& value : group.outputs) {
    auto it = std::find(node.outputs.begin(), node.outputs.end(), value);
    AGATE_REQUIRE(it != node.outputs.end(), kInternal) << "kernel " << kernel_name << ": output " << value;
    const graph::TensorType& type = graph.TypeOf(value);
    ir::Buffer b = ir::CreateBuffer(Sanitize(value) + "_out", type.dtype, ToExprShape(type.shape));
    outputs[static_cast<int>(it - node.outputs.begin())] = b;
    output_params.push_back(b);
  }

  // Buffers of the composed kernel: XW for all steps, the state.
  int64_t state_elems = s.D * s.B * s.H;
  bool w_constant = graph.IsConstant(node.inputs[1]);
  int64_t xw_stride = w_constant ? RoundUp(s.T * s.B * s.GH(), 16) : s.T * s.B * s.GH();
  ir::Buffer xw = ir::CreateBuffer("xw", s.dtype, {Expr(s.D * xw_stride)}, ir::MemoryScope::kWorkspace);
  ir::Buffer h = ir::CreateBuffer("h_state", s.dtype, {Expr(state_elems)}, ir::MemoryScope::kWorkspace);
  ir::Buffer cst = ir::CreateBuffer("c_state", s.dtype, {Expr(state_elems)}, ir::MemoryScope::kWorkspace);

  ir::Stmt projection = BuildInputProjection(s, graph, node, target, kernel_name, options, xw, xw_stride, &c);

  // The cell, lowered once, then placed in the time loop.
  Cell cell = BuildCell(s, graph, node, xw_stride);
  te::Schedule sch = te::create_schedule(cell.outputs);
  std::string cell_schedule = "cell: scalar h*R";
  int lanes = VectorLanes(target, s.dtype);
  if (cell.rt.defined() && lanes > 1) {
    // h*R^T: for each k, a vector of rows accumulates h[k] * R^T[k, rows].
    te::Stage st = sch[cell.hr];
    auto [outer, inner] = st.split(st.axis(2), Expr(int64_t{lanes}));
    st.reorder({st.axis(0), st.axis(1), outer, st.reduce_axis(0), inner});
    st.vectorize(inner);
    cell_schedule = "cell: h*R^T vectorized over " + std::to_string(lanes) + " rows";
  }
  bool reads_r = !cell.rt.defined() || (s.op == "GRU" && !s.linear_before_reset);
  std::vector<Tensor> args{cell.xw};
  std::vector<Binding> arg_bindings{{xw, 0}};
  if (reads_r) {
    args.push_back(cell.r);
    arg_bindings.push_back({c.values.at(node.inputs[2]), 0});
  }
  if (cell.rt.defined()) {
    args.push_back(cell.rt);
    arg_bindings.push_back({c.AddConstant(kernel_name + "_rt", cell.rt_value), 0});
  }
  if (cell.bias.defined()) {
    args.push_back(cell.bias);
    arg_bindings.push_back({c.values.at(node.inputs[3]), 0});
  }
  if (cell.lens.defined()) {
    args.push_back(cell.lens);
    arg_bindings.push_back({c.values.at(node.inputs[4]), 0});
  }
  if (cell.peephole.defined()) {
    args.push_back(cell.peephole);
    arg_bindings.push_back({c.values.at(node.inputs[7]), 0});
  }
  args.push_back(cell.h);
  arg_bindings.push_back({h, 0});
  if (cell.c.defined()) {
    args.push_back(cell.c);
    arg_bindings.push_back({cst, 0});
  }
  args.push_back(cell.step);
  arg_bindings.push_back({});
  for (const Tensor& out : cell.outputs) {
    args.push_back(out);
    arg_bindings.push_back({out.name() == "c_next" ? cst : h, 0});
  }
  ir::LoweredFunc cell_func = lower::Lower(sch, args, kernel_name + "_cell");
  c.piece_workspace = std::max(c.piece_workspace, cell_func.workspace_bytes);
  c.summaries.push_back(cell_schedule);
  Var step("step");
  Rebinder rebind;
  rebind.step_value = step;
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Buffer& p = cell_func.params[i];
    if (args[i].same_as(cell.step)) {
      rebind.step = p->data.get();
    } else {
      rebind.bindings[p->data.get()] = arg_bindings[i];
    }
  }
  ir::Stmt cell_body = rebind.VisitStmt(cell_func.body);

  // Y at the step's time slot (0 for padding steps).
  auto length_at = [&](const Expr& b) {
    if (!has(4)) return Expr(s.T);
    return ir::cast(ir::DType::Index(), ir::Load::make(c.values.at(node.inputs[4]), b));
  };
  std::vector<ir::Stmt> step_stmts{cell_body};
  if (outputs.count(0)) {
    const ir::Buffer& y = outputs[0];
    step_stmts.push_back(Nest({s.D, s.B, s.H}, "y", [&](const std::vector<Expr>& i) {
      StepIndex at = StepOf(s, i[0], step, length_at(i[1]));
      Expr value = ir::select(at.valid, ir::Load::make(h, Compact(s, i[0], i[1], i[2])), ir::make_zero(s.dtype));
      return ir::Store::make(y, value, YIndex(s, at.time, i[0], i[1], i[2]));
    }));
  }
  ir::Stmt time_loop = ir::For::make(step, Expr(int64_t{0}), Expr(s.T), ir::ForKind::kSerial, ir::Seq::make(step_stmts));

  // Initial state, then the final state into Y_h / Y_c.
  auto init = [&](const ir::Buffer& state, size_t input) {
    return Nest({s.D, s.B, s.H}, "init", [&](const std::vector<Expr>& i) {
      Expr value = has(input) ? ir::Load::make(c.values.at(node.inputs[input]), StateIndex(s, i[0], i[1], i[2]))
                              : ir::make_zero(s.dtype);
      return ir::Store::make(state, value, Compact(s, i[0], i[1], i[2]));
    });
  };
  auto emit = [&](const ir::Buffer& state, int output) {
    if (!outputs.count(output)) return ir::Stmt();
    return Nest({s.D, s.B, s.H}, "final", [&](const std::vector<Expr>& i) {
      return ir::Store::make(outputs[output], ir::Load::make(state, Compact(s, i[0], i[1], i[2])),
                             StateIndex(s, i[0], i[1], i[2]));
    });
  };
  bool lstm = s.op == "LSTM";
  std::vector<ir::Stmt> body{projection, init(h, 5)};
  if (lstm) body.push_back(init(cst, 6));
  body.push_back(time_loop);
  body.push_back(emit(h, 1));
  if (lstm) body.push_back(emit(cst, 2));
  ir::Stmt stmt = ir::Seq::make(body);

  // Workspace: the pieces' own scratch first (they never run at the same time), then XW and the state.
  int64_t offset = RoundUp(c.piece_workspace, 64);
  auto place = [&](const ir::Buffer& buffer, int64_t elems, ir::Stmt inner) {
    ir::Stmt a = ir::Allocate::make(buffer, {Expr(elems)}, 64, ir::MemoryScope::kWorkspace, inner, offset);
    offset += RoundUp(elems * s.dtype.element_bytes(), 64);
    return a;
  };
  if (lstm) stmt = place(cst, state_elems, stmt);
  stmt = place(h, state_elems, stmt);
  stmt = place(xw, s.D * xw_stride, stmt);

  ir::LoweredFunc func;
  func.name = kernel_name;
  func.params = c.params;
  for (const auto& [buffer, value] : c.constants) {
    func.params.push_back(buffer);
    c.kernel.params.push_back(KernelParam{KernelParam::Kind::kConstant, "", value});
  }
  for (size_t i = 0; i < group.outputs.size(); ++i) {
    func.params.push_back(output_params[i]);
    c.kernel.params.push_back(KernelParam{KernelParam::Kind::kValue, group.outputs[i], graph::Tensor()});
  }
  func.body = stmt;
  func.workspace_bytes = offset;
  lower::VerifyOptions verify;
  verify.unique_defs = true;
  lower::VerifyLoweredFunc(func, "recurrent composition", verify);

  std::ostringstream summary;
  summary << node.op << " T=" << s.T << " B=" << s.B << " H=" << s.H << " D=" << s.D << ": ";
  for (size_t i = 0; i < c.summaries.size(); ++i) summary << (i ? "; " : "") << c.summaries[i];
  summary << "; time loop in the kernel [" << node.op << "]";
  c.kernel.func = func;
  c.kernel.schedule_summary = summary.str();
  return c.kernel;
}

}  // namespace ops
}  // namespace agate
