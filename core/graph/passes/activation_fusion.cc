#include "core/graph/passes/activation_fusion.h"

#include <cmath>

#include "core/graph/passes/pattern.h"

namespace agate {
namespace graph {
namespace {

struct Match {
  std::string op;
  std::string x;
  Attributes attrs;
  std::vector<const Node*> nodes;
};

void Append(std::vector<const Node*>* to, const std::vector<const Node*>& from) {
  to->insert(to->end(), from.begin(), from.end());
}

// value = x^3: Pow(x, 3) or a product x * x * x.
bool IsCube(const PatternView& view, const std::string& value, const std::string& x, std::vector<const Node*>* nodes) {
  if (const Node* pow = view.Interior(value, "Pow")) {
    if (pow->inputs[0] != x || !view.IsScalar(pow->inputs[1], 3.0)) return false;
    nodes->push_back(pow);
    return true;
  }
  return false;
}

// 0.5 * x * (1 + erf(x / sqrt 2)) or the tanh form, with `x` and `t` the two non-constant factors.
bool MatchGelu(const PatternView& view, const PatternView::Product& p, Match* m) {
  if (p.factors.size() < 2 || !NearlyEqual(p.constant, 0.5)) return false;
  for (int side = 0; side < 2 && p.factors.size() == 2; ++side) {
    const std::string& x = p.factors[side];
    const std::string& t = p.factors[1 - side];
    PatternView::Sum sum = view.Terms(t);
    if (sum.terms.size() != 1 || !NearlyEqual(sum.constant, 1.0) || sum.nodes.empty() || !view.SingleUse(t)) continue;
    const Node* f = view.Producer(sum.terms[0]);
    if (!f || !view.SingleUse(sum.terms[0]) || (f->op != "Erf" && f->op != "Tanh")) continue;
    if (!view.SingleUse(f->inputs[0])) continue;
    PatternView::Product arg = view.Factors(f->inputs[0]);
    m->nodes = p.nodes;
    Append(&m->nodes, sum.nodes);
    m->nodes.push_back(f);
    Append(&m->nodes, arg.nodes);
    if (f->op == "Erf") {
      if (arg.factors != std::vector<std::string>{x} || !NearlyEqual(arg.constant, 1.0 / std::sqrt(2.0))) continue;
      m->op = "Gelu";
      m->x = x;
      return true;
    }
    // tanh(sqrt(2/pi) * (x + 0.044715 * x^3))
    if (arg.factors.size() != 1 || !NearlyEqual(arg.constant, std::sqrt(2.0 / M_PI))) continue;
    PatternView::Sum inner = view.Terms(arg.factors[0]);
    if (inner.terms.size() != 2 || inner.constant != 0.0 || inner.nodes.empty() || !view.SingleUse(arg.factors[0]))
      continue;
    bool matched = false;
    for (int k = 0; k < 2 && !matched; ++k) {
      if (inner.terms[k] != x || !view.SingleUse(inner.terms[1 - k])) continue;
      PatternView::Product cube = view.Factors(inner.terms[1 - k]);
      if (!NearlyEqual(cube.constant, 0.044715)) continue;
      std::vector<const Node*> cube_nodes = cube.nodes;
      bool is_cube = (cube.factors.size() == 3 && cube.factors[0] == x && cube.factors[1] == x && cube.factors[2] == x) ||
                     (cube.factors.size() == 1 && IsCube(view, cube.factors[0], x, &cube_nodes));
      if (!is_cube) continue;
      Append(&m->nodes, inner.nodes);
      Append(&m->nodes, cube_nodes);
      matched = true;
    }
    if (!matched) continue;
    m->op = "Gelu";
    m->x = x;
    m->attrs.Set("approximate", std::string("tanh"));
    return true;
  }
  return false;
}

// x * sigmoid(alpha * x).
bool MatchSwish(const PatternView& view, const PatternView::Product& p, Match* m) {
  if (p.factors.size() != 2 || p.constant != 1.0) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& x = p.factors[side];
    const Node* sigmoid = view.Interior(p.factors[1 - side], "Sigmoid");
    if (!sigmoid) continue;
    PatternView::Product arg = view.Factors(sigmoid->inputs[0]);
    if (arg.factors != std::vector<std::string>{x} || (!arg.nodes.empty() && !view.SingleUse(sigmoid->inputs[0])))
      continue;
    m->op = "Swish";
    m->x = x;
    if (arg.constant != 1.0) m->attrs.Set("alpha", arg.constant);
    m->nodes = p.nodes;
    m->nodes.push_back(sigmoid);
    Append(&m->nodes, arg.nodes);
    return true;
  }
  return false;
}

// A Clip of `value` to [lo, hi] (attributes before opset 11, scalar constant inputs after).
bool IsClip(const PatternView& view, const Node& clip, double lo, double hi) {
  if (clip.op != "Clip") return false;
  auto bound = [&](int input, const char* attr, double want) {
    if (static_cast<int>(clip.inputs.size()) > input && !clip.inputs[input].empty())
      return view.IsScalar(clip.inputs[input], want);
    return clip.attrs.Has(attr) && NearlyEqual(clip.attrs.GetFloat(attr), want);
  };
  return bound(1, "min", lo) && bound(2, "max", hi);
}

// x * HardSigmoid(x, 1/6, 1/2) or x * clip(x + 3, 0, 6) / 6.
bool MatchHardSwish(const PatternView& view, const PatternView::Product& p, Match* m) {
  if (p.factors.size() != 2) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& x = p.factors[side];
    const std::string& g = p.factors[1 - side];
    if (const Node* hs = view.Interior(g, "HardSigmoid")) {
      if (p.constant != 1.0 || hs->inputs[0] != x || !NearlyEqual(hs->attrs.GetFloat("alpha", 0.2), 1.0 / 6) ||
          !NearlyEqual(hs->attrs.GetFloat("beta", 0.5), 0.5))
        continue;
      m->nodes = p.nodes;
      m->nodes.push_back(hs);
    } else if (const Node* clip = view.Producer(g); clip && view.SingleUse(g) && IsClip(view, *clip, 0.0, 6.0)) {
      PatternView::Sum shifted = view.Terms(clip->inputs[0]);
      if (!NearlyEqual(p.constant, 1.0 / 6) || shifted.terms != std::vector<std::string>{x} ||
          !NearlyEqual(shifted.constant, 3.0) || shifted.nodes.empty() || !view.SingleUse(clip->inputs[0]))
        continue;
      m->nodes = p.nodes;
      m->nodes.push_back(clip);
      Append(&m->nodes, shifted.nodes);
    } else {
      continue;
    }
    m->op = "HardSwish";
    m->x = x;
    return true;
  }
  return false;
}

}  // namespace

Graph FuseActivations(const Graph& graph) {
  PatternView view(graph);
  PatternRewriter rewriter(graph);
  for (const Node& node : graph.nodes) {
    if ((node.op != "Mul" && node.op != "Div") || node.outputs.size() != 1) continue;
    const TensorType& type = graph.TypeOf(node.outputs[0]);
    if (!type.dtype.is_float()) continue;
    PatternView::Product p = view.Factors(node.outputs[0]);
    if (p.nodes.empty()) continue;
    Match m;
    if (!MatchGelu(view, p, &m) && !MatchSwish(view, p, &m) && !MatchHardSwish(view, p, &m)) continue;
    if (graph.TypeOf(m.x) != type) continue;  // a constant that broadcast x to another shape
    Node fused;
    fused.op = m.op;
    fused.inputs = {m.x};
    fused.outputs = node.outputs;
    fused.attrs = m.attrs;
    rewriter.Replace(&node, m.nodes, fused);
  }
  return rewriter.Finish();
}

}  // namespace graph
}  // namespace agate
