// Shape operands read at run time, compiled for the declared output shape
// (core/graph/run_time_shape_operand.h): Resize with run-time scales (coordinates from the scale
// the kernel reads, not from the extents) or sizes, Expand, Tile, ConstantOfShape and OneHot, on
// the loop-IR evaluator and as LLVM host code against the reference interpreter; operand values
// that give another shape fail the kernel.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/graph/run_time_shape_operand.h"
#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/ops/testing/reference_check.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::Shape;
using graph::Tensor;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::RandomTensor;

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI64 = ir::DType::Int(64);

using Attrs = std::vector<std::pair<std::string, Attribute>>;

// x [in] resized to `out` with the scales read at run time.
Graph ResizeGraph(const Shape& in, const Shape& out, Attrs attrs, const std::string& kind = "scales") {
  Graph g;
  g.AddInput("x", TensorType{kF32, in});
  g.AddInput("s", TensorType{kind == "scales" ? kF32 : kI64, {static_cast<int64_t>(in.size())}});
  attrs.push_back({"sizes", Attribute(std::vector<int64_t>(out.begin(), out.end()))});
  attrs.push_back({graph::kRunTimeOperandAttr, Attribute(kind)});
  Add(&g, "Resize", "r", {"x", "s"}, {"y"}, attrs);
  return Finish(g, {"y"});
}

// The same resize with constant scales: the semantics the run-time path must reproduce.
Graph ConstantScalesResize(const Shape& in, Attrs attrs, const std::vector<double>& scales) {
  Graph g;
  g.AddInput("x", TensorType{kF32, in});
  attrs.push_back({"scales", Attribute(scales)});
  Add(&g, "Resize", "r", {"x"}, {"y"}, attrs);
  return Finish(g, {"y"});
}

Tensor Scales(const std::vector<double>& scales) {
  return Tensor::FromDoubles(kF32, {static_cast<int64_t>(scales.size())}, scales);
}

void ExpectResizeMatches(const Shape& in, const Shape& out, const Attrs& attrs, const std::vector<double>& scales,
                         const std::string& where) {
  Graph g = ResizeGraph(in, out, attrs);
  testing::CheckOptions options;
  options.inputs = {{"x", RandomTensor(in, 3)}, {"s", Scales(scales)}};
  EXPECT_TRUE(testing::CheckAgainstReference(g, options)) << where;
  // The reference with run-time scales is the reference with those scales as constants.
  Tensor got = graph_eval::Interpret(g, options.inputs).at("y");
  // The constant scales rounded to float32 as the run-time ones are.
  Tensor want = graph_eval::Interpret(ConstantScalesResize(in, attrs, Scales(scales).ToDoubles()),
                                      {{"x", options.inputs.at("x")}}).at("y");
  EXPECT_TRUE(testing::TensorsClose(got, want, 0)) << where;
}

TEST(ShapeOperandCheckTest, ResizeWithRunTimeScalesMatchesConstantScales) {
  const std::vector<std::string> modes = {"nearest", "linear", "cubic"};
  const std::vector<std::string> transforms = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                               "tf_half_pixel_for_nn", "half_pixel_symmetric"};
  for (const std::string& mode : modes) {
    for (const std::string& ct : transforms) {
      Attrs attrs = {{"mode", Attribute(mode)}, {"coordinate_transformation_mode", Attribute(ct)}};
      if (ct == "tf_half_pixel_for_nn" && mode != "nearest") {  // refused (see ResizeRunTimeScalesOp)
        Graph g = ResizeGraph({1, 2, 5, 5}, {1, 2, 3, 2}, attrs);
        testing::CheckOptions options;
        options.inputs = {{"x", RandomTensor({1, 2, 5, 5}, 3)}, {"s", Scales({1, 1, 0.6, 0.5})}};
        EXPECT_FALSE(testing::CheckAgainstReference(g, options)) << mode;
        continue;
      }
      // Down by 0.6 (5 -> 3: not 3/5 = the ratio of the extents, which differs in coordinates) and 0.5;
      // up by 2 and 1.5 for the first transforms.
      ExpectResizeMatches({1, 2, 5, 5}, {1, 2, 3, 2}, attrs, {1, 1, 0.6, 0.5}, mode + " " + ct + " down");
      if (ct == "half_pixel" || ct == "asymmetric") {
        ExpectResizeMatches({1, 1, 4, 4}, {1, 1, 8, 6}, attrs, {1, 1, 2, 1.5}, mode + " " + ct + " up");
      }
    }
  }
}

