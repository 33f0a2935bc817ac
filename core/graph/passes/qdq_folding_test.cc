// QDQ folding: Conv / MatMul / Gemm between DequantizeLinear and QuantizeLinear
// become QLinearConv / QLinearMatMul with the same meaning (on the reference
// interpreter, within one output quantization step); patterns that cannot fold stay
// float with a warning naming the node; bad scales and zero points are refused by name.
#include "core/graph/passes/qdq_folding.h"

#include <gtest/gtest.h>

#include "core/graph/passes/testing/rewrite_check.h"
#include "core/graph/testing/graph_builder.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using testing::Add;
using testing::CountOps;
using testing::Finish;
using testing::OutputDifference;
using testing::RandomTensor;
using Ints = std::vector<int64_t>;

const DType kF32 = DType::Float(32);
const DType kU8 = DType::UInt(8);
const DType kS8 = DType::Int(8);

Tensor Scalar(double v) { return Tensor::Scalar(kF32, v); }
Tensor Zero(DType t, int64_t v) { return Tensor::FromInts(t, {}, {v}); }

// 8-bit weights over the whole range of `t`.
Tensor Weights(DType t, const Shape& shape, uint32_t seed) {
  Tensor f = RandomTensor(shape, seed, t == kU8 ? 0 : -128, t == kU8 ? 255 : 127);
  Tensor w(t, shape);
  for (int64_t i = 0; i < w.numel(); ++i) w.SetInt(i, static_cast<int64_t>(f.GetDouble(i)));
  return w;
}

struct Spec {
  std::string op = "Conv";      // Conv, MatMul, Gemm
  DType act = kU8, weight = kS8;
  bool per_channel = true;
  std::string bias = "float";   // none, float, int32 (DequantizeLinear of int32)
  std::string activation;       // "", Relu, Clip
  bool trans_b = true;          // Gemm
};

// x -> Q -> DQ -> op(DQ(W) [, bias]) [-> act] -> Q -> DQ -> y (float in, float out).
Graph QDQGraph(const Spec& s) {
  Graph g;
  bool conv = s.op == "Conv";
  int64_t channels = 8;
  Shape xs = conv ? Shape{1, 4, 6, 6} : Shape{3, 12};
  Shape ws = conv ? Shape{channels, 4, 3, 3} : (s.op == "Gemm" && s.trans_b ? Shape{channels, 12} : Shape{12, channels});
  g.AddInput("x", TensorType{kF32, xs});
  g.AddConstant("xs", Scalar(2.0 / 255));
  g.AddConstant("xz", Zero(s.act, s.act == kU8 ? 128 : 0));
  Add(&g, "QuantizeLinear", "qx", {"x", "xs", "xz"}, {"xq"});
  Add(&g, "DequantizeLinear", "dqx", {"xq", "xs", "xz"}, {"xf"});
  g.AddConstant("w", Weights(s.weight, ws, 3));
  std::vector<double> w_scale;
  std::vector<int64_t> w_zero;
  for (int64_t c = 0; c < (s.per_channel ? channels : 1); ++c) {
    w_scale.push_back(0.002 + 0.0003 * c);
    w_zero.push_back(s.weight == kU8 ? 128 + c : 0);
  }
  Shape ps = s.per_channel ? Shape{channels} : Shape{};
  g.AddConstant("wscale", Tensor::FromDoubles(kF32, ps, w_scale));
  g.AddConstant("wzero", Tensor::FromInts(s.weight, ps, w_zero));
  int64_t axis = conv || (s.op == "Gemm" && s.trans_b) ? 0 : 1;
  Add(&g, "DequantizeLinear", "dqw", {"w", "wscale", "wzero"}, {"wf"}, {{"axis", axis}});
  std::vector<std::string> inputs{"xf", "wf"};
  if (s.bias == "float") {
    g.AddConstant("b", RandomTensor({channels}, 4, -0.3, 0.3));
    inputs.push_back("b");
  } else if (s.bias == "int32") {
    std::vector<double> b_scale;
    for (double ws1 : w_scale) b_scale.push_back(static_cast<float>(ws1 * (2.0 / 255)));
    g.AddConstant("bq", Tensor::FromInts(DType::Int(32), {channels}, {-900, 50, 0, 1234, -3, 77, 600, -45}));
    g.AddConstant("bscale", Tensor::FromDoubles(kF32, ps, b_scale));
    Add(&g, "DequantizeLinear", "dqb", {"bq", "bscale"}, {"b"}, {{"axis", int64_t{0}}});
    inputs.push_back("b");
  }
  std::vector<std::pair<std::string, Attribute>> attrs;
  if (conv) attrs.push_back({"pads", Attribute(Ints{1, 1, 1, 1})});
  if (s.op == "Gemm" && s.trans_b) attrs.push_back({"transB", int64_t{1}});
  Add(&g, s.op, "op", inputs, {"h"}, attrs);
  std::string pre_q = "h";
  if (s.activation == "Relu") {
    Add(&g, "Relu", "act", {"h"}, {"a"});
    pre_q = "a";
  } else if (s.activation == "Clip") {
    g.AddConstant("lo", Scalar(0.0));
    g.AddConstant("hi", Scalar(6.0 * 0.02));  // a bound inside the output range
    Add(&g, "Clip", "act", {"h", "lo", "hi"}, {"a"});
    pre_q = "a";
  }
  g.AddConstant("ys", Scalar(0.004));
  g.AddConstant("yz", Zero(s.act, s.act == kU8 ? 20 : -100));
  Add(&g, "QuantizeLinear", "qy", {pre_q, "ys", "yz"}, {"yq"});
  Add(&g, "DequantizeLinear", "dqy", {"yq", "ys", "yz"}, {"y"});
  return Finish(g, {"y"});
}

