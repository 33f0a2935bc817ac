// Quantize/Dequantize, CumSum, Compress, ReverseSequence against the reference.
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
using Ints = std::vector<int64_t>;

TEST(MiscTest, QuantizeDequantizeRoundTrip) {
  for (bool per_axis : {false, true}) {
    Graph g;
    g.AddInput("x", TensorType{kF32, {2, 3, 8}});
    if (per_axis) {
      g.AddConstant("s", graph::Tensor::FromDoubles(kF32, {3}, {0.01, 0.02, 0.005}));
      g.AddConstant("z", graph::Tensor::FromInts(ir::DType::UInt(8), {3}, {128, 100, 20}));
    } else {
      g.AddConstant("s", graph::Tensor::Scalar(kF32, 0.0078125));
      g.AddConstant("z", graph::Tensor::FromInts(ir::DType::Int(8), {}, {-3}));
    }
    Add(&g, "QuantizeLinear", "q", {"x", "s", "z"}, {"q"});
    Add(&g, "DequantizeLinear", "dq", {"q", "s", "z"}, {"y"});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"q", "y"}))) << "per_axis=" << per_axis;
  }
}

TEST(MiscTest, CumSum) {
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

TEST(MiscTest, CompressAndReverseSequence) {
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
