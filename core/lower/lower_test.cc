#include "core/lower/lower.h"

#include <gtest/gtest.h>

#include "core/lower/testing/lower_and_run.h"
#include "core/support/error.h"

namespace agate {
namespace lower {
namespace {

using namespace te;  // NOLINT
using testing::AllClose;
using testing::LowerAndRun;
using testing::RandomData;

struct Matmul {
  int64_t m, n, k;
  Tensor a, b, c;
  IterVar rk;
  Matmul(int64_t m_, int64_t n_, int64_t k_) : m(m_), n(n_), k(k_) {
    a = placeholder({Expr(m), Expr(k)}, DType::Float(32), "A");
    b = placeholder({Expr(k), Expr(n)}, DType::Float(32), "B");
    rk = reduce_axis({0, Expr(k)}, "k");
    c = compute({Expr(m), Expr(n)}, [&](Var i, Var j) { return sum(a(i, rk) * b(rk, j), {rk}); }, "C");
  }
  std::vector<float> Reference(const std::vector<float>& av, const std::vector<float>& bv) const {
    std::vector<float> out(m * n, 0.0f);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0;
        for (int64_t kk = 0; kk < k; ++kk) acc += av[i * k + kk] * bv[kk * n + j];
        out[i * n + j] = acc;
      }
    return out;
  }
  void Check(const Schedule& s, std::string* ir_text = nullptr, bool partition = true) {
    std::vector<float> av = RandomData(m * k, 1), bv = RandomData(k * n, 2), cv(m * n, 0.0f);
    LowerOptions opt;
    opt.partition_loops = partition;
    ir::LoweredFunc f = Lower(s, {a, b, c}, "f", opt);
    EXPECT_EQ(loop_eval::RunFloat(f, {&av, &bv, &cv}), 0);
    if (ir_text) *ir_text = ir::ToString(f);
    EXPECT_TRUE(AllClose(cv, Reference(av, bv))) << ir::ToString(f);
  }
};

TEST(LowerTest, DefaultScheduleIsThePlainLoopNest) {
  Matmul mm(16, 12, 8);
  Schedule s = create_schedule({mm.c});
  std::string text;
  mm.Check(s, &text);
  EXPECT_NE(text.find("for (i, 0, 16) {\n    for (j, 0, 12) {\n      C[i*12 + j] = 0.0f\n      for (k, 0, 8) {"),
            std::string::npos)
      << text;
}

TEST(LowerTest, TiledParallelVectorizedMatmulAgrees) {
  Matmul mm(32, 32, 16);
  Schedule s = create_schedule({mm.c});
  Stage c = s[mm.c];
  auto t = c.tile(c.axis(0), c.axis(1), 8, 8);
  c.reorder({t[0], t[1], t[2], mm.rk, t[3]});
  c.parallel(t[0]).vectorize(t[3]);
  std::string text;
  mm.Check(s, &text);
  EXPECT_NE(text.find("parallel"), std::string::npos) << text;
  EXPECT_NE(text.find("ramp("), std::string::npos) << text;
  if (getenv("AGATE_SHOW_IR")) std::cerr << text;
  EXPECT_EQ(text.find("if ("), std::string::npos) << "guards should vanish when the factors divide\n" << text;
}

TEST(LowerTest, NonDividingSplitKeepsAGuard) {
  Matmul mm(30, 10, 7);
  Schedule s = create_schedule({mm.c});
  Stage c = s[mm.c];
  auto [io, ii] = c.split(c.axis(0), 8);
  auto [ko, ki] = c.split(mm.rk, 3);
  c.reorder({io, ko, ii, ki});
  std::string text;
  mm.Check(s, &text, /*partition=*/false);
  EXPECT_NE(text.find("if ("), std::string::npos) << text;
  if (getenv("AGATE_SHOW_IR")) std::cerr << text;
}

TEST(LowerTest, CacheWriteComputeAtAgrees) {
  Matmul mm(24, 20, 9);
  Schedule s = create_schedule({mm.c});
  Tensor cl = s.cache_write(mm.c, ir::MemoryScope::kLocal);
  Stage c = s[mm.c];
  auto t = c.tile(c.axis(0), c.axis(1), 8, 4);
  s[cl].compute_at(c, t[1]);
  Stage l = s[cl];
  l.reorder({l.axis(0), mm.rk, l.axis(1)});
  l.vectorize(l.axis(1));
  c.vectorize(t[3]);
  std::string text;
  mm.Check(s, &text);
  EXPECT_NE(text.find("allocate C.local[float32 * 32], local"), std::string::npos) << text;
  if (getenv("AGATE_SHOW_IR")) std::cerr << text;
}

// A producer padded to whole tiles (a GEMM's C' over padded rows and columns,
// read by an output of the true size) computed at the consumer's tile covers
// the whole tile, also when the consumer's domain provably ends inside it (here
// 5 columns, one tile of 8): its loops keep constant extents (vectorizable,
// register-resident) and carry no guard; only the consumer's stores are guarded.
TEST(LowerTest, PaddedProducerComputesWholeTiles) {
  const int64_t m = 13, n = 5, k = 5, tm = 4, tn = 8;
  Tensor a = placeholder({Expr(m), Expr(k)}, DType::Float(32), "A");
  Tensor b = placeholder({Expr(k), Expr(n)}, DType::Float(32), "B");
  IterVar rk = reduce_axis({0, Expr(k)}, "k");
  const int64_t mp = 16, np = 8;  // whole tiles
  Tensor padded = compute({Expr(mp), Expr(np)}, [&](Var i, Var j) {
    return sum(a(ir::min(i, Expr(m - 1)), rk) * b(rk, ir::min(j, Expr(n - 1))), {rk});
  }, "P");
  Tensor c = compute({Expr(m), Expr(n)}, [&](Var i, Var j) { return padded(i, j) * 2.0f; }, "C");
  Schedule s = create_schedule({c});
  Stage cs = s[c];
  auto t = cs.tile(cs.axis(0), cs.axis(1), tm, tn);
  s[padded].compute_at(cs, t[1]);
  Stage ps = s[padded];
  ps.reorder({rk, ps.axis(0), ps.axis(1)});
  ps.vectorize(ps.axis(1));
  LowerOptions opt;
  opt.partition_loops = false;
  ir::LoweredFunc f = Lower(s, {a, b, c}, "f", opt);
  std::string text = ir::ToString(f);
  EXPECT_NE(text.find("allocate P[float32 * 32]"), std::string::npos) << text;
  // The producer's FMA loop is one vector statement per row: no guard, no scalar tail.
  EXPECT_NE(text.find("P[ramp("), std::string::npos) << text;
  size_t loop = text.find("for (k, 0, 5)");
  ASSERT_NE(loop, std::string::npos) << text;
  size_t loop_end = text.find("}", loop);
  EXPECT_EQ(text.substr(loop, loop_end - loop).find("if ("), std::string::npos) << text;
  std::vector<float> av = RandomData(m * k, 1), bv = RandomData(k * n, 2), cv(m * n, 0.0f), want(m * n, 0.0f);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t kk = 0; kk < k; ++kk) want[i * n + j] += av[i * k + kk] * bv[kk * n + j];
      want[i * n + j] *= 2.0f;
    }
  EXPECT_EQ(loop_eval::RunFloat(f, {&av, &bv, &cv}), 0);
  EXPECT_TRUE(AllClose(cv, want)) << text;
  if (getenv("AGATE_SHOW_IR")) std::cerr << text;
}

