#include "core/graph/passes/qdq_folding.h"

#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "core/graph/passes/pattern.h"
#include "core/support/error.h"
#include "core/support/logging.h"

namespace agate {
namespace graph {
namespace {

bool IsQuant8(DType t) { return t == DType::UInt(8) || t == DType::Int(8); }

// The representable range of a quantized integer type (8/16-bit), or nullopt.
std::optional<std::pair<double, double>> QuantRange(DType t) {
  if (!t.is_integer() || t.bits() > 16) return std::nullopt;
  if (t.is_uint()) return std::make_pair(0.0, std::ldexp(1.0, t.bits()) - 1);
  return std::make_pair(-std::ldexp(1.0, t.bits() - 1), std::ldexp(1.0, t.bits() - 1) - 1);
}

// Zero/negative/non-finite scales and out-of-range zero points of every constant
// quantization parameter: kInvalidArgument naming the tensor.
void CheckQuantParams(const Graph& graph) {
  for (const Node& node : graph.nodes) {
    if (node.op != "QuantizeLinear" && node.op != "DequantizeLinear") continue;
    if (node.inputs.size() > 1 && graph.IsConstant(node.inputs[1])) {
      const Tensor& s = graph.ConstantOf(node.inputs[1]);
      for (int64_t i = 0; i < s.numel(); ++i) {
        double v = s.GetDouble(i);
        AGATE_REQUIRE(v > 0 && std::isfinite(v), kInvalidArgument)
            << node.Describe() << ": scale '" << node.inputs[1] << "' holds " << v << " at element " << i
            << "; a quantization scale must be positive and finite";
      }
    }
    if (node.inputs.size() < 3 || node.inputs[2].empty() || !graph.IsConstant(node.inputs[2])) continue;
    const Tensor& z = graph.ConstantOf(node.inputs[2]);
    DType quantized = node.op == "DequantizeLinear" ? graph.TypeOf(node.inputs[0]).dtype : z.dtype();
    auto range = QuantRange(quantized);
    if (!range) continue;
    for (int64_t i = 0; i < z.numel(); ++i) {
      double v = z.GetDouble(i);
      AGATE_REQUIRE(v >= range->first && v <= range->second, kInvalidArgument)
          << node.Describe() << ": zero point '" << node.inputs[2] << "' holds " << v << " at element " << i
          << ", outside the range of " << quantized << " [" << range->first << ", " << range->second << "]";
    }
  }
}

// Why a candidate was not folded (empty: folded).
using Reason = std::string;

// One quantized tensor's parameters as graph values (the zero point created when absent).
struct QParams {
  std::string scale, zero_point;
  const Tensor* scale_value = nullptr;
  const Tensor* zero_value = nullptr;
  DType type;
  double ScaleAt(int64_t i) const { return scale_value->GetDouble(scale_value->numel() == 1 ? 0 : i); }
  double Zero() const { return zero_value ? zero_value->GetDouble(0) : 0.0; }
};

class Folder {
 public:
  Folder(const Graph& graph) : graph_(graph), view_(graph), rewriter_(graph) {}

  Graph Run() {
    for (const Node& node : graph_.nodes) {
      if (IsOrderPreserving(node)) {
        FoldOrderPreserving(node);
        continue;
      }
      if (node.op != "Conv" && node.op != "MatMul" && node.op != "Gemm") continue;
      if (!ReadsDequantized(node)) continue;
      const Node* q = nullptr;
      const Node* act = nullptr;
      if (!QuantizedResult(node, &q, &act)) {
        AGATE_LOG(INFO) << "qdq_folding: " << node.Describe() << " reads dequantized values but its result is not "
                        << "quantized; it runs in float";
        continue;
      }
      Reason why = Fold(node, act, q);
      if (!why.empty()) {
        AGATE_LOG(WARNING) << "qdq_folding: " << node.Describe() << " stays float: " << why;
      }
    }
    return rewriter_.Finish();
  }

 private:
  const Tensor* Constant(const std::string& value) const {
    return !value.empty() && graph_.IsConstant(value) ? &graph_.ConstantOf(value) : nullptr;
  }

  bool ReadsDequantized(const Node& node) const {
    for (size_t i = 0; i < node.inputs.size() && i < 2; ++i) {
      const Node* p = view_.Producer(node.inputs[i]);
      if (p && p->op == "DequantizeLinear") return true;
    }
    return false;
  }