TEST(ShapeOperandCheckTest, ResizeWithRunTimeScalesHonoursNearestModesAndCubicOptions) {
  for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    ExpectResizeMatches({1, 1, 3, 4}, {1, 1, 6, 10}, {{"mode", Attribute("nearest")}, {"nearest_mode", Attribute(nearest)},
                                                      {"coordinate_transformation_mode", Attribute("asymmetric")}},
                        {1, 1, 2, 2.5}, nearest);
  }
  ExpectResizeMatches({1, 1, 4, 4}, {1, 1, 3, 3},
                      {{"mode", Attribute("cubic")}, {"cubic_coeff_a", Attribute(-0.5)},
                       {"exclude_outside", Attribute(int64_t{1})}},
                      {1, 1, 0.8, 0.8}, "cubic A -0.5 exclude_outside");
  ExpectResizeMatches({1, 1, 4, 4}, {1, 1, 3, 3},
                      {{"mode", Attribute("linear")}, {"coordinate_transformation_mode", Attribute("tf_crop_and_resize")},
                       {"roi", Attribute(std::vector<double>{0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7})},
                       {"extrapolation_value", Attribute(10.0)}},
                      {1, 1, 0.8, 0.8}, "tf_crop_and_resize");
}

TEST(ShapeOperandCheckTest, ScalesThatGiveAnotherShapeFailTheKernel) {
  Graph g = ResizeGraph({1, 1, 4, 4}, {1, 1, 8, 8}, {{"mode", Attribute("linear")}});
  Tensor x = RandomTensor({1, 1, 4, 4}, 3);
  testing::ExpectRunTimeOperandRefused(g, {{"x", x}, {"s", Scales({1, 1, 3, 2})}}, "'r'");
  testing::ExpectRunTimeOperandRefused(g, {{"x", x}, {"s", Scales({1, 1, -2, 2})}}, "'r'");
  // An axis longer than 1 that the declared shape keeps was compiled as a copy: its scale must be
  // 1 (2 -> 2 at scale 1.2 would move the coordinates); one of extent 1 takes any scale.
  Graph kept = ResizeGraph({1, 2, 4, 4}, {1, 2, 8, 8}, {{"mode", Attribute("linear")}});
  Tensor x2 = RandomTensor({1, 2, 4, 4}, 3);
  testing::ExpectRunTimeOperandRefused(kept, {{"x", x2}, {"s", Scales({1, 1.2, 2, 2})}}, "'r'");
  testing::CheckOptions options;
  options.inputs = {{"x", x2}, {"s", Scales({1.5, 1, 2, 2})}};
  EXPECT_TRUE(testing::CheckAgainstReference(kept, options));
  try {
    graph_eval::Interpret(g, {{"x", x}, {"s", Scales({1, 1, 3, 2})}});
    ADD_FAILURE() << "ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[1,1,12,8]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[1,1,8,8]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("scales ('s')"), std::string::npos) << e.what();
  }
}

TEST(ShapeOperandCheckTest, ResizeWithRunTimeSizes) {
  Graph g = ResizeGraph({1, 1, 4, 4}, {1, 1, 7, 3}, {{"mode", Attribute("cubic")}}, "sizes");
  testing::CheckOptions options;
  options.inputs = {{"x", RandomTensor({1, 1, 4, 4}, 3)}, {"s", Tensor::FromInts(kI64, {4}, {1, 1, 7, 3})}};
  EXPECT_TRUE(testing::CheckAgainstReference(g, options));
  testing::ExpectRunTimeOperandRefused(g, {{"x", options.inputs.at("x")}, {"s", Tensor::FromInts(kI64, {4}, {1, 1, 3, 7})}},
                                       "'r'");
}

// One node with input x (when `in` is not empty) and the run-time operand `v`.
Graph OperandGraph(const std::string& op, const Shape& in, const Shape& operand, ir::DType operand_dtype,
                   const std::string& kind, Attrs attrs) {
  Graph g;
  std::vector<std::string> inputs;
  const bool operand_only = op == "ConstantOfShape" || op.find("Window") != std::string::npos;
  if (!operand_only) {
    g.AddInput("x", TensorType{op == "OneHot" ? kI64 : kF32, in});
    inputs.push_back("x");
  }
  if (op == "OneHot") {
    g.AddConstant("values", Tensor::FromDoubles(kF32, {2}, {-1.0, 3.0}));
    inputs.push_back("values");
  }
  g.AddInput("v", TensorType{operand_dtype, operand});
  inputs.push_back("v");
  attrs.push_back({graph::kRunTimeOperandAttr, Attribute(kind)});
  Add(&g, op, "n", inputs, {"y"}, attrs);
  return Finish(g, {"y"});
}

void ExpectOperand(const Graph& g, const std::map<std::string, Tensor>& good, const std::vector<Tensor>& bad,
                   const std::string& where) {
  testing::CheckOptions options;
  options.inputs = good;
  EXPECT_TRUE(testing::CheckAgainstReference(g, options)) << where;
  for (const Tensor& v : bad) {
    std::map<std::string, Tensor> inputs = good;
    inputs["v"] = v;
    testing::ExpectRunTimeOperandRefused(g, inputs, "'n'");
  }
}

