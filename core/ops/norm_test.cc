// Normalizations against the reference.
#include <gtest/gtest.h>

#include "core/graph/testing/graph_builder.h"
#include "core/ops/testing/reference_check.h"
#include "core/support/error.h"
#include "core/target/target.h"

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

Graph TrainingBatchNorm(graph::Shape x, std::vector<std::string> outputs, double momentum = 0.9) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  int64_t c = x[1];
  g.AddConstant("s", RandomTensor({c}, 1));
  g.AddConstant("b", RandomTensor({c}, 2));
  g.AddConstant("m", RandomTensor({c}, 3));
  g.AddConstant("v", RandomTensor({c}, 4, 0.5, 1.5));
  Add(&g, "BatchNormalization", "bn", {"x", "s", "b", "m", "v"}, outputs,
      {{"training_mode", Attribute(int64_t{1})}, {"momentum", Attribute(momentum)}, {"epsilon", Attribute(1e-3)}});
  return Finish(g, outputs);
}

// Training mode normalizes with the batch's statistics and updates the running ones.
TEST(NormTest, BatchNormTrainingMode) {
  EXPECT_TRUE(CheckAgainstReference(TrainingBatchNorm({3, 4, 5, 6}, {"y", "running_mean", "running_var"})));
  EXPECT_TRUE(CheckAgainstReference(TrainingBatchNorm({2, 3, 7}, {"y", "running_mean", "running_var"}, 0.5)));
  EXPECT_TRUE(CheckAgainstReference(TrainingBatchNorm({4, 5}, {"y", "running_mean", "running_var"}, 0.1)));
  EXPECT_TRUE(CheckAgainstReference(TrainingBatchNorm({2, 8, 4, 4}, {"y"})));  // Y alone
}

// Y then an elementwise consumer, with the running statistics still leaving the kernel.
TEST(NormTest, BatchNormTrainingModeWithAConsumer) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {2, 4, 3, 8}});
  for (const char* p : {"s", "b", "m"}) g.AddConstant(p, RandomTensor({4}, p[0]));
  g.AddConstant("v", RandomTensor({4}, 9, 0.5, 1.5));
  Add(&g, "BatchNormalization", "bn", {"x", "s", "b", "m", "v"}, {"n", "rm", "rv"}, {{"training_mode", Attribute(int64_t{1})}});
  Add(&g, "Relu", "relu", {"n"}, {"y"});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y", "rm", "rv"})));
}

// A per-channel input of the wrong length is named with its shape, at graph level and when the
// operator library is called on a group whose types were never inferred.
TEST(NormTest, BatchNormWrongChannelCountIsNamed) {
  Graph g = TrainingBatchNorm({2, 4, 3, 3}, {"y", "running_mean", "running_var"});
  g.types["s"] = TensorType{kF32, {3}};
  Graph fused = testing::Fuse(g);
  try {
    LowerGroup(fused, fused.groups.at(0), target::Target::Host(), "k");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("BatchNormalization 'bn'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("input 1 is [3], expected [4]"), std::string::npos) << e.message();
  }
  Graph bad;
  bad.AddInput("x", TensorType{kF32, {2, 4, 3, 3}});
  for (const char* p : {"s", "b", "m", "v"}) bad.AddConstant(p, RandomTensor({std::string(p) == "v" ? 5 : 4}, 1));
  Add(&bad, "BatchNormalization", "bn", {"x", "s", "b", "m", "v"}, {"y"}, {{"training_mode", Attribute(int64_t{1})}});
  try {
    Finish(bad, {"y"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("bn"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("[5]"), std::string::npos) << e.message();
  }
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

// RMSNormalization over the last axis (rows at the output's row loop) and over two trailing axes.
TEST(NormTest, RmsNormalization) {
  for (const auto& [shape, axis] : std::vector<std::pair<graph::Shape, int64_t>>{
           {{3, 5, 48}, -1}, {{2, 7, 13}, -1}, {{2, 3, 4, 8}, 2}}) {
    Graph g;
    g.AddInput("x", TensorType{kF32, shape});
    graph::Shape normalized(shape.begin() + (axis < 0 ? shape.size() + axis : axis), shape.end());
    g.AddConstant("scale", RandomTensor(normalized, 5, 0.5, 1.5));
    Add(&g, "RMSNormalization", "rms", {"x", "scale"}, {"y"},
        {{"axis", Attribute(axis)}, {"epsilon", Attribute(1e-6)}});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << graph::ShapeToString(shape);
  }
}

// LayerNormalization per pixel over the channels (the layout pass's form of a channels-last
// block's norm), NCHW and blocked with 8 and 16 lanes per block.
TEST(NormTest, ChannelLayerNormInEveryLayout) {
  for (int64_t block : {0, 8, 16}) {
    int64_t c = 32;
    Graph g;
    graph::Shape shape = block ? graph::Shape{1, c / block, 5, 6, block} : graph::Shape{1, c, 5, 6};
    g.AddInput("x", TensorType{kF32, shape});
    g.AddConstant("scale", RandomTensor({c}, 7, 0.5, 1.5));
    g.AddConstant("bias", RandomTensor({c}, 8));
    std::string layout = block ? "NCHW" + std::to_string(block) + "c" : "NCHW";
    Add(&g, "LayerNormalization", "ln", {"x", "scale", "bias"}, {"y"},
        {{"axis", Attribute(int64_t{1})}, {"epsilon", Attribute(1e-6)}, {"data_layout", Attribute(layout)}});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << layout;
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
