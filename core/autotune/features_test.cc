#include "core/autotune/features.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/ir/buffer.h"
#include "core/ir/stmt.h"

namespace agate {
namespace autotune {
namespace {

using ir::DType;
using ir::Expr;

// for i in 0..4 (parallel): for j in 0..8: C[i*8 + j] = A[i*8 + j] * B[j] + 1.0f  (float32)
ir::LoweredFunc SmallNest() {
  ir::Buffer a = ir::CreateBuffer("A", DType::Float(32), {Expr(int64_t{32})});
  ir::Buffer b = ir::CreateBuffer("B", DType::Float(32), {Expr(int64_t{8})});
  ir::Buffer c = ir::CreateBuffer("C", DType::Float(32), {Expr(int64_t{32})});
  ir::Var i("i"), j("j");
  Expr index = ir::Add::make(ir::Mul::make(i, ir::IntImm::make(DType::Index(), 8)), j);
  Expr value = ir::Add::make(ir::Mul::make(ir::Load::make(a, index), ir::Load::make(b, j)),
                             ir::FloatImm::make(DType::Float(32), 1.0));
  ir::Stmt store = ir::Store::make(c, value, index);
  ir::Stmt inner = ir::For::make(j, ir::IntImm::make(DType::Index(), 0), ir::IntImm::make(DType::Index(), 8),
                                 ir::ForKind::kSerial, store);
  ir::Stmt outer = ir::For::make(i, ir::IntImm::make(DType::Index(), 0), ir::IntImm::make(DType::Index(), 4),
                                 ir::ForKind::kParallel, inner);
  return ir::LoweredFunc{"small", {a, b, c}, outer, 0};
}

float L(double x) { return static_cast<float>(std::log2(1.0 + x)); }

TEST(FeaturesTest, HandCheckedValuesOfASmallLoopNest) {
  std::vector<float> f = ExtractFeatures(SmallNest());
  ASSERT_EQ(f.size(), static_cast<size_t>(kNumFeatures));
  ASSERT_EQ(FeatureNames().size(), static_cast<size_t>(kNumFeatures));
  // 32 iterations of one multiply and one add.
  EXPECT_FLOAT_EQ(f[kFlops], L(64));
  // Loads: A and B, 4 bytes each per iteration; stores: C.
  EXPECT_FLOAT_EQ(f[kLoadBytes], L(256));
  EXPECT_FLOAT_EQ(f[kStoreBytes], L(128));
  EXPECT_FLOAT_EQ(f[kIntensity], 64.0f / 384.0f);
  EXPECT_FLOAT_EQ(f[kParallelExtent], L(4));
  EXPECT_FLOAT_EQ(f[kParallelLoops], 1);
  EXPECT_FLOAT_EQ(f[kMaxLanes], 1);
  EXPECT_FLOAT_EQ(f[kVectorShare], 0);
  EXPECT_FLOAT_EQ(f[kStoresPerBody], 1);
  EXPECT_FLOAT_EQ(f[kLoops], 2);
  EXPECT_FLOAT_EQ(f[kMaxDepth], 2);
  EXPECT_FLOAT_EQ(f[kInnerExtent], L(8));
  EXPECT_FLOAT_EQ(f[kLocalBytes], 0);
  EXPECT_FLOAT_EQ(f[kWorkspaceBytes], 0);
  EXPECT_FLOAT_EQ(f[kBytesPerTask], L(96));  // 384 bytes over 4 tasks
  EXPECT_FLOAT_EQ(f[kCacheLevel], 1);
  // Every buffer moves 128 bytes; ties go by name: A, then B. A is read once per element,
  // contiguously along j; B is re-read by each of the 4 iterations of i (reuse 4 = 2^2).
  EXPECT_FLOAT_EQ(f[kBuffer0Bytes], L(128));
  EXPECT_FLOAT_EQ(f[kBuffer0Reuse], 0);
  EXPECT_FLOAT_EQ(f[kBuffer0Contiguous], 1);
  EXPECT_FLOAT_EQ(f[kBuffer1Bytes], L(128));
  EXPECT_FLOAT_EQ(f[kBuffer1Reuse], 2);
  EXPECT_FLOAT_EQ(f[kBuffer1Contiguous], 1);
}

}  // namespace
}  // namespace autotune
}  // namespace agate