  // node -> [Relu | Clip] -> QuantizeLinear, each read only there.
  bool QuantizedResult(const Node& node, const Node** q, const Node** act) const {
    std::vector<const Node*> readers = view_.Consumers(node.outputs[0]);
    if (readers.size() != 1) return false;
    const Node* next = readers[0];
    if (next->op == "Relu" || next->op == "Clip") {
      std::vector<const Node*> after = view_.Consumers(next->outputs[0]);
      if (after.size() != 1) return false;
      *act = next;
      next = after[0];
    }
    if (next->op != "QuantizeLinear") return false;
    *q = next;
    return true;
  }

  // The parameters of a DequantizeLinear (dq) or QuantizeLinear node; `per_axis`
  // (or -1: per tensor only) is the data axis a per-axis parameter must follow.
  Reason Params(const Node& node, int per_axis, int64_t channels, QParams* p) {
    p->scale = node.inputs[1];
    p->scale_value = Constant(p->scale);
    if (!p->scale_value) return "scale '" + p->scale + "' of " + node.Describe() + " is not a constant";
    p->type = node.op == "DequantizeLinear" ? graph_.TypeOf(node.inputs[0]).dtype : graph_.TypeOf(node.outputs[0]).dtype;
    if (!IsQuant8(p->type)) return node.Describe() + " quantizes to " + p->type.ToString() + ", not 8 bits";
    bool has_zero = node.inputs.size() > 2 && !node.inputs[2].empty();
    if (has_zero) {
      p->zero_point = node.inputs[2];
      p->zero_value = Constant(p->zero_point);
      if (!p->zero_value) return "zero point '" + p->zero_point + "' of " + node.Describe() + " is not a constant";
      if (p->zero_value->dtype() != p->type) return "zero point '" + p->zero_point + "' is not " + p->type.ToString();
    } else {
      p->zero_point = rewriter_.AddConstant(node.name + "_zero_point", Tensor::FromInts(p->type, {}, {0}));
    }
    int64_t n = p->scale_value->numel();
    if (p->zero_value && p->zero_value->numel() != n) return "scale and zero point of " + node.Describe() + " differ in size";
    if (n == 1 && p->scale_value->shape().size() <= 1) return "";
    // Blocked quantization (opset 21: a scale per block of `block_size` elements along the axis) has no
    // integer kernel: the DequantizeLinear runs and the op stays float.
    if (int64_t block = node.attrs.GetInt("block_size", 0); block > 0)
      return node.Describe() + " is quantized in blocks of " + std::to_string(block) +
             " (block_size), where only per-tensor or per-channel parameters fold into integer ops";
    if (per_axis < 0) return node.Describe() + " is quantized per axis where only per-tensor parameters fold";
    int rank = graph_.TypeOf(node.inputs[0]).rank();
    int64_t axis = node.attrs.GetInt("axis", 1);
    if (axis < 0) axis += rank;
    if (axis != per_axis || p->scale_value->shape().size() != 1 || n != channels)
      return node.Describe() + " is quantized along axis " + std::to_string(axis) + ", not the output channels";
    return "";
  }