Tensor Ints(const std::vector<int64_t>& v) { return Tensor::FromInts(kI64, {static_cast<int64_t>(v.size())}, v); }

TEST(ShapeOperandCheckTest, ExpandTileConstantOfShapeAndOneHot) {
  {
    Graph g = OperandGraph("Expand", {3, 1}, {3}, kI64, "shape", {{"shape", Attribute(std::vector<int64_t>{2, 3, 4})}});
    ExpectOperand(g, {{"x", RandomTensor({3, 1}, 2)}, {"v", Ints({2, 1, 4})}}, {Ints({2, 1, 5}), Ints({1, 3, 4})},
                  "expand");
    // Another operand that broadcasts to the same shape is as good.
    testing::CheckOptions options;
    options.inputs = {{"x", RandomTensor({3, 1}, 2)}, {"v", Ints({2, 3, 4})}};
    EXPECT_TRUE(testing::CheckAgainstReference(g, options));
  }
  {
    Graph g = OperandGraph("Tile", {2, 3}, {2}, kI64, "repeats", {{"repeats", Attribute(std::vector<int64_t>{2, 2})}});
    ExpectOperand(g, {{"x", RandomTensor({2, 3}, 2)}, {"v", Ints({2, 2})}}, {Ints({1, 2}), Ints({2, 3})}, "tile");
  }
  {
    Graph g = OperandGraph("ConstantOfShape", {}, {3}, kI64, "shape",
                           {{"shape", Attribute(std::vector<int64_t>{2, 3, 4})},
                            {"value", Attribute(Tensor::FromDoubles(kF32, {1}, {1.5}))}});
    ExpectOperand(g, {{"v", Ints({2, 3, 4})}}, {Ints({2, 3, 5}), Ints({2, 4, 3})}, "constant of shape");
  }
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    // [2,5] -> [4,8]: the declared shape fixes each axis's total, the values where it begins.
    Graph g = OperandGraph("Pad", {2, 5}, {4}, kI64, "pads",
                           {{"mode", Attribute(mode)}, {"pads", Attribute(std::vector<int64_t>{0, 0, 2, 3})}});
    ExpectOperand(g, {{"x", RandomTensor({2, 5}, 2)}, {"v", Ints({1, 2, 1, 1})}}, {Ints({1, 1, 1, 1}), Ints({2, 3, 2, 3})},
                  mode);
    for (const std::vector<int64_t>& pads : {std::vector<int64_t>{0, 0, 2, 3}, {2, 4, 0, -1}}) {
      testing::CheckOptions options;
      options.inputs = {{"x", RandomTensor({2, 5}, 2)}, {"v", Ints(pads)}};
      EXPECT_TRUE(testing::CheckAgainstReference(g, options)) << mode;
    }
  }
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    for (int64_t periodic : {0, 1}) {
      Graph g = OperandGraph(op, {}, {}, kI64, "size", {{"size", Attribute(int64_t{10})}, {"periodic", Attribute(periodic)}});
      ExpectOperand(g, {{"v", Tensor::FromInts(kI64, {}, {10})}}, {Tensor::FromInts(kI64, {}, {9})}, op);
    }
  }
  for (int64_t axis : {-1, 0, 1}) {
    Graph g = OperandGraph("OneHot", {2, 3}, {1}, kF32, "depth",
                           {{"axis", Attribute(axis)}, {"depth", Attribute(std::vector<double>{5})}});
    std::map<std::string, Tensor> good = {{"x", Tensor::FromInts(kI64, {2, 3}, {0, 4, -1, -5, 2, 7})},
                                          {"v", Tensor::FromDoubles(kF32, {1}, {5.0})}};
    ExpectOperand(g, good, {Tensor::FromDoubles(kF32, {1}, {4.0}), Tensor::FromDoubles(kF32, {1}, {6.0})},
                  "one hot axis " + std::to_string(axis));
  }
}

// Pad's constant value read at run time too (input 1, before the run-time pads).
TEST(ShapeOperandCheckTest, PadWithRunTimeValueAndPads) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {2, 3}});
  g.AddInput("value", TensorType{kF32, {}});
  g.AddInput("v", TensorType{kI64, {4}});
  Add(&g, "Pad", "n", {"x", "value", "v"}, {"y"},
      {{"pads", Attribute(std::vector<int64_t>{0, 0, 1, 2})}, {graph::kRunTimeOperandAttr, Attribute("pads")}});
  g = Finish(g, {"y"});
  EXPECT_EQ(graph::PadValueInput(g.nodes[0]), 1);
  testing::CheckOptions options;
  options.inputs = {{"x", RandomTensor({2, 3}, 2)}, {"value", Tensor::FromDoubles(kF32, {}, {7.5})}, {"v", Ints({1, 1, 0, 1})}};
  EXPECT_TRUE(testing::CheckAgainstReference(g, options));
  Tensor y = graph_eval::Interpret(g, options.inputs).at("y");
  EXPECT_EQ(y.GetDouble(0), 7.5);  // row 0 is padding
}

