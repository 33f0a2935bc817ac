// Every schedule primitive: the loop structure changes as expected (checked on
// the printed IR) and the numbers do not (evaluator vs a plain C++ loop), on
// shapes that divide the factors and shapes that do not.
#include <gtest/gtest.h>

#include "core/lower/lower.h"
#include "core/lower/testing/lower_and_run.h"
#include "core/support/error.h"

namespace agate {
namespace lower {
namespace {

using namespace te;  // NOLINT
using testing::AllClose;
using testing::RandomData;

bool Has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// C(i, j) = sum_k A(i, k) * B(k, j) + bias(j), with a schedule hook.
struct Problem {
  int64_t m, n, k;
  Tensor a, b, bias, c;
  IterVar rk;
  Problem(int64_t m_, int64_t n_, int64_t k_) : m(m_), n(n_), k(k_) {
    a = placeholder({Expr(m), Expr(k)}, DType::Float(32), "A");
    b = placeholder({Expr(k), Expr(n)}, DType::Float(32), "B");
    bias = placeholder({Expr(n)}, DType::Float(32), "bias");
    rk = reduce_axis({0, Expr(k)}, "k");
    c = compute({Expr(m), Expr(n)}, [&](Var i, Var j) { return sum(a(i, rk) * b(rk, j), {rk}); }, "C");
  }
  std::vector<float> Reference(const std::vector<float>& av, const std::vector<float>& bv) const {
    std::vector<float> out(m * n, 0.0f);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t kk = 0; kk < k; ++kk) out[i * n + j] += av[i * k + kk] * bv[kk * n + j];
    return out;
  }
  // Lowers with and without loop partitioning, checks the numbers of both and
  // returns the printed IR of the unpartitioned one (whose loops mirror the
  // schedule one to one), or of the partitioned one when asked.
  std::string Run(const Schedule& s, bool partitioned = false) {
    std::string texts[2];
    for (int part = 0; part < 2; ++part) {
      LowerOptions opt;
      opt.partition_loops = part == 1;
      std::vector<float> av = RandomData(m * k, 11), bv = RandomData(k * n, 12), cv(m * n, 0.0f);
      ir::LoweredFunc f = Lower(s, {a, b, c}, "f", opt);
      EXPECT_EQ(loop_eval::RunFloat(f, {&av, &bv, &cv}), 0);
      texts[part] = ir::ToString(f);
      EXPECT_TRUE(AllClose(cv, Reference(av, bv))) << texts[part];
      if (getenv("AGATE_SHOW_IR")) std::cerr << texts[part];
    }
    return texts[partitioned ? 1 : 0];
  }
};

class PrimitiveTest : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {
 protected:
  Problem P() { return Problem(std::get<0>(GetParam()), std::get<1>(GetParam()), std::get<2>(GetParam())); }
  bool Divides() const { return std::get<0>(GetParam()) % 8 == 0 && std::get<1>(GetParam()) % 8 == 0; }
};

TEST_P(PrimitiveTest, Split) {
  Problem p = P();
  Schedule s = create_schedule({p.c});
  auto [io, ii] = s[p.c].split(s[p.c].axis(0), 8);
  std::string t = p.Run(s);
  EXPECT_TRUE(Has(t, "for (i.outer, 0, " + std::to_string((p.m + 7) / 8) + ")")) << t;
  EXPECT_TRUE(Has(t, "for (i.inner, 0, 8)")) << t;
  EXPECT_EQ(Has(t, "if ("), !Divides() && p.m % 8 != 0) << t;
}

TEST_P(PrimitiveTest, SplitByNParts) {
  Problem p = P();
  Schedule s = create_schedule({p.c});
  s[p.c].split_by_nparts(s[p.c].axis(1), 4);
  std::string t = p.Run(s);
  EXPECT_TRUE(Has(t, "for (j.outer, 0, 4)")) << t;
  EXPECT_TRUE(Has(t, "for (j.inner, 0, " + std::to_string((p.n + 3) / 4) + ")")) << t;
}

TEST_P(PrimitiveTest, TileAndReorder) {
  Problem p = P();
  Schedule s = create_schedule({p.c});
  Stage c = s[p.c];
  auto t4 = c.tile(c.axis(0), c.axis(1), 8, 8);
  c.reorder({t4[0], t4[1], p.rk, t4[2], t4[3]});
  std::string t = p.Run(s);
  size_t k_pos = t.find("for (k, 0"), ii_pos = t.rfind("for (i.inner, 0, 8)");
  EXPECT_LT(k_pos, ii_pos) << "k moved outside i.inner\n" << t;
  EXPECT_EQ(Has(t, "if ("), !Divides()) << t;
}

TEST_P(PrimitiveTest, Fuse) {
  Problem p = P();
  Schedule s = create_schedule({p.c});
  IterVar f = s[p.c].fuse(s[p.c].axis(0), s[p.c].axis(1));
  auto [fo, fi] = s[p.c].split(f, 16);
  s[p.c].parallel(fo);
  std::string t = p.Run(s);
  EXPECT_TRUE(Has(t, "for (i.j.fused.outer, 0, " + std::to_string((p.m * p.n + 15) / 16) + ") parallel")) << t;
}

TEST_P(PrimitiveTest, VectorizeAndParallel) {
  Problem p = P();
  Schedule s = create_schedule({p.c});
  Stage c = s[p.c];
  auto [jo, ji] = c.split(c.axis(1), 8);
  c.reorder({c.axis(0), jo, p.rk, ji});
  c.vectorize(ji).parallel(c.axis(0));
  std::string t = p.Run(s);
  EXPECT_TRUE(Has(t, "for (i, 0, " + std::to_string(p.m) + ") parallel")) << t;
  if (p.n % 8 == 0) {
    EXPECT_TRUE(Has(t, "ramp(")) << t;
  } else {
    // The tail guard depends on the lane: it becomes a lane mask on every access...
    EXPECT_TRUE(Has(t, " if ramp(")) << t;
    // ...and loop partitioning splits the tail off, so the main part needs no mask.
    std::string parted = p.Run(s, /*partitioned=*/true);
    EXPECT_TRUE(Has(parted, "C[ramp(i*19 + j.outer*8, 1, 8)] = x8(0.0f)")) << parted;
    EXPECT_TRUE(Has(parted, " if ramp(")) << parted;
  }
}

TEST_P(PrimitiveTest, Unroll) {
  Problem p = P();
  Schedule s = create_schedule({p.c});
  auto [ko, ki] = s[p.c].split(p.rk, 2);
  s[p.c].unroll(ki);
  std::string t = p.Run(s);
  EXPECT_FALSE(Has(t, "for (k.inner")) << t;
}

TEST_P(PrimitiveTest, CacheWriteAndComputeAt) {
  Problem p = P();
  Schedule s = create_schedule({p.c});
  Tensor cl = s.cache_write(p.c, ir::MemoryScope::kLocal);
  Stage c = s[p.c];
  auto t4 = c.tile(c.axis(0), c.axis(1), 4, 8);
  s[cl].compute_at(c, t4[1]);
  std::string t = p.Run(s);
  EXPECT_TRUE(Has(t, "allocate C.local[float32 * 32], local")) << t;
}

TEST_P(PrimitiveTest, CacheReadComputeAt) {
  Problem p = P();
  Schedule s = create_schedule({p.c});
  Tensor bl = s.cache_read(p.b, ir::MemoryScope::kLocal, {p.c});
  Stage c = s[p.c];
  auto [jo, ji] = c.split(c.axis(1), 8);
  c.reorder({jo, c.axis(0), p.rk, ji});
  s[bl].compute_at(c, jo);
  std::string t = p.Run(s);
  // One j.outer iteration needs all k rows of an 8-wide column block of B.
  EXPECT_TRUE(Has(t, "allocate B.local[float32 * " + std::to_string(p.k * 8) + "]")) << t;
}

TEST_P(PrimitiveTest, ComputeRootOfAnIntermediate) {
  Problem p = P();
  Tensor d = compute({Expr(p.m), Expr(p.n)}, [&](Var i, Var j) { return p.c(i, j) * 2.0f; }, "D");
  Schedule s = create_schedule({d});
  s[p.c].compute_at(s[d], s[d].axis(0));
  s[p.c].compute_root();
  std::vector<float> av = RandomData(p.m * p.k, 1), bv = RandomData(p.k * p.n, 2), dv(p.m * p.n);
  ir::LoweredFunc f = Lower(s, {p.a, p.b, d}, "f");
  EXPECT_EQ(loop_eval::RunFloat(f, {&av, &bv, &dv}), 0);
  std::vector<float> want = p.Reference(av, bv);
  for (float& x : want) x *= 2;
  EXPECT_TRUE(AllClose(dv, want));
  std::string t = ir::ToString(f);
  EXPECT_TRUE(Has(t, "allocate C[float32 * " + std::to_string(p.m * p.n) + "]")) << t;
}

TEST_P(PrimitiveTest, StorageAlignPadsTheStride) {
  Problem p = P();
  Schedule s = create_schedule({p.c});
  Tensor cl = s.cache_write(p.c, ir::MemoryScope::kLocal);
  s[cl].storage_align(0, 16, 1);
  std::string t = p.Run(s);
  int64_t stride = (p.n + 15 - 1) / 16 * 16 + 1;  // smallest >= n with stride % 16 == 1
  if (p.n % 16 == 1) stride = p.n;
  EXPECT_TRUE(Has(t, "C.local[float32 * " + std::to_string(stride * p.m) + "]")) << t;
}

TEST_P(PrimitiveTest, PragmaAndBind) {
  Problem p = P();
  Schedule s = create_schedule({p.c});
  Stage c = s[p.c];
  auto [io, ii] = c.split(c.axis(0), 4);
  c.bind(io, "blockIdx.x").bind(ii, "threadIdx.x");
  c.pragma(p.rk, "unroll_explicit", Expr(4));
  std::string t = p.Run(s);
  EXPECT_TRUE(Has(t, "thread_binding(blockIdx.x)")) << t;
  EXPECT_TRUE(Has(t, "thread_binding(threadIdx.x)")) << t;
  EXPECT_TRUE(Has(t, "// attr pragma_unroll_explicit C = 4")) << t;
}

INSTANTIATE_TEST_SUITE_P(Shapes, PrimitiveTest,
                         ::testing::Values(std::make_tuple(int64_t{16}, int64_t{32}, int64_t{8}),
                                           std::make_tuple(int64_t{13}, int64_t{19}, int64_t{7})));

TEST(PrimitiveErrors, ReductionAxisCannotRunInParallel) {
  Problem p(8, 8, 8);
  Schedule s = create_schedule({p.c});
  auto [ko, ki] = s[p.c].split(p.rk, 4);
  try {
    s[p.c].parallel(ko);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kIllegalSchedule);
    EXPECT_TRUE(Has(e.message(), "stage C: axis k.outer")) << e.message();
  }
}

TEST(PrimitiveErrors, MarkedAxisSplitLater) {
  Problem p(8, 8, 8);
  Schedule s = create_schedule({p.c});
  s[p.c].parallel(s[p.c].axis(0));
  s[p.c].split(s[p.c].axis(0), 2);
  try {
    Lower(s, {p.a, p.b, p.c}, "f");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kIllegalSchedule);
    EXPECT_TRUE(Has(e.message(), "stage C: axis i was marked (parallel)")) << e.message();
  }
}

