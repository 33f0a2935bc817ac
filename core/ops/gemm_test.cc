// The GEMM template (gemm.h, gemm_plan.h): the plan derived from the target
// description, and products of every awkward shape through LowerGroup against
// the reference interpreter: M, N, K from 1 to above 1000, primes, transposed
// operands, run-time and constant B, batches with broadcasting, fused
// epilogues, K sliced, 1 and 2 threads. Small shapes also run on the loop-IR
// interpreter; large ones only as compiled code (the interpreter is slow).
#include <gtest/gtest.h>

#include "core/graph/testing/graph_builder.h"
#include "core/ir/printer.h"
#include "core/ops/gemm_plan.h"
#include "core/ops/lower_group.h"
#include "core/ops/testing/reference_check.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::Shape;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::AddDenseBiasErfGelu;
using graph::testing::Finish;
using graph::testing::RandomTensor;
using testing::CheckAgainstReference;
using testing::CheckOptions;

const ir::DType kF32 = ir::DType::Float(32);

target::Target Avx512() { return target::Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -cache-kb=48,1024,32768"); }

// ---------------------------------------------------------------- the plan

TEST(GemmPlanTest, RegisterTileFillsTheRegistersAndHidesTheFmaLatency) {
  for (const char* text : {"llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512", "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell",
                           "llvm -mtriple=aarch64-linux-gnu"}) {
    target::Target t = target::Target::Parse(text);
    GemmPlan p = PlanGemm({1, 1024, 1024, 1024}, kF32, t, {});
    int64_t lanes = t.NativeLanes(kF32), vectors = p.nr / lanes;
    EXPECT_EQ(p.nr % lanes, 0) << text;
    EXPECT_LE(p.mr * vectors + vectors + 1, t.vector_registers()) << text << ": " << p.mr << "x" << p.nr;
    EXPECT_GE(p.mr * vectors, 8) << text << ": too few accumulators for the FMA latency";
  }
}

TEST(GemmPlanTest, RaggedShapesGetTilesThatWasteLittle) {
  // 197 rows: a tile height that leaves most of a tile empty in the last row
  // block costs more than one that divides (or nearly divides) 197.
  GemmPlan p = PlanGemm({1, 197, 3072, 768}, kF32, Avx512(), {});
  EXPECT_LE(p.padded_rows() - 197, 197 / 20 + 1) << p.Describe({1, 197, 3072, 768});
  // A narrow product (N = 20) gets one vector of columns, not two.
  GemmPlan narrow = PlanGemm({1, 256, 20, 64}, kF32, Avx512(), {});
  EXPECT_LE(narrow.padded_n(), 32);
}

// A task reads all its rows of A once per column block, so when A outgrows L2 the tile's
// panel count matters: 1024 columns make 43 panels of 24 (prime: blocks of one panel, A read
// 43 times) but 64 panels of 16 (blocks of 4, A read 16 times). On the AVX2 EPYC the 4x24
// tile ran 1024^3 at 0.85-0.91x oneDNN, the 6x16 one at 0.97-1.08x.
TEST(GemmPlanTest, TheTileKeepsColumnBlocksFewWhenAIsReadFromBeyondL2) {
  target::Target avx2 = target::Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -cache-kb=32,512,65536");
  GemmShape square{1, 1024, 1024, 1024};
  GemmPlan p = PlanGemm(square, kF32, avx2, {});
  EXPECT_LE(p.col_blocks(), 16) << p.Describe(square);
  EXPECT_EQ(p.padded_n(), 1024) << p.Describe(square);
  // An A that stays in L2 (61 x 1031 floats, 246 KiB) is read again from there: no charge,
  // and the tile is the one with the least padding and the most accumulators.
  GemmShape small_a{1, 61, 97, 1031};
  LowerGroupOptions o;
  GemmPlan q = PlanGemm(small_a, kF32, avx2, o);
  EXPECT_LE(q.padded_n() - 97, 15) << q.Describe(small_a);
}

TEST(GemmPlanTest, KIsSlicedOnlyWhenThePanelOutgrowsL2) {
  target::Target big = Avx512();
  target::Target small = target::Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -cache-kb=32,256,0");
  GemmShape s{1, 512, 512, 3072};
  LowerGroupOptions two_vectors;
  two_vectors.dense_n_block = 32;
  GemmPlan whole = PlanGemm(s, kF32, big, two_vectors);
  EXPECT_EQ(whole.kc, 3072) << whole.Describe(s);  // a 3072 x 32 panel: 384 KiB of the 1 MiB L2
  GemmPlan sliced = PlanGemm(s, kF32, small, two_vectors);
  EXPECT_LT(sliced.kc, 3072) << sliced.Describe(s);
  EXPECT_LE(sliced.kc * sliced.nr * 4, 256 * 1024 / 2) << sliced.Describe(s);
  // Blocks follow the cache: a larger L2 never gets smaller blocks.
  EXPECT_GE(whole.row_block * whole.col_block * whole.kc, sliced.row_block * sliced.col_block * sliced.kc);
}

TEST(GemmPlanTest, BlocksDivideTheTilesAndFeedTheThreads) {
  GemmShape s{1, 197, 3072, 768};
  GemmPlan p = PlanGemm(s, kF32, Avx512(), {});
  EXPECT_EQ(p.row_tiles % p.row_block, 0);
  EXPECT_EQ(p.panels % p.col_block, 0);
  EXPECT_TRUE(p.parallel);
  EXPECT_GE(p.tasks(s), 8) << p.Describe(s);
  EXPECT_FALSE(p.parallel_rows) << "enough column blocks: each task packs its B block once";
  // Few columns: the row blocks join the parallel loop.
  GemmShape tall{1, 4099, 23, 67};
  GemmPlan t = PlanGemm(tall, kF32, Avx512(), {});
  EXPECT_TRUE(t.parallel_rows) << t.Describe(tall);
  EXPECT_GE(t.tasks(tall), 8) << t.Describe(tall);
  // A tiny product is not worth a fork.
  EXPECT_FALSE(PlanGemm({1, 4, 16, 8}, kF32, Avx512(), {}).parallel);
  LowerGroupOptions serial;
  serial.allow_parallel = false;
  EXPECT_FALSE(PlanGemm(s, kF32, Avx512(), serial).parallel);
}

TEST(GemmPlanTest, RowBlocksThatPackBAtRunTimeStayTall) {
  // With B a constant, the row blocks of a small product shrink until the threads
  // are fed; packed at run time, every row block packs B again, so they keep >= 32 rows.
  GemmShape weights{1, 128, 128, 128};
  GemmPlan w = PlanGemm(weights, kF32, Avx512(), {});
  ASSERT_TRUE(w.parallel_rows) << w.Describe(weights);
  EXPECT_GE(w.tasks(weights), 8) << w.Describe(weights);
  GemmShape runtime = weights;
  runtime.b_packed_at_run_time = true;
  GemmPlan r = PlanGemm(runtime, kF32, Avx512(), {});
  ASSERT_TRUE(r.pack_per_block);
  EXPECT_GE(r.row_block * r.mr, 32) << r.Describe(runtime);
  EXPECT_LT(r.row_block * r.mr, 128) << "still split for the threads: " << r.Describe(runtime);
  EXPECT_EQ(r.row_tiles % r.row_block, 0);
  // The knob still decides when given.
  LowerGroupOptions o;
  o.dense_row_block = 8;
  EXPECT_LE(PlanGemm(runtime, kF32, Avx512(), o).row_block * r.mr, 8 + r.mr);
}

TEST(GemmPlanTest, KnobsOverrideTheDerivedValues) {
  LowerGroupOptions o;
  o.dense_m_block = 4;
  o.dense_n_block = 48;
  o.dense_k_block = 100;
  o.dense_row_block = 8;
  o.dense_col_block = 96;
  GemmShape s{1, 64, 192, 300};
  GemmPlan p = PlanGemm(s, kF32, Avx512(), o);
  EXPECT_EQ(p.mr, 4);
  EXPECT_EQ(p.nr, 48);
  EXPECT_EQ(p.kc, 100);
  EXPECT_EQ(p.row_block, 2);  // 8 rows = 2 tiles of 4
  EXPECT_EQ(p.col_block, 2);  // 96 columns = 2 panels of 48
  EXPECT_TRUE(p.parallel_rows) << "2 column blocks are too few tasks";
  o.dense_parallel_rows = 0;
  EXPECT_FALSE(PlanGemm(s, kF32, Avx512(), o).parallel_rows);
  // A scalar target (no SIMD) takes the knob's column count as it is.
  target::Target c = target::Target::Parse("c");
  EXPECT_EQ(PlanGemm(s, kF32, target::Target::Parse("llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4"), o).nr, 48);
  EXPECT_GT(PlanGemm(s, kF32, c, {}).mr, 1);
}

// ---------------------------------------------------------------- correctness

// A [batch_a..., M, K] x B through MatMul; B constant (a weight) or an input,
// optionally given transposed ([.., N, K]) through a Transpose that fuses into
// the product.
::testing::AssertionResult CheckMatMul(const Shape& a, const Shape& b, bool b_constant, bool b_transposed,
                                       CheckOptions options = {}) {
  Graph g;
  g.AddInput("a", TensorType{kF32, a});
  Shape stored = b;
  if (b_transposed) std::swap(stored[stored.size() - 1], stored[stored.size() - 2]);
  if (b_constant) {
    g.AddConstant("b", RandomTensor(stored, 7));
  } else {
    g.AddInput("b", TensorType{kF32, stored});
  }
  std::string operand = "b";
  if (b_transposed) {
    std::vector<int64_t> perm;
    for (size_t i = 0; i + 2 < b.size(); ++i) perm.push_back(static_cast<int64_t>(i));
    perm.push_back(static_cast<int64_t>(b.size() - 1));
    perm.push_back(static_cast<int64_t>(b.size() - 2));
    Add(&g, "Transpose", "t", {"b"}, {"bt"}, {{"perm", Attribute(perm)}});
    operand = "bt";
  }
  Add(&g, "MatMul", "mm", {"a", operand}, {"y"});
  return CheckAgainstReference(Finish(g, {"y"}), options);
}

std::string Describe(const Shape& a, const Shape& b) { return graph::ShapeToString(a) + " x " + graph::ShapeToString(b); }

TEST(GemmTest, RaggedShapesOnBothBackends) {
  // (M, K, N) small enough for the loop-IR interpreter: primes, 1s, sizes just
  // above and below register tiles and vector lanes.
  const std::vector<std::array<int64_t, 3>> shapes = {
      {2, 1, 2}, {2, 3, 1}, {3, 1, 17}, {5, 7, 3}, {7, 13, 33}, {17, 5, 16}, {31, 17, 47}, {13, 29, 64}, {16, 16, 31}};
  for (const auto& [m, k, n] : shapes) {
    for (bool constant : {false, true}) {
      for (bool transposed : {false, true}) {
        EXPECT_TRUE(CheckMatMul({m, k}, {k, n}, constant, transposed))
            << m << "x" << k << "x" << n << (constant ? " constant" : " run-time") << (transposed ? " B^T" : "");
      }
    }
  }
}

TEST(GemmTest, LargeRaggedShapesCompiled) {
  CheckOptions compiled;
  compiled.eval = false;
  compiled.tolerance = 1e-3;  // sums of up to 4099 products
  const std::vector<std::array<int64_t, 3>> shapes = {
      {1031, 67, 131}, {97, 1009, 101}, {7, 4099, 37}, {1000, 3, 1000}, {257, 259, 263}, {2, 1024, 1025}};
  for (const auto& [m, k, n] : shapes) {
    for (bool constant : {false, true}) {
      bool transposed = (m + k + n) % 2 == 0;  // half the shapes with B^T
      EXPECT_TRUE(CheckMatMul({m, k}, {k, n}, constant, transposed, compiled))
          << m << "x" << k << "x" << n << (constant ? " constant" : " run-time") << (transposed ? " B^T" : "");
    }
  }
}

TEST(GemmTest, BatchesWithBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 19, 8}, {3, 8, 23}},        // attention-like: both batched
      {{2, 1, 9, 5}, {3, 5, 7}},       // broadcast batch dims on both sides
      {{2, 3, 5, 8}, {8, 7}},          // B shared: the batch folds into the rows
      {{9, 5}, {4, 5, 11}},            // A shared by every batch of B
      {{1, 1, 6, 4}, {1, 4, 33}},      // batch dims of 1 only
      {{2, 12, 17, 16}, {2, 12, 16, 17}},
  };
  for (const auto& [a, b] : cases) {
    for (bool transposed : {false, true}) EXPECT_TRUE(CheckMatMul(a, b, false, transposed)) << Describe(a, b);
  }
  EXPECT_TRUE(CheckMatMul({4, 6, 16}, {16, 40}, true, false)) << "constant B, batched A";
  CheckOptions two_threads;
  two_threads.eval = false;
  two_threads.threads = 2;
  EXPECT_TRUE(CheckMatMul({12, 197, 64}, {12, 64, 197}, false, true, two_threads)) << "attention scores";
  EXPECT_TRUE(CheckMatMul({12, 197, 197}, {12, 197, 64}, false, false, two_threads)) << "attention values";
}

