// QuantizeLinear / DequantizeLinear against the reference.
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

TEST(QuantizeTest, QuantizeDequantizeRoundTrip) {
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

}  // namespace
}  // namespace ops
}  // namespace agate