TEST(PrimitiveErrors, ComputeAtCycle) {
  Tensor a = placeholder({Expr(8)}, DType::Float(32), "A");
  Tensor b = compute({Expr(8)}, [&](Var i) { return a(i) + 1.0f; }, "B");
  Tensor c = compute({Expr(8)}, [&](Var i) { return b(i) * 2.0f; }, "C");
  Tensor d = compute({Expr(8)}, [&](Var i) { return c(i) * 2.0f; }, "D");
  Schedule s = create_schedule({d});
  s[c].compute_at(s[b], s[b].axis(0));
  try {
    Lower(s, {a, d}, "f");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kIllegalSchedule) << e.what();
  }
}

TEST(PrimitiveErrors, MissingArguments) {
  Problem p(8, 8, 8);
  Schedule s = create_schedule({p.c});
  try {
    Lower(s, {p.a, p.c}, "f");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Has(e.message(), "input B")) << e.message();
  }
}

TEST(Reductions, MaxMinProdAndInitAndCondition) {
  Tensor a = placeholder({Expr(5), Expr(9)}, DType::Float(32), "A");
  IterVar k = reduce_axis({0, 9}, "k");
  Tensor mx = compute({Expr(5)}, [&](Var i) { return te::max(a(i, k), {k}); }, "mx");
  Tensor mn = compute({Expr(5)}, [&](Var i) { return te::min(a(i, k), {k}); }, "mn");
  Tensor pr = compute({Expr(5)}, [&](Var i) { return prod(a(i, k) + 2.0f, {k}); }, "pr");
  Tensor cs = compute({Expr(5)}, [&](Var i) { return sum(a(i, k), {k}, k < i + 3, Expr(10.0f)); }, "cs");
  Schedule s = create_schedule({mx, mn, pr, cs});
  auto [ko, ki] = s[pr].split(s[pr].reduce_axis(0), 4);
  std::vector<float> av = RandomData(45, 5), v1(5), v2(5), v3(5), v4(5);
  ir::LoweredFunc f = Lower(s, {a, mx, mn, pr, cs}, "f");
  ASSERT_EQ(loop_eval::RunFloat(f, {&av, &v1, &v2, &v3, &v4}), 0);
  for (int i = 0; i < 5; ++i) {
    float m1 = -1e30f, m2 = 1e30f, p = 1, c = 10;
    for (int kk = 0; kk < 9; ++kk) {
      float x = av[i * 9 + kk];
      m1 = std::max(m1, x);
      m2 = std::min(m2, x);
      p *= x + 2;
      if (kk < i + 3) c += x;
    }
    EXPECT_FLOAT_EQ(v1[i], m1);
    EXPECT_FLOAT_EQ(v2[i], m2);
    EXPECT_NEAR(v3[i], p, 1e-4 * std::fabs(p));
    EXPECT_NEAR(v4[i], c, 1e-5);
  }
}

