#include "core/loop_eval/evaluator.h"

#include <gtest/gtest.h>

#include <limits>

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

// dot4_u8s8 is exact: products of the extremes (u8 255 x s8 -128 and 127), sums wrapped
// to int32 like vpdpbusd, lanes grouped by four, and the broadcast form.
TEST(EvaluatorTest, Dot4U8S8IsExactAndWraps) {
  Buffer a = CreateBuffer("A", DType::UInt(8), {Expr(8)});
  Buffer b = CreateBuffer("B", DType::Int(8), {Expr(8)});
  Buffer acc = CreateBuffer("Acc", DType::Int(32), {Expr(2)});
  Buffer c = CreateBuffer("C", DType::Int(32), {Expr(4)});
  Expr r2 = Ramp::make(Expr(int64_t{0}), Expr(int64_t{1}), 2), r8 = Ramp::make(Expr(int64_t{0}), Expr(int64_t{1}), 8);
  Expr r4 = Ramp::make(Expr(int64_t{4}), Expr(int64_t{1}), 4);
  Expr c2 = Ramp::make(Expr(int64_t{2}), Expr(int64_t{1}), 2);
  Stmt body = Seq::make({Store::make(c, dot4_u8s8(Load::make(acc, r2), Load::make(a, r8), Load::make(b, r8)), r2),
                         Store::make(c, dot4_u8s8(Load::make(acc, r2), Load::make(a, r4), Load::make(b, r8)), c2)});
  LoweredFunc f{"k", {a, b, acc, c}, body, 0};
  uint8_t av[8] = {255, 255, 255, 255, 255, 1, 2, 3};
  int8_t bv[8] = {-128, -128, -128, -128, 127, -128, 127, -1};
  int32_t accv[2] = {std::numeric_limits<int32_t>::min() + 5, 1000};
  int32_t out[4] = {0, 0, 0, 0};
  EXPECT_EQ(loop_eval::Run(f, {{av, 8}, {bv, 8}, {accv, sizeof accv}, {out, sizeof out}}, {}), 0);
  // -2147483643 - 130560 wraps to 2147353093.
  EXPECT_EQ(out[0], static_cast<int32_t>(static_cast<uint32_t>(int64_t{accv[0]} - 4 * 255 * 128)));
  EXPECT_EQ(out[0], 2147353093);
  EXPECT_EQ(out[1], 1000 + 255 * 127 - 128 + 2 * 127 - 3);
  // Broadcast a[4..7] = (255, 1, 2, 3) against each lane's group of b.
  EXPECT_EQ(out[2], static_cast<int32_t>(static_cast<uint32_t>(int64_t{accv[0]} - 255 * 128 - 128 - 256 - 384)));
  EXPECT_EQ(out[3], 1000 + 255 * 127 - 128 + 2 * 127 - 3);
}

// A reinterpret may change the lane count, as the targets' vector bitcasts do (the int8
// depthwise template's weight in the low or high half of each 32-bit lane): int32x2 as
// int16x4 gives each lane's halves, low first; int8x8 as int32x2 packs four bytes a lane.
TEST(EvaluatorTest, ReinterpretChangesTheLaneCountLittleEndian) {
  Buffer a = CreateBuffer("A", DType::Int(32), {Expr(2)});
  Buffer b = CreateBuffer("B", DType::Int(8), {Expr(8)});
  Buffer h = CreateBuffer("H", DType::Int(16), {Expr(4)});
  Buffer w = CreateBuffer("W", DType::Int(32), {Expr(2)});
  Expr r2 = Ramp::make(Expr(int64_t{0}), Expr(int64_t{1}), 2), r4 = Ramp::make(Expr(int64_t{0}), Expr(int64_t{1}), 4);
  Expr r8 = Ramp::make(Expr(int64_t{0}), Expr(int64_t{1}), 8);
  Stmt body = Seq::make({Store::make(h, reinterpret(DType::Int(16, 4), Load::make(a, r2)), r4),
                         Store::make(w, reinterpret(DType::Int(32, 2), Load::make(b, r8)), r2)});
  LoweredFunc f{"k", {a, b, h, w}, body, 0};
  int32_t av[2] = {-7 * 65536 + 5, 0x7fff0000 | 0x8001};
  int8_t bv[8] = {1, 2, 3, 4, -1, -1, -1, -128};
  int16_t hv[4] = {0, 0, 0, 0};
  int32_t wv[2] = {0, 0};
  EXPECT_EQ(loop_eval::Run(f, {{av, sizeof av}, {bv, sizeof bv}, {hv, sizeof hv}, {wv, sizeof wv}}, {}), 0);
  EXPECT_EQ(hv[0], 5);
  EXPECT_EQ(hv[1], -7);
  EXPECT_EQ(hv[2], static_cast<int16_t>(-32767));
  EXPECT_EQ(hv[3], 32767);
  EXPECT_EQ(wv[0], 0x04030201);
  EXPECT_EQ(wv[1], static_cast<int32_t>(0x80ffffffu));
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
