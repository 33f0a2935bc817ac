// Attention fusion on the attention blocks PyTorch 1.13 exports (opsets 13 and
// 17 alike): a Hugging-Face-style BERT self-attention (head split by Reshape and
// Transpose, scores / sqrt(d) + padding mask), nn.MultiheadAttention as
// torchvision's ViT uses it (3-D [heads, S, D], Q scaled before the product), a
// causal mask as an additive -inf constant and as GPT-2's torch.where, and
// Swin's windowed attention (relative-position bias, then the shifted-window
// mask added on a 5-D view); near misses stay unfused.
#include "core/graph/passes/attention_fusion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/graph/passes/testing/rewrite_check.h"
#include "core/graph/testing/graph_builder.h"

namespace agate {
namespace graph {
namespace {

using testing::Add;
using testing::CountOps;
using testing::Finish;
using testing::OutputDifference;
using testing::RandomTensor;
using Ints = std::vector<int64_t>;

TensorType F32(Shape shape) { return TensorType{DType::Float(32), std::move(shape)}; }
Tensor Scalar(double v) { return Tensor::Scalar(DType::Float(32), v); }
const double kInf = std::numeric_limits<double>::infinity();

const Node* Find(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op == op) return &n;
  return nullptr;
}

struct BertSpec {
  int64_t seq = 6, heads = 2, head = 4;
  bool mask = true;
  double divisor = 2.0;  // sqrt(head)
  int64_t softmax_axis = -1;
  bool scale_after_mask = false;  // (scores + mask) / divisor: a scaled run-time mask
};

// BertSelfAttention exported at opset 13: three [1, S, H*D] projections (graph inputs here), the
// head split Reshape [1, S, H, D] + Transpose (0,2,1,3) (K: (0,2,3,1)), MatMul, Div, Add of the
// extended attention mask [1, 1, 1, S], Softmax, MatMul, the merge Transpose + Reshape.
Graph BertAttention(const BertSpec& s) {
  Graph g;
  int64_t hidden = s.heads * s.head;
  for (const char* in : {"q_in", "k_in", "v_in"}) g.AddInput(in, F32({1, s.seq, hidden}));
  if (s.mask) g.AddInput("mask", F32({1, 1, 1, s.seq}));
  g.AddConstant("divisor", Scalar(s.divisor));
  Ints split = {1, s.seq, s.heads, s.head};
  Add(&g, "Reshape", "q_reshape", {"q_in"}, {"q4"}, {{"shape", split}});
  Add(&g, "Reshape", "k_reshape", {"k_in"}, {"k4"}, {{"shape", split}});
  Add(&g, "Reshape", "v_reshape", {"v_in"}, {"v4"}, {{"shape", split}});
  Add(&g, "Transpose", "q_t", {"q4"}, {"q"}, {{"perm", Ints{0, 2, 1, 3}}});
  Add(&g, "Transpose", "k_t", {"k4"}, {"kt"}, {{"perm", Ints{0, 2, 3, 1}}});
  Add(&g, "Transpose", "v_t", {"v4"}, {"v"}, {{"perm", Ints{0, 2, 1, 3}}});
  Add(&g, "MatMul", "scores", {"q", "kt"}, {"s"});
  std::string logits = "s";
  if (s.scale_after_mask) {
    Add(&g, "Add", "masked", {"s", "mask"}, {"sm"});
    Add(&g, "Div", "scale", {"sm", "divisor"}, {"logits"});
    logits = "logits";
  } else {
    Add(&g, "Div", "scale", {"s", "divisor"}, {"ss"});
    logits = "ss";
    if (s.mask) {
      Add(&g, "Add", "masked", {"ss", "mask"}, {"logits"});
      logits = "logits";
    }
  }
  Add(&g, "Softmax", "softmax", {logits}, {"p"}, {{"axis", s.softmax_axis}});
  Add(&g, "MatMul", "context", {"p", "v"}, {"c"});
  Add(&g, "Transpose", "merge_t", {"c"}, {"ct"}, {{"perm", Ints{0, 2, 1, 3}}});
  Add(&g, "Reshape", "merge", {"ct"}, {"y"}, {{"shape", Ints{1, s.seq, hidden}}});
  return Finish(g, {"y"});
}

TEST(AttentionFusionTest, BertSelfAttention) {
  Graph g = BertAttention({});
  Graph fused = FuseAttention(g);
  const Node* a = Find(fused, "Attention");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(CountOps(fused, "Softmax"), 0);
  EXPECT_EQ(CountOps(fused, "MatMul"), 0);
  EXPECT_NEAR(a->attrs.GetFloat("scale"), 0.5, 1e-7);
  EXPECT_FALSE(a->attrs.Has("is_causal"));
  ASSERT_EQ(a->inputs.size(), 4u);
  EXPECT_EQ(a->inputs[3], "mask");
  // K^T's split Transpose (0,2,3,1) composed with the transposition: one Transpose (0,2,1,3) of k4.
  EXPECT_EQ(CountOps(fused, "Transpose"), 4);
  EXPECT_LT(OutputDifference(g, fused), 1e-5);
}

// A sequence padded to a compiled extent (symbol_padding.h) masks the keys past its run-time
// length with Where(valid, logits, -inf), valid a run-time bool [1, 1, 1, S]: it joins the padding
// mask as one additive run-time mask; a finite fill stays unfused.
TEST(AttentionFusionTest, RunTimeWhereMasksJoinTheRunTimeMask) {
  for (double fill : {-kInf, -1.0}) {
    Graph g = BertAttention({});
    g.AddInput("valid", TensorType{DType::Bool(), {1, 1, 1, 6}});
    g.AddConstant("fill", Scalar(fill));
    for (Node& n : g.nodes) {
      if (n.op == "Softmax") n.inputs[0] = "padded";
    }
    Node where{"pad_mask", "Where", {"valid", "logits", "fill"}, {"padded"}, {}};
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].op == "Softmax") {
        g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), where);
        break;
      }
    }
    g = Finish(g, {"y"});
    Graph fused = FuseAttention(g);
    EXPECT_EQ(CountOps(fused, "Attention"), fill < -1e30 ? 1 : 0) << fill;
    EXPECT_LT(OutputDifference(g, fused), 1e-5) << fill;
  }
}

