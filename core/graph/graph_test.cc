#include "core/graph/graph.h"

#include <gtest/gtest.h>

#include "core/graph/op_registry.h"
#include "core/graph/printer.h"
#include "core/graph/shape_inference.h"
#include "core/graph/testing/graph_builder.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using testing::Add;
using testing::Finish;

TensorType F32(Shape shape) { return TensorType{DType::Float(32), std::move(shape)}; }

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GraphTest, PrintsTypedNodes) {
  Graph g;
  g.AddInput("x", F32({1, 2}));
  g.AddConstant("k", Tensor::FromDoubles(DType::Float(32), {2}, {1.0, 2.0}));
  Add(&g, "Add", "add0", {"x", "k"}, {"y"});
  g = Finish(g, {"y"});
  std::string text = PrintGraph(g);
  EXPECT_NE(text.find("graph main(%x: float32[1,2]) -> (%y) {"), std::string::npos) << text;
  EXPECT_NE(text.find("const %k = float32[2]{1, 2}"), std::string::npos) << text;
  EXPECT_NE(text.find("%y: float32[1,2] = Add(%x, %k)  # add0"), std::string::npos) << text;
}

TEST(GraphTest, VerifyNamesTheProblem) {
  Graph g;
  g.AddInput("x", F32({2}));
  Add(&g, "Relu", "r", {"missing"}, {"y"});
  g.outputs = {"y"};
  g.types["y"] = F32({2});
  EXPECT_NE(ErrorOf([&] { g.Verify(); }).find("'missing'"), std::string::npos);
  Graph h;
  h.AddInput("x", F32({2}));
  Add(&h, "Relu", "a", {"x"}, {"y"});
  Add(&h, "Relu", "b", {"x"}, {"y"});
  h.types["y"] = F32({2});
  EXPECT_NE(ErrorOf([&] { h.Verify(); }).find("redefines value 'y'"), std::string::npos);
}

TEST(GraphTest, BroadcastingAndMatMulShapes) {
  Graph g;
  g.AddInput("a", F32({2, 1, 3, 4}));
  g.AddInput("b", F32({5, 4, 6}));
  g.AddInput("c", F32({6}));
  Add(&g, "MatMul", "mm", {"a", "b"}, {"m"});
  Add(&g, "Add", "add", {"m", "c"}, {"y"});
  Add(&g, "MatMul", "vec", {"c", "c"}, {"dot"});
  g = Finish(g, {"y", "dot"});
  EXPECT_EQ(g.TypeOf("y").shape, (Shape{2, 5, 3, 6}));
  EXPECT_EQ(g.TypeOf("dot").shape, (Shape{}));
  // Float and integer products share the rule, scalars refused by name (MatMulInteger of a
  // scalar once read its inner extent past the shape).
  for (const char* op : {"MatMul", "MatMulInteger"}) {
    Graph s;
    DType t = std::string(op) == "MatMul" ? DType::Float(32) : DType::UInt(8);
    s.AddInput("v", TensorType{t, {3}});
    s.AddInput("scalar", TensorType{t, {}});
    Add(&s, op, "bad", {"v", "scalar"}, {"y"});
    EXPECT_NE(ErrorOf([&] { Finish(s, {"y"}); }).find("operands [3] and [] must not be scalars"), std::string::npos)
        << op;
  }
}

TEST(GraphTest, ConvGeometry) {
  Graph g;
  g.AddInput("x", F32({1, 4, 7, 9}));
  g.AddConstant("w", Tensor(DType::Float(32), {8, 2, 3, 3}));
  // Groups, dilations, asymmetric pads.
  Add(&g, "Conv", "c1", {"x", "w"}, {"y1"},
      {{"group", int64_t{2}}, {"dilations", std::vector<int64_t>{2, 1}}, {"pads", std::vector<int64_t>{0, 1, 2, 0}},
       {"strides", std::vector<int64_t>{1, 2}}});
  Add(&g, "Conv", "c2", {"x", "w"}, {"y2"}, {{"group", int64_t{2}}, {"auto_pad", "SAME_UPPER"},
                                             {"strides", std::vector<int64_t>{2, 2}}});
  Add(&g, "MaxPool", "p", {"x"}, {"y3"},
      {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}}, {"ceil_mode", int64_t{1}}});
  g = Finish(g, {"y1", "y2", "y3"});
  EXPECT_EQ(g.TypeOf("y1").shape, (Shape{1, 8, 5, 4}));  // (7+0+2-5)/1+1, (9+1+0-3)/2+1
  EXPECT_EQ(g.TypeOf("y2").shape, (Shape{1, 8, 4, 5}));
  EXPECT_EQ(g.TypeOf("y3").shape, (Shape{1, 4, 3, 4}));
}