TEST(Reductions, ArgmaxTupleReduction) {
  Tensor a = placeholder({Expr(4), Expr(11)}, DType::Float(32), "A");
  IterVar k = reduce_axis({0, 11}, "k");
  auto outs = compute_multi({Expr(4)}, [&](const std::vector<Var>& i) { return argmax(k.var(), a(i[0], k), {k}); },
                            "am");
  Schedule s = create_schedule({outs[0], outs[1]});
  ir::LoweredFunc f = Lower(s, {a, outs[0], outs[1]}, "argmax");
  std::vector<float> av = RandomData(44, 9);
  av[2 * 11 + 3] = 5.0f;
  av[2 * 11 + 7] = 5.0f;  // tie: the smaller index wins
  std::vector<int64_t> idx(4);
  std::vector<float> val(4);
  ASSERT_EQ(loop_eval::Run(f, {{av.data(), av.size() * 4}, {idx.data(), 32}, {val.data(), 16}}), 0);
  for (int i = 0; i < 4; ++i) {
    int best = 0;
    for (int kk = 1; kk < 11; ++kk)
      if (av[i * 11 + kk] > av[i * 11 + best]) best = kk;
    EXPECT_EQ(idx[i], best) << ir::ToString(f);
    EXPECT_EQ(val[i], av[i * 11 + best]);
  }
}