// The K slice, register tile and blocks forced through the knobs: every
// combination must compute the same product, on 1 and 2 threads.
TEST(GemmTest, KnobsAndThreads) {
  struct Knobs {
    int m_block, n_block, k_block, row_block, col_block, parallel_rows;
  };
  for (const Knobs& k : std::vector<Knobs>{{3, 16, 7, 0, 0, -1}, {5, 48, 0, 10, 48, 1}, {1, 16, 0, 1, 16, 0},
                                           {6, 32, 64, 12, 32, 1}, {0, 0, 5, 0, 0, 0}}) {
    for (int threads : {1, 2}) {
      CheckOptions o;
      o.eval = threads == 1 && k.k_block != 64;
      o.threads = threads;
      o.lower.dense_m_block = k.m_block;
      o.lower.dense_n_block = k.n_block;
      o.lower.dense_k_block = k.k_block;
      o.lower.dense_row_block = k.row_block;
      o.lower.dense_col_block = k.col_block;
      o.lower.dense_parallel_rows = k.parallel_rows;
      Shape a = o.eval ? Shape{23, 19} : Shape{131, 300};
      Shape b = o.eval ? Shape{19, 37} : Shape{300, 97};
      EXPECT_TRUE(CheckMatMul(a, b, threads == 2, false, o))
          << k.m_block << "x" << k.n_block << " kc " << k.k_block << " blocks " << k.row_block << "x" << k.col_block
          << ", " << threads << " thread(s)";
    }
  }
}