void ExpectFolded(const Spec& s, const std::string& integer_op) {
  Graph before = QDQGraph(s);
  Graph after = FoldQDQ(before);
  std::string what = s.op + " " + s.act.ToString() + "/" + s.weight.ToString() + " bias=" + s.bias + " act=" + s.activation;
  EXPECT_EQ(CountOps(after, integer_op), 1) << what;
  EXPECT_EQ(CountOps(after, s.op), 0) << what;
  // The float graph rounds its float sums; the integer one is exact: at most one output step apart.
  for (uint32_t seed : {1u, 2u, 3u}) EXPECT_LE(OutputDifference(before, after, seed), 0.004 * 1.001) << what;
}

TEST(QDQFoldingTest, ConvFoldsIntoQLinearConv) {
  for (DType act : {kU8, kS8})
    for (DType weight : {kS8, kU8})
      for (std::string bias : {"none", "float", "int32"}) {
        Spec s;
        s.act = act;
        s.weight = weight;
        s.bias = bias;
        s.per_channel = bias != "none";
        ExpectFolded(s, "QLinearConv");
      }
}

TEST(QDQFoldingTest, ReluAndClipFoldAsBoundsOnTheQuantizedResult) {
  for (std::string act : {"Relu", "Clip"})
    for (DType type : {kU8, kS8}) {
      Spec s;
      s.activation = act;
      s.act = type;
      ExpectFolded(s, "QLinearConv");
      Graph after = FoldQDQ(QDQGraph(s));
      EXPECT_EQ(CountOps(after, "Relu") + CountOps(after, "Clip"), 0);
      EXPECT_EQ(CountOps(after, "Max"), 1) << act;  // y_zero_point is not the type's minimum
      EXPECT_EQ(CountOps(after, "Min"), act == "Clip" ? 1 : 0) << act;
    }
}

TEST(QDQFoldingTest, MatMulAndGemmFold) {
  for (bool per_channel : {false, true}) {
    Spec m;
    m.op = "MatMul";
    m.per_channel = per_channel;
    m.bias = "none";
    ExpectFolded(m, "QLinearMatMul");
    for (bool trans_b : {false, true}) {
      Spec g;
      g.op = "Gemm";
      g.trans_b = trans_b;
      g.per_channel = per_channel;
      g.bias = per_channel ? "int32" : "float";
      g.activation = "Relu";
      ExpectFolded(g, "MatMulInteger");
    }
  }
}

