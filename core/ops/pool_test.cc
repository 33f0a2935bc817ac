// Pools (max/avg/Lp, strides, dilations, asymmetric pads, ceil_mode,
// count_include_pad, global) in NCHW and blocked NCHW<c>c, against the reference.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "core/graph/passes/layout_transformation.h"
#include "core/graph_eval/interpreter.h"
#include "core/ir/printer.h"
#include "core/graph/testing/graph_builder.h"
#include "core/ops/testing/reference_check.h"
#include "core/target/target.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using testing::CheckAgainstReference;

const ir::DType kF32 = ir::DType::Float(32);
using Attrs = std::vector<std::pair<std::string, Attribute>>;
using Ints = std::vector<int64_t>;

Graph PoolGraph(const std::string& op, graph::Shape x, Attrs attrs) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  Add(&g, op, "pool", {"x"}, {"y"}, attrs);
  return Finish(g, {"y"});
}

TEST(PoolTest, WindowPools) {
  std::vector<std::pair<std::string, Attrs>> cases = {
      {"MaxPool", {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}},
      {"MaxPool", {{"kernel_shape", Attribute(Ints{2, 3})}, {"dilations", Attribute(Ints{2, 1})}, {"pads", Attribute(Ints{0, 1, 1, 0})}}},
      {"MaxPool", {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"ceil_mode", Attribute(int64_t{1})}}},
      {"AveragePool", {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}},
      {"AveragePool", {{"kernel_shape", Attribute(Ints{3, 2})}, {"pads", Attribute(Ints{1, 0, 2, 1})}, {"count_include_pad", Attribute(int64_t{1})}}},
      {"AveragePool", {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"ceil_mode", Attribute(int64_t{1})}}},
      {"LpPool", {{"kernel_shape", Attribute(Ints{2, 2})}, {"strides", Attribute(Ints{2, 2})}}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(CheckAgainstReference(PoolGraph(cases[i].first, {2, 3, 9, 16}, cases[i].second))) << "case " << i;
  }
  EXPECT_TRUE(CheckAgainstReference(PoolGraph("MaxPool", {1, 2, 11}, {{"kernel_shape", Attribute(Ints{3})}})));
}

Graph MaxPoolIndicesGraph(graph::Shape x, Attrs attrs, bool ties = false) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  std::string in = "x";
  if (ties) {  // floor(2x) of x in [-1, 1): four distinct values, so most windows hold equal maxima
    g.AddConstant("two", graph::Tensor::Scalar(kF32, 2.0));
    Add(&g, "Mul", "mul", {"x", "two"}, {"x2"});
    Add(&g, "Floor", "floor", {"x2"}, {"xf"});
    in = "xf";
  }
  Add(&g, "MaxPool", "pool", {in}, {"y", "indices"}, attrs);
  return Finish(g, {"y", "indices"});
}

TEST(PoolTest, MaxPoolIndices) {
  std::vector<Attrs> cases = {
      {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}},
      {{"kernel_shape", Attribute(Ints{2, 2})}, {"strides", Attribute(Ints{2, 2})}, {"storage_order", Attribute(int64_t{1})}},
      {{"kernel_shape", Attribute(Ints{3, 2})}, {"pads", Attribute(Ints{1, 0, 2, 1})}, {"storage_order", Attribute(int64_t{1})}},
      {{"kernel_shape", Attribute(Ints{2, 3})}, {"dilations", Attribute(Ints{2, 1})}, {"pads", Attribute(Ints{0, 1, 1, 0})}},
      {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"ceil_mode", Attribute(int64_t{1})}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(CheckAgainstReference(MaxPoolIndicesGraph({2, 3, 9, 10}, cases[i]))) << "case " << i;
    EXPECT_TRUE(CheckAgainstReference(MaxPoolIndicesGraph({2, 3, 9, 10}, cases[i], true))) << "case " << i << ", ties";
  }
  // One and three spatial axes, both storage orders.
  for (int64_t order : {0, 1}) {
    EXPECT_TRUE(CheckAgainstReference(MaxPoolIndicesGraph(
        {1, 2, 11}, {{"kernel_shape", Attribute(Ints{3})}, {"storage_order", Attribute(order)}}, true)));
    EXPECT_TRUE(CheckAgainstReference(MaxPoolIndicesGraph(
        {1, 2, 4, 5, 6}, {{"kernel_shape", Attribute(Ints{2, 2, 3})}, {"pads", Attribute(Ints{1, 0, 1, 0, 1, 1})},
                          {"storage_order", Attribute(order)}})))
        << "3-D, storage_order " << order;
  }
}

