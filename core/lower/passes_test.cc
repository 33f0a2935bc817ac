// Unit tests of the individual loop-IR passes on hand-built IR.
#include <gtest/gtest.h>

#include "core/ir/printer.h"
#include "core/lower/kernel_memory_plan.h"
#include "core/lower/loop_partition.h"
#include "core/lower/unique_defs.h"
#include "core/lower/unroll.h"
#include "core/lower/vectorize.h"
#include "core/lower/verify.h"
#include "core/support/error.h"

namespace agate {
namespace lower {
namespace {

using namespace ir;  // NOLINT

bool Has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

TEST(VectorizeTest, ContiguousAccessBecomesRamps) {
  Buffer a = CreateBuffer("A", DType::Float(32), {Expr(64)});
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(64)});
  Var i("i"), j("j");
  Stmt s = For::make(i, 0, 8, ForKind::kSerial,
                     For::make(j, 0, 8, ForKind::kVectorized,
                               Store::make(c, Load::make(a, i * 8 + j) * 2.0f + Load::make(a, i), i * 8 + j)));
  std::string t = ToString(VectorizeLoops(s));
  EXPECT_EQ(t,
            "for (i, 0, 8) {\n"
            "  C[ramp(i*8, 1, 8)] = A[ramp(i*8, 1, 8)]*x8(2.0f) + x8(A[i])\n"
            "}\n");
}

TEST(VectorizeTest, LaneDependentGuardsBecomeMasks) {
  Buffer a = CreateBuffer("A", DType::Float(32), {Expr(64)});
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(64)});
  Var j("j");
  Stmt guarded = For::make(j, 0, 8, ForKind::kVectorized, IfThenElse::make(j < 5, Store::make(c, Load::make(a, j), j)));
  EXPECT_EQ(ToString(VectorizeLoops(guarded)),
            "C[ramp(0, 1, 8) if ramp(0, 1, 8) < x8(5)] = A[ramp(0, 1, 8) if ramp(0, 1, 8) < x8(5)]\n");
  Stmt with_else = For::make(j, 0, 8, ForKind::kVectorized,
                             IfThenElse::make(j < 5, Store::make(c, Load::make(a, j), j), Store::make(c, Expr(0.0f), j)));
  EXPECT_TRUE(Has(ToString(VectorizeLoops(with_else)), "for (j, 0, 8) vectorized"));
}

// Under a tail guard, a read of the kernel's own buffer that stays inside it needs no lane
// mask (its inactive lanes reach only the guard's masked stores); an unmasked read is what
// lets the code generator keep a register tile's accumulator in registers. Reads of other
// buffers, reads past the allocation and reads with a predicate of their own keep theirs.
TEST(VectorizeTest, InBoundsReadsOfLocalBuffersUnderAGuardAreNotMasked) {
  Buffer acc = CreateBuffer("acc", DType::Float(32), {Expr(8)});
  Buffer small = CreateBuffer("small", DType::Float(32), {Expr(4)});
  Buffer a = CreateBuffer("A", DType::Float(32), {Expr(64)});
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(64)});
  Var j("j");
  auto guarded = [&](const Expr& value) {
    return For::make(j, 0, 8, ForKind::kVectorized, IfThenElse::make(j < 5, Store::make(c, value, j)));
  };
  auto in_allocations = [&](const Stmt& body) {
    return Allocate::make(acc, {Expr(int64_t{8})}, 64, MemoryScope::kLocal,
                          Allocate::make(small, {Expr(int64_t{4})}, 64, MemoryScope::kLocal, body));
  };
  EXPECT_EQ(ToString(VectorizeLoops(in_allocations(guarded(Load::make(acc, j) + Load::make(a, j))))),
            "allocate acc[float32 * 8], local, align 64\n"
            "allocate small[float32 * 4], local, align 64\n"
            "C[ramp(0, 1, 8) if ramp(0, 1, 8) < x8(5)] = acc[ramp(0, 1, 8)] + A[ramp(0, 1, 8) if ramp(0, 1, 8) < x8(5)]\n");
  // Eight lanes of a four-element buffer: lanes 4.. would read past it.
  EXPECT_TRUE(Has(ToString(VectorizeLoops(in_allocations(guarded(Load::make(small, j))))), "small[ramp(0, 1, 8) if"));
  // A read with its own predicate (a padding select's "reads 0 when false") keeps it.
  EXPECT_TRUE(Has(ToString(VectorizeLoops(in_allocations(guarded(Load::make(acc, j, j > 1))))), "acc[ramp(0, 1, 8) if"));
  // Outside its allocation the buffer's size is unknown here: masked.
  EXPECT_TRUE(Has(ToString(VectorizeLoops(guarded(Load::make(acc, j)))), "acc[ramp(0, 1, 8) if"));
}