TEST(LowerTest, InlineAndComputeAtOfElementwiseStages) {
  Tensor a = placeholder({Expr(20), Expr(13)}, DType::Float(32), "A");
  Tensor b = compute({Expr(20), Expr(13)}, [&](Var i, Var j) { return a(i, j) * 2.0f; }, "B");
  Tensor c = compute({Expr(20), Expr(13)}, [&](Var i, Var j) { return b(i, j) + 1.0f; }, "C");
  Tensor d = compute({Expr(20), Expr(13)}, [&](Var i, Var j) { return c(i, j) * c(i, j); }, "D");
  Schedule s = create_schedule({d});
  s[b].compute_inline();
  auto [io, ii] = s[d].split(s[d].axis(0), 6);
  s[c].compute_at(s[d], io);
  std::vector<float> av = RandomData(20 * 13, 3), dv(20 * 13);
  ir::LoweredFunc f = LowerAndRun(s, {a, d}, {&av, &dv});
  std::vector<float> want(20 * 13);
  for (size_t i = 0; i < want.size(); ++i) want[i] = (av[i] * 2 + 1) * (av[i] * 2 + 1);
  EXPECT_TRUE(AllClose(dv, want)) << ir::ToString(f);
  if (getenv("AGATE_SHOW_IR")) std::cerr << ir::ToString(f);
  EXPECT_EQ(ir::ToString(f).find("B["), std::string::npos) << "B was inlined";
}

