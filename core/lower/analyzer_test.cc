#include "core/lower/analyzer.h"

#include <gtest/gtest.h>

#include "core/ir/printer.h"

namespace agate {
namespace lower {
namespace {

using ir::ToString;

TEST(AnalyzerTest, CanonicalLinearForms) {
  Var i("i"), j("j");
  EXPECT_EQ(ToString(Simplify((i * 8 + j) * 64 + j * 2 - j * 2)), "i*512 + j*64");
  EXPECT_EQ(ToString(Simplify(j + i * 64 + 3 - 1)), "i*64 + j + 2");
  EXPECT_EQ(ToString(Simplify(i - i)), "0");
  EXPECT_EQ(ToString(Simplify(Expr(3) - i)), "3 - i");
}

TEST(AnalyzerTest, DivModWithBounds) {
  Analyzer a;
  Var io("io"), ii("ii"), f("f");
  a.Bind(io, 0, 8);
  a.Bind(ii, 0, 8);
  a.Bind(f, 0, 4096);
  EXPECT_EQ(ToString(a.Simplify(floordiv(io * 8 + ii, 8))), "io");
  EXPECT_EQ(ToString(a.Simplify(floormod(io * 8 + ii, 8))), "ii");
  EXPECT_EQ(ToString(a.Simplify(floordiv(f, 64) * 64 + floormod(f, 64))), "f");
  EXPECT_EQ(ToString(a.Simplify(floordiv(io * 8 + ii, 64))), "0");
  EXPECT_EQ(ToString(a.Simplify(floordiv(floordiv(f, 4), 16))), "floordiv(f, 64)");
  EXPECT_EQ(ToString(a.Simplify(floordiv(io * 8 + ii, 16))), "floordiv(io, 2)");
}

TEST(AnalyzerTest, GuardsRemovedWhenExtentsDivide) {
  Analyzer a;
  Var io("io"), ii("ii");
  a.Bind(io, 0, 8);
  a.Bind(ii, 0, 8);
  EXPECT_TRUE(a.CanProve(io * 8 + ii < 64));
  EXPECT_FALSE(a.CanProve(io * 8 + ii < 60));
  EXPECT_EQ(ToString(a.Simplify(io * 8 + ii < 60)), "io*8 + ii < 60");
  EXPECT_EQ(ToString(a.Simplify(ir::min(io * 8 + 7, io * 8 + 3))), "io*8 + 3");
  ConstIntBound b = a.ConstBound(io * 8 + ii);
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 63);
}

TEST(AnalyzerTest, ConstantFolding) {
  Var x("x", ir::DType::Float(32));
  EXPECT_EQ(ToString(Simplify(x * 1.0f + 0.0f)), "x");
  EXPECT_EQ(ToString(Simplify(Expr(2.0f) * Expr(3.0f))), "6.0f");
  EXPECT_EQ(ToString(Simplify(ir::cast(ir::DType::Int(8), Expr(300)))), "int8(44)");
  EXPECT_EQ(ToString(Simplify(ir::select(Expr(1) < Expr(2), x, x * 2.0f))), "x");
}

// A reduction whose body is one dot product with a zero accumulator accumulates in the
// intrinsic itself (SMLAD's, vpdpbusd's accumulator operand), on either side of the +.
TEST(AnalyzerTest, AdditionToADotProductOfZeroBecomesItsAccumulator) {
  Var acc("acc", ir::DType::Int(32));
  Var a("a", ir::DType::Int(16, 2)), b("b", ir::DType::Int(16, 2));
  Expr zero = ir::make_zero(ir::DType::Int(32));
  EXPECT_EQ(ToString(Simplify(acc + ir::dot2_i16(zero, a, b))), "dot2_i16(acc, a, b)");
  EXPECT_EQ(ToString(Simplify(ir::dot2_i16(zero, a, b) + acc)), "dot2_i16(acc, a, b)");
  Var acc4("acc4", ir::DType::Int(32, 4));
  Var u("u", ir::DType::UInt(8, 16)), s("s", ir::DType::Int(8, 16));
  Expr zeros = ir::make_zero(ir::DType::Int(32, 4));
  EXPECT_EQ(ToString(Simplify(acc4 + ir::dot4_u8s8(zeros, u, s))), "dot4_u8s8(acc4, u, s)");
  // A non-zero accumulator, or a subtraction, stays as it is.
  EXPECT_EQ(ToString(Simplify(acc + ir::dot2_i16(Expr(1), a, b))), "acc + dot2_i16(1, a, b)");
  EXPECT_EQ(ToString(Simplify(acc - ir::dot2_i16(zero, a, b))), "acc - dot2_i16(0, a, b)");
}

// The pair constructor of two consecutive elements is one two-lane load (one 32-bit load for
// int16); other pairs stay selects.
TEST(AnalyzerTest, PairOfConsecutiveLoadsBecomesOneVectorLoad) {
  ir::Buffer w = ir::CreateBuffer("W", ir::DType::Int(16), {Expr(64)});
  ir::Buffer v = ir::CreateBuffer("V", ir::DType::Int(16), {Expr(64)});
  Var i("i");
  Expr first = ir::Ramp::make(Expr(0), Expr(1), 2) == ir::Broadcast::make(Expr(0), 2);
  auto pair = [&](const ir::Buffer& b0, const Expr& i0, const ir::Buffer& b1, const Expr& i1) {
    return ir::select(first, ir::Broadcast::make(ir::Load::make(b0, i0), 2), ir::Broadcast::make(ir::Load::make(b1, i1), 2));
  };
  EXPECT_EQ(ToString(Simplify(pair(w, i * 2, w, i * 2 + 1))), "W[ramp(i*2, 1, 2)]");
  EXPECT_NE(ToString(Simplify(pair(w, i * 2, w, i * 2 + 2))).find("select"), std::string::npos);
  EXPECT_NE(ToString(Simplify(pair(w, i, v, i + 1))).find("select"), std::string::npos);
  // int8 elements two apart, widened to int16: a strided pair (SXTB16's bytes 0 and 2).
  ir::Buffer q = ir::CreateBuffer("Q", ir::DType::Int(8), {Expr(64)});
  auto widened = [&](const ir::Buffer& b0, const Expr& i0, const ir::Buffer& b1, const Expr& i1) {
    const ir::DType i16 = ir::DType::Int(16);
    return ir::select(first, ir::Broadcast::make(ir::cast(i16, ir::Load::make(b0, i0)), 2),
                      ir::Broadcast::make(ir::cast(i16, ir::Load::make(b1, i1)), 2));
  };
  EXPECT_EQ(ToString(Simplify(widened(q, i * 4 + 1, q, i * 4 + 3))), "int16x2(Q[ramp(i*4 + 1, 2, 2)])");
  EXPECT_NE(ToString(Simplify(widened(q, i * 4, q, i * 4 + 1))).find("select"), std::string::npos);
  EXPECT_NE(ToString(Simplify(widened(q, i * 4, q, i * 4 + 4))).find("select"), std::string::npos);
  EXPECT_NE(ToString(Simplify(widened(w, i * 4, w, i * 4 + 2))).find("select"), std::string::npos);  // int16: not SXTB16's
}

TEST(AnalyzerTest, LoopsOfExtentOneAndDeadBranchesVanish) {
  ir::Buffer c = ir::CreateBuffer("C", ir::DType::Float(32), {Expr(64)});
  Var i("i"), j("j");
  Stmt s = ir::For::make(i, 0, 8, ir::ForKind::kSerial,
                         ir::For::make(j, 0, 1, ir::ForKind::kSerial,
                                       ir::IfThenElse::make(i * 8 + j < 64, ir::Store::make(c, Expr(1.0f), i * 8 + j))));
  EXPECT_EQ(ToString(Simplify(s)), "for (i, 0, 8) {\n  C[i*8] = 1.0f\n}\n");
}

TEST(AnalyzerTest, EvalSetRelaxesLoopVariables) {
  Analyzer a;
  Var io("io"), ii("ii"), r("r");
  a.Bind(io, 0, 8);
  std::unordered_map<const ir::VarNode*, IntervalSet> relax;
  relax[ii.get()] = {Expr(int64_t{0}), Expr(int64_t{7})};
  relax[r.get()] = {Expr(int64_t{0}), Expr(int64_t{2})};
  IntervalSet s = a.EvalSet(io * 8 + ii + r, relax);
  EXPECT_EQ(ToString(s.min), "io*8");
  EXPECT_EQ(ToString(s.max), "io*8 + 9");
  IntervalSet m = a.EvalSet(floormod(ii, 4), relax);
  EXPECT_EQ(ToString(m.max), "3");
}

}  // namespace
}  // namespace lower
}  // namespace agate
