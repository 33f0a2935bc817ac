#include "core/graph/passes/norm_fusion.h"

#include <algorithm>

#include "core/graph/passes/pattern.h"
#include "core/graph/shape_rules.h"

namespace agate {
namespace graph {
namespace {

// The trailing axes [first, rank) a ReduceMean with keepdims reduces, or -1.
int TrailingReduceAxis(const Node& mean, int rank) {
  if (mean.op != "ReduceMean" || mean.attrs.GetInt("keepdims", 1) != 1 || !mean.attrs.Has("axes")) return -1;
  std::vector<int> axes;
  for (int64_t a : mean.attrs.GetInts("axes")) {
    if (a < -rank || a >= rank) return -1;
    axes.push_back(static_cast<int>(a < 0 ? a + rank : a));
  }
  std::sort(axes.begin(), axes.end());
  if (axes.empty() || axes.back() != rank - 1) return -1;
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return -1;
  return axes.front();
}

// A normalization n = num / sqrt(mean(num^2, axes) + eps), found from the node computing n.
struct Normalized {
  std::string num;          // the numerator (x - mean(x) for a layer norm, x for an RMS norm)
  int axis = -1;            // first normalized axis
  double epsilon = 0;
  std::vector<const Node*> nodes;  // the matched nodes, n's producer included
};

// 1/sqrt(v + eps) or sqrt(v + eps) (as `inverse`), v = ReduceMean(num^2): fills `out`.
bool MatchRms(const PatternView& view, const std::string& sqrt_value, const std::string& num, Normalized* out) {
  const Node* sqrt = view.Interior(sqrt_value, "Sqrt");
  if (!sqrt) return false;
  PatternView::Sum sum = view.Terms(sqrt->inputs[0]);
  if (sum.terms.size() != 1 || sum.constant < 0 || !view.SingleUse(sqrt->inputs[0])) return false;
  const Node* mean = view.Interior(sum.terms[0], "ReduceMean");
  if (!mean || (sum.nodes.empty() && sum.terms[0] != sqrt->inputs[0])) return false;
  int rank = view.graph().TypeOf(num).rank();
  int axis = TrailingReduceAxis(*mean, rank);
  if (axis < 0) return false;
  const std::string& sq = mean->inputs[0];
  const Node* square = view.Producer(sq);
  if (!square || !view.SingleUse(sq)) return false;
  bool is_square = (square->op == "Pow" && square->inputs[0] == num && view.IsScalar(square->inputs[1], 2.0)) ||
                   (square->op == "Mul" && square->inputs[0] == num && square->inputs[1] == num);
  if (!is_square) return false;
  out->num = num;
  out->axis = axis;
  out->epsilon = sum.constant;
  out->nodes.insert(out->nodes.end(), {sqrt, mean, square});
  out->nodes.insert(out->nodes.end(), sum.nodes.begin(), sum.nodes.end());
  return true;
}

// n = num / sqrt(...) or num * (1 / sqrt(...)) or num * Reciprocal(sqrt(...)), n computed by `node`.
bool MatchNormalized(const PatternView& view, const Node& node, Normalized* out) {
  if (node.outputs.size() != 1 || node.inputs.size() != 2) return false;
  if (node.op == "Div") {
    out->nodes = {&node};
    return MatchRms(view, node.inputs[1], node.inputs[0], out);
  }
  if (node.op != "Mul") return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& num = node.inputs[side];
    const std::string& inv = node.inputs[1 - side];
    const Node* recip = view.Interior(inv, "Reciprocal");
    std::string sqrt_value;
    if (recip) {
      sqrt_value = recip->inputs[0];
    } else if (const Node* div = view.Interior(inv, "Div"); div && view.IsScalar(div->inputs[0], 1.0)) {
      recip = div;
      sqrt_value = div->inputs[1];
    } else {
      continue;
    }
    out->nodes = {&node, recip};
    if (MatchRms(view, sqrt_value, num, out)) return true;
  }
  return false;
}

// True when `value` broadcasts over the normalized axes [axis, rank) of `like` only.
bool BroadcastsOverNormalized(const Graph& g, const std::string& value, const std::string& like, int axis) {
  const TensorType& t = g.TypeOf(value);
  const TensorType& x = g.TypeOf(like);
  if (t.dtype != x.dtype || t.rank() > x.rank() - axis) return false;
  Shape normalized(x.shape.begin() + axis, x.shape.end());
  for (int i = 0; i < t.rank(); ++i) {
    int64_t want = normalized[normalized.size() - t.rank() + i];
    if (t.shape[i] != want && t.shape[i] != 1) return false;
  }
  return true;
}

// The other operand of a binary `op` node reading `value`, when that node is
// `value`'s only reader and the operand broadcasts over the normalized axes.
const Node* AffineStep(const PatternView& view, const std::string& value, const std::string& op, int axis,
                       std::string* operand) {
  if (!view.SingleUse(value)) return nullptr;
  const Graph& g = view.graph();
  const Node* n = view.Consumers(value).front();
  if (n->op != op || n->inputs.size() != 2 || n->outputs.size() != 1) return nullptr;
  const std::string& other = n->inputs[0] == value ? n->inputs[1] : n->inputs[0];
  if (other == value || !BroadcastsOverNormalized(g, other, value, axis)) return nullptr;
  if (g.TypeOf(n->outputs[0]) != g.TypeOf(value)) return nullptr;
  *operand = other;
  return n;
}

Tensor Ones(DType dtype, const Shape& shape) {
  return Tensor::FromDoubles(dtype, shape, std::vector<double>(NumElements(shape), 1.0));
}

}  // namespace

Graph FuseNormalizations(const Graph& graph) {
  PatternView view(graph);
  PatternRewriter rewriter(graph);
  for (const Node& node : graph.nodes) {
    Normalized n;
    if (!MatchNormalized(view, node, &n)) continue;
    const TensorType& type = graph.TypeOf(node.outputs[0]);
    if (!type.dtype.is_float() || graph.TypeOf(n.num) != type) continue;
    // A centred numerator x - ReduceMean(x) read only by the square and the quotient: a layer norm of x.
    std::string x = n.num;
    bool layer = false;
    const Node* sub = view.Producer(n.num);
    if (sub && sub->op == "Sub" && view.Consumers(n.num).size() == 2 && !graph.IsGraphOutput(n.num)) {
      const Node* mean = view.Interior(sub->inputs[1], "ReduceMean");
      if (mean && mean->inputs[0] == sub->inputs[0] && TrailingReduceAxis(*mean, type.rank()) == n.axis &&
          graph.TypeOf(sub->inputs[0]) == type) {
        layer = true;
        x = sub->inputs[0];
        n.nodes.push_back(sub);
        n.nodes.push_back(mean);
      }
    }
    // Optional scale, then (layer norm) optional shift.
    std::string value = node.outputs[0], gamma, beta;
    const Node* root = &node;
    if (const Node* mul = AffineStep(view, value, "Mul", n.axis, &gamma)) {
      n.nodes.push_back(mul);
      root = mul;
      value = mul->outputs[0];
    }
    if (layer) {
      if (const Node* add = AffineStep(view, value, "Add", n.axis, &beta)) {
        n.nodes.push_back(add);
        root = add;
      }
    }
    Node fused;
    fused.op = layer ? "LayerNormalization" : "RMSNormalization";
    fused.outputs = root->outputs;
    if (gamma.empty()) {
      gamma = rewriter.AddConstant(root->name + "_unit_scale",
                                   Ones(type.dtype, Shape(type.shape.begin() + n.axis, type.shape.end())));
    }
    fused.inputs = {x, gamma};
    if (!beta.empty()) fused.inputs.push_back(beta);
    fused.attrs.Set("axis", int64_t{n.axis});
    fused.attrs.Set("epsilon", n.epsilon);
    std::vector<const Node*> matched(n.nodes.begin(), n.nodes.end());
    rewriter.Replace(root, matched, fused);
  }
  return rewriter.Finish();
}

}  // namespace graph
}  // namespace agate