TEST(SymbolicShapes, ExtentStaysAVariableUntilBound) {
  Var n("n");
  Tensor a = placeholder({n}, DType::Float(32), "A");
  Tensor b = compute({n}, [&](Var i) { return a(i) * 3.0f; }, "B");
  Schedule s = create_schedule({b});
  auto [io, ii] = s[b].split(s[b].axis(0), 4);
  ir::LoweredFunc f = Lower(s, {a, b}, "f");
  std::string t = ir::ToString(f);
  EXPECT_TRUE(Has(t, "floordiv(n + 3, 4)")) << t;
  std::vector<float> av = RandomData(10, 4), bv(10);
  ASSERT_EQ(loop_eval::RunFloat(f, {&av, &bv}, {{"n", 10}}), 0);
  for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(bv[i], av[i] * 3);

  LowerOptions bound;
  bound.shape_bindings = {{n, Expr(10)}};
  ir::LoweredFunc g = Lower(s, {a, b}, "g", bound);
  std::string tg = ir::ToString(g);
  EXPECT_FALSE(Has(tg, "floordiv(n")) << tg;
  EXPECT_TRUE(Has(tg, "A: float32[10]")) << tg;
  std::vector<float> gv(10);
  ASSERT_EQ(loop_eval::RunFloat(g, {&av, &gv}), 0);
  EXPECT_TRUE(AllClose(gv, bv));
}

}  // namespace
}  // namespace lower
}  // namespace agate

