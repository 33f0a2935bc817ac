// CumSum, Compress, ReverseSequence against the reference.
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
