#include "core/ir/printer.h"

#include <gtest/gtest.h>

#include "core/support/error.h"

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

TEST(PrinterTest, Dot4U8S8PrintsAsACallAndChecksItsTypes) {
  Buffer x = CreateBuffer("X", DType::UInt(8), {Expr(64)});
  Buffer w = CreateBuffer("W", DType::Int(8), {Expr(64)});
  Var acc("acc", DType::Int(32, 16));
  Expr r64 = Ramp::make(Expr(int64_t{0}), Expr(int64_t{1}), 64), r4 = Ramp::make(Expr(int64_t{0}), Expr(int64_t{1}), 4);
  EXPECT_EQ(ToString(dot4_u8s8(acc, Load::make(x, r4), Load::make(w, r64))),
            "dot4_u8s8(acc, X[ramp(0, 1, 4)], W[ramp(0, 1, 64)])");
  EXPECT_EQ(dot4_u8s8(acc, Load::make(x, r64), Load::make(w, r64)).dtype(), DType::Int(32, 16));
  try {
    dot4_u8s8(acc, Load::make(w, r64), Load::make(x, r64));  // signs swapped
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("dot4_u8s8: takes (int32x16, uint8x64 or x4, int8x64 or x4)"), std::string::npos)
        << e.message();
  }
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