TEST(AttentionFusionTest, NearMissesStayUnfused) {
  BertSpec axis;
  axis.softmax_axis = 2;  // a softmax over the queries
  EXPECT_EQ(CountOps(FuseAttention(BertAttention(axis)), "Attention"), 0);
  BertSpec scaled_mask;
  scaled_mask.scale_after_mask = true;  // a run-time mask divided with the scores
  EXPECT_EQ(CountOps(FuseAttention(BertAttention(scaled_mask)), "Attention"), 0);
  // The probabilities are also a graph output (they cannot disappear into the kernel).
  Graph g = BertAttention({});
  g.outputs.push_back("p");
  EXPECT_EQ(CountOps(FuseAttention(g), "Attention"), 0);
}

TEST(AttentionFusionTest, WithoutMaskAndWithAnyScale) {
  BertSpec s;
  s.mask = false;
  s.divisor = 3.0;
  Graph g = BertAttention(s);
  Graph fused = FuseAttention(g);
  const Node* a = Find(fused, "Attention");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->inputs.size(), 3u);
  EXPECT_NEAR(a->attrs.GetFloat("scale"), 1.0 / 3, 1e-7);
  EXPECT_LT(OutputDifference(g, fused), 1e-5);
}

// nn.MultiheadAttention (torch 1.13, batch_first, as torchvision's ViT uses it): packed in-projection
// [S, 1, 3E], Slice per Q/K/V, Reshape [S, H, D], Transpose to [H, S, D] (K to [H, D, S]), Q / sqrt(D).
TEST(AttentionFusionTest, MultiheadAttentionThreeDimensional) {
  int64_t seq = 5, heads = 3, head = 4, e = heads * head;
  Graph g;
  g.AddInput("qkv", F32({seq, 1, 3 * e}));
  g.AddConstant("sqrt_d", Scalar(2.0));
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    std::string n = names[i];
    Add(&g, "Slice", n + "_slice", {"qkv"}, {n + "_s"},
        {{"starts", Ints{i * e}}, {"ends", Ints{(i + 1) * e}}, {"axes", Ints{-1}}});
    Add(&g, "Reshape", n + "_reshape", {n + "_s"}, {n + "_r"}, {{"shape", Ints{seq, heads, head}}});
    Add(&g, "Transpose", n + "_t", {n + "_r"}, {n + "_h"}, {{"perm", i == 1 ? Ints{1, 2, 0} : Ints{1, 0, 2}}});
  }
  Add(&g, "Div", "q_scale", {"q_h", "sqrt_d"}, {"q_scaled"});
  Add(&g, "MatMul", "scores", {"q_scaled", "k_h"}, {"s"});
  Add(&g, "Softmax", "softmax", {"s"}, {"p"}, {{"axis", int64_t{-1}}});
  Add(&g, "MatMul", "context", {"p", "v_h"}, {"c"});
  g = Finish(g, {"c"});
  Graph fused = FuseAttention(g);
  const Node* a = Find(fused, "Attention");
  ASSERT_NE(a, nullptr);
  EXPECT_NEAR(a->attrs.GetFloat("scale"), 0.5, 1e-7);
  EXPECT_EQ(fused.TypeOf(a->outputs[0]).shape, (Shape{1, heads, seq, head}));
  EXPECT_EQ(CountOps(fused, "Div"), 0);
  EXPECT_LT(OutputDifference(g, fused), 1e-5);
}