namespace agate {
namespace lower {
namespace {

// A 2x4x8 matmul micro-kernel "intrinsic", lowered to explicit loops on the
// buffer views it is handed (a real one would call a hardware routine).
TensorIntrin MatmulIntrin(int64_t k) {
  Tensor a = placeholder({Expr(2), Expr(k)}, DType::Float(32), "a");
  Tensor b = placeholder({Expr(k), Expr(4)}, DType::Float(32), "b");
  IterVar rk = reduce_axis({0, Expr(k)}, "rk");
  Tensor c = compute({Expr(2), Expr(4)}, [&](Var i, Var j) { return sum(a(i, rk) * b(rk, j), {rk}); }, "c");
  TensorIntrin intrin;
  intrin.name = "mm2x4";
  intrin.desc = c;
  intrin.lower = [k](const std::vector<ir::Buffer>& in, const std::vector<Expr>& in_off, const ir::Buffer& out,
                     const Expr& out_off) {
    Var i("ti"), j("tj"), kk("tk");
    Expr o = out_off + out->FlatIndex({i, j});
    ir::Stmt update = ir::Store::make(
        out, ir::Load::make(out, o) + ir::Load::make(in[0], in_off[0] + in[0]->FlatIndex({i, kk})) *
                                          ir::Load::make(in[1], in_off[1] + in[1]->FlatIndex({kk, j})),
        o);
    ir::Stmt body = ir::Seq::make({ir::Store::make(out, Expr(0.0f), o),
                                   ir::For::make(kk, 0, Expr(k), ir::ForKind::kSerial, update)});
    return ir::For::make(i, 0, 2, ir::ForKind::kSerial, ir::For::make(j, 0, 4, ir::ForKind::kSerial, body));
  };
  return intrin;
}

// Also where loops of extent 1 surround the call (2x4, 2x12, 6x4): Simplify drops them,
// substituting their minimum, before storage flattening lowers the call, so the call's
// block offsets must take the same substitution (they once kept the dropped loop's
// variable: "used outside its definition").
TEST(Tensorize, MatchingBlockIsReplacedByTheIntrinsic) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{6, 12}, {2, 4}, {2, 12}, {6, 4}}) {
    Problem p(m, n, 8);
    Schedule s = create_schedule({p.c});
    Stage c = s[p.c];
    auto t = c.tile(c.axis(0), c.axis(1), 2, 4);
    c.tensorize(t[2], MatmulIntrin(8));
    std::string text = p.Run(s);
    EXPECT_TRUE(Has(text, "// attr tensorize mm2x4")) << text;
    EXPECT_FALSE(Has(text, "for (i.inner")) << text;
  }
}

TEST(Tensorize, MismatchesAreRejected) {
  Problem p(6, 12, 8);
  {
    Schedule s = create_schedule({p.c});
    Stage c = s[p.c];
    auto t = c.tile(c.axis(0), c.axis(1), 4, 2);  // tile shape differs from the intrinsic's 2x4
    c.tensorize(t[2], MatmulIntrin(8));
    try {
      Lower(s, {p.a, p.b, p.c}, "f");
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kIllegalSchedule);
      EXPECT_TRUE(Has(e.message(), "tensorize on stage C, axis i.inner")) << e.message();
    }
  }
  {
    Schedule s = create_schedule({p.c});
    Stage c = s[p.c];
    auto t = c.tile(c.axis(0), c.axis(1), 2, 4);
    c.reorder({t[0], t[1], t[3], t[2]});  // inner loops swapped: j before i
    c.tensorize(t[3], MatmulIntrin(8));
    try {
      Lower(s, {p.a, p.b, p.c}, "f");
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kIllegalSchedule);
      EXPECT_TRUE(Has(e.message(), "does not match") || Has(e.message(), "extent")) << e.message();
    }
  }
}

}  // namespace
}  // namespace lower
}  // namespace agate

