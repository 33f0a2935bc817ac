// CumSum (its axis an attribute or read at run time), Compress, ReverseSequence against the reference.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/graph/testing/graph_builder.h"
#include "core/ops/testing/reference_check.h"
#include "core/support/error.h"

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
using Ints = std::vector<int64_t>;

TEST(SequenceTest, CumSum) {
  for (int64_t exclusive : {0, 1}) {
    for (int64_t reverse : {0, 1}) {
      Graph g;
      g.AddInput("x", TensorType{kF32, {3, 9}});
      Add(&g, "CumSum", "cs", {"x"}, {"y"},
          {{"axis", Attribute(Ints{1})}, {"exclusive", Attribute(exclusive)}, {"reverse", Attribute(reverse)}});
      EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << exclusive << reverse;
    }
  }
}

// A CumSum whose axis is graph input "axis" (a scalar of `axis_type`), read when the kernel runs.
Graph CumSumWithRunTimeAxis(ir::DType axis_type, int64_t exclusive, int64_t reverse) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {2, 3, 5}});
  g.AddInput("axis", TensorType{axis_type, {}});
  Add(&g, "CumSum", "cs", {"x", "axis"}, {"y"}, {{"exclusive", Attribute(exclusive)}, {"reverse", Attribute(reverse)}});
  return Finish(g, {"y"});
}

TEST(SequenceTest, CumSumAlongARunTimeAxisMatchesTheReferenceForEveryAxis) {
  for (ir::DType axis_type : {ir::DType::Int(64), ir::DType::Int(32)}) {
    for (int64_t exclusive : {0, 1}) {
      for (int64_t reverse : {0, 1}) {
        Graph g = CumSumWithRunTimeAxis(axis_type, exclusive, reverse);
        for (int64_t axis = -3; axis < 3; ++axis) {
          testing::CheckOptions options;
          options.inputs["x"] = RandomTensor({2, 3, 5}, 3);
          options.inputs["axis"] = graph::Tensor::FromInts(axis_type, {}, {axis});
          EXPECT_TRUE(CheckAgainstReference(g, options)) << axis_type << " axis " << axis << " exclusive " << exclusive
                                                         << " reverse " << reverse;
        }
      }
    }
  }
}

TEST(SequenceTest, CumSumAlongARunTimeAxisOutOfRangeFailsTheKernel) {
  Graph g = testing::Fuse(CumSumWithRunTimeAxis(ir::DType::Int(64), 0, 0));
  for (int64_t axis : {3, -4, 100}) {
    std::map<std::string, graph::Tensor> inputs{{"x", RandomTensor({2, 3, 5}, 3)},
                                                {"axis", graph::Tensor::FromInts(ir::DType::Int(64), {}, {axis})}};
    for (testing::Backend backend : {testing::Backend::kEval, testing::Backend::kLLVM}) {
      try {
        testing::RunGroups(g, inputs, backend, target::Target::Parse("llvm"));
        ADD_FAILURE() << "axis " << axis << " ran";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), StatusCode::kInternal) << e.what();
        EXPECT_NE(std::string(e.what()).find("returned"), std::string::npos) << e.what();
      }
    }
  }
}

TEST(SequenceTest, CompressAndReverseSequence) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {4, 5}});
  Add(&g, "Compress", "c1", {"x"}, {"a"}, {{"condition", Attribute(Ints{1, 0, 1, 1})}, {"axis", Attribute(int64_t{0})}});
  Add(&g, "Compress", "c2", {"x"}, {"b"}, {{"condition", Attribute(Ints{0, 1, 1, 0, 0, 0, 1})}});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"a", "b"})));

  Graph r;
  r.AddInput("x", TensorType{kF32, {6, 3, 2}});
  r.AddConstant("lens", graph::Tensor::FromInts(ir::DType::Int(64), {3}, {6, 2, 4}));
  Add(&r, "ReverseSequence", "rev", {"x", "lens"}, {"y"}, {{"batch_axis", Attribute(int64_t{1})}, {"time_axis", Attribute(int64_t{0})}});
  EXPECT_TRUE(CheckAgainstReference(Finish(r, {"y"})));
}

}  // namespace
}  // namespace ops
}  // namespace agate