// A window of -inf still has a maximum (the first -inf), not the reducer's "no candidate".
TEST(PoolTest, MaxPoolIndicesOverMinusInfinity) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 2, 4, 4}});
  std::vector<double> c(32, 0.0);
  for (int i = 0; i < 16; ++i) c[i] = -std::numeric_limits<double>::infinity();  // channel 0
  g.AddConstant("c", graph::Tensor::FromDoubles(kF32, {1, 2, 4, 4}, c));
  Add(&g, "Add", "add", {"x", "c"}, {"s"});
  Add(&g, "MaxPool", "pool", {"s"}, {"y", "indices"}, {{"kernel_shape", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 0, 0})}});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y", "indices"})));
}

// Windows whose elements are all -inf have the maximum -inf (not the lowest finite float), in
// MaxPool and GlobalMaxPool, NCHW and blocked NCHW8c. The -inf comes from a constant added to the
// input, so that constant folding leaves the pools to the compiled code.
Graph MaxOverMinusInfinityGraph(const std::string& op, graph::Shape x, Attrs attrs, const std::string& layout) {
  const double inf = std::numeric_limits<double>::infinity();
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  int64_t n = graph::NumElements(x);
  std::vector<double> c(n, 0.0);
  // The first third of the elements: -inf (whole planes, and in blocked layouts the top rows of
  // every channel of a block); the rest: a mix of -inf and 0.
  for (int64_t i = 0; i < n; ++i) c[i] = i < n / 3 || i % 3 == 0 ? -inf : 0.0;
  g.AddConstant("c", graph::Tensor::FromDoubles(kF32, x, c));
  Add(&g, "Add", "add", {"x", "c"}, {"s"});
  if (!layout.empty()) attrs.push_back({"data_layout", Attribute(layout)});
  Add(&g, op, "pool", {"s"}, {"y"}, attrs);
  return Finish(g, {"y"});
}

TEST(PoolTest, MaxOverMinusInfinity) {
  Attrs window = {{"kernel_shape", Attribute(Ints{2, 2})}, {"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 0, 0})}};
  EXPECT_TRUE(CheckAgainstReference(MaxOverMinusInfinityGraph("MaxPool", {1, 3, 6, 6}, window, "")));
  EXPECT_TRUE(CheckAgainstReference(MaxOverMinusInfinityGraph("GlobalMaxPool", {1, 3, 6, 6}, {}, "")));
  EXPECT_TRUE(CheckAgainstReference(MaxOverMinusInfinityGraph("MaxPool", {1, 2, 6, 6, 8}, window, "NCHW8c")));
  EXPECT_TRUE(CheckAgainstReference(MaxOverMinusInfinityGraph("GlobalMaxPool", {1, 2, 6, 6, 8}, {}, "NCHW8c")));
  // The reference's answer really is -inf (a plane of -inf).
  Graph g = MaxOverMinusInfinityGraph("GlobalMaxPool", {1, 3, 6, 6}, {}, "");
  std::map<std::string, graph::Tensor> want =
      graph_eval::Interpret(g, testing::RandomInputs(g, 1));
  EXPECT_EQ(want.at("y").GetDouble(0), -std::numeric_limits<double>::infinity());
}

// Integer pools keep starting from the dtype's lowest value.
TEST(PoolTest, IntegerMaxPools) {
  for (ir::DType dt : {ir::DType::Int(8), ir::DType::UInt(8), ir::DType::Int(32)}) {
    Graph g;
    g.AddInput("x", TensorType{dt, {1, 2, 5, 5}});
    Add(&g, "MaxPool", "pool", {"x"}, {"p"},
        {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}});
    Add(&g, "GlobalMaxPool", "gmp", {"x"}, {"y"});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"p", "y"}))) << dt;
  }
}

