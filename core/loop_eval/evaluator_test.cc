#include "core/loop_eval/evaluator.h"

#include <gtest/gtest.h>

#include "core/support/error.h"

namespace agate {
namespace loop_eval {
namespace {

using namespace ir;  // NOLINT

TEST(EvaluatorTest, RunsLoopsVectorsAndAllocations) {
  Buffer a = CreateBuffer("A", DType::Float(32), {Expr(8)});
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(8)});
  Buffer t = CreateBuffer("T", DType::Float(32), {Expr(8)}, MemoryScope::kLocal);
  Var i("i");
  Expr ramp = Ramp::make(Expr(int64_t{0}), Expr(int64_t{1}), 8);
  Stmt body = Allocate::make(
      t, {Expr(8)}, 64, MemoryScope::kLocal,
      Seq::make({Store::make(t, Load::make(a, ramp) * Broadcast::make(Expr(2.0f), 8), ramp),
                 For::make(i, 0, 8, ForKind::kParallel, Store::make(c, Load::make(t, i) + 1.0f, i))}));
  LoweredFunc f{"k", {a, c}, body, 0};
  std::vector<float> av = {0, 1, 2, 3, 4, 5, 6, 7}, cv(8);
  EXPECT_EQ(RunFloat(f, {&av, &cv}), 0);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(cv[k], 2 * k + 1);
}

TEST(EvaluatorTest, OutOfBoundsAccessIsReported) {
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(4)});
  Var i("i");
  LoweredFunc f{"k", {c}, For::make(i, 0, 5, ForKind::kSerial, Store::make(c, Expr(1.0f), i)), 0};
  std::vector<float> cv(4);
  try {
    RunFloat(f, {&cv});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kOutOfRange);
    EXPECT_NE(e.message().find("C[4]"), std::string::npos) << e.message();
  }
}

TEST(EvaluatorTest, IntegerSemanticsAndAsserts) {
  Buffer c = CreateBuffer("C", DType::Int(8), {Expr(3)});
  Var x("x", DType::Int(8));
  Stmt body = Seq::make({Store::make(c, cast(DType::Int(8), Expr(100)) + cast(DType::Int(8), Expr(100)), Expr(0)),
                         Store::make(c, cast(DType::Int(8), floordiv(Expr(-7), Var("n", DType::Int(32)))), Expr(1)),
                         AssertStmt::make(Expr(1) < Expr(0), "always fails")});
  LoweredFunc f{"k", {c}, body, 0};
  int8_t out[3] = {0, 0, 0};
  EXPECT_EQ(loop_eval::Run(f, {{out, 3}}, {{"n", 2}}), -1);
  EXPECT_EQ(out[0], -56);  // 200 wraps in int8
  EXPECT_EQ(out[1], -4);
}

}  // namespace
}  // namespace loop_eval
}  // namespace agate

namespace agate {
namespace loop_eval {
namespace {

using namespace ir;  // NOLINT

TEST(EvaluatorTest, HalfAndBFloat16RoundLikeTheirTypes) {
  for (DType t : {DType::Float(16), DType::BFloat16()}) {
    Buffer a = CreateBuffer("A", t, {Expr(4)});
    Buffer c = CreateBuffer("C", t, {Expr(4)});
    Var i("i");
    LoweredFunc f{"k", {a, c}, For::make(i, 0, 4, ForKind::kSerial, Store::make(c, Load::make(a, i) * make_const(t, 3.0), i)), 0};
    // 1.0, 0.5, -2.0, 1/3 in each format
    uint16_t in[4], out[4];
    if (t.bits() == 16 && t.code() == TypeCode::kFloat) {
      uint16_t v[4] = {0x3c00, 0x3800, 0xc000, 0x3555};
      std::copy(v, v + 4, in);
    } else {
      uint16_t v[4] = {0x3f80, 0x3f00, 0xc000, 0x3eab};
      std::copy(v, v + 4, in);
    }
    ASSERT_EQ(loop_eval::Run(f, {{in, 8}, {out, 8}}), 0);
    if (t.code() == TypeCode::kFloat) {
      EXPECT_EQ(out[0], 0x4200);  // 3.0
      EXPECT_EQ(out[1], 0x3e00);  // 1.5
      EXPECT_EQ(out[2], 0xc600);  // -6.0
      EXPECT_EQ(out[3], 0x3c00);  // 0.33325 * 3 = 0.99976 rounds to 1.0 in half
    } else {
      EXPECT_EQ(out[0], 0x4040);  // 3.0
      EXPECT_EQ(out[1], 0x3fc0);  // 1.5
      EXPECT_EQ(out[2], 0xc0c0);  // -6.0
      EXPECT_EQ(out[3], 0x3f80);  // 0.333984 * 3 = 1.00195 rounds to 1.0 in bfloat16
    }
  }
}

}  // namespace
}  // namespace loop_eval
}  // namespace agate
