// The fused attention kernel against the reference interpreter: with and without
// masks (run-time float, constant float with -inf, bool, causal), ragged
// sequence lengths (one and several key tiles, padded tails), head sizes that
// are and are not a multiple of the vector, grouped-query heads, and the head
// split fused into the kernel; on the loop-IR interpreter and as LLVM code.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/graph/testing/graph_builder.h"
#include "core/ops/testing/reference_check.h"
#include "core/target/target.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::RandomTensor;
using testing::CheckAgainstReference;
using testing::CheckOptions;

const ir::DType kF32 = ir::DType::Float(32);

enum class Mask { kNone, kRuntimePadding, kConstant, kBool };

struct Case {
  int64_t batch = 1, heads = 2, kv_heads = 2, sq = 5, skv = 5, d = 8, dv = 8;
  Mask mask = Mask::kNone;
  bool causal = false;
  double scale = 0;  // 0: the default 1/sqrt(d)
};

Graph AttentionGraph(const Case& c) {
  Graph g;
  g.AddInput("q", TensorType{kF32, {c.batch, c.heads, c.sq, c.d}});
  g.AddInput("k", TensorType{kF32, {c.batch, c.kv_heads, c.skv, c.d}});
  g.AddInput("v", TensorType{kF32, {c.batch, c.kv_heads, c.skv, c.dv}});
  std::vector<std::string> inputs = {"q", "k", "v"};
  if (c.mask == Mask::kRuntimePadding) {
    g.AddInput("mask", TensorType{kF32, {c.batch, 1, 1, c.skv}});
    inputs.push_back("mask");
  } else if (c.mask == Mask::kConstant) {
    graph::Tensor m = RandomTensor({c.sq, c.skv}, 11, -2, 2);
    for (int64_t i = 0; i < m.numel(); i += 3) m.SetDouble(i, -std::numeric_limits<double>::infinity());
    for (int64_t i = 0; i < c.sq; ++i) m.SetDouble(i * c.skv + (i % c.skv), 0.5);  // no row fully masked
    g.AddConstant("mask", m);
    inputs.push_back("mask");
  } else if (c.mask == Mask::kBool) {
    graph::Tensor m(ir::DType::Bool(), {c.batch, 1, c.sq, c.skv});
    for (int64_t i = 0; i < m.numel(); ++i) m.SetInt(i, (i * 5) % 7 != 0 || i % c.skv == 0);
    g.AddConstant("mask", m);
    inputs.push_back("mask");
  }
  std::vector<std::pair<std::string, Attribute>> attrs;
  if (c.causal) attrs.push_back({"is_causal", Attribute(int64_t{1})});
  if (c.scale != 0) attrs.push_back({"scale", Attribute(c.scale)});
  Add(&g, "Attention", "attention", inputs, {"y"}, attrs);
  return Finish(g, {"y"});
}

TEST(AttentionTest, SmallShapesOnBothBackends) {
  std::vector<Case> cases(4);
  cases[1].mask = Mask::kRuntimePadding;
  cases[1].batch = 2;
  cases[1].sq = 7;
  cases[1].skv = 13;  // one tile of 16 keys, 3 padded
  cases[2].causal = true;
  cases[2].sq = cases[2].skv = 9;
  cases[2].d = cases[2].dv = 20;  // not a multiple of the vector
  cases[3].mask = Mask::kBool;
  cases[3].heads = 4;
  cases[3].kv_heads = 2;  // grouped-query attention
  cases[3].dv = 12;
  cases[3].scale = 0.3;
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_TRUE(CheckAgainstReference(AttentionGraph(cases[i]))) << "case " << i;
}

// One key tile up to 256 keys (padded tails, causal with Sq != Skv, ViT's 197), several beyond (the
// online softmax across tiles).
TEST(AttentionTest, OneAndSeveralKeyTiles) {
  CheckOptions llvm_only;
  llvm_only.eval = false;
  std::vector<Case> cases(7);
  cases[0].sq = 17;
  cases[0].skv = 70;  // one tile of 80 keys, 10 padded
  cases[1].sq = 33;
  cases[1].skv = 130;
  cases[1].d = cases[1].dv = 64;
  cases[1].mask = Mask::kConstant;
  cases[2].sq = cases[2].skv = 128;
  cases[2].d = cases[2].dv = 64;
  cases[2].causal = true;
  cases[3].sq = 6;
  cases[3].skv = 150;
  cases[3].causal = true;  // upper-left aligned: query i sees keys 0..i
  cases[4].sq = 197;       // ViT-B/16's sequence, 3 heads of 64
  cases[4].skv = 197;
  cases[4].heads = cases[4].kv_heads = 3;
  cases[4].d = cases[4].dv = 64;
  cases[5].sq = 9;
  cases[5].skv = 300;  // several tiles, the last padded
  cases[5].d = cases[5].dv = 16;
  cases[5].mask = Mask::kConstant;
  cases[6].sq = cases[6].skv = 520;  // several tiles, causal: whole tiles masked out for early rows
  cases[6].heads = cases[6].kv_heads = 1;
  cases[6].causal = true;
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_TRUE(CheckAgainstReference(AttentionGraph(cases[i]), llvm_only)) << "case " << i;
  // The multi-tile path on the loop-IR interpreter too, kept small.
  Case small;
  small.sq = 3;
  small.skv = 267;
  small.d = small.dv = 4;
  small.mask = Mask::kRuntimePadding;
  EXPECT_TRUE(CheckAgainstReference(AttentionGraph(small)));
}