// A Gemm folds into MatMulInteger (the int8 matrix-product template) and the requantisation
// as graph operators; its result equals, bit for bit, the 1x1 QLinearConv over one pixel that
// carries the same bias and scales (what Gemm folded into before): both requantise in float32.
TEST(QDQFoldingTest, GemmRequantisesAsQLinearConvDoes) {
  for (DType act : {kU8, kS8})
    for (bool per_channel : {false, true})
      for (bool trans_b : {false, true}) {
        Spec s;
        s.op = "Gemm";
        s.act = act;
        s.trans_b = trans_b;
        s.per_channel = per_channel;
        s.bias = per_channel ? "int32" : "float";
        s.activation = "Relu";
        Graph folded = FoldQDQ(QDQGraph(s));
        ASSERT_EQ(CountOps(folded, "MatMulInteger"), 1);
        // The same product as QLinearConv, built from the folded graph's own constants.
        const Node* mm = nullptr;
        for (const Node& n : folded.nodes)
          if (n.op == "MatMulInteger") mm = &n;
        Graph conv = folded;
        conv.nodes.clear();
        for (const Node& n : folded.nodes)
          if (n.name == "qx") conv.nodes.push_back(n);
        const Tensor& b = folded.ConstantOf(mm->inputs[1]);
        int64_t k = b.shape()[0], n_out = b.shape()[1];
        Tensor oihw(b.dtype(), {n_out, k, 1, 1});
        for (int64_t o = 0; o < n_out; ++o)
          for (int64_t i = 0; i < k; ++i) oihw.SetInt(o * k + i, b.GetInt(i * n_out + o));
        conv.AddConstant("w_oihw", oihw);
        Shape xs = folded.TypeOf(mm->inputs[0]).shape;
        Add(&conv, "Reshape", "to_nchw", {mm->inputs[0]}, {"x4"}, {{"shape", Shape{xs[0], xs[1], 1, 1}}});
        std::vector<double> w_scale;  // QDQGraph's
        for (int64_t c = 0; c < (per_channel ? n_out : 1); ++c) w_scale.push_back(0.002 + 0.0003 * c);
        conv.AddConstant("w_scale", Tensor::FromDoubles(DType::Float(32), per_channel ? Shape{n_out} : Shape{}, w_scale));
        std::vector<std::string> in{"x4", "xs", mm->inputs[2], "w_oihw", "w_scale", mm->inputs[3], "ys", "yz"};
        for (const Node& n : folded.nodes)
          if (n.op == "Add" && folded.TypeOf(n.outputs[0]).dtype == DType::Int(32)) in.push_back(n.inputs[1]);
        ASSERT_EQ(in.size(), 9u);
        Add(&conv, "QLinearConv", "qconv", in, {"y4"});
        Add(&conv, "Reshape", "to_2d", {"y4"}, {"y2"}, {{"shape", Shape{xs[0], n_out}}});
        Add(&conv, "Max", "relu_bound", {"y2", "yz"}, {"yq"});
        for (const Node& n : folded.nodes)
          if (n.name == "dqy") conv.nodes.push_back(n);
        conv = Finish(conv, folded.outputs);
        for (uint32_t seed : {1u, 2u, 3u}) EXPECT_EQ(OutputDifference(folded, conv, seed), 0.0) << act.ToString() << per_channel << trans_b;
      }
}

// x -> Q -> DQ -> op -> Q -> DQ -> y, the two quantizations with the given scales and zero points.
Graph OrderPreservingGraph(const std::string& op, std::vector<std::pair<std::string, Attribute>> attrs, DType type,
                           double out_scale, int64_t out_zero) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 3, 9, 10}});
  g.AddConstant("xs", Scalar(2.0 / 255));
  g.AddConstant("xz", Zero(type, type == kU8 ? 128 : 0));
  g.AddConstant("ys", Scalar(out_scale));
  g.AddConstant("yz", Zero(type, out_zero));
  Add(&g, "QuantizeLinear", "qx", {"x", "xs", "xz"}, {"xq"});
  Add(&g, "DequantizeLinear", "dqx", {"xq", "xs", "xz"}, {"xf"});
  Add(&g, op, "op", {"xf"}, {"h"}, attrs);
  Add(&g, "QuantizeLinear", "qy", {"h", "ys", "yz"}, {"yq"});
  Add(&g, "DequantizeLinear", "dqy", {"yq", "ys", "yz"}, {"y"});
  return Finish(g, {"y"});
}