// Gemm (transA, transB, alpha, beta, C) with the epilogue at the register tile,
// and MatMul + bias + GELU as exporters write it, on ragged shapes.
TEST(GemmTest, FusedEpilogues) {
  for (int ta : {0, 1}) {
    for (int tb : {0, 1}) {
      for (bool constant : {false, true}) {
        Graph g;
        int64_t m = 37, k = 21, n = 45;
        g.AddInput("a", TensorType{kF32, ta ? Shape{k, m} : Shape{m, k}});
        Shape bs = tb ? Shape{n, k} : Shape{k, n};
        if (constant) {
          g.AddConstant("b", RandomTensor(bs, 3));
        } else {
          g.AddInput("b", TensorType{kF32, bs});
        }
        g.AddConstant("c", RandomTensor({m, 1}, 4));
        Add(&g, "Gemm", "gemm", {"a", "b", "c"}, {"y"},
            {{"transA", Attribute(int64_t{ta})}, {"transB", Attribute(int64_t{tb})}, {"alpha", Attribute(0.5)},
             {"beta", Attribute(2.0)}});
        EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << "transA " << ta << " transB " << tb << " constant " << constant;
      }
    }
  }
  Graph g;
  g.AddInput("x", TensorType{kF32, {2, 29, 24}});
  AddDenseBiasErfGelu(&g, "x", 24, 53, "y");
  Graph finished = Finish(g, {"y"});
  Graph fused = testing::Fuse(finished);
  ASSERT_EQ(fused.groups.size(), 1u);
  GroupKernel kernel = LowerGroup(fused, fused.groups[0], target::Target::Host(), "gelu_gemm");
  EXPECT_NE(kernel.schedule_summary.find("gemm"), std::string::npos) << kernel.schedule_summary;
  EXPECT_NE(kernel.schedule_summary.find("epilogue"), std::string::npos) << kernel.schedule_summary;
  EXPECT_TRUE(CheckAgainstReference(finished));
  CheckOptions sliced;
  sliced.lower.dense_k_block = 8;  // the epilogue then reads the block's buffer
  EXPECT_TRUE(CheckAgainstReference(finished, sliced));
}