TEST(LowerTest, IllegalSchedulesAreRejected) {
  Matmul mm(16, 16, 16);
  {
    Schedule s = create_schedule({mm.c});
    auto [jo, ji] = s[mm.c].split(s[mm.c].axis(1), 4);
    s[mm.c].vectorize(jo);
    try {
      Lower(s, {mm.a, mm.b, mm.c}, "f");
      FAIL() << "vectorizing a non-innermost loop was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kIllegalSchedule);
      EXPECT_NE(e.message().find("stage C: axis j.outer is not the innermost"), std::string::npos) << e.message();
    }
  }
  {
    Tensor a = placeholder({Expr(8)}, DType::Float(32), "A");
    Tensor b = compute({Expr(8)}, [&](Var i) { return a(i) + 1.0f; }, "B");
    Tensor c = compute({Expr(8)}, [&](Var i) { return b(i) * 2.0f; }, "C");
    Tensor d = compute({Expr(8)}, [&](Var i) { return b(i) + c(i); }, "D");
    Schedule s = create_schedule({d});
    auto [co, ci] = s[c].split(s[c].axis(0), 2);
    s[b].compute_at(s[c], co);  // D also reads B, outside C's loop
    try {
      Lower(s, {a, d}, "f");
      FAIL() << "compute_at that does not cover a consumer was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kIllegalSchedule);
      EXPECT_NE(e.message().find("compute_at of stage B at C.i.outer"), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("consumer stage D"), std::string::npos) << e.message();
    }
  }
}

TEST(LowerTest, DumpRecordsEveryPass) {
  Matmul mm(8, 8, 8);
  Schedule s = create_schedule({mm.c});
  auto dumps = LowerWithDump(s, {mm.a, mm.b, mm.c}, "mm");
  std::vector<std::string> names;
  for (auto& d : dumps) names.push_back(d.first);
  EXPECT_EQ(names.front(), "schedule_ops");
  EXPECT_EQ(names.back(), "unique_defs");
  EXPECT_NE(dumps.front().second.find("C(i, j) = "), std::string::npos) << dumps.front().second;
}

}  // namespace
}  // namespace lower
}  // namespace agate

namespace agate {
namespace lower {
namespace {

using namespace te;  // NOLINT

// The GEMM schedule shape of TVM tutorials: C.local accumulates a tile at
// C's column block; A and B are cached per k block inside C.local's loop.
TEST(LowerTest, NestedAttachmentsCacheReadInsideCacheWrite) {
  for (int64_t m : {16, 13}) {
    Matmul mm(m, 20, 12);
    Schedule s = create_schedule({mm.c});
    Tensor cl = s.cache_write(mm.c, ir::MemoryScope::kLocal);
    Tensor al = s.cache_read(mm.a, ir::MemoryScope::kLocal, {cl});
    Tensor bl = s.cache_read(mm.b, ir::MemoryScope::kLocal, {cl});
    Stage c = s[mm.c];
    auto t = c.tile(c.axis(0), c.axis(1), 8, 8);
    c.parallel(t[0]);
    s[cl].compute_at(c, t[1]);
    Stage l = s[cl];
    auto [ko, ki] = l.split(mm.rk, 4);
    l.reorder({ko, l.axis(0), ki, l.axis(1)});
    l.vectorize(l.axis(1));
    s[al].compute_at(l, ko);
    s[bl].compute_at(l, ko);
    std::string text;
    mm.Check(s, &text);
    EXPECT_NE(text.find("allocate A.local[float32 * 32], local"), std::string::npos) << text;
    EXPECT_NE(text.find("allocate B.local[float32 * 32], local"), std::string::npos) << text;
  }
}

TEST(LowerTest, ChainOfComputeAt) {
  Tensor a = placeholder({Expr(23)}, DType::Float(32), "A");
  Tensor b = compute({Expr(23)}, [&](Var i) { return a(i) + 1.0f; }, "B");
  Tensor c = compute({Expr(21)}, [&](Var i) { return b(i) + b(i + 2); }, "C");
  Tensor d = compute({Expr(19)}, [&](Var i) { return c(i) * c(i + 2); }, "D");
  Schedule s = create_schedule({d});
  auto [dout, din] = s[d].split(s[d].axis(0), 5);
  s[c].compute_at(s[d], dout);
  auto [cout, cin] = s[c].split(s[c].axis(0), 3);
  s[b].compute_at(s[c], cout);
  std::vector<float> av = testing::RandomData(23, 5), dv(19);
  ir::LoweredFunc f = testing::LowerAndRun(s, {a, d}, {&av, &dv});
  for (int i = 0; i < 19; ++i) {
    auto bb = [&](int x) { return av[x] + 1.0f; };
    auto cc = [&](int x) { return bb(x) + bb(x + 2); };
    EXPECT_NEAR(dv[i], cc(i) * cc(i + 2), 1e-5) << ir::ToString(f);
  }
  // D needs 7 elements of C per block of 5; each C block of 3 needs 5 elements of B.
  std::string text = ir::ToString(f);
  EXPECT_NE(text.find("allocate C[float32 * 7]"), std::string::npos) << text;
  EXPECT_NE(text.find("allocate B[float32 * 5]"), std::string::npos) << text;
}

}  // namespace
}  // namespace lower
}  // namespace agate