// MaxPool and the operators that only move elements, between a dequantization and a
// quantization of the same parameters, run on the 8-bit values themselves: exactly the float
// graph's result (the padding of a max pool included). With other output parameters they stay
// float.
TEST(QDQFoldingTest, MaxPoolAndDataMovementRunOnTheQuantizedValues) {
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, Attribute>>>> cases = {
      {"MaxPool", {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}},
      {"Transpose", {{"perm", Attribute(Ints{0, 2, 3, 1})}}},
      {"Reshape", {{"shape", Attribute(Ints{1, 27, 10})}}},
      {"Flatten", {}},
      {"Unsqueeze", {{"axes", Attribute(Ints{0})}}},
  };
  for (DType type : {kU8, kS8}) {
    for (const auto& [op, attrs] : cases) {
      Graph before = OrderPreservingGraph(op, attrs, type, 2.0 / 255, type == kU8 ? 128 : 0);
      Graph after = FoldQDQ(before);
      EXPECT_EQ(CountOps(after, "QuantizeLinear"), 1) << op;  // the input's
      EXPECT_EQ(CountOps(after, "DequantizeLinear"), 1) << op;  // the output's
      EXPECT_EQ(CountOps(after, op), 1) << op;
      for (uint32_t seed : {1u, 2u}) EXPECT_EQ(OutputDifference(before, after, seed), 0.0) << op << " " << type;
      Graph other = OrderPreservingGraph(op, attrs, type, 3.0 / 255, type == kU8 ? 128 : 0);
      EXPECT_EQ(CountOps(FoldQDQ(other), "QuantizeLinear"), 2) << op;
    }
  }
}

TEST(QDQFoldingTest, UnfoldablePatternsStayFloatWithAWarningNamingTheNode) {
  // The weight comes from a graph input (not a constant).
  Graph g = QDQGraph(Spec{});
  g.constants.erase("w");
  g.types.erase("w");
  g.AddInput("w", TensorType{kS8, {8, 4, 3, 3}});
  g = Finish(g, {"y"});
  ::testing::internal::CaptureStderr();
  Graph after = FoldQDQ(g);
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountOps(after, "Conv"), 1);
  EXPECT_EQ(CountOps(after, "QLinearConv"), 0);
  EXPECT_NE(log.find("'op'"), std::string::npos) << log;
  EXPECT_NE(log.find("not a constant"), std::string::npos) << log;

  // The conv's float result is also a graph output.
  Graph shared = QDQGraph(Spec{});
  shared.outputs.push_back("h");
  shared = Finish(shared, shared.outputs);
  ::testing::internal::CaptureStderr();
  after = FoldQDQ(shared);
  log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountOps(after, "QLinearConv"), 0);
  EXPECT_DOUBLE_EQ(OutputDifference(shared, after), 0.0);

  // Blocked weights (opset 21 block_size: one scale per 2 input channels of each output channel).
  Graph blocked = QDQGraph(Spec{});
  std::vector<double> block_scales;
  for (int i = 0; i < 16; ++i) block_scales.push_back(0.002 + 0.0001 * i);
  blocked.constants.erase("wscale");
  blocked.types.erase("wscale");
  blocked.AddConstant("wscale", Tensor::FromDoubles(kF32, {8, 2, 3, 3}, [&] {
    std::vector<double> v;
    for (int o = 0; o < 8; ++o)
      for (int b = 0; b < 2; ++b)
        for (int k = 0; k < 9; ++k) v.push_back(block_scales[o * 2 + b]);
    return v;
  }()));
  blocked.constants.erase("wzero");
  blocked.types.erase("wzero");
  for (Node& node : blocked.nodes) {
    if (node.name != "dqw") continue;
    node.inputs.resize(2);
    node.attrs.Set("axis", Attribute(int64_t{1}));
    node.attrs.Set("block_size", Attribute(int64_t{2}));
  }
  blocked = Finish(blocked, {"y"});
  ::testing::internal::CaptureStderr();
  after = FoldQDQ(blocked);
  log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountOps(after, "QLinearConv"), 0);
  EXPECT_EQ(CountOps(after, "Conv"), 1);
  EXPECT_NE(log.find("in blocks of 2 (block_size)"), std::string::npos) << log;
}

TEST(QDQFoldingTest, BadScalesAndZeroPointsAreRefusedNamingTheTensor) {
  for (double bad : {0.0, -0.01}) {
    Graph g = QDQGraph(Spec{});
    g.constants["wscale"].mutable_data<float>()[3] = static_cast<float>(bad);
    try {
      FoldQDQ(g);
      ADD_FAILURE() << "scale " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("'wscale'"), std::string::npos) << e.what();
    }
  }
  // An int8 tensor dequantized with a zero point of 200.
  Graph g;
  g.AddInput("q", TensorType{kS8, {4}});
  g.AddConstant("s", Scalar(0.1));
  g.AddConstant("z200", Tensor::FromInts(DType::Int(32), {}, {200}));
  Add(&g, "DequantizeLinear", "dq", {"q", "s", "z200"}, {"y"});
  g = Finish(g, {"y"});
  try {
    FoldQDQ(g);
    ADD_FAILURE() << "zero point 200 for int8 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'z200'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace graph
}  // namespace agate