namespace agate {
namespace lower {
namespace {

TEST(MalformedCompute, ReduceAxisOutsideItsReduction) {
  Tensor a = placeholder({Expr(4), Expr(4)}, DType::Float(32), "A");
  IterVar k = reduce_axis({0, 4}, "k");
  Tensor b = compute({Expr(4)}, [&](Var i) { return a(i, k); }, "B");  // forgot sum()
  Schedule s = create_schedule({b});
  try {
    Lower(s, {a, b}, "f");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Has(e.message(), "compute B uses variable k")) << e.message();
  }
}

}  // namespace
}  // namespace lower
}  // namespace agate

namespace agate {
namespace lower {
namespace {

TEST(Rfactor, VectorLanesAndParallelPartialReductions) {
  for (int64_t k_extent : {32, 37}) {
    Tensor a = placeholder({Expr(3), Expr(k_extent)}, DType::Float(32), "A");
    IterVar k = reduce_axis({0, Expr(k_extent)}, "k");
    Tensor s_sum = compute({Expr(3)}, [&](Var i) { return sum(a(i, k) * 2.0f, {k}); }, "S");
    Tensor s_max = compute({Expr(3)}, [&](Var i) { return te::max(a(i, k), {k}); }, "M");
    Schedule s = create_schedule({s_sum, s_max});
    // Sum: 8 partial sums in vector lanes.
    auto [ko, ki] = s[s_sum].split(k, 8);
    Tensor rf = s.rfactor(s_sum, ki);
    Stage r = s[rf];
    r.reorder({r.axis(1), r.reduce_axis(0), r.axis(0)});
    r.vectorize(r.axis(0));
    // Max: 4 partial maxima computed by parallel tasks.
    auto [mo, mi] = s[s_max].split(k, 9);
    (void)mo;
    Tensor rfm = s.rfactor(s_max, s[s_max].leaf_iter_vars()[1]);
    s[rfm].parallel(s[rfm].axis(0));
    ir::LoweredFunc f = Lower(s, {a, s_sum, s_max}, "rf");
    std::vector<float> av = RandomData(3 * k_extent, 4), sv(3), mv(3);
    ASSERT_EQ(loop_eval::RunFloat(f, {&av, &sv, &mv}), 0);
    std::string t = ir::ToString(f);
    EXPECT_TRUE(Has(t, "S.rf[ramp(")) << t;
    if (getenv("AGATE_SHOW_IR")) std::cerr << t;
    EXPECT_TRUE(Has(t, "parallel")) << t;
    for (int i = 0; i < 3; ++i) {
      float want_sum = 0, want_max = -1e30f;
      for (int j = 0; j < k_extent; ++j) {
        want_sum += av[i * k_extent + j] * 2;
        want_max = std::max(want_max, av[i * k_extent + j]);
      }
      EXPECT_NEAR(sv[i], want_sum, 1e-4) << t;
      EXPECT_EQ(mv[i], want_max) << t;
    }
  }
}

TEST(Rfactor, RejectsAxesThatAreNotSplitReductions) {
  Problem p(8, 8, 8);
  Schedule s = create_schedule({p.c});
  try {
    s.rfactor(p.c, s[p.c].axis(0));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kIllegalSchedule);
    EXPECT_TRUE(Has(e.message(), "rfactor on stage C: axis i is not a reduction axis")) << e.message();
  }
  EXPECT_THROW(s.rfactor(p.c, p.rk), Error);  // not split
}

}  // namespace
}  // namespace lower
}  // namespace agate

namespace agate {
namespace lower {
namespace {

TEST(PrimitiveErrors, AttachedStageCannotBeAKernelArgument) {
  Tensor a = placeholder({Expr(8)}, DType::Float(32), "A");
  Tensor b = compute({Expr(8)}, [&](Var i) { return a(i) + 1.0f; }, "B");
  Tensor c = compute({Expr(8)}, [&](Var i) { return b(i) * 2.0f; }, "C");
  Schedule s = create_schedule({c});
  s[b].compute_at(s[c], s[c].axis(0));
  try {
    Lower(s, {a, b, c}, "f");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kIllegalSchedule);
    EXPECT_TRUE(Has(e.message(), "compute_at of stage B: it is a kernel argument")) << e.message();
  }
}

}  // namespace
}  // namespace lower
}  // namespace agate
