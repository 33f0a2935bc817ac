// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against the reference
// interpreter: every reduction, with and without class weights and
// ignore_index, 2-D and N-D scores; and the NaN an out-of-range target yields.
#include <cmath>

#include <gtest/gtest.h>

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
using graph::testing::RandomTensor;
using testing::CheckAgainstReference;

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI64 = ir::DType::Int(64);

struct LossCase {
  graph::Shape scores;  // [N, C, d...]; targets are [N, d...] in [0, 4)
  std::string reduction;
  bool weight;
  bool ignore;  // ignore_index = 2
  bool log_prob = false;
};

Graph LossGraph(const std::string& op, const LossCase& c) {
  Graph g;
  g.AddInput("x", TensorType{kF32, c.scores});
  graph::Shape ts{c.scores[0]};
  ts.insert(ts.end(), c.scores.begin() + 2, c.scores.end());
  g.AddInput("t", TensorType{kI64, ts});
  std::vector<std::string> in{"x", "t"};
  if (c.weight) {
    g.AddConstant("w", RandomTensor({c.scores[1]}, 3, 0.1, 1.0));
    in.push_back("w");
  }
  std::vector<std::pair<std::string, Attribute>> attrs{{"reduction", Attribute(c.reduction)}};
  if (c.ignore) attrs.push_back({"ignore_index", Attribute(int64_t{2})});
  std::vector<std::string> out{"loss"};
  if (c.log_prob) out.push_back("log_prob");
  Add(&g, op, "l", in, out, attrs);
  return Finish(g, out);
}

TEST(LossTest, MatchesTheReference) {
  std::vector<LossCase> cases = {
      {{3, 5}, "mean", false, false},         {{3, 5}, "sum", true, false},
      {{3, 5}, "none", true, true},           {{2, 4, 3}, "mean", true, true},
      {{2, 6, 2, 3}, "none", false, false},   {{2, 6, 2, 3}, "sum", false, true},
      {{2, 4, 3}, "mean", true, false, true}, {{3, 5}, "none", false, true, true},
  };
  for (const char* op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      if (cases[i].log_prob && std::string(op) != "SoftmaxCrossEntropyLoss") continue;
      EXPECT_TRUE(CheckAgainstReference(LossGraph(op, cases[i]))) << op << " case " << i;
    }
  }
}

// A target outside [0, C) that is not ignored: the kernel reads a clamped class
// (never out of bounds) and marks the position NaN; the others are unaffected.
TEST(LossTest, OutOfRangeTargetsGiveNaNNotAnOutOfBoundsRead) {
  Graph g = LossGraph("NegativeLogLikelihoodLoss", {{3, 4}, "none", false, false});
  graph::Tensor x = RandomTensor({3, 4}, 5);
  graph::Tensor t = graph::Tensor::FromInts(kI64, {3}, {1, 9, -3});
  Graph fused = testing::Fuse(g);
  for (testing::Backend backend : {testing::Backend::kEval, testing::Backend::kLLVM}) {
    graph::Tensor loss = testing::RunGroups(fused, {{"x", x}, {"t", t}}, backend, target::Target::Host()).at("loss");
    EXPECT_FLOAT_EQ(loss.GetDouble(0), -x.GetDouble(1));
    EXPECT_TRUE(std::isnan(loss.GetDouble(1)));
    EXPECT_TRUE(std::isnan(loss.GetDouble(2)));
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
