// NarrowIndexMath on hand-built loop IR (what it narrows and what it must leave
// alone) and on a lowered padded depthwise convolution (values unchanged).
#include "core/lower/index_math.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/loop_eval/evaluator.h"
#include "core/lower/lower.h"
#include "core/lower/testing/lower_and_run.h"

namespace agate {
namespace lower {
namespace {

using namespace ir;  // NOLINT

NarrowOptions WithLoopVariables() {
  NarrowOptions o;
  o.loop_variables = true;
  return o;
}

// The dtypes of every loop variable and of every Load/Store index, in visiting order.
struct Dtypes {
  std::vector<DType> loops, indices;
};
Dtypes Collect(const Stmt& s) {
  Dtypes d;
  PostOrderVisit(s, [&](const Expr* e, const Stmt* st) {
    if (st && st->as<For>()) d.loops.push_back(st->as<For>()->var.dtype());
    if (st && st->as<Store>()) d.indices.push_back(st->as<Store>()->index.dtype());
    if (e && e->as<Load>()) d.indices.push_back(e->as<Load>()->index.dtype());
  });
  return d;
}

TEST(IndexMathTest, SerialCountersAndTheirIndicesBecomeInt32) {
  Buffer a = CreateBuffer("A", DType::Int(8), {Expr(125)});
  Buffer c = CreateBuffer("C", DType::Int(8), {Expr(125)});
  Var i("i"), j("j");
  // A row above, clamped at the top edge: a negative intermediate (i - 1) that still fits.
  Stmt s = For::make(i, 0, 25, ForKind::kSerial,
                     For::make(j, 0, 5, ForKind::kSerial,
                               Store::make(c, Load::make(a, max(i - 1, 0) * 5 + j), i * 5 + j)));
  Stmt narrowed = NarrowIndexMath(s, WithLoopVariables());
  Dtypes d = Collect(narrowed);
  EXPECT_EQ(d.loops, (std::vector<DType>{DType::Int(32), DType::Int(32)}));
  EXPECT_EQ(d.indices, (std::vector<DType>{DType::Int(32), DType::Int(32)}));
  // No casts remain: the whole index computation is 32-bit.
  EXPECT_EQ(ToString(narrowed),
            "for (i, 0, 25) {\n"
            "  for (j, 0, 5) {\n"
            "    C[i*5 + j] = A[max(i - 1, 0)*5 + j]\n"
            "  }\n"
            "}\n");
  // Without loop variables (GPU kernels), the counters stay int64 and the indices are
  // computed in int32 from them.
  Stmt gpu_style = NarrowIndexMath(s);
  EXPECT_EQ(Collect(gpu_style).loops, (std::vector<DType>{DType::Index(), DType::Index()}));
  EXPECT_EQ(Collect(gpu_style).indices, (std::vector<DType>{DType::Int(32), DType::Int(32)}));
}

TEST(IndexMathTest, VectorIndicesNarrowWhenEveryLaneFits) {
  Buffer a = CreateBuffer("A", DType::Int(8), {Expr(64)});
  Buffer c = CreateBuffer("C", DType::Int(8), {Expr(64)});
  Var i("i");
  Stmt s = For::make(i, 0, 8, ForKind::kSerial,
                     Store::make(c, Load::make(a, Ramp::make(i * 8, Expr(int64_t{1}), 8)), Ramp::make(i * 8, Expr(int64_t{1}), 8)));
  EXPECT_EQ(Collect(NarrowIndexMath(s, WithLoopVariables())).indices,
            (std::vector<DType>{DType::Int(32, 8), DType::Int(32, 8)}));
  EXPECT_EQ(Collect(NarrowIndexMath(s)).indices, (std::vector<DType>{DType::Int(64, 8), DType::Int(64, 8)}));  // GPU: as before
  // A ramp whose first lane fits but whose last passes 2^31 - 1 stays int64.
  Buffer big = CreateBuffer("B", DType::Int(8), {Expr(int64_t{4294967296})});
  Stmt far = For::make(i, 0, 2, ForKind::kSerial,
                       Store::make(big, Load::make(a, Ramp::make(i * 8, Expr(int64_t{1}), 8)),
                                   Ramp::make(i * int64_t{2147483641}, Expr(int64_t{1}), 8)));
  EXPECT_EQ(Collect(NarrowIndexMath(far, WithLoopVariables())).indices,
            (std::vector<DType>{DType::Int(32, 8), DType::Int(64, 8)}));
}

TEST(IndexMathTest, ValuesThatMayNotFitStayInt64) {
  Buffer big = CreateBuffer("B", DType::Float(32), {Expr(int64_t{6000000000})});
  Var i("i"), j("j"), k("k");
  // The counter's range fits, the index (up to 2.5e9) does not: the counters narrow,
  // the index stays int64 over casts of them.
  Stmt wide_index = For::make(i, 0, 50000, ForKind::kSerial,
                              For::make(j, 0, 50000, ForKind::kSerial, Store::make(big, Expr(1.0f), i * 50000 + j)));
  Dtypes d = Collect(NarrowIndexMath(wide_index, WithLoopVariables()));
  EXPECT_EQ(d.loops, (std::vector<DType>{DType::Int(32), DType::Int(32)}));
  EXPECT_EQ(d.indices, (std::vector<DType>{DType::Index()}));
  // A loop whose end passes 2^31 keeps an int64 counter.
  Stmt long_loop = For::make(k, int64_t{2147483000}, 1000, ForKind::kSerial, Store::make(big, Expr(1.0f), k));
  d = Collect(NarrowIndexMath(long_loop, WithLoopVariables()));
  EXPECT_EQ(d.loops, (std::vector<DType>{DType::Index()}));
  EXPECT_EQ(d.indices, (std::vector<DType>{DType::Index()}));
}

TEST(IndexMathTest, ParallelCountersAndDataIndicesStayInt64) {
  Buffer a = CreateBuffer("A", DType::Float(32), {Expr(64)});
  Buffer idx = CreateBuffer("I", DType::Index(), {Expr(16)});
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(64)});
  Var p("p"), j("j");
  // A gather: the index read from memory may be anything.
  Stmt s = For::make(p, 0, 4, ForKind::kParallel,
                     For::make(j, 0, 16, ForKind::kSerial,
                               Store::make(c, Load::make(a, Load::make(idx, j)), p * 16 + j)));
  Dtypes d = Collect(NarrowIndexMath(s, WithLoopVariables()));
  EXPECT_EQ(d.loops, (std::vector<DType>{DType::Int(32), DType::Index()}));  // post-order: inner first
  // Store C (int32), the gather's read of A (data-dependent: int64), the read of I (int32).
  EXPECT_EQ(d.indices, (std::vector<DType>{DType::Int(32), DType::Index(), DType::Int(32)}));
}

TEST(IndexMathTest, LetBoundIndicesNarrowWithTheirUses) {
  Buffer a = CreateBuffer("A", DType::Float(32), {Expr(64)});
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(64)});
  Var i("i"), row("row"), any("any");
  Stmt s = For::make(i, 0, 8, ForKind::kSerial,
                     LetStmt::make(row, i * 8,
                                   Store::make(c, Load::make(a, row + 7), row)));
  Stmt narrowed = NarrowIndexMath(s, WithLoopVariables());
  const For* loop = narrowed.as<For>();
  ASSERT_NE(loop, nullptr);
  const LetStmt* let = loop->body.as<LetStmt>();
  ASSERT_NE(let, nullptr);
  EXPECT_EQ(let->var.dtype(), DType::Int(32));
  EXPECT_EQ(Collect(narrowed).indices, (std::vector<DType>{DType::Int(32), DType::Int(32)}));
  // A let of a value read from memory keeps its type.
  Buffer idx = CreateBuffer("I", DType::Index(), {Expr(8)});
  Stmt data_let = For::make(i, 0, 8, ForKind::kSerial,
                            LetStmt::make(any, Load::make(idx, i), Store::make(c, Expr(0.0f), any)));
  const LetStmt* kept = NarrowIndexMath(data_let, WithLoopVariables()).as<For>()->body.as<LetStmt>();
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->var.dtype(), DType::Index());
}

