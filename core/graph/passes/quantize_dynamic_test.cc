// DynamicQuantizeLinear decomposed: the same three outputs as the reference kernel on ONNX's
// examples and on random inputs, and no DynamicQuantizeLinear left.
#include "core/graph/passes/quantize_dynamic.h"

#include <gtest/gtest.h>

#include "core/graph/passes/testing/rewrite_check.h"
#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"

namespace agate {
namespace graph {
namespace {

using testing::Add;
using testing::CountOps;
using testing::Finish;
using testing::OutputDifference;

Graph DynamicQuantize(const Shape& shape) {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), shape});
  Add(&g, "DynamicQuantizeLinear", "dq", {"x"}, {"y", "y_scale", "y_zero_point"});
  return Finish(g, {"y", "y_scale", "y_zero_point"});
}

TEST(DecomposeDynamicQuantize, MatchesTheReferenceKernel) {
  Graph before = DynamicQuantize({6});
  Graph after = DecomposeDynamicQuantize(before);
  EXPECT_EQ(CountOps(after, "DynamicQuantizeLinear"), 0);
  EXPECT_EQ(CountOps(after, "QuantizeLinear"), 1);
  EXPECT_EQ(after.outputs, before.outputs);
  for (const std::string& out : before.outputs) EXPECT_EQ(after.TypeOf(out), before.TypeOf(out)) << out;
  // ONNX's node tests: a range straddling 0, all positive (x_min adjusted to 0), all negative.
  for (std::vector<double> x : {std::vector<double>{0, 2, -3, -2.5, 1.34, 0.5},
                                std::vector<double>{1, 2.1, 1.3, 2.5, 3.34, 4.0},
                                std::vector<double>{-1.0, -2.1, -1.3, -2.5, -3.34, -4.0}}) {
    std::map<std::string, Tensor> in{{"x", Tensor::FromDoubles(DType::Float(32), {6}, x)}};
    auto want = graph_eval::Interpret(before, in), got = graph_eval::Interpret(after, in);
    for (const std::string& out : before.outputs) {
      EXPECT_EQ(got.at(out).ToDoubles(), want.at(out).ToDoubles()) << out << " for x[1] = " << x[1];
    }
  }
  Graph matrix = DynamicQuantize({3, 4});
  for (uint32_t seed : {1u, 2u, 3u}) EXPECT_EQ(OutputDifference(matrix, DecomposeDynamicQuantize(matrix), seed), 0);
}

}  // namespace
}  // namespace graph
}  // namespace agate
