// RunTimeReshape (Reshape, Unsqueeze, Squeeze with their shape or axes read at run time) on the
// loop-IR evaluator and as LLVM host code against the reference interpreter: the extents and
// the bytes at the front of the upper-bound output; a bad operand fails the kernel.
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
using Ints = std::vector<int64_t>;

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI64 = ir::DType::Int(64);

// y = form(x, operand) with `operand` a graph input of `count` int64 values.
Graph RunTimeReshapeGraph(const std::string& form, graph::Shape x, int64_t count, int64_t allowzero = 0) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  g.AddInput("operand", TensorType{kI64, {count}});
  std::vector<std::pair<std::string, Attribute>> attrs{{"form", Attribute(form)}};
  if (allowzero) attrs.push_back({"allowzero", Attribute(allowzero)});
  Add(&g, "RunTimeReshape", "r", {"x", "operand"}, {"y", "y_extents"}, attrs);
  g.run_time_extents["y"] = "y_extents";
  return Finish(g, {"y", "y_extents"});
}

std::map<std::string, graph::Tensor> Inputs(const Graph& g, const Ints& operand) {
  return {{"x", RandomTensor(g.TypeOf("x").shape, 4)},
          {"operand", graph::Tensor::FromInts(kI64, {static_cast<int64_t>(operand.size())}, operand)}};
}

const std::vector<testing::Backend> kBackends = {testing::Backend::kEval, testing::Backend::kLLVM};

// The compiled extents equal the reference's (and `expected`), and the output's first bytes are
// the input's.
void ExpectExtents(const Graph& g, const Ints& operand, const Ints& expected) {
  std::map<std::string, graph::Tensor> inputs = Inputs(g, operand);
  std::map<std::string, graph::Tensor> want = graph_eval::Interpret(g, inputs);
  EXPECT_EQ(want.at("y_extents").ToInts(), expected);
  Graph fused = testing::Fuse(g);
  for (testing::Backend backend : kBackends) {
    std::map<std::string, graph::Tensor> got = testing::RunGroups(fused, inputs, backend, target::Target::Parse("llvm"));
    EXPECT_EQ(got.at("y_extents").ToInts(), expected) << "backend " << static_cast<int>(backend);
    const graph::Tensor& x = inputs.at("x");
    EXPECT_EQ(std::memcmp(got.at("y").raw_data(), x.raw_data(), x.nbytes()), 0) << "backend " << static_cast<int>(backend);
  }
}

// The reference refuses the operand naming the node, and the kernel fails on every backend.
void ExpectRefused(const Graph& g, const Ints& operand) {
  testing::ExpectRunTimeOperandRefused(g, Inputs(g, operand), "'r'");
}

TEST(RunTimeReshapeTest, ReshapeBoundsEveryAxisByTheElementCount) {
  Graph g = RunTimeReshapeGraph("Reshape", {2, 3, 4}, 3);
  EXPECT_EQ(g.TypeOf("y").shape, (graph::Shape{24, 24, 24}));
  EXPECT_EQ(g.TypeOf("y_extents").shape, (graph::Shape{3}));
  ExpectExtents(g, {4, -1, 2}, {4, 3, 2});
  ExpectExtents(g, {0, 0, -1}, {2, 3, 4});
  ExpectExtents(g, {24, 1, 1}, {24, 1, 1});
  ExpectExtents(g, {-1, 1, 1}, {24, 1, 1});
  ExpectExtents(g, {1, 0, 8}, {1, 3, 8});
  ExpectRefused(g, {-1, -1, 2});  // two inferred extents
  ExpectRefused(g, {5, 5, 1});    // 25 elements
  ExpectRefused(g, {7, -1, 1});   // 24 is not a multiple of 7
  ExpectRefused(g, {-2, 12, 1});  // negative
  ExpectRefused(g, {25, 1, 0});   // past the element count
}

TEST(RunTimeReshapeTest, ReshapeToAnotherRankAndAllowZero) {
  Graph flat = RunTimeReshapeGraph("Reshape", {2, 3, 4}, 2);
  ExpectExtents(flat, {6, -1}, {6, 4});
  ExpectExtents(flat, {0, 12}, {2, 12});
  Graph deep = RunTimeReshapeGraph("Reshape", {4, 6}, 4);
  ExpectExtents(deep, {2, 2, 2, 3}, {2, 2, 2, 3});
  ExpectExtents(deep, {0, -1, 1, 2}, {4, 3, 1, 2});
  ExpectRefused(deep, {2, 2, 0, 3});  // 0 copies axis 2, which the rank-2 input lacks
  Graph zero = RunTimeReshapeGraph("Reshape", {2, 3, 4}, 3, /*allowzero=*/1);
  ExpectExtents(zero, {2, 12, 1}, {2, 12, 1});
  ExpectRefused(zero, {0, 0, -1});  // a literal 0: no extent can be inferred
}

TEST(RunTimeReshapeTest, UnsqueezeAndSqueeze) {
  Graph un = RunTimeReshapeGraph("Unsqueeze", {2, 3}, 2);
  EXPECT_EQ(un.TypeOf("y").shape, (graph::Shape{3, 3, 3, 3}));
  ExpectExtents(un, {0, 3}, {1, 2, 3, 1});
  ExpectExtents(un, {-1, 1}, {2, 1, 3, 1});
  ExpectExtents(un, {2, 0}, {1, 2, 1, 3});
  ExpectRefused(un, {1, 1});   // repeated
  ExpectRefused(un, {4, 0});   // out of range for rank 4
  ExpectRefused(un, {-5, 0});

  Graph sq = RunTimeReshapeGraph("Squeeze", {2, 1, 3, 1}, 1);
  EXPECT_EQ(sq.TypeOf("y").shape, (graph::Shape{3, 3, 3}));
  ExpectExtents(sq, {1}, {2, 3, 1});
  ExpectExtents(sq, {-1}, {2, 1, 3});
  ExpectRefused(sq, {0});  // extent 2
  ExpectRefused(sq, {4});
  Graph both = RunTimeReshapeGraph("Squeeze", {2, 1, 3, 1}, 2);
  ExpectExtents(both, {3, 1}, {2, 3});
  ExpectRefused(both, {1, -3});  // the same axis twice
}

TEST(RunTimeReshapeTest, UnboundableResultsAreRefusedAtCompileTime) {
  try {
    RunTimeReshapeGraph("Reshape", {0, 3}, 2);
    ADD_FAILURE() << "an empty input was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("no upper bound"), std::string::npos) << e.what();
  }
  try {
    RunTimeReshapeGraph("Reshape", {64, 64, 64}, 3);  // 2^18 elements: bounds of 2^54
    ADD_FAILURE() << "a bound of 2^54 elements was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("--input-value"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