TEST(VectorizeTest, ReductionsOverTheLaneAndWideLoopsStayScalar) {
  Buffer a = CreateBuffer("A", DType::Float(32), {Expr(64)});
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(64)});
  Var j("j");
  Stmt reduce = For::make(j, 0, 8, ForKind::kVectorized,
                          Store::make(c, Load::make(c, Expr(int64_t{0})) + Load::make(a, j), Expr(int64_t{0})));
  EXPECT_TRUE(Has(ToString(VectorizeLoops(reduce)), "vectorized"));
  Stmt too_wide = For::make(j, 0, 64, ForKind::kVectorized, Store::make(c, Load::make(a, j), j));
  EXPECT_TRUE(Has(ToString(VectorizeLoops(too_wide, 16)), "vectorized"));
}

// A guard linear in the loop variable splits the loop into a guard-free main
// part and a tail. A guard on floormod(f, 3) is not linear (its first three
// values only look so); partitioning on it isolated a guard-free head of 2 of
// 12 iterations and left the rest guarded. Parallel loops are not partitioned.
TEST(LoopPartitionTest, OnlyLinearGuardsOfSerialLoops) {
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(64)});
  Var i("i"), j("j"), f("f");
  auto guarded = [&](const Var& outer, ForKind kind, Expr row, int64_t bound) {
    return For::make(outer, 0, 5, kind,
                     For::make(j, 0, 8, ForKind::kSerial,
                               IfThenElse::make(row * 8 + j < Expr(bound), Store::make(c, Expr(1.0f), row * 8 + j))));
  };
  std::string linear = ToString(PartitionLoops(guarded(i, ForKind::kSerial, i, 37)));
  EXPECT_TRUE(Has(linear, "for (i, 0, 4)")) << linear;
  EXPECT_TRUE(Has(linear, "for (j, 0, 5)")) << linear;  // the tail, its one iteration unrolled
  EXPECT_FALSE(Has(linear, "if (")) << linear;
  std::string modular = ToString(PartitionLoops(guarded(f, ForKind::kSerial, floormod(f, 3), 20)));
  EXPECT_FALSE(Has(modular, "f.tail")) << modular;  // (the inner j loop still splits: linear in j)
  std::string parallel = ToString(PartitionLoops(guarded(i, ForKind::kParallel, i, 37)));
  EXPECT_FALSE(Has(parallel, "i.tail")) << parallel;
}

