// Reductions, ArgMax/ArgMin and the softmax family, against the reference.
#include <gtest/gtest.h>

#include <limits>

#include "core/graph/testing/graph_builder.h"
#include "core/ops/testing/reference_check.h"

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

Graph OneOp(const std::string& op, graph::Shape x, Attrs attrs, bool positive = false) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  std::string in = "x";
  if (positive) {
    Add(&g, "Abs", "abs", {"x"}, {"ax"});
    in = "ax";
  }
  Add(&g, op, "op", {in}, {"y"}, attrs);
  return Finish(g, {"y"});
}

TEST(ReduceTest, ReduceOps) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    bool positive = std::string(op) == "ReduceLogSum";
    for (const Attrs& attrs : std::vector<Attrs>{{{"axes", Attribute(Ints{1})}},
                                                 {{"axes", Attribute(Ints{-1})}, {"keepdims", Attribute(int64_t{0})}},
                                                 {{"axes", Attribute(Ints{0, 2})}, {"keepdims", Attribute(int64_t{0})}},
                                                 {}}) {
      EXPECT_TRUE(CheckAgainstReference(OneOp(op, {3, 4, 32}, attrs, positive))) << op;
    }
  }
}

TEST(ReduceTest, ArgMaxArgMin) {
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (int64_t last : {0, 1}) {
      Graph g;
      g.AddInput("x", TensorType{ir::DType::Int(32), {3, 7, 5}});  // small ints: many ties
      Add(&g, op, "arg", {"x"}, {"y"},
          {{"axis", Attribute(int64_t{1})}, {"keepdims", Attribute(int64_t{0})}, {"select_last_index", Attribute(last)}});
      EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << op << " last=" << last;
    }
  }
}

// Infinite elements are candidates like any other: a row of -inf has its argmax at 0 (and of
// +inf its argmin), not at the reducer's "no candidate" index -1.
TEST(ReduceTest, ArgMaxArgMinOverInfinities) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const char* op : {"ArgMax", "ArgMin"}) {
    double fill = std::string(op) == "ArgMax" ? -inf : inf;
    std::vector<double> c(4 * 6, 0.0);
    for (int j = 0; j < 6; ++j) c[j] = fill;         // row 0: all infinite
    for (int j = 0; j < 6; j += 2) c[6 + j] = fill;  // row 1: some
    Graph g;
    g.AddInput("x", TensorType{kF32, {4, 6}});
    g.AddConstant("c", graph::Tensor::FromDoubles(kF32, {4, 6}, c));
    Add(&g, "Add", "add", {"x", "c"}, {"s"});
    Add(&g, op, "arg", {"s"}, {"y"}, {{"axis", Attribute(int64_t{1})}});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << op;
  }
}

// ReduceMax of a row of -inf is -inf (and ReduceMin of +inf is +inf), not the
// lowest (highest) finite float: te::max/min start from the infinities for floats.
TEST(ReduceTest, MaxMinOverInfinities) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    double fill = std::string(op) == "ReduceMax" ? -inf : inf;
    std::vector<double> c(4 * 6, 0.0);
    for (int j = 0; j < 6; ++j) c[j] = fill;  // row 0: all infinite
    Graph g;
    g.AddInput("x", TensorType{kF32, {4, 6}});
    g.AddConstant("c", graph::Tensor::FromDoubles(kF32, {4, 6}, c));
    Add(&g, "Add", "add", {"x", "c"}, {"s"});
    Add(&g, op, "r", {"s"}, {"y"}, {{"axes", Attribute(std::vector<int64_t>{1})}, {"keepdims", Attribute(int64_t{0})}});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << op;
  }
}

TEST(SoftmaxTest, SoftmaxFamily) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    EXPECT_TRUE(CheckAgainstReference(OneOp(op, {4, 6, 32}, {}))) << op << " last axis";
    EXPECT_TRUE(CheckAgainstReference(OneOp(op, {2, 5, 3, 4}, {{"axis", Attribute(int64_t{1})}}))) << op << " axis 1";
    EXPECT_TRUE(CheckAgainstReference(
        OneOp(op, {2, 5, 3, 4}, {{"axis", Attribute(int64_t{1})}, {"coerce_2d", Attribute(int64_t{1})}})))
        << op << " coerce_2d";
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
