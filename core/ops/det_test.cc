// Det's compiled kernel (det.h) on the loop-IR evaluator and as LLVM host code against the
// reference interpreter: batches of random matrices (float32, float64, float16), matrices that
// need row swaps, singular ones (a zero pivot ends the elimination), 1x1 and a 0x0 batch; values
// worked by hand; integer inputs and cuda refused by name.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/ops/lower_group.h"
#include "core/ops/testing/reference_check.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using graph::Graph;
using graph::Shape;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;

const ir::DType kF32 = ir::DType::Float(32);

Graph DetOf(ir::DType dtype, const Shape& x) {
  Graph g;
  g.AddInput("x", TensorType{dtype, x});
  Add(&g, "Det", "det", {"x"}, {"out"}, {});
  return Finish(g, {"out"});
}

std::vector<double> CompiledDet(const Graph& g, const std::vector<double>& x, testing::Backend backend) {
  const TensorType& type = g.TypeOf("x");
  std::map<std::string, graph::Tensor> inputs = {{"x", graph::Tensor::FromDoubles(type.dtype, type.shape, x)}};
  return testing::RunGroups(testing::Fuse(g), inputs, backend, target::Target::Parse("llvm")).at("out").ToDoubles();
}

TEST(DetTest, MatchesTheReferenceOnEveryBackend) {
  struct Case {
    std::string name;
    ir::DType dtype;
    Shape x;
  };
  for (const Case& c : std::vector<Case>{
           {"one 2x2", kF32, {2, 2}},
           {"a batch of 3x3", kF32, {3, 3, 3}},
           {"a 2-D batch of 5x5", kF32, {2, 3, 5, 5}},
           {"1x1", kF32, {4, 1, 1}},
           {"float64 7x7", ir::DType::Float(64), {2, 7, 7}},
           {"float16 3x3", ir::DType::Float(16), {2, 3, 3}},
       }) {
    testing::CheckOptions options;
    options.tolerance = c.dtype == ir::DType::Float(16) ? 1e-3 : 1e-6;
    EXPECT_TRUE(testing::CheckAgainstReference(DetOf(c.dtype, c.x), options)) << c.name;
  }
}

// Worked by hand: a swap negates ([[0,1],[1,0]] -> -1; a 3x3 permutation of one swap -> -1),
// elimination ([[1,2],[3,4]] -> 1*4 - 2*3 = -2; [[2,0,1],[1,3,2],[1,1,1]] -> 2*(3-2) - 0 + 1*(1-3)
// = 0), a zero column ends it at 0, and a zero matrix too.
TEST(DetTest, ValuesWorkedByHand) {
  Graph two = DetOf(kF32, {4, 2, 2});
  std::vector<double> x2 = {0, 1, 1, 0, /**/ 1, 2, 3, 4, /**/ 0, 5, 0, 7, /**/ 0, 0, 0, 0};
  std::vector<double> want2 = {-1, -2, 0, 0};
  Graph three = DetOf(kF32, {2, 3, 3});
  std::vector<double> x3 = {1, 0, 0, 0, 0, 1, 0, 1, 0, /**/ 2, 0, 1, 1, 3, 2, 1, 1, 1};
  std::vector<double> want3 = {-1, 0};
  for (testing::Backend backend : {testing::Backend::kEval, testing::Backend::kLLVM}) {
    EXPECT_EQ(CompiledDet(two, x2, backend), want2);
    std::vector<double> got3 = CompiledDet(three, x3, backend);
    ASSERT_EQ(got3.size(), 2u);
    EXPECT_EQ(got3[0], -1);
    EXPECT_NEAR(got3[1], 0, 1e-6);
  }
}

// Pivoting picks the largest magnitude: without it, a tiny leading entry loses the answer in
// float32 (det [[1e-20, 1], [1, 1]] = -1 to float32 precision).
TEST(DetTest, PivotsOnTheLargestMagnitude) {
  Graph g = DetOf(kF32, {2, 2});
  for (testing::Backend backend : {testing::Backend::kEval, testing::Backend::kLLVM}) {
    std::vector<double> got = CompiledDet(g, {1e-20, 1, 1, 1}, backend);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_NEAR(got[0], -1, 1e-6);
  }
}

TEST(DetTest, IntegersAndCudaAreRefusedByName) {
  for (const auto& [dtype, target] : std::vector<std::pair<ir::DType, std::string>>{
           {ir::DType::Int(32), "llvm"}, {kF32, "cuda -arch=sm_80"}}) {
    try {
      Graph fused = testing::Fuse(DetOf(dtype, {2, 2}));
      LowerGroup(fused, fused.groups.at(0), target::Target::Parse(target), "det_kernel");
      ADD_FAILURE() << "lowered " << target;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("Det 'det'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