  // An int32 bias (scale x_scale * w_scale[c]) from a float constant or DequantizeLinear of int32.
  Reason Bias(const std::string& value, const QParams& x, const QParams& w, int64_t channels, std::string* out) {
    const Tensor* f = Constant(value);
    Tensor bias(DType::Int(32), {channels});
    if (f != nullptr) {
      if (!f->dtype().is_float() || f->numel() != channels) return "bias '" + value + "' is not a float [" + std::to_string(channels) + "]";
      for (int64_t c = 0; c < channels; ++c) {
        double q = std::nearbyint(f->GetDouble(c) / (x.ScaleAt(0) * w.ScaleAt(c)));
        if (std::fabs(q) > 2147483647.0) return "bias '" + value + "' overflows int32 at its scale";
        bias.SetInt(c, static_cast<int64_t>(q));
      }
      *out = rewriter_.AddConstant(value + "_int32", bias);
      return "";
    }
    const Node* dq = view_.Producer(value);
    if (!dq || dq->op != "DequantizeLinear") return "bias '" + value + "' is neither a constant nor dequantized int32";
    const Tensor* data = Constant(dq->inputs[0]);
    const Tensor* scale = Constant(dq->inputs[1]);
    if (!data || !scale || data->dtype() != DType::Int(32) || data->numel() != channels)
      return "bias '" + value + "' is not DequantizeLinear of a constant int32 [" + std::to_string(channels) + "]";
    if (dq->inputs.size() > 2 && !dq->inputs[2].empty()) {
      const Tensor* z = Constant(dq->inputs[2]);
      if (!z) return "bias zero point is not a constant";
      for (int64_t i = 0; i < z->numel(); ++i)
        if (z->GetDouble(i) != 0) return "bias '" + value + "' has a non-zero zero point";
    }
    for (int64_t c = 0; c < channels; ++c) {
      if (!NearlyEqual(scale->GetDouble(scale->numel() == 1 ? 0 : c), x.ScaleAt(0) * w.ScaleAt(c)))
        return "bias '" + value + "' scale is not input scale x weight scale";
    }
    *out = dq->inputs[0];
    return "";
  }

  // A Gemm as MatMulInteger (the int8 matrix-product template: vpdpbusd tiles with VNNI;
  // a classifier's matrix-vector product, which as a 1x1 QLinearConv over one pixel took
  // the generic conv template: 0.16 ms of MobileNetV2's 2.5) followed by the
  // requantisation of core/ops/qlinear.h spelled as graph operators, so that the result is
  // QLinearConv's bit for bit: Add(int32 bias), Cast(float32), Mul(M), Round, Add(y zero
  // point), Max/Min(the type's range and the activation's bounds), Cast(y's type), M[n] =
  // float32(x_scale * w_scale[n] / y_scale) computed in double, as QLinearConv's.
  void GemmChain(const Node& node, const std::string& w_name, const Tensor& w, bool trans_b, int64_t channels, const std::string& x_q,
                 const QParams& x, const QParams& wp, const QParams& y, const std::string& bias, double lo_q,
                 double hi_q, std::vector<Node>* chain) {
    auto add = [&](const std::string& op, std::vector<std::string> inputs, const std::string& suffix) {
      Node n;
      n.op = op;
      n.name = node.name + "_" + suffix;
      n.inputs = std::move(inputs);
      n.outputs = {rewriter_.FreshName(node.outputs[0] + "_" + suffix)};
      chain->push_back(n);
      return chain->back().outputs[0];
    };
    const Shape& ws = w.shape();
    int64_t k = trans_b ? ws[1] : ws[0];
    Tensor kn(w.dtype(), {trans_b ? k : 0, channels});  // B^T as [K, N]
    for (int64_t n = 0; trans_b && n < channels; ++n)
      for (int64_t i = 0; i < k; ++i) kn.SetInt(i * channels + n, w.GetInt(n * k + i));
    std::string b = trans_b ? rewriter_.AddConstant(w_name + "_kn", kn) : w_name;
    std::string v = add("MatMulInteger", {x_q, b, x.zero_point, wp.zero_point}, "quantized");
    if (!bias.empty()) v = add("Add", {v, bias}, "bias");
    v = add("Cast", {v}, "float");
    chain->back().attrs.Set("to", std::string("float32"));
    bool per_channel = wp.scale_value->numel() != 1;
    Tensor m(DType::Float(32), per_channel ? Shape{channels} : Shape{});
    for (int64_t n = 0; n < m.numel(); ++n) m.SetDouble(n, x.ScaleAt(0) * wp.ScaleAt(n) / y.ScaleAt(0));
    v = add("Mul", {v, rewriter_.AddConstant(node.name + "_multiplier", m)}, "scaled");
    v = add("Round", {v}, "rounded");
    v = add("Add", {v, rewriter_.AddConstant(node.name + "_y_zero", Tensor::FromDoubles(DType::Float(32), {}, {y.Zero()}))},
            "shifted");
    v = add("Max", {v, rewriter_.AddConstant(node.name + "_lo", Tensor::FromDoubles(DType::Float(32), {}, {lo_q}))}, "lo");
    v = add("Min", {v, rewriter_.AddConstant(node.name + "_hi", Tensor::FromDoubles(DType::Float(32), {}, {hi_q}))}, "hi");
    add("Cast", {v}, "quantized_out");
    chain->back().attrs.Set("to", y.type.ToString());
  }