TEST(ShapeOperandCheckTest, RangeWithRunTimeOperands) {
  for (ir::DType dtype : {kF32, ir::DType::Int(32)}) {
    Graph g;
    for (const char* name : {"start", "limit", "delta"}) g.AddInput(name, TensorType{dtype, {}});
    Add(&g, "Range", "n", {"start", "limit", "delta"}, {"y"},
        {{"length", Attribute(int64_t{4})}, {graph::kRunTimeOperandAttr, Attribute("range")}});
    g = Finish(g, {"y"});
    auto scalar = [dtype](double v) { return Tensor::FromDoubles(dtype, {}, {v}); };
    auto inputs = [&](double s, double l, double d) {
      return std::map<std::string, Tensor>{{"start", scalar(s)}, {"limit", scalar(l)}, {"delta", scalar(d)}};
    };
    for (auto [s, l, d] : {std::make_tuple(1.0, 9.0, 2.0), std::make_tuple(10.0, 2.0, -2.0), std::make_tuple(0.0, 7.0, 2.0)}) {
      testing::CheckOptions options;
      options.inputs = inputs(s, l, d);
      EXPECT_TRUE(testing::CheckAgainstReference(g, options)) << s << " " << l << " " << d;
    }
    testing::ExpectRunTimeOperandRefused(g, inputs(1, 9, 1), "'n'");
    testing::ExpectRunTimeOperandRefused(g, inputs(1, 9, 0), "'n'");
  }
}

// x [3, 2, 2] reduced over axes read at run time, compiled for `out` (axes attribute: one set
// that gives it, as the importer sets it).
Graph ReduceGraph(const std::string& op, int64_t keepdims, const Shape& out, int64_t count) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {3, 2, 2}});
  g.AddInput("v", TensorType{kI64, {count}});
  std::vector<std::vector<int>> sets = graph::ReductionsGiving({3, 2, 2}, out, keepdims != 0);
  EXPECT_FALSE(sets.empty());
  Add(&g, op, "n", {"x", "v"}, {"y"},
      {{"keepdims", Attribute(keepdims)}, {"axes", Attribute(std::vector<int64_t>(sets[0].begin(), sets[0].end()))},
       {graph::kRunTimeOperandAttr, Attribute("axes")}});
  return Finish(g, {"y"});
}

TEST(ShapeOperandCheckTest, ReductionsOverRunTimeAxesPickTheNamedAxes) {
  // keepdims=0, [3,2,2] -> [3,2]: axis 1 or axis 2, two different results from one kernel.
  EXPECT_EQ(graph::ReductionsGiving({3, 2, 2}, {3, 2}, false).size(), 2u);
  EXPECT_EQ(graph::ReductionsGiving({1, 4, 1}, {1, 1, 1}, true).size(), 1u);  // {1} == {0, 1} == {0, 1, 2}
  EXPECT_TRUE(graph::ReductionsGiving({3, 2}, {2, 3}, true).empty());
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceSumSquare", "ReduceLogSumExp"}) {
    Graph g = ReduceGraph(op, 0, {3, 2}, 1);
    for (int64_t axis : {1, 2, -1, -2}) {
      testing::CheckOptions options;
      options.inputs = {{"x", RandomTensor({3, 2, 2}, 4)}, {"v", Ints({axis})}};
      EXPECT_TRUE(testing::CheckAgainstReference(g, options)) << op << " axis " << axis;
    }
    // Axis 0 gives [2,2], axis 3 is out of range.
    ExpectOperand(g, {{"x", RandomTensor({3, 2, 2}, 4)}, {"v", Ints({1})}}, {Ints({0}), Ints({3}), Ints({-4})}, op);
  }
  // keepdims=1: [3,2,2] -> [3,1,1] by axes {1,2} in any order; two named axes with one repeated are refused.
  Graph kept = ReduceGraph("ReduceSum", 1, {3, 1, 1}, 2);
  ExpectOperand(kept, {{"x", RandomTensor({3, 2, 2}, 5)}, {"v", Ints({2, 1})}}, {Ints({1, 1}), Ints({0, 1})}, "kept");
  testing::CheckOptions options;
  options.inputs = {{"x", RandomTensor({3, 2, 2}, 5)}, {"v", Ints({-1, 1})}};
  EXPECT_TRUE(testing::CheckAgainstReference(kept, options));
}

}  // namespace
}  // namespace ops
}  // namespace agate