// scores (+ a constant [S, S] mask) -> softmax -> P V, for the causal tests.
Graph MaskedAttention(const Tensor& mask, bool as_where, double fill) {
  Graph g;
  for (const char* in : {"q", "kt", "v"}) g.AddInput(in, F32({1, 2, in[0] == 'k' ? 4 : 5, in[0] == 'k' ? 5 : 4}));
  g.AddConstant("mask", mask);
  g.AddConstant("fill", Scalar(fill));
  Add(&g, "MatMul", "scores", {"q", "kt"}, {"s"});
  if (as_where) {
    Add(&g, "Where", "where", {"mask", "s", "fill"}, {"logits"});
  } else {
    Add(&g, "Add", "add", {"s", "mask"}, {"logits"});
  }
  Add(&g, "Softmax", "softmax", {"logits"}, {"p"}, {{"axis", int64_t{3}}});
  Add(&g, "MatMul", "context", {"p", "v"}, {"y"});
  return Finish(g, {"y"});
}

Tensor Triangle(DType dtype, double below, double above) {
  Tensor t(dtype, {5, 5});
  for (int64_t i = 0; i < 25; ++i) t.SetDouble(i, i % 5 <= i / 5 ? below : above);
  return t;
}

TEST(AttentionFusionTest, CausalMasksBecomeIsCausal) {
  // torch.triu(full(-inf), 1) added to the scores (nn.Transformer's square subsequent mask).
  Graph additive = MaskedAttention(Triangle(DType::Float(32), 0, -kInf), false, 0);
  // GPT-2: torch.where(tril(ones).bool(), w, finfo(float32).min).
  Graph where = MaskedAttention(Triangle(DType::Bool(), 1, 0), true, -3.4028234663852886e38);
  for (const Graph* g : {&additive, &where}) {
    Graph fused = FuseAttention(*g);
    const Node* a = Find(fused, "Attention");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->attrs.GetInt("is_causal", 0), 1);
    EXPECT_EQ(a->inputs.size(), 3u);
    EXPECT_LT(OutputDifference(*g, fused), 1e-5);
  }
  // A finite causal mask (-1e4, old BERT style) is not the same as -inf: it stays an additive mask.
  Graph finite = MaskedAttention(Triangle(DType::Float(32), 0, -1e4), false, 0);
  Graph fused = FuseAttention(finite);
  const Node* a = Find(fused, "Attention");
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->attrs.Has("is_causal"));
  EXPECT_EQ(a->inputs.size(), 4u);
  EXPECT_LT(OutputDifference(finite, fused), 1e-5);
  // torch.where with a finite fill keeps the scores' differences in no way an added mask can: unfused.
  Graph where_finite = MaskedAttention(Triangle(DType::Bool(), 1, 0), true, -1e4);
  EXPECT_EQ(CountOps(FuseAttention(where_finite), "Attention"), 0);
}

// Swin's shifted-window attention: q * scale, relative-position bias [H, N, N], then
// Reshape [1, nW, H, N, N] + the window mask [1, nW, 1, N, N] + Reshape back, Softmax.
TEST(AttentionFusionTest, SwinShiftedWindowMasks) {
  int64_t windows = 4, heads = 2, n = 6, d = 4;
  Graph g;
  g.AddInput("q", F32({windows, heads, n, d}));
  g.AddInput("k", F32({windows, heads, n, d}));
  g.AddInput("v", F32({windows, heads, n, d}));
  g.AddConstant("scale", Scalar(0.5));
  g.AddConstant("bias", RandomTensor({heads, n, n}, 3));
  Tensor window_mask(DType::Float(32), {1, windows, 1, n, n});
  for (int64_t i = 0; i < window_mask.numel(); ++i) window_mask.SetDouble(i, (i * 7) % 5 == 0 ? -100.0 : 0.0);
  g.AddConstant("window_mask", window_mask);
  Add(&g, "Mul", "q_scale", {"q", "scale"}, {"qs"});
  Add(&g, "Transpose", "k_t", {"k"}, {"kt"}, {{"perm", Ints{0, 1, 3, 2}}});
  Add(&g, "MatMul", "scores", {"qs", "kt"}, {"s"});
  Add(&g, "Add", "bias_add", {"s", "bias"}, {"sb"});
  Add(&g, "Reshape", "view", {"sb"}, {"s5"}, {{"shape", Ints{1, windows, heads, n, n}}});
  Add(&g, "Add", "mask_add", {"s5", "window_mask"}, {"sm5"});
  Add(&g, "Reshape", "unview", {"sm5"}, {"sm"}, {{"shape", Ints{-1, heads, n, n}}});
  Add(&g, "Softmax", "softmax", {"sm"}, {"p"}, {{"axis", int64_t{-1}}});
  Add(&g, "MatMul", "context", {"p", "v"}, {"y"});
  g = Finish(g, {"y"});
  Graph fused = FuseAttention(g);
  const Node* a = Find(fused, "Attention");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->inputs.size(), 4u);
  EXPECT_TRUE(fused.IsConstant(a->inputs[3]));
  EXPECT_EQ(a->inputs[1], "k");  // the Transpose composed away
  EXPECT_EQ(fused.nodes.size(), 1u);
  EXPECT_LT(OutputDifference(g, fused), 1e-5);
}

}  // namespace
}  // namespace graph
}  // namespace agate
