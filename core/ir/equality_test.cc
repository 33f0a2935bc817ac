#include "core/ir/equality.h"

#include <gtest/gtest.h>

namespace agate {
namespace ir {
namespace {

TEST(EqualityTest, BoundVariablesMayDiffer) {
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(8)});
  Var i("i"), k("k");
  Stmt a = For::make(i, 0, 8, ForKind::kSerial, Store::make(c, Expr(1.0f), i));
  Stmt b = For::make(k, 0, 8, ForKind::kSerial, Store::make(c, Expr(1.0f), k));
  EXPECT_TRUE(StructuralEqual(a, b));
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
  Stmt d = For::make(k, 0, 8, ForKind::kParallel, Store::make(c, Expr(1.0f), k));
  EXPECT_FALSE(StructuralEqual(a, d));
}

TEST(EqualityTest, FreeVariablesCompareByIdentity) {
  Var x("x"), y("x");
  EXPECT_TRUE(StructuralEqual(x + 1, x + 1));
  EXPECT_FALSE(StructuralEqual(x + 1, y + 1));
  EXPECT_FALSE(StructuralEqual(x + 1, x + 2));
  EXPECT_EQ(StructuralHash(x * 3 + 1), StructuralHash(x * 3 + 1));
}

}  // namespace
}  // namespace ir
}  // namespace agate