// A read padded by bounds (PaddedRead: a select on both sides of the input, the
// index clamped) cuts the output loop in three: the first row (reads above the
// input), the interior (no test, no clamp) and the last row. The guard's other
// term ranges over the window loop nested inside. A guard true nowhere (a row
// past every output) or everywhere splits nothing.
TEST(LoopPartitionTest, PaddedReadsCutHeadInteriorAndTail) {
  Buffer x = CreateBuffer("X", DType::Float(32), {Expr(8)});
  Buffer y = CreateBuffer("Y", DType::Float(32), {Expr(8)});
  Var oh("oh"), kh("kh");
  auto padded = [&](int64_t rows, int64_t pad) {
    Expr row = oh - Expr(pad) + kh;
    Expr clamped = min(max(row, Expr(int64_t{0})), Expr(int64_t{7}));
    Expr read = select(row >= Expr(int64_t{0}) && row < Expr(int64_t{8}), Load::make(x, clamped), Expr(0.0f));
    return For::make(oh, 0, rows, ForKind::kSerial,
                     For::make(kh, 0, 3, ForKind::kSerial, Store::make(y, Load::make(y, oh) + read, oh)));
  };
  std::string conv = ToString(PartitionLoops(padded(8, 1)));
  EXPECT_TRUE(Has(conv, "for (oh, 1, 6)")) << conv;  // the interior: rows 1..6
  EXPECT_TRUE(Has(conv, "Y[oh] + X[oh + kh - 1]")) << conv;  // neither the select nor the clamp
  // The first and last rows, their window loops cut in turn (taps that read padding dropped).
  EXPECT_TRUE(Has(conv, "Y[0] = Y[0] + X[kh - 1]")) << conv;
  EXPECT_TRUE(Has(conv, "Y[7] = Y[7] + X[kh + 6]")) << conv;
  EXPECT_FALSE(Has(conv, "select")) << conv;
  // No padding on the left (pad 0): only the last rows read past the input.
  std::string right = ToString(PartitionLoops(padded(8, 0)));
  EXPECT_TRUE(Has(right, "for (oh, 0, 6)")) << right;
  EXPECT_TRUE(Has(right, "Y[oh] + X[oh + kh]")) << right;
  EXPECT_FALSE(Has(right, "oh.head")) << right;
  // Two output rows of a 3-tap window padded by 1: no row is free of both tests.
  std::string narrow = ToString(PartitionLoops(For::make(
      oh, 0, 2, ForKind::kSerial,
      For::make(kh, 0, 3, ForKind::kSerial,
                Store::make(y, select(oh * 7 - 1 + kh >= Expr(int64_t{0}) && oh * 7 - 1 + kh < Expr(int64_t{8}),
                                      Load::make(x, min(max(oh * 7 - 1 + kh, Expr(int64_t{0})), Expr(int64_t{7}))),
                                      Expr(0.0f)),
                            oh)))));
  EXPECT_TRUE(Has(narrow, "for (oh, 0, 2)")) << narrow;
  EXPECT_TRUE(Has(narrow, "select")) << narrow;
}

TEST(UnrollTest, ConstantLoopsUnrollOthersStay) {
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(64)});
  Var i("i"), n("n");
  Stmt s = For::make(i, 0, 3, ForKind::kUnrolled, Store::make(c, Expr(1.0f), i * 2));
  EXPECT_EQ(ToString(UnrollLoops(s)), "C[0] = 1.0f\nC[2] = 1.0f\nC[4] = 1.0f\n");
  Stmt v = For::make(i, 0, n, ForKind::kUnrolled, Store::make(c, Expr(1.0f), i));
  EXPECT_TRUE(Has(ToString(UnrollLoops(v)), "unrolled"));
  Stmt big = For::make(i, 0, 100, ForKind::kUnrolled, Store::make(c, Expr(1.0f), i));
  EXPECT_TRUE(Has(ToString(UnrollLoops(big, 64)), "for (i, 0, 100) unrolled"));
}

TEST(KernelMemoryPlanTest, LargeBuffersGoToTheWorkspaceSmallOnesToTheStack) {
  Buffer out = CreateBuffer("O", DType::Float(32), {Expr(4)});
  Buffer big = CreateBuffer("big", DType::Float(32), {Expr(10000)});
  Buffer big2 = CreateBuffer("big2", DType::Float(32), {Expr(5000)});
  Buffer small = CreateBuffer("small", DType::Float(32), {Expr(16)});
  Buffer tile = CreateBuffer("tile", DType::Float(32), {Expr(10000)});
  Var i("i");
  Stmt inner = Allocate::make(tile, {Expr(10000)}, 64, MemoryScope::kGlobal, Store::make(tile, Expr(1.0f), Expr(0)));
  Stmt body = Allocate::make(
      big, {Expr(10000)}, 64, MemoryScope::kGlobal,
      Allocate::make(big2, {Expr(5000)}, 64, MemoryScope::kGlobal,
                     Allocate::make(small, {Expr(16)}, 64, MemoryScope::kGlobal,
                                    Seq::make({Store::make(big, Expr(1.0f), Expr(0)), Store::make(big2, Expr(1.0f), Expr(0)),
                                               Store::make(small, Expr(1.0f), Expr(0)),
                                               For::make(i, 0, 4, ForKind::kParallel, inner)}))));
  KernelMemoryPlan r = PlanKernelMemory(body, 16384);
  std::string t = ToString(r.body);
  EXPECT_TRUE(Has(t, "allocate big[float32 * 10000], workspace, align 64, offset 0")) << t;
  EXPECT_TRUE(Has(t, "allocate big2[float32 * 5000], workspace, align 64, offset 40000")) << t;  // 40000 = 625*64
  EXPECT_TRUE(Has(t, "allocate small[float32 * 16], local")) << t;
  EXPECT_TRUE(Has(t, "allocate tile[float32 * 10000], local")) << "inside a parallel loop: per task\n" << t;
  EXPECT_EQ(r.workspace_bytes, 60000);
  LoweredFunc f{"k", {out}, r.body, r.workspace_bytes};
  VerifyLoweredFunc(f, "kernel_memory_plan", VerifyOptions{});
}

