// Normalizations against the reference.
#include <gtest/gtest.h>

#include "core/graph/testing.h"
#include "core/ops/ops_testing.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::RandomTensor;
using testing::CheckAgainstReference;

const ir::DType kF32 = ir::DType::Float(32);

TEST(NormTest, BatchNormInferenceFusesAsBroadcast) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {2, 4, 5, 16}});
  g.AddConstant("s", RandomTensor({4}, 1));
  g.AddConstant("b", RandomTensor({4}, 2));
  g.AddConstant("m", RandomTensor({4}, 3));
  g.AddConstant("v", RandomTensor({4}, 4, 0.5, 1.5));
  Add(&g, "BatchNormalization", "bn", {"x", "s", "b", "m", "v"}, {"n"});
  Add(&g, "Relu", "relu", {"n"}, {"y"});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"})));
}

TEST(NormTest, InstanceNorm) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {2, 3, 4, 8}});
  g.AddConstant("s", RandomTensor({3}, 1));
  g.AddConstant("b", RandomTensor({3}, 2));
  Add(&g, "InstanceNormalization", "in", {"x", "s", "b"}, {"y"}, {{"epsilon", Attribute(1e-3)}});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"})));
}

TEST(NormTest, LayerNorm) {
  for (int64_t axis : {-1, 1}) {
    Graph g;
    g.AddInput("x", TensorType{kF32, {3, 4, 32}});
    graph::Shape normalized = axis == -1 ? graph::Shape{32} : graph::Shape{4, 32};
    g.AddConstant("s", RandomTensor(normalized, 1));
    g.AddConstant("b", RandomTensor(normalized, 2));
    Add(&g, "LayerNormalization", "ln", {"x", "s", "b"}, {"y"}, {{"axis", Attribute(axis)}});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << "axis " << axis;
  }
  Graph g;
  g.AddInput("x", TensorType{kF32, {5, 16}});
  g.AddConstant("s", RandomTensor({16}, 1));
  Add(&g, "LayerNormalization", "ln", {"x", "s"}, {"y", "mean", "inv_std"});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y", "mean", "inv_std"})));
}

TEST(NormTest, MeanVarianceNormalizationAndLrn) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {2, 3, 4, 5}});
  Add(&g, "MeanVarianceNormalization", "mvn", {"x"}, {"y"});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"})));
  Graph l;
  l.AddInput("x", TensorType{kF32, {1, 7, 3, 4}});
  Add(&l, "LRN", "lrn", {"x"}, {"y"}, {{"size", Attribute(int64_t{3})}, {"alpha", Attribute(0.01)}});
  EXPECT_TRUE(CheckAgainstReference(Finish(l, {"y"})));
}

}  // namespace
}  // namespace ops
}  // namespace agate
