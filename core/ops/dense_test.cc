// Gemm / MatMul (2-D, batched with broadcasting, vectors) and fused dense groups
// (dense + bias + GELU), against the reference interpreter.
#include <gtest/gtest.h>

#include <sstream>

#include "core/graph/testing/graph_builder.h"
#include "core/ir/printer.h"
#include "core/ops/lower_group.h"
#include "core/ops/testing/reference_check.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::AddDenseBiasErfGelu;
using graph::testing::Finish;
using graph::testing::RandomTensor;
using testing::CheckAgainstReference;

const ir::DType kF32 = ir::DType::Float(32);

TEST(DenseTest, GemmVariants) {
  struct Case {
    int64_t m, n, k;
    int ta, tb;
    bool c;
    double alpha, beta;
  };
  for (const Case& c : std::vector<Case>{{4, 32, 16, 0, 1, true, 1, 1},
                                         {5, 13, 7, 0, 0, true, 0.5, 2},
                                         {1, 48, 20, 1, 1, false, 1, 1},
                                         {7, 64, 9, 1, 0, true, 1, 0.25}}) {
    Graph g;
    g.AddInput("a", TensorType{kF32, c.ta ? graph::Shape{c.k, c.m} : graph::Shape{c.m, c.k}});
    g.AddConstant("b", RandomTensor(c.tb ? graph::Shape{c.n, c.k} : graph::Shape{c.k, c.n}, 3));
    std::vector<std::string> in{"a", "b"};
    if (c.c) {
      g.AddConstant("c", RandomTensor({c.n}, 4));
      in.push_back("c");
    }
    Add(&g, "Gemm", "gemm", in, {"y"},
        {{"transA", Attribute(int64_t{c.ta})}, {"transB", Attribute(int64_t{c.tb})}, {"alpha", Attribute(c.alpha)},
         {"beta", Attribute(c.beta)}});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << c.m << "x" << c.n << "x" << c.k;
  }
}

TEST(DenseTest, MatMulShapes) {
  std::vector<std::pair<graph::Shape, graph::Shape>> cases = {
      {{6, 16}, {16, 32}}, {{2, 3, 5, 8}, {8, 7}}, {{3, 1, 4, 6}, {2, 6, 16}}, {{9}, {9, 4}}, {{4, 9}, {9}}, {{5}, {5}}};
  for (const auto& [a, b] : cases) {
    Graph g;
    g.AddInput("a", TensorType{kF32, a});
    g.AddInput("b", TensorType{kF32, b});
    Add(&g, "MatMul", "mm", {"a", "b"}, {"y"});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << graph::ShapeToString(a) << " x " << graph::ShapeToString(b);
  }
}

// Constant weights (FC layers, transB or not; MatMul) are packed at compile
// time into [N/nb, K, nb] column panels that each output tile streams.
TEST(DenseTest, ConstantWeightsArePackedIntoPanels) {
  for (int tb : {0, 1}) {
    for (const char* op : {"Gemm", "MatMul"}) {
      if (std::string(op) == "MatMul" && tb) continue;
      Graph g;
      g.AddInput("a", TensorType{kF32, {1, 40}});
      g.AddConstant("b", RandomTensor(tb ? graph::Shape{64, 40} : graph::Shape{40, 64}, 9));
      std::vector<std::pair<std::string, Attribute>> attrs;
      if (std::string(op) == "Gemm") attrs.push_back({"transB", Attribute(int64_t{tb})});
      Add(&g, op, "fc", {"a", "b"}, {"y"}, attrs);
      Graph finished = Finish(g, {"y"});
      EXPECT_TRUE(CheckAgainstReference(finished)) << op << " transB=" << tb;
      Graph fused = testing::Fuse(finished);
      GroupKernel k = LowerGroup(fused, fused.groups[0], target::Target::Host(), "fc");
      bool panels = false;
      for (const KernelParam& p : k.params)
        panels |= p.kind == KernelParam::Kind::kConstant && p.constant.shape().size() == 3 && p.constant.shape()[1] == 40;
      EXPECT_TRUE(panels) << op << " transB=" << tb << ": " << k.schedule_summary;
    }
  }
}