#include "core/ir/equality.h"

namespace agate {
namespace lower {
namespace {

TEST(LowerTest, IdenticalKernelsCompareEqualForCaching) {
  auto lower_matmul = [](int split) {
    Matmul mm(16, 16, 8);
    Schedule s = create_schedule({mm.c});
    s[mm.c].split(s[mm.c].axis(1), split);
    return Lower(s, {mm.a, mm.b, mm.c}, "k" + std::to_string(split));
  };
  ir::LoweredFunc a = lower_matmul(4), b = lower_matmul(4), c = lower_matmul(8);
  EXPECT_TRUE(ir::StructuralEqual(a, b));
  EXPECT_EQ(ir::StructuralHash(a), ir::StructuralHash(b));
  EXPECT_FALSE(ir::StructuralEqual(a, c));
  EXPECT_NE(ir::StructuralHash(a), ir::StructuralHash(c));
}

}  // namespace
}  // namespace lower
}  // namespace agate

namespace agate {
namespace lower {
namespace {

using namespace te;  // NOLINT

// Strided window reads (pooling/conv stride 2) through compute_at, and a
// reduction axis that does not start at zero.
TEST(LowerTest, StridedWindowsAndOffsetReductionAxis) {
  Tensor a = placeholder({Expr(17)}, DType::Float(32), "A");
  Tensor b = compute({Expr(17)}, [&](Var i) { return a(i) * a(i); }, "B");
  IterVar r = reduce_axis({1, 3}, "r");  // r in [1, 4)
  Tensor c = compute({Expr(7)}, [&](Var i) { return te::max(b(i * 2 + r), {r}); }, "C");
  Schedule s = create_schedule({c});
  auto [co, ci] = s[c].split(s[c].axis(0), 2);
  s[b].compute_at(s[c], co);
  std::vector<float> av = testing::RandomData(17, 8), cv(7);
  ir::LoweredFunc f = testing::LowerAndRun(s, {a, c}, {&av, &cv});
  for (int i = 0; i < 7; ++i) {
    float want = -1e30f;
    for (int k = 1; k < 4; ++k) want = std::max(want, av[i * 2 + k] * av[i * 2 + k]);
    EXPECT_FLOAT_EQ(cv[i], want) << ir::ToString(f);
  }
  // Two outputs of stride 2 with a window of 3 starting at 1 need B[co*4 + 1 .. co*4 + 5].
  EXPECT_NE(ir::ToString(f).find("allocate B[float32 * 5]"), std::string::npos) << ir::ToString(f);
}

}  // namespace
}  // namespace lower
}  // namespace agate

namespace agate {
namespace lower {
namespace {

using namespace te;  // NOLINT

TEST(LowerTest, PaddingReadsAreMaskedByTheirSelect) {
  Tensor a = placeholder({Expr(6)}, DType::Float(32), "A");
  Tensor padded = compute({Expr(8)}, [&](Var i) { return ir::select(i >= 1 && i < 7, a(i - 1), Expr(0.0f)); }, "P");
  Tensor b = compute({Expr(6)}, [&](Var i) { return padded(i) + padded(i + 2); }, "B");
  Schedule s = create_schedule({b});
  s[padded].compute_inline();
  std::vector<float> av = testing::RandomData(6, 3);
  // With loop partitioning (the default) the first and last outputs are cut off the loop and
  // the interior reads without a test; without it, each read carries its select as a mask.
  for (bool partition : {true, false}) {
    LowerOptions opt;
    opt.partition_loops = partition;
    ir::LoweredFunc f = Lower(s, {a, b}, "f", opt);
    std::vector<float> bv(6);
    ASSERT_EQ(loop_eval::RunFloat(f, {&av, &bv}), 0);
    for (int i = 0; i < 6; ++i) {
      float left = i >= 1 ? av[i - 1] : 0.0f, right = i + 2 < 7 ? av[i + 1] : 0.0f;
      EXPECT_FLOAT_EQ(bv[i], left + right) << ir::ToString(f);
    }
    std::string text = ir::ToString(f);
    if (partition) {
      EXPECT_NE(text.find("B[i] = A[i - 1] + A[i + 1]"), std::string::npos) << text;
      EXPECT_EQ(text.find(" if "), std::string::npos) << text;
    } else {
      EXPECT_NE(text.find("A[i - 1 if "), std::string::npos) << text;
    }
  }
}

}  // namespace
}  // namespace lower
}  // namespace agate
