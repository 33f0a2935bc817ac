#include "core/eval/evaluator.h"

#include <gtest/gtest.h>

#include "core/support/error.h"

namespace agate {
namespace eval {
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
  EXPECT_EQ(eval::Run(f, {{out, 3}}, {{"n", 2}}), -1);
  EXPECT_EQ(out[0], -56);  // 200 wraps in int8
  EXPECT_EQ(out[1], -4);
}

}  // namespace
}  // namespace eval
}  // namespace agate