// A wide N that no vector width divides (a vocabulary projection: GPT-2's 50257 = 29 x 1733)
// keeps vector-wide column tiles, the last one partial: panels padded with zero columns, the
// lanes past N masked. Before, such an N fell back to scalar columns (0.3 GFLOP/s on GPT-2's LM
// head). Checked with and without a bias epilogue, for a tail of one column and of most of a tile.
TEST(DenseTest, WideNThatNoVectorDividesKeepsVectorTiles) {
  for (int64_t n : {int64_t{16 * 32 + 1}, int64_t{16 * 32 + 29}, int64_t{1031}}) {
    for (bool bias : {false, true}) {
      Graph g;
      g.AddInput("a", TensorType{kF32, {1, 24}});
      g.AddConstant("b", RandomTensor(graph::Shape{24, n}, 5));
      Add(&g, "MatMul", "proj", {"a", "b"}, {bias ? "p" : "y"});
      if (bias) {
        g.AddConstant("c", RandomTensor(graph::Shape{n}, 6));
        Add(&g, "Add", "bias", {"p", "c"}, {"y"});
      }
      Graph finished = Finish(g, {"y"});
      EXPECT_TRUE(CheckAgainstReference(finished)) << "N=" << n << " bias=" << bias;
      Graph fused = testing::Fuse(finished);
      GroupKernel k = LowerGroup(fused, fused.groups[0], target::Target::Host(), "proj");
      const size_t at = k.schedule_summary.find("n_block=");
      ASSERT_NE(at, std::string::npos) << k.schedule_summary;
      EXPECT_GT(std::stoll(k.schedule_summary.substr(at + 8)), 1) << k.schedule_summary;
      // The product runs over whole tiles (zero columns past N): the only masked access is
      // the store of the last tile (and the bias read beside it). Masked loads and stores of
      // the accumulator kept it in memory: GPT-2's LM head ran 5-7x slower on AVX2.
      EXPECT_NE(k.schedule_summary.find("columns padded to whole tiles"), std::string::npos) << k.schedule_summary;
      std::istringstream lines(ir::ToString(k.func));
      for (std::string line; std::getline(lines, line);) {
        if (line.find(" if ") == std::string::npos || line.find("for (") != std::string::npos) continue;
        EXPECT_EQ(line.find_first_not_of(' '), line.find("y[")) << "a masked access other than the output's:\n"
                                                                 << ir::ToString(k.func);
      }
    }
  }
}

// Einsum through one generic contraction: batched matmul, a diagonal, a full
// sum, a transpose (no reduction), a broadcast size-1 axis and three operands.
TEST(DenseTest, EinsumEquations) {
  struct Case {
    std::string equation;
    std::vector<graph::Shape> shapes;
  };
  for (const Case& c : std::vector<Case>{{"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
                                         {"bii->bi", {{2, 3, 3}}},
                                         {"ij->", {{3, 4}}},
                                         {"ijk->kji", {{2, 3, 4}}},
                                         {"ij,ij->i", {{1, 4}, {3, 4}}},
                                         {"i,j,k->ijk", {{2}, {3}, {4}}}}) {
    Graph g;
    std::vector<std::string> in;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      in.push_back("x" + std::to_string(i));
      g.AddInput(in.back(), TensorType{kF32, c.shapes[i]});
    }
    Add(&g, "Einsum", "e", in, {"y"}, {{"equation", Attribute(c.equation)}});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << c.equation;
  }
}

TEST(DenseTest, FusedDenseBiasGelu) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {6, 24}});
  AddDenseBiasErfGelu(&g, "x", 24, 64, "y");
  Graph finished = Finish(g, {"y"});
  Graph fused = testing::Fuse(finished);
  ASSERT_EQ(fused.groups.size(), 1u);
  GroupKernel k = LowerGroup(fused, fused.groups[0], target::Target::Host(), "dense_gelu");
  EXPECT_NE(k.schedule_summary.find("epilogue at the register tile"), std::string::npos) << k.schedule_summary;
  EXPECT_TRUE(CheckAgainstReference(finished));
}

}  // namespace
}  // namespace ops
}  // namespace agate
