// RunTimeSlice and RunTimeSplit (Slice with starts, ends, axes and steps, Split with its sizes,
// read at run time) on the loop-IR evaluator and as LLVM host code against the reference
// interpreter: the extents and each result compact at the front of its input-sized output; bad
// axes, steps or sizes fail the kernel.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
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

using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::RandomTensor;
using Ints = std::vector<int64_t>;

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI64 = ir::DType::Int(64);
const graph::Shape kInput = {5, 7, 4};
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// y = x[starts:ends:steps on axes] with every operand a graph input of `count` values; without
// axes and steps when `full` is false.
Graph SliceGraph(int64_t count, bool full) {
  Graph g;
  g.AddInput("x", TensorType{kF32, kInput});
  std::vector<std::string> inputs = {"x", "starts", "ends"};
  if (full) inputs.insert(inputs.end(), {"axes", "steps"});
  for (size_t i = 1; i < inputs.size(); ++i) g.AddInput(inputs[i], TensorType{kI64, {count}});
  Add(&g, "RunTimeSlice", "s", inputs, {"y", "y_extents"});
  g.run_time_extents["y"] = "y_extents";
  return Finish(g, {"y", "y_extents"});
}

std::map<std::string, graph::Tensor> Inputs(const Graph& g, const std::vector<Ints>& operands) {
  std::map<std::string, graph::Tensor> inputs{{"x", RandomTensor(kInput, 6)}};
  const char* names[] = {"starts", "ends", "axes", "steps"};
  for (size_t i = 0; i < operands.size(); ++i) {
    inputs[names[i]] = graph::Tensor::FromInts(kI64, {static_cast<int64_t>(operands[i].size())}, operands[i]);
  }
  return inputs;
}

const std::vector<testing::Backend> kBackends = {testing::Backend::kEval, testing::Backend::kLLVM};

// The compiled extents and the compact slice equal the reference's.
void ExpectSlice(const Graph& g, const std::vector<Ints>& operands, const Ints& expected) {
  std::map<std::string, graph::Tensor> inputs = Inputs(g, operands);
  std::map<std::string, graph::Tensor> want = graph_eval::Interpret(g, inputs);
  ASSERT_EQ(want.at("y_extents").ToInts(), expected);
  size_t bytes = static_cast<size_t>(graph::NumElements(expected)) * sizeof(float);
  Graph fused = testing::Fuse(g);
  for (testing::Backend backend : kBackends) {
    std::map<std::string, graph::Tensor> got = testing::RunGroups(fused, inputs, backend, target::Target::Parse("llvm"));
    EXPECT_EQ(got.at("y_extents").ToInts(), expected) << "backend " << static_cast<int>(backend);
    EXPECT_EQ(std::memcmp(got.at("y").raw_data(), want.at("y").raw_data(), bytes), 0)
        << "backend " << static_cast<int>(backend);
  }
}

void ExpectRefused(const Graph& g, const std::vector<Ints>& operands) {
  testing::ExpectRunTimeOperandRefused(g, Inputs(g, operands), "'s'");
}

TEST(RunTimeSliceTest, MatchesTheReference) {
  Graph g = SliceGraph(2, true);
  EXPECT_EQ(g.TypeOf("y").shape, kInput);
  ExpectSlice(g, {{1, 0}, {4, 7}, {0, 2}, {1, 1}}, {3, 7, 4});
  ExpectSlice(g, {{-1, 5}, {-6, 0}, {1, 0}, {-2, -1}}, {4, 3, 4});  // negative steps
  ExpectSlice(g, {{0, 1}, {kMax, kMax}, {-1, -2}, {3, 2}}, {5, 3, 2});
  ExpectSlice(g, {{kMin, 2}, {kMax, -1}, {0, 1}, {1, 3}}, {5, 2, 4});
  ExpectSlice(g, {{3, 0}, {1, 4}, {0, 1}, {1, 1}}, {0, 4, 4});      // empty along axis 0
  ExpectSlice(g, {{0, 2}, {5, 3}, {1, 1}, {1, 1}}, {5, 1, 4});      // axis 1 twice: the last wins
  Graph short_form = SliceGraph(2, false);
  ExpectSlice(short_form, {{0, 1}, {2, 1000}}, {2, 6, 4});
  ExpectSlice(short_form, {{-2, -3}, {kMax, -1}}, {2, 2, 4});
}

TEST(RunTimeSliceTest, BadAxesAndStepsFailTheKernel) {
  Graph g = SliceGraph(1, true);
  ExpectRefused(g, {{0}, {2}, {3}, {1}});   // axis 3 of a rank-3 input
  ExpectRefused(g, {{0}, {2}, {-4}, {1}});
  ExpectRefused(g, {{0}, {2}, {1}, {0}});   // step 0
}

// y0, y1, y2 = Split(x, sizes) along axis 1, the sizes a graph input.
Graph SplitGraph() {
  Graph g;
  g.AddInput("x", TensorType{kF32, kInput});
  g.AddInput("sizes", TensorType{kI64, {3}});
  Add(&g, "RunTimeSplit", "s", {"x", "sizes"}, {"y0", "e0", "y1", "e1", "y2", "e2"},
      {{"axis", graph::Attribute(int64_t{-2})}});
  for (int i = 0; i < 3; ++i) g.run_time_extents["y" + std::to_string(i)] = "e" + std::to_string(i);
  return Finish(g, {"y0", "y1", "y2", "e0", "e1", "e2"});
}

TEST(RunTimeSliceTest, SplitWithRunTimeSizesMatchesTheReference) {
  Graph g = SplitGraph();
  Graph fused = testing::Fuse(g);
  for (const Ints& sizes : std::vector<Ints>{{2, 5, 0}, {0, 0, 7}, {3, 1, 3}}) {
    std::map<std::string, graph::Tensor> inputs{{"x", RandomTensor(kInput, 7)},
                                                {"sizes", graph::Tensor::FromInts(kI64, {3}, sizes)}};
    std::map<std::string, graph::Tensor> want = graph_eval::Interpret(g, inputs);
    for (testing::Backend backend : kBackends) {
      std::map<std::string, graph::Tensor> got = testing::RunGroups(fused, inputs, backend, target::Target::Parse("llvm"));
      for (int i = 0; i < 3; ++i) {
        std::string y = "y" + std::to_string(i), e = "e" + std::to_string(i);
        Ints extents = {5, sizes[i], 4};
        EXPECT_EQ(want.at(e).ToInts(), extents);
        EXPECT_EQ(got.at(e).ToInts(), extents) << "part " << i << " backend " << static_cast<int>(backend);
        EXPECT_EQ(std::memcmp(got.at(y).raw_data(), want.at(y).raw_data(), 5 * sizes[i] * 4 * sizeof(float)), 0)
            << "part " << i << " backend " << static_cast<int>(backend);
      }
    }
  }
  for (const Ints& sizes : std::vector<Ints>{{3, 3, 3}, {-1, 4, 4}, {8, -1, 0}}) {
    std::map<std::string, graph::Tensor> inputs{{"x", RandomTensor(kInput, 7)},
                                                {"sizes", graph::Tensor::FromInts(kI64, {3}, sizes)}};
    EXPECT_THROW(graph_eval::Interpret(g, inputs), Error);
    for (testing::Backend backend : kBackends) {
      EXPECT_THROW(testing::RunGroups(fused, inputs, backend, target::Target::Parse("llvm")), Error)
          << sizes[0] << " " << sizes[1] << " " << sizes[2];
    }
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
