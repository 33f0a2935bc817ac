#include "core/graph/passes/attention_fusion.h"

#include <cmath>

#include "core/graph/passes/pattern.h"
#include "core/graph_eval/kernel.h"
#include "core/graph/shape_rules.h"

namespace agate {
namespace graph {
namespace {

// Masked scores at or below this are "minus infinity" for every score an fp32 model produces.
constexpr double kMaskedOut = -1e30;

// What lies between the scores MatMul and the Softmax.
struct ScoreChain {
  const Node* matmul = nullptr;
  double scale = 1.0;                // multiplies Q K^T
  std::vector<Tensor> constant_masks;  // each scaled and broadcastable to the final scores
  std::string runtime_mask;            // at most one, broadcastable to the final scores
  // Where(cond, scores, fill) with a run-time cond (a padded sequence's valid keys): each becomes
  // the additive mask Where(cond, 0, fill) (or Where(cond, fill, 0) when cond marks the fill).
  struct RunTimeWhere {
    std::string cond;
    double fill = 0;
    bool keep_when = true;
  };
  std::vector<RunTimeWhere> runtime_wheres;
  std::vector<const Node*> nodes;
};

bool BroadcastsTo(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

// `mask` (broadcastable to `shape`) times `scale`, materialized over `shape`.
Tensor Materialize(const Tensor& mask, const Shape& shape, double scale, DType dtype) {
  Tensor out(dtype, shape);
  std::vector<int64_t> offsets = graph_eval::BroadcastOffsets(shape, mask.shape());
  for (int64_t i = 0; i < out.numel(); ++i) {
    double v = mask.GetDouble(offsets[i]);
    out.SetDouble(i, v == 0.0 ? 0.0 : v * scale);  // 0 * inf must stay 0
  }
  return out;
}

class AttentionMatcher {
 public:
  explicit AttentionMatcher(const PatternView& view) : view_(view), g_(view.graph()) {}

  // Walks from `value` (the scores as the Softmax or a later step sees them) back to the MatMul.
  // `outer` is the product of the scales between `value` and the Softmax.
  bool Walk(const std::string& value, const Shape& final_shape, double outer, ScoreChain* chain) const {
    const Node* node = view_.Producer(value);
    if (!node || !view_.SingleUse(value) || node->outputs.size() != 1) return false;
    const Shape& shape = g_.TypeOf(value).shape;
    if (node->op == "MatMul") {
      if (shape != final_shape) return false;
      chain->matmul = node;
      chain->scale = outer;
      chain->nodes.push_back(node);
      return true;
    }
    if (node->op == "Mul" || node->op == "Div") {
      for (int side = 0; side < 2; ++side) {
        std::optional<double> c = view_.Scalar(node->inputs[1 - side]);
        if (!c || *c == 0.0 || (node->op == "Div" && side == 1)) continue;
        ScoreChain attempt = *chain;
        attempt.nodes.push_back(node);
        double factor = node->op == "Mul" ? *c : 1.0 / *c;
        if (Walk(node->inputs[side], final_shape, outer * factor, &attempt)) {
          *chain = attempt;
          return true;
        }
      }
      return false;
    }
    if (node->op == "Add" || node->op == "Sub") {
      for (int side = 0; side < (node->op == "Add" ? 2 : 1); ++side) {
        const std::string& mask = node->inputs[1 - side];
        double sign = node->op == "Sub" ? -1.0 : 1.0;
        ScoreChain attempt = *chain;
        attempt.nodes.push_back(node);
        if (!AddMask(mask, sign * outer, shape, final_shape, &attempt)) continue;
        if (Walk(node->inputs[side], final_shape, outer, &attempt)) {
          *chain = attempt;
          return true;
        }
      }
      return false;
    }
    if (node->op == "Where") return WalkWhere(*node, shape, final_shape, outer, chain);
    if (node->op == "Reshape") {
      chain->nodes.push_back(node);
      return Walk(node->inputs[0], final_shape, outer, chain);
    }
    return false;
  }

 private:
  // A mask operand of an Add/Sub seen at scores of shape `shape`.
  bool AddMask(const std::string& mask, double scale, const Shape& shape, const Shape& final_shape,
               ScoreChain* chain) const {
    const TensorType& t = g_.TypeOf(mask);
    DType dtype = g_.TypeOf(chain->nodes.back()->outputs[0]).dtype;
    if (t.dtype != dtype || !BroadcastsTo(t.shape, shape)) return false;
    if (g_.IsConstant(mask)) {
      const Tensor& m = g_.ConstantOf(mask);
      chain->constant_masks.push_back(shape == final_shape && scale == 1.0 ? m
                                                                           : Materialize(m, shape, scale, dtype)
                                                                                 .Reshaped(final_shape));
      return true;
    }
    // A run-time mask: unscaled, at the final view, and only one.
    if (scale != 1.0 || shape != final_shape || !chain->runtime_mask.empty() || t.rank() > 4) return false;
    chain->runtime_mask = mask;
    return true;
  }

  // Where(cond, scores, fill) or Where(cond, fill, scores): fill <= -1e30 after scaling; a constant
  // cond is folded, a run-time one (at the final view) becomes an additive run-time mask.
  bool WalkWhere(const Node& node, const Shape& shape, const Shape& final_shape, double outer,
                 ScoreChain* chain) const {
    const std::string& cond = node.inputs[0];
    if (!g_.TypeOf(cond).dtype.is_bool() || !BroadcastsTo(g_.TypeOf(cond).shape, shape) || outer <= 0) return false;
    const bool constant = g_.IsConstant(cond);
    if (!constant && (shape != final_shape || g_.TypeOf(cond).rank() > 4)) return false;
    for (int side = 1; side <= 2; ++side) {
      std::optional<double> fill = view_.Scalar(node.inputs[3 - side]);
      if (!fill || *fill * outer > kMaskedOut) continue;
      const bool keep_when = side == 1;  // Where(cond, scores, fill) keeps the scores where cond holds
      ScoreChain attempt = *chain;
      attempt.nodes.push_back(&node);
      if (constant) {
        const Tensor& c = g_.ConstantOf(cond);
        Tensor mask(g_.TypeOf(node.outputs[0]).dtype, c.shape());
        for (int64_t i = 0; i < c.numel(); ++i) mask.SetDouble(i, (c.GetInt(i) != 0) == keep_when ? 0.0 : *fill);
        attempt.constant_masks.push_back(Materialize(mask, shape, outer, mask.dtype()).Reshaped(final_shape));
      } else {
        attempt.runtime_wheres.push_back({cond, *fill * outer, keep_when});
      }
      if (Walk(node.inputs[side], final_shape, outer, &attempt)) {
        *chain = attempt;
        return true;
      }
    }
    return false;
  }

  const PatternView& view_;
  const Graph& g_;
};

// Sum of the constant masks, broadcast together.
Tensor CombineMasks(const std::vector<Tensor>& masks, DType dtype) {
  Shape shape = masks[0].shape();
  for (const Tensor& m : masks) shape = BroadcastShapes(shape, m.shape(), "attention mask");
  Tensor out(dtype, shape);
  std::vector<double> sum(out.numel(), 0.0);
  for (const Tensor& m : masks) {
    std::vector<int64_t> offsets = graph_eval::BroadcastOffsets(shape, m.shape());
    for (int64_t i = 0; i < out.numel(); ++i) sum[i] += m.GetDouble(offsets[i]);
  }
  for (int64_t i = 0; i < out.numel(); ++i) out.SetDouble(i, sum[i]);
  return out;
}

// 0 on and below the diagonal, masked out above, the same for every leading index.
bool IsCausal(const Tensor& mask, int64_t sq, int64_t skv) {
  const Shape& s = mask.shape();
  if (sq != skv || s.size() < 2 || s[s.size() - 2] != sq || s[s.size() - 1] != skv) return false;
  for (int64_t i = 0; i < mask.numel(); ++i) {
    int64_t col = i % skv, row = (i / skv) % sq;
    double v = mask.GetDouble(i);
    if (col <= row ? v != 0.0 : v > kMaskedOut) return false;
  }
  return true;
}

// The scalar-constant factor of a Mul/Div producing `value` (single-use), with the other operand.
const Node* ScaleOf(const PatternView& view, const std::string& value, double* factor, std::string* operand) {
  const Node* node = view.Producer(value);
  if (!node || !view.SingleUse(value) || (node->op != "Mul" && node->op != "Div")) return nullptr;
  for (int side = 0; side < 2; ++side) {
    std::optional<double> c = view.Scalar(node->inputs[1 - side]);
    if (!c || *c == 0.0 || (node->op == "Div" && side == 1)) continue;
    if (view.graph().TypeOf(node->inputs[side]) != view.graph().TypeOf(value)) continue;
    *factor = node->op == "Mul" ? *c : 1.0 / *c;
    *operand = node->inputs[side];
    return node;
  }
  return nullptr;
}

Node MakeNode(const std::string& op, const std::string& name, std::vector<std::string> inputs,
              std::vector<std::string> outputs) {
  Node n;
  n.op = op;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

}  // namespace

Graph FuseAttention(const Graph& graph) {
  PatternView view(graph);
  PatternRewriter rewriter(graph);
  AttentionMatcher matcher(view);
  for (const Node& softmax : graph.nodes) {
    if (softmax.op != "Softmax" || softmax.attrs.GetInt("coerce_2d", 0) != 0) continue;
    const TensorType& scores_type = graph.TypeOf(softmax.inputs[0]);
    int rank = scores_type.rank();
    if (rank < 2 || rank > 4 || !scores_type.dtype.is_float()) continue;
    int64_t axis = softmax.attrs.GetInt("axis", -1);
    if (axis != -1 && axis != rank - 1) continue;
    const std::string& probs = softmax.outputs[0];
    if (!view.SingleUse(probs)) continue;
    const Node* pv = view.Consumers(probs).front();
    if (pv->op != "MatMul" || pv->inputs[0] != probs || pv->inputs[1] == probs) continue;
    ScoreChain chain;
    chain.nodes.push_back(&softmax);
    if (!matcher.Walk(softmax.inputs[0], scores_type.shape, 1.0, &chain)) continue;
    // Q', K', V with equal batch dims.
    std::string q = chain.matmul->inputs[0], kt = chain.matmul->inputs[1], v = pv->inputs[1];
    const Shape &qs = graph.TypeOf(q).shape, &ks = graph.TypeOf(kt).shape, &vs = graph.TypeOf(v).shape;
    if (static_cast<int>(qs.size()) != rank || ks.size() != qs.size() || vs.size() != qs.size()) continue;
    Shape batch(qs.begin(), qs.end() - 2);
    if (Shape(ks.begin(), ks.end() - 2) != batch || Shape(vs.begin(), vs.end() - 2) != batch) continue;
    int64_t sq = qs[rank - 2], d = qs[rank - 1], skv = ks[rank - 1], dv = vs[rank - 1];
    if (ks[rank - 2] != d || vs[rank - 2] != skv) continue;
    std::vector<const Node*> matched = chain.nodes;
    matched.push_back(pv);
    // Scales on Q' and K'.
    double scale = chain.scale, factor = 1.0;
    std::string operand;
    if (const Node* n = ScaleOf(view, q, &factor, &operand)) {
      matched.push_back(n);
      scale *= factor;
      q = operand;
    }
    if (const Node* n = ScaleOf(view, kt, &factor, &operand)) {
      matched.push_back(n);
      scale *= factor;
      kt = operand;
    }
    if (!rewriter.Available(matched)) continue;
    // K = K'^T: compose with a Transpose feeding K' (the head split), else transpose.
    std::vector<int64_t> swap(rank);
    for (int i = 0; i < rank; ++i) swap[i] = i;
    std::swap(swap[rank - 1], swap[rank - 2]);
    std::string k_source = kt;
    std::vector<int64_t> perm = swap;
    if (const Node* t = view.Interior(kt, "Transpose")) {
      std::vector<int64_t> first = t->attrs.GetInts("perm", {});
      if (static_cast<int>(first.size()) == rank) {
        for (int j = 0; j < rank; ++j) perm[j] = first[swap[j]];
        k_source = t->inputs[0];
        matched.push_back(t);
      }
    }
    if (!rewriter.Available(matched)) continue;
    std::string base = pv->name + "_attention";
    std::string k = k_source;
    bool identity = true;
    for (int j = 0; j < rank; ++j) identity = identity && perm[j] == j;
    if (!identity) {
      k = rewriter.FreshName(base + "_k");
      Node transpose = MakeNode("Transpose", base + "_k_transpose", {k_source}, {k});
      transpose.attrs.Set("perm", perm);
      rewriter.AddNodeBefore(pv, transpose);
    }
    // Operands as [B, H, S, D].
    auto as_4d = [&](const std::string& value, int64_t rows, int64_t cols, const std::string& what) {
      if (rank == 4) return value;
      Shape shape(4 - rank, 1);
      shape.insert(shape.end(), batch.begin(), batch.end());
      shape.push_back(rows);
      shape.push_back(cols);
      std::string out = rewriter.FreshName(base + "_" + what);
      Node reshape = MakeNode("Reshape", base + "_" + what + "_reshape", {value}, {out});
      reshape.attrs.Set("shape", std::vector<int64_t>(shape.begin(), shape.end()));
      rewriter.AddNodeBefore(pv, reshape);
      return out;
    };
    Node attention = MakeNode("Attention", base, {as_4d(q, sq, d, "q"), as_4d(k, skv, d, "k"), as_4d(v, skv, dv, "v")},
                              {});
    attention.attrs.Set("scale", scale);
    // Masks: constants folded (and recognized as causal), a run-time one added to them.
    std::string mask = chain.runtime_mask;
    for (const ScoreChain::RunTimeWhere& w : chain.runtime_wheres) {
      const std::string zero = rewriter.AddConstant(base + "_keep", Tensor::Scalar(scores_type.dtype, 0.0));
      const std::string fill = rewriter.AddConstant(base + "_fill", Tensor::Scalar(scores_type.dtype, w.fill));
      const std::string additive = rewriter.FreshName(base + "_where_mask");
      rewriter.AddNodeBefore(pv, MakeNode("Where", base + "_where_mask", {w.cond, w.keep_when ? zero : fill,
                                                                         w.keep_when ? fill : zero},
                                          {additive}));
      if (mask.empty()) {
        mask = additive;
      } else {
        const std::string sum = rewriter.FreshName(base + "_mask_sum");
        rewriter.AddNodeBefore(pv, MakeNode("Add", base + "_runtime_mask_add", {mask, additive}, {sum}));
        mask = sum;
      }
    }
    if (!chain.constant_masks.empty()) {
      Tensor combined = CombineMasks(chain.constant_masks, scores_type.dtype);
      if (mask.empty() && IsCausal(combined, sq, skv)) {
        attention.attrs.Set("is_causal", int64_t{1});
      } else {
        std::string constant = rewriter.AddConstant(base + "_mask", combined);
        if (mask.empty()) {
          mask = constant;
        } else {
          std::string sum = rewriter.FreshName(base + "_mask_sum");
          rewriter.AddNodeBefore(pv, MakeNode("Add", base + "_mask_add", {mask, constant}, {sum}));
          mask = sum;
        }
      }
    }
    if (!mask.empty()) attention.inputs.push_back(mask);
    Node root;
    if (rank == 4) {
      attention.name = pv->name;
      attention.outputs = pv->outputs;
      root = attention;
    } else {
      std::string y = rewriter.FreshName(base + "_y");
      attention.outputs = {y};
      rewriter.AddNodeBefore(pv, attention);
      root = MakeNode("Reshape", pv->name, {y}, pv->outputs);
      Shape out = graph.TypeOf(pv->outputs[0]).shape;
      root.attrs.Set("shape", std::vector<int64_t>(out.begin(), out.end()));
    }
    rewriter.Replace(pv, matched, root);
  }
  return rewriter.Finish();
}

}  // namespace graph
}  // namespace agate
