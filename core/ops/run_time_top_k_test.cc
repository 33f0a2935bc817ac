// RunTimeTopK (TopK with k read at run time) on the loop-IR evaluator and as LLVM host code
// against the reference interpreter: values and indices compact at their run-time extents; a k
// outside [0, n] fails the kernel.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
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

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI64 = ir::DType::Int(64);

Graph TopKGraph(int64_t axis, int64_t largest) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {3, 6, 2}});
  g.AddInput("k", TensorType{kI64, {1}});
  Add(&g, "RunTimeTopK", "top", {"x", "k"}, {"v", "v_extents", "i", "i_extents"},
      {{"axis", Attribute(axis)}, {"largest", Attribute(largest)}});
  g.run_time_extents["v"] = "v_extents";
  g.run_time_extents["i"] = "i_extents";
  return Finish(g, {"v", "i", "v_extents", "i_extents"});
}

std::map<std::string, graph::Tensor> Inputs(int64_t k) {
  return {{"x", RandomTensor({3, 6, 2}, 9)}, {"k", graph::Tensor::FromInts(kI64, {1}, {k})}};
}

const std::vector<testing::Backend> kBackends = {testing::Backend::kEval, testing::Backend::kLLVM};

TEST(RunTimeTopKTest, MatchesTheReferenceForEveryK) {
  for (int64_t axis : {1, -1, 0}) {
    for (int64_t largest : {0, 1}) {
      Graph g = TopKGraph(axis, largest);
      Graph fused = testing::Fuse(g);
      int64_t n = g.TypeOf("x").shape[axis < 0 ? axis + 3 : axis];
      for (int64_t k = 0; k <= n; k += (n > 3 ? 2 : 1)) {
        std::map<std::string, graph::Tensor> inputs = Inputs(k);
        std::map<std::string, graph::Tensor> want = graph_eval::Interpret(g, inputs);
        graph::Shape extents = want.at("v_extents").ToInts();
        EXPECT_EQ(extents[axis < 0 ? axis + 3 : axis], k);
        EXPECT_EQ(want.at("i_extents").ToInts(), extents);
        size_t elements = static_cast<size_t>(graph::NumElements(extents));
        for (testing::Backend backend : kBackends) {
          std::map<std::string, graph::Tensor> got =
              testing::RunGroups(fused, inputs, backend, target::Target::Parse("llvm"));
          std::string where = "axis " + std::to_string(axis) + " largest " + std::to_string(largest) + " k " +
                              std::to_string(k) + " backend " + std::to_string(static_cast<int>(backend));
          EXPECT_EQ(got.at("v_extents").ToInts(), extents) << where;
          EXPECT_EQ(got.at("i_extents").ToInts(), extents) << where;
          EXPECT_EQ(std::memcmp(got.at("v").raw_data(), want.at("v").raw_data(), elements * 4), 0) << where;
          EXPECT_EQ(std::memcmp(got.at("i").raw_data(), want.at("i").raw_data(), elements * 8), 0) << where;
        }
      }
    }
  }
}

TEST(RunTimeTopKTest, KOutsideTheAxisFailsTheKernel) {
  Graph g = TopKGraph(1, 1);
  Graph fused = testing::Fuse(g);
  for (int64_t k : {7, -1}) {
    EXPECT_THROW(graph_eval::Interpret(g, Inputs(k)), Error) << k;
    for (testing::Backend backend : kBackends) {
      try {
        testing::RunGroups(fused, Inputs(k), backend, target::Target::Parse("llvm"));
        ADD_FAILURE() << "k " << k << " ran";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), StatusCode::kInternal) << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