// 2-D max pools in NCHW of a kernel input run as vector planes (core/ops/max_pool_plane.h)
// with the borders resolved at compile time: every geometry below against the reference, over
// 8-bit data's whole range and floats, the interior as whole vectors with an overlapping last
// one (ResNet's 56-wide rows), border rows and columns with taps dropped, dilations, ceil_mode,
// asymmetric pads, rows narrower than a vector; and windows of more border positions or taps than
// the plane code unrolls keep the generic schedule.
TEST(PoolTest, NchwMaxPoolsRunAsVectorPlanes) {
  struct Case {
    graph::Shape x;
    Attrs attrs;
    bool plane;  // expected to take the plane code
  };
  std::vector<Case> cases = {
      {{1, 2, 112, 112}, {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}, true},
      {{2, 3, 9, 16}, {{"kernel_shape", Attribute(Ints{2, 3})}, {"dilations", Attribute(Ints{2, 1})}, {"pads", Attribute(Ints{0, 1, 1, 0})}}, true},
      {{1, 2, 13, 13}, {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"ceil_mode", Attribute(int64_t{1})}}, true},
      {{1, 3, 7, 7}, {{"kernel_shape", Attribute(Ints{3, 3})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}, true},
      {{1, 2, 17, 41}, {{"kernel_shape", Attribute(Ints{5, 2})}, {"strides", Attribute(Ints{3, 1})}, {"pads", Attribute(Ints{2, 0, 2, 1})}}, true},
      {{1, 2, 20, 150}, {{"kernel_shape", Attribute(Ints{2, 4})}, {"strides", Attribute(Ints{2, 4})}}, true},
      {{1, 1, 9, 9}, {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}, true},  // one plane
      {{1, 1, 4, 4}, {{"kernel_shape", Attribute(Ints{20, 20})}, {"pads", Attribute(Ints{19, 19, 19, 19})}}, false},
      // 8x8 = 64 taps still unrolled; 32x30 (960: the compiler fuzzer's input, whose chain of
      // maxes overflowed the C printer's stack) and 9x8 keep the generic schedule
      {{1, 2, 20, 20}, {{"kernel_shape", Attribute(Ints{8, 8})}, {"strides", Attribute(Ints{4, 4})}}, true},
      {{1, 3, 100, 72}, {{"kernel_shape", Attribute(Ints{32, 30})}, {"strides", Attribute(Ints{32, 2})}}, false},
      {{1, 2, 20, 20}, {{"kernel_shape", Attribute(Ints{9, 8})}, {"strides", Attribute(Ints{4, 4})}}, false},
  };
  std::mt19937 rng(7);
  for (ir::DType dt : {ir::DType::UInt(8), ir::DType::Int(8), kF32}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      Graph g;
      g.AddInput("x", TensorType{dt, cases[i].x});
      Add(&g, "MaxPool", "pool", {"x"}, {"y"}, cases[i].attrs);
      g = Finish(g, {"y"});
      graph::Tensor x(dt, cases[i].x);
      for (int64_t e = 0; e < x.numel(); ++e) {
        if (dt.is_float()) x.SetDouble(e, std::uniform_real_distribution<double>(-100, 100)(rng));
        else x.SetInt(e, static_cast<int64_t>(rng() % 256) - (dt.is_uint() ? 0 : 128));
      }
      testing::CheckOptions options;
      options.inputs = {{"x", x}};
      EXPECT_TRUE(CheckAgainstReference(g, options)) << dt << " case " << i;
      std::vector<std::string> summaries;
      testing::RunGroups(testing::Fuse(g), {{"x", x}}, testing::Backend::kLLVM, target::Target::Host(), {}, &summaries);
      ASSERT_EQ(summaries.size(), 1u);
      EXPECT_EQ(summaries[0].find("max_pool_plane") != std::string::npos, cases[i].plane) << summaries[0];
    }
  }
}

// The values output feeds an epilogue while the indices leave the kernel as they are.
TEST(PoolTest, MaxPoolIndicesWithAFusedConsumer) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 4, 8, 8}});
  Add(&g, "MaxPool", "pool", {"x"}, {"p", "indices"}, {{"kernel_shape", Attribute(Ints{2, 2})}, {"strides", Attribute(Ints{2, 2})}});
  Add(&g, "Relu", "relu", {"p"}, {"y"});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y", "indices"})));
  testing::CheckOptions one_group;
  one_group.one_group = true;
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y", "indices"}), one_group));
}