// Conv and ConvTranspose share the window prologue: a per-axis attribute of the wrong length
// is an error naming it (ConvTranspose once read dilations and output_padding past their end).
TEST(GraphTest, WindowAttributesOfTheWrongLengthAreNamed) {
  for (const char* op : {"Conv", "ConvTranspose"}) {
    for (const char* attr : {"strides", "dilations", "output_padding"}) {
      if (std::string(op) == "Conv" && std::string(attr) == "output_padding") continue;
      Graph g;
      g.AddInput("x", F32({1, 4, 7, 9}));
      g.AddConstant("w", Tensor(DType::Float(32), {4, 4, 3, 3}));
      Add(&g, op, "bad_window", {"x", "w"}, {"y"}, {{attr, std::vector<int64_t>{1, 1, 1}}});
      std::string error = ErrorOf([&] { Finish(g, {"y"}); });
      EXPECT_NE(error.find("bad_window"), std::string::npos) << op << " " << attr << ": " << error;
      EXPECT_NE(error.find(std::string(attr) + " has 3 values, expected 2"), std::string::npos)
          << op << " " << attr << ": " << error;
    }
  }
}

TEST(GraphTest, ShapeMismatchNamesTheNode) {
  Graph g;
  g.AddInput("x", F32({1, 3, 8, 8}));
  g.AddConstant("w", Tensor(DType::Float(32), {4, 2, 3, 3}));
  Add(&g, "Conv", "bad_conv", {"x", "w"}, {"y"});
  std::string error = ErrorOf([&] { Finish(g, {"y"}); });
  EXPECT_NE(error.find("bad_conv"), std::string::npos) << error;
  EXPECT_NE(error.find("3 channels"), std::string::npos) << error;
}

// Attention (ONNX opset 23) as far as agate implements it: what it does not implement, and
// operands that disagree, are errors naming the node and the reason.
TEST(GraphTest, AttentionRejectsWhatItDoesNotImplement) {
  auto attention = [](Shape q, Shape k, Shape v, Shape mask, std::vector<std::pair<std::string, Attribute>> attrs = {}) {
    Graph g;
    g.AddInput("q", F32(q));
    g.AddInput("k", F32(k));
    g.AddInput("v", F32(v));
    std::vector<std::string> inputs = {"q", "k", "v"};
    if (!mask.empty()) {
      g.AddInput("mask", F32(mask));
      inputs.push_back("mask");
    }
    Add(&g, "Attention", "attn", inputs, {"y"}, attrs);
    return ErrorOf([&] { Finish(g, {"y"}); });
  };
  EXPECT_EQ(attention({1, 4, 5, 8}, {1, 2, 7, 8}, {1, 2, 7, 3}, {1, 1, 5, 7}), "");
  EXPECT_NE(attention({1, 5, 32}, {1, 7, 32}, {1, 7, 32}, {}).find("only the 4-D form"), std::string::npos);
  EXPECT_NE(attention({1, 4, 5, 8}, {1, 3, 7, 8}, {1, 3, 7, 8}, {}).find("disagree"), std::string::npos);
  EXPECT_NE(attention({1, 2, 5, 8}, {1, 2, 7, 4}, {1, 2, 7, 8}, {}).find("attn"), std::string::npos);
  EXPECT_NE(attention({1, 2, 5, 8}, {1, 2, 7, 8}, {1, 2, 7, 8}, {1, 2, 5, 6}).find("does not broadcast"),
            std::string::npos);
  Node node;
  node.name = "attn";
  node.op = "Attention";
  node.inputs = {"q", "k", "v"};
  node.attrs.Set("softcap", 30.0);
  EXPECT_EQ(UnsupportedReason(node), "softcap");
  node.inputs = {"q", "k", "v", "mask", "past_key", "past_value"};
  node.attrs = Attributes();
  EXPECT_NE(UnsupportedReason(node).find("inputs"), std::string::npos);
}

TEST(GraphTest, RegistryKnowsKindsAndRejectsUnknownAttributes) {
  Node node;
  node.name = "n";
  node.op = "Relu";
  node.inputs = {"x"};
  EXPECT_EQ(UnsupportedReason(node), "");
  node.attrs.Set("alpha", 0.5);
  EXPECT_EQ(UnsupportedReason(node), "attribute 'alpha' not supported");
  node.op = "Bernoulli";
  EXPECT_EQ(UnsupportedReason(node), "operator not supported");
  node.op = "Conv";
  node.attrs = Attributes();
  EXPECT_EQ(KindOf(node), OpKind::kOutEWiseFusable);
  node.op = "Transpose";
  EXPECT_EQ(KindOf(node), OpKind::kInjective);
  node.op = "Softmax";
  EXPECT_EQ(KindOf(node), OpKind::kOpaque);
}

TEST(GraphTest, AttributesAreTyped) {
  Attributes a;
  a.Set("axis", int64_t{1});
  a.Set("pads", std::vector<int64_t>{1, 2});
  EXPECT_EQ(a.GetInt("axis"), 1);
  EXPECT_EQ(a.GetInt("missing", 7), 7);
  EXPECT_THROW(a.GetInts("axis"), Error);
  EXPECT_THROW(a.GetString("missing"), Error);
  EXPECT_EQ(a.ToString(), "{axis=1, pads=[1,2]}");
}

}  // namespace
}  // namespace graph
}  // namespace agate