TEST(AttentionTest, TwoThreads) {
  Case c;
  c.batch = 2;
  c.heads = c.kv_heads = 3;
  c.sq = c.skv = 40;
  c.d = c.dv = 32;
  c.mask = Mask::kRuntimePadding;
  CheckOptions o;
  o.eval = false;
  o.threads = 2;
  EXPECT_TRUE(CheckAgainstReference(AttentionGraph(c), o));
}

// A row whose keys are all masked out is NaN (0 / 0), as in the reference.
TEST(AttentionTest, FullyMaskedRowIsNaN) {
  Graph g;
  g.AddInput("q", TensorType{kF32, {1, 1, 2, 4}});
  g.AddInput("k", TensorType{kF32, {1, 1, 3, 4}});
  g.AddInput("v", TensorType{kF32, {1, 1, 3, 4}});
  graph::Tensor m(ir::DType::Bool(), {2, 3});
  for (int64_t i = 0; i < 3; ++i) m.SetInt(3 + i, 1);  // row 0 sees nothing, row 1 everything
  g.AddConstant("mask", m);
  Add(&g, "Attention", "attention", {"q", "k", "v", "mask"}, {"y"});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"})));
}

// The head split (Reshape + Transpose of [B, S, H*D]) fuses into the attention kernel.
TEST(AttentionTest, HeadSplitFusesIntoTheKernel) {
  Graph g;
  int64_t s = 12, h = 2, d = 16;
  for (const char* in : {"q_in", "k_in", "v_in"}) g.AddInput(in, TensorType{kF32, {1, s, h * d}});
  for (const char* n : {"q", "k", "v"}) {
    std::string name(n);
    Add(&g, "Reshape", name + "_split", {name + "_in"}, {name + "4"},
        {{"shape", Attribute(std::vector<int64_t>{1, s, h, d})}});
    Add(&g, "Transpose", name + "_heads", {name + "4"}, {name}, {{"perm", Attribute(std::vector<int64_t>{0, 2, 1, 3})}});
  }
  Add(&g, "Attention", "attention", {"q", "k", "v"}, {"y"});
  Graph finished = Finish(g, {"y"});
  Graph fused = testing::Fuse(finished);
  ASSERT_EQ(fused.groups.size(), 1u);
  EXPECT_TRUE(CheckAgainstReference(finished));
}

// The register tile (query rows x two vectors) fits the target's vector registers with the two
// loaded vectors and a broadcast: 8 rows on AVX-512 (32 registers), at most 6 on AVX2 (16),
// where 8 rows spilled accumulators every step. The result matches the reference either way.
TEST(AttentionTest, QueryBlockFitsTheRegisterFile) {
  Case c;
  c.sq = c.skv = 48;
  c.d = c.dv = 64;
  c.causal = true;
  Graph finished = AttentionGraph(c);
  Graph fused = testing::Fuse(finished);
  ASSERT_EQ(fused.groups.size(), 1u);
  for (const auto& [text, most] : std::vector<std::pair<std::string, int64_t>>{
           {"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell", 6}, {"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512", 8}}) {
    target::Target t = target::Target::Parse(text);
    GroupKernel k = LowerGroup(fused, fused.groups[0], t, "attention");
    const size_t at = k.schedule_summary.find("query_block=");
    ASSERT_NE(at, std::string::npos) << k.schedule_summary;
    int64_t rows = std::stoll(k.schedule_summary.substr(at + 12));
    EXPECT_LE(rows, most) << text << ": " << k.schedule_summary;
    EXPECT_GE(rows, 4) << text << ": " << k.schedule_summary;
    if (most == 8) EXPECT_EQ(rows, 8) << text << ": " << k.schedule_summary;
  }
  CheckOptions o;
  o.cpu_target = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell";
  EXPECT_TRUE(CheckAgainstReference(finished, o));
}

}  // namespace
}  // namespace ops
}  // namespace agate