  // Q(relu(y)) = max(Q(y), Q(0)); Q(clip(y, lo, hi)) = min(max(Q(y), Q(lo)), Q(hi)).
  Reason ActivationBounds(const Node* act, const QParams& y, double* lo_q, double* hi_q) {
    auto range = *QuantRange(y.type);
    *lo_q = range.first;
    *hi_q = range.second;
    if (!act) return "";
    double lo = 0, hi = std::numeric_limits<double>::infinity();
    if (act->op == "Clip") {
      lo = -hi;
      for (int i : {1, 2}) {
        if (static_cast<int>(act->inputs.size()) > i && !act->inputs[i].empty()) {
          const Tensor* b = Constant(act->inputs[i]);
          if (!b || b->numel() != 1) return "Clip bound '" + act->inputs[i] + "' is not a scalar constant";
          (i == 1 ? lo : hi) = b->GetDouble(0);
        } else if (act->attrs.Has(i == 1 ? "min" : "max")) {
          (i == 1 ? lo : hi) = act->attrs.GetFloat(i == 1 ? "min" : "max");
        }
      }
    }
    auto quantize = [&](double v) {
      return std::min(range.second, std::max(range.first, std::nearbyint(v / y.ScaleAt(0)) + y.Zero()));
    };
    if (std::isfinite(lo)) *lo_q = quantize(lo);
    if (std::isfinite(hi)) *hi_q = quantize(hi);
    return "";
  }

  Reason Fold(const Node& node, const Node* act, const Node* q) {
    const Node* x_dq = view_.Producer(node.inputs[0]);
    const Node* w_dq = view_.Producer(node.inputs[1]);
    if (!x_dq || x_dq->op != "DequantizeLinear") return "input '" + node.inputs[0] + "' is not dequantized";
    if (!w_dq || w_dq->op != "DequantizeLinear") return "weight '" + node.inputs[1] + "' is not dequantized";
    const Tensor* w = Constant(w_dq->inputs[0]);
    if (!w) return "weight '" + w_dq->inputs[0] + "' is not a constant";
    if (!view_.SingleUse(node.outputs[0]) || (act && !view_.SingleUse(act->outputs[0])))
      return "its float result is read outside the pattern";
    const Shape& ws = w->shape();
    bool gemm = node.op == "Gemm", matmul = node.op == "MatMul";
    bool trans_b = gemm && node.attrs.GetInt("transB", 0) != 0;
    if (gemm && (node.attrs.GetInt("transA", 0) != 0 || node.attrs.GetFloat("alpha", 1.0) != 1.0 ||
                 node.attrs.GetFloat("beta", 1.0) != 1.0))
      return "Gemm with transA, alpha or beta";
    if ((gemm || matmul) && ws.size() != 2) return "the weight is not a matrix";
    if (gemm && graph_.TypeOf(node.inputs[0]).rank() != 2) return "Gemm input is not a matrix";
    int w_axis = node.op == "Conv" || trans_b ? 0 : 1;
    int64_t channels = ws[w_axis];
    QParams x, wp, y;
    Reason why = Params(*x_dq, -1, 0, &x);
    if (why.empty()) why = Params(*w_dq, w_axis, channels, &wp);
    if (why.empty()) why = Params(*q, -1, 0, &y);
    if (!why.empty()) return why;
    std::string bias;
    bool has_bias = !matmul && node.inputs.size() > 2 && !node.inputs[2].empty();
    if (has_bias) {
      why = Bias(node.inputs[2], x, wp, channels, &bias);
      if (!why.empty()) return why;
    }
    double lo_q = 0, hi_q = 0;
    why = ActivationBounds(act, y, &lo_q, &hi_q);
    if (!why.empty()) return why;

    // The integer node and the activation's bounds, or the Gemm chain; the last writes q's output.
    auto range = *QuantRange(y.type);
    std::vector<Node> chain;
    std::string x_q = x_dq->inputs[0];
    if (gemm) {
      GemmChain(node, w_dq->inputs[0], *w, trans_b, channels, x_q, x, wp, y, has_bias ? bias : "", lo_q, hi_q, &chain);
    } else {
      Node integer;
      integer.name = node.name + "_quantized";
      integer.outputs = {rewriter_.FreshName(q->outputs[0] + "_int")};
      integer.op = matmul ? "QLinearMatMul" : "QLinearConv";
      integer.inputs = {x_q, x.scale, x.zero_point, w_dq->inputs[0], wp.scale, wp.zero_point, y.scale, y.zero_point};
      if (!matmul) {
        integer.attrs = node.attrs;
        if (has_bias) integer.inputs.push_back(bias);
      }
      chain.push_back(integer);
      // The activation's bounds on the 8-bit result (the Gemm chain clamps in float).
      std::string v = integer.outputs[0];
      for (auto [op, bound, limit] : {std::make_tuple("Max", lo_q, range.first), std::make_tuple("Min", hi_q, range.second)}) {
        if (bound == limit) continue;
        Node clamp;
        clamp.op = op;
        clamp.inputs = {v, rewriter_.AddConstant(q->outputs[0] + "_" + op, Tensor::FromInts(y.type, {}, {int64_t(bound)}))};
        clamp.outputs = {rewriter_.FreshName(v + "_" + op)};
        chain.push_back(clamp);
        v = clamp.outputs[0];
      }
    }
    // The last node writes the QuantizeLinear's output; the others go before it.
    chain.back().outputs = q->outputs;
    std::vector<const Node*> matched{&node};
    if (act) matched.push_back(act);
    if (!rewriter_.Available(matched) || !rewriter_.Available({q})) return "it overlaps another folded pattern";
    for (Node& n : chain)
      if (n.name.empty()) n.name = node.name + "_" + n.op;
    for (size_t i = 0; i + 1 < chain.size(); ++i) rewriter_.AddNodeBefore(q, chain[i]);  // names made fresh there
    Node last = chain.back();
    last.name = rewriter_.FreshName(last.name);
    rewriter_.Replace(q, matched, last);
    return "";
  }