TEST(KernelMemoryPlanTest, SiblingWorkspaceAllocationsShareBytes) {
  Buffer x = CreateBuffer("x", DType::Float(32), {Expr(8000)});
  Buffer y = CreateBuffer("y", DType::Float(32), {Expr(6000)});
  Stmt body = Seq::make({Allocate::make(x, {Expr(8000)}, 64, MemoryScope::kGlobal, Store::make(x, Expr(1.0f), Expr(0))),
                         Allocate::make(y, {Expr(6000)}, 64, MemoryScope::kGlobal, Store::make(y, Expr(1.0f), Expr(0)))});
  KernelMemoryPlan r = PlanKernelMemory(body, 1024);
  std::string t = ToString(r.body);
  EXPECT_TRUE(Has(t, "allocate x[float32 * 8000], workspace, align 64, offset 0")) << t;
  EXPECT_TRUE(Has(t, "allocate y[float32 * 6000], workspace, align 64, offset 0")) << t;
  EXPECT_EQ(r.workspace_bytes, 32000);
}

TEST(UniqueDefsTest, RepeatedBindingsAreRenamed) {
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(8)});
  Buffer t = CreateBuffer("T", DType::Float(32), {Expr(8)}, MemoryScope::kLocal);
  Var i("i");
  Stmt loop = For::make(i, 0, 8, ForKind::kSerial, Store::make(c, Expr(1.0f), i));
  Stmt alloc = Allocate::make(t, {Expr(8)}, 64, MemoryScope::kLocal, Store::make(t, Expr(1.0f), Expr(0)));
  Stmt s = Seq::make({loop, loop, alloc, alloc});
  LoweredFunc f{"k", {c}, s, 0};
  EXPECT_THROW(VerifyLoweredFunc(f, "test", VerifyOptions{true, true}), Error);
  f.body = UniqueDefs(s);
  VerifyLoweredFunc(f, "unique_defs", VerifyOptions{true, true});
}

TEST(VerifyTest, CatchesBrokenInvariants) {
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(8)});
  Buffer t = CreateBuffer("T", DType::Float(32), {Expr(8)});
  Var i("i");
  LoweredFunc escaped{"k", {c}, Store::make(c, Expr(1.0f), i), 0};
  try {
    VerifyLoweredFunc(escaped, "my_pass", VerifyOptions{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInternal);
    EXPECT_TRUE(Has(e.message(), "after pass my_pass")) << e.message();
    EXPECT_TRUE(Has(e.message(), "variable i")) << e.message();
  }
  LoweredFunc unallocated{"k", {c}, Store::make(t, Expr(1.0f), Expr(0)), 0};
  EXPECT_THROW(VerifyLoweredFunc(unallocated, "p", VerifyOptions{}), Error);
  Buffer w = CreateBuffer("W", DType::Float(32), {Expr(8)});
  LoweredFunc ws{"k", {c},
                 For::make(i, 0, 2, ForKind::kParallel,
                           Allocate::make(w, {Expr(8)}, 64, MemoryScope::kWorkspace, Store::make(w, Expr(1.0f), i), 0)),
                 32};
  EXPECT_THROW(VerifyLoweredFunc(ws, "p", VerifyOptions{}), Error);
}

}  // namespace
}  // namespace lower
}  // namespace agate