TEST(PoolTest, MaxPoolIndicesRefusesAnUnknownStorageOrder) {
  Graph g = MaxPoolIndicesGraph({1, 1, 4, 4}, {{"kernel_shape", Attribute(Ints{2, 2})}, {"storage_order", Attribute(int64_t{2})}});
  testing::CheckOptions llvm_only;
  llvm_only.eval = false;
  ::testing::AssertionResult r = CheckAgainstReference(g, llvm_only);
  ASSERT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("MaxPool 'pool'"), std::string::npos) << r.message();
  EXPECT_NE(std::string(r.message()).find("storage_order 2"), std::string::npos) << r.message();
}

TEST(PoolTest, GlobalPools) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    EXPECT_TRUE(CheckAgainstReference(PoolGraph(op, {2, 5, 7, 9}, {}))) << op;
  }
}

// conv -> relu -> maxpool -> global average pool, blocked by the layout pass.
TEST(PoolTest, BlockedPoolsAfterConv) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 16, 12, 12}});
  g.AddConstant("w", graph::testing::RandomTensor({16, 16, 3, 3}, 2));
  Add(&g, "Conv", "conv", {"x", "w"}, {"c"}, {{"pads", Attribute(Ints{1, 1, 1, 1})}});
  Add(&g, "Relu", "relu", {"c"}, {"r"});
  Add(&g, "MaxPool", "pool", {"r"}, {"p"},
      {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}});
  Add(&g, "AveragePool", "avg", {"p"}, {"a"}, {{"kernel_shape", Attribute(Ints{2, 2})}});
  Add(&g, "GlobalAveragePool", "gap", {"a"}, {"y"});
  Graph blocked = graph::TransformLayout(Finish(g, {"y"}), 8);
  int blocked_pools = 0;
  for (const graph::Node& n : blocked.nodes) blocked_pools += n.op.find("Pool") != std::string::npos && n.attrs.Has("data_layout");
  EXPECT_EQ(blocked_pools, 3);
  EXPECT_TRUE(CheckAgainstReference(blocked));
}

// An average pool over blocked channels (Inception's 3x3 branch pools) sums each window a vector
// of channels at a time: the window's reduce axes outside the channel lanes (before, the sum ran
// one channel at a time, 4-5x slower than ONNX Runtime's pools on AVX2). Its rows and columns
// are serial loops that the loop partition pass cuts at the padding: the interior columns'
// loop starts at 1 and the interior reads no select.
TEST(PoolTest, BlockedAveragePoolSumsWholeChannelVectors) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 64, 9, 9}});  // 8 planes of 8 channels: rows a serial loop
  g.AddConstant("w", graph::testing::RandomTensor({64, 64, 1, 1}, 3));
  Add(&g, "Conv", "conv", {"x", "w"}, {"c"});
  Add(&g, "AveragePool", "avg", {"c"}, {"y"},
      {{"kernel_shape", Attribute(Ints{3, 3})}, {"pads", Attribute(Ints{1, 1, 1, 1})}});
  Graph blocked = graph::TransformLayout(Finish(g, {"y"}), 8);
  EXPECT_TRUE(CheckAgainstReference(blocked));
  Graph fused = testing::Fuse(blocked);
  bool found = false;
  for (const graph::FusedGroup& group : fused.groups) {
    if (group.anchor < 0 || fused.nodes[group.anchor].op != "AveragePool") continue;
    found = true;
    GroupKernel k = LowerGroup(fused, group, target::Target::Parse("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell"),
                               "avg");
    EXPECT_NE(k.schedule_summary.find("a vector of channels per output"), std::string::npos) << k.schedule_summary;
    EXPECT_NE(k.schedule_summary.find("partitioned at the padding"), std::string::npos) << k.schedule_summary;
    std::string text = ir::ToString(k.func);
    size_t interior = text.find("for (i3, 1, 7)", text.find("for (i2, 1, 7)"));
    ASSERT_NE(interior, std::string::npos) << text;
    size_t interior_end = text.find("for (k1, 0, 2)", interior);  // the last column's two taps
    ASSERT_NE(interior_end, std::string::npos) << text;
    EXPECT_EQ(text.substr(interior, interior_end - interior).find("select("), std::string::npos) << text;
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace ops
}  // namespace agate