  // Operators that commute with a per-tensor quantization: each output element is one input
  // element (moved), or the max of some (quantization is monotonic). MaxPool's padding is -inf
  // in float, whose quantization is the type's lowest value, the integer MaxPool's padding.
  static bool IsOrderPreserving(const Node& node) {
    static const std::set<std::string> ops = {"MaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten"};
    return ops.count(node.op) && node.inputs.size() == 1 && node.outputs.size() == 1;
  }

  // DequantizeLinear(x_q) -> op -> QuantizeLinear with the same scale and zero point is op(x_q)
  // exactly: the quantization of a dequantized value is the value (|x - zp| <= 255 survives
  // the float product and quotient to within far less than half a unit). ResNet-50 QDQ's max
  // pool ran in float between the two, elementwise and unvectorized.
  void FoldOrderPreserving(const Node& node) {
    const Node* dq = view_.Producer(node.inputs[0]);
    if (!dq || dq->op != "DequantizeLinear") return;
    const Node* q = nullptr;
    const Node* act = nullptr;
    if (!QuantizedResult(node, &q, &act) || act) return;
    QParams x, y;
    Reason why = Params(*dq, -1, 0, &x);
    if (why.empty()) why = Params(*q, -1, 0, &y);
    if (why.empty() && (x.type != y.type || x.scale_value->numel() != 1 || y.scale_value->numel() != 1 ||
                        x.ScaleAt(0) != y.ScaleAt(0) || x.Zero() != y.Zero()))
      why = "its input and output are quantized with different parameters";
    if (why.empty() && !rewriter_.Available({&node, q})) why = "it overlaps another folded pattern";
    if (!why.empty()) {
      AGATE_LOG(WARNING) << "qdq_folding: " << node.Describe() << " stays float: " << why;
      return;
    }
    Node integer = node;
    integer.name = rewriter_.FreshName(node.name + "_quantized");
    integer.inputs = {dq->inputs[0]};
    integer.outputs = q->outputs;
    rewriter_.Replace(q, {&node}, integer);
  }

  const Graph& graph_;
  PatternView view_;
  PatternRewriter rewriter_;
};

}  // namespace

Graph FoldQDQ(const Graph& graph) {
  CheckQuantParams(graph);
  return Folder(graph).Run();
}

}  // namespace graph
}  // namespace agate