// A 3x3 depthwise convolution with padding 1 (negative and past-the-end taps,
// floor division by the channel count) computes the same numbers lowered with
// and without narrowing, and the narrowed kernel has only int32 counters.
TEST(IndexMathTest, LoweredPaddedDepthwiseConvolutionIsUnchanged) {
  using namespace te;  // NOLINT
  const int64_t h = 7, w = 5, ch = 3;
  Tensor x = placeholder({Expr(h * w * ch)}, DType::Float(32), "X");
  Tensor k = placeholder({Expr(9 * ch)}, DType::Float(32), "K");
  IterVar ry = reduce_axis({0, Expr(3)}, "ry"), rx = reduce_axis({0, Expr(3)}, "rx");
  Tensor y = compute({Expr(h * w * ch)}, [&](Var o) {
    Expr c = floormod(o, ch), col = floormod(floordiv(o, ch), w), row = floordiv(o, w * ch);
    Expr iy = row + ry - 1, ix = col + rx - 1;
    Expr inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
    Expr flat = max(min((iy * w + ix) * ch + c, h * w * ch - 1), 0);
    return sum(select(inside, x(flat), Expr(0.0f)) * k((ry * 3 + rx) * ch + c), {ry, rx});
  }, "Y");
  std::vector<float> xv = testing::RandomData(h * w * ch, 5), kv = testing::RandomData(9 * ch, 6);
  std::vector<std::vector<float>> outputs;
  for (bool narrow : {false, true}) {
    Schedule s = create_schedule({y});
    LowerOptions options;
    options.narrow_index_math = narrow;
    LoweredFunc f = Lower(s, {x, k, y}, "dw", options);
    std::vector<float> yv(h * w * ch, -1.0f);
    ASSERT_EQ(loop_eval::RunFloat(f, {&xv, &kv, &yv}), 0);
    outputs.push_back(yv);
    for (DType t : Collect(f.body).loops) EXPECT_EQ(t, narrow ? DType::Int(32) : DType::Index()) << ToString(f);
  }
  EXPECT_EQ(outputs[0], outputs[1]);
}

}  // namespace
}  // namespace lower
}  // namespace agate
