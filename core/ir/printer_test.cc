#include "core/ir/printer.h"

#include <gtest/gtest.h>

namespace agate {
namespace ir {
namespace {

TEST(PrinterTest, LoopsReadLikeC) {
  Buffer a = CreateBuffer("A", DType::Float(32), {Expr(64), Expr(64)});
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(64), Expr(64)});
  Var i("i"), j("j");
  Stmt store = Store::make(c, Load::make(a, i * 64 + j) * 2.0f, i * 64 + j);
  Stmt loop = For::make(i, 0, 64, ForKind::kParallel, For::make(j, 0, 64, ForKind::kSerial, store));
  EXPECT_EQ(ToString(loop),
            "for (i, 0, 64) parallel {\n"
            "  for (j, 0, 64) {\n"
            "    C[i*64 + j] = A[i*64 + j]*2.0f\n"
            "  }\n"
            "}\n");
}

TEST(PrinterTest, ParenthesesFollowPrecedence) {
  Var a("a"), b("b"), c("c");
  EXPECT_EQ(ToString((a + b) * c), "(a + b)*c");
  EXPECT_EQ(ToString(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(ToString(a - b - c), "a - b - c");
  EXPECT_EQ(ToString(floordiv(a, 4) < b && c != 0), "floordiv(a, 4) < b && c != 0");
  EXPECT_EQ(ToString(Ramp::make(a, Expr(int64_t{1}), 4)), "ramp(a, 1, 4)");
  EXPECT_EQ(ToString(cast(DType::Float(32), a)), "float32(a)");
}

TEST(PrinterTest, AllocateIfAndFunction) {
  Buffer t = CreateBuffer("T", DType::Float(32), {Expr(16)}, MemoryScope::kLocal);
  Var i("i");
  Stmt body = Allocate::make(t, {Expr(16)}, 64, MemoryScope::kLocal,
                             IfThenElse::make(i < 10, Store::make(t, Expr(1.0f), i)));
  std::string text = ToString(body);
  EXPECT_NE(text.find("allocate T[float32 * 16], local, align 64"), std::string::npos) << text;
  EXPECT_NE(text.find("if (i < 10) {"), std::string::npos) << text;
  LoweredFunc f{"k", {CreateBuffer("X", DType::Float(32), {Expr(8)})}, body, 0};
  EXPECT_EQ(ToString(f).substr(0, 26), "func k(X: float32[8]) {\n  ");
}

}  // namespace
}  // namespace ir
}  // namespace agate