// Groups that write more than the product's tile: one group holding the product,
// its epilogue and a Transpose after it (`all` fusion), and a product that is
// also an output of its own; padded (ragged) and unpadded shapes.
TEST(GemmTest, ProductsInLargerGroups) {
  for (int64_t n : {29, 32}) {
    auto graph = [&](bool transpose, std::vector<std::string> outputs) {
      Graph g;
      g.AddInput("a", TensorType{kF32, {2, 19, 12}});
      g.AddConstant("w", RandomTensor({12, n}, 3));
      g.AddConstant("bias", RandomTensor({n}, 4));
      Add(&g, "MatMul", "mm", {"a", "w"}, {"m"});
      Add(&g, "Add", "bias_add", {"m", "bias"}, {"h"});
      if (transpose) Add(&g, "Transpose", "t", {"h"}, {"y"}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
      return Finish(g, outputs);
    };
    CheckOptions one_group;
    one_group.one_group = true;
    EXPECT_TRUE(CheckAgainstReference(graph(true, {"y"}), one_group)) << "N " << n;
    EXPECT_TRUE(CheckAgainstReference(graph(true, {"y", "m"}), one_group)) << "N " << n << ", product also an output";
    EXPECT_TRUE(CheckAgainstReference(graph(false, {"h", "m"}))) << "N " << n << ", rule fusion, two outputs";
    Graph fused = testing::Fuse(graph(true, {"y"}), /*one_group=*/true);
    GroupKernel kernel = LowerGroup(fused, fused.groups[0], target::Target::Host(), "k");
    EXPECT_NE(kernel.schedule_summary.find("gemm tile"), std::string::npos) << kernel.schedule_summary;
  }
}

// Transformer activations [batch, tokens, d] x weights: the batch folds into
// the rows; with a batch of 1 and ragged rows (197 tokens) the register tile
// must stay one tile (a bias Add reads the batch axis as a constant 0: fusing it
// into the rows made C' 197 rows per tile), and with a batch of 2 tiles
// straddle the batch boundary.
TEST(GemmTest, FoldedBatchKeepsRegisterTiles) {
  for (int64_t batch : {1, 2}) {
    Graph g;
    g.AddInput("x", TensorType{kF32, {batch, 197, 24}});
    g.AddConstant("w", RandomTensor({24, 40}, 5));
    g.AddConstant("bias", RandomTensor({40}, 6));
    Add(&g, "MatMul", "mm", {"x", "w"}, {"m"});
    Add(&g, "Add", "bias_add", {"m", "bias"}, {"h"});
    Add(&g, "Erf", "erf", {"h"}, {"e"});
    Add(&g, "Mul", "mul", {"h", "e"}, {"y"});
    Graph finished = Finish(g, {"y"});
    Graph fused = testing::Fuse(finished);
    ASSERT_EQ(fused.groups.size(), 1u);
    GroupKernel kernel = LowerGroup(fused, fused.groups[0], target::Target::Host(), "k");
    GemmPlan plan = PlanGemm({1, batch * 197, 40, 24}, kF32, target::Target::Host(), {});
    std::string text = ir::ToString(kernel.func);
    std::string tile = "m_gemm[float32 * " + std::to_string(plan.mr * plan.nr) + "]";
    EXPECT_NE(text.find(tile), std::string::npos) << "batch " << batch << ": expected " << tile << " in\n" << text;
    CheckOptions compiled;
    compiled.eval = batch == 1;
    EXPECT_TRUE(CheckAgainstReference(finished, compiled)) << "batch " << batch;
  }
}

// A transposed operand is read by the packing (or the row reads), not copied by
// a kernel of its own: the whole product is one kernel.
TEST(GemmTest, TransposedOperandsNeedNoKernelOfTheirOwn) {
  Graph g;
  g.AddInput("q", TensorType{kF32, {1, 10, 3, 8}});
  g.AddInput("k", TensorType{kF32, {1, 10, 3, 8}});
  Add(&g, "Transpose", "q_heads", {"q"}, {"qh"}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  Add(&g, "Transpose", "k_t", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  Add(&g, "MatMul", "scores", {"qh", "kt"}, {"y"});
  Graph finished = Finish(g, {"y"});
  Graph fused = testing::Fuse(finished);
  ASSERT_EQ(fused.groups.size(), 1u);
  GroupKernel kernel = LowerGroup(fused, fused.groups[0], target::Target::Host(), "scores");
  EXPECT_NE(kernel.schedule_summary.find("B packed per block"), std::string::npos) << kernel.schedule_summary;
  EXPECT_TRUE(CheckAgainstReference(finished));
}

}  // namespace
}  // namespace ops
}  // namespace agate
