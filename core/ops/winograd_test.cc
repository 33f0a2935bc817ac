// Winograd F(m x m, 3x3) convolution (core/ops/winograd.h): the transform
// matrices against the direct 1-D filter, and forced-on blocked convs against
// the reference interpreter (loop-IR interpreter and LLVM), including tiles
// that overhang the output, padding 0 and 1, batch 2, both channel blocks, and
// the fused bias + relu + residual add epilogue.
//
// Tolerance: Winograd trades multiplies for transforms whose coefficients
// (up to 8 in A^T and 5.25 in B^T for F(4,3) with the default points) amplify
// fp32 rounding: on one tile summed over 256 channels the error is ~4e-6 of the
// largest output (Fp32ErrorOfThePoints; ~2e-5 with points 0, +-1, +-2, ~5x the
// direct conv's), so the graph checks use 1e-3 relative-and-absolute
// (|got - want| <= 1e-3 * (1 + |want|)) instead of the direct convs' 1e-4, with
// margin for the larger fused outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "core/graph/passes/layout_transformation.h"
#include "core/graph/printer.h"
#include "core/graph/testing/graph_builder.h"
#include "core/ops/knob_space.h"
#include "core/ops/lower_group.h"
#include "core/ops/testing/reference_check.h"
#include "core/ops/winograd.h"

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
constexpr double kWinogradTolerance = 1e-3;

// y_i = sum_k g_k d_(i+k) through A^T [(G g) (.) (B^T d)], in double.
TEST(WinogradTest, MatricesComputeTheFilter) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int m : {2, 4, 6}) {
    WinogradMatrices w = MakeWinogradMatrices(m, 3);
    ASSERT_EQ(w.alpha, m + 2);
    for (int trial = 0; trial < 10; ++trial) {
      std::vector<double> d(w.alpha), g(3);
      for (double& v : d) v = u(rng);
      for (double& v : g) v = u(rng);
      std::vector<double> prod(w.alpha);
      for (int e = 0; e < w.alpha; ++e) {
        double gg = 0, dd = 0;
        for (int k = 0; k < 3; ++k) gg += w.G(e, k) * g[k];
        for (int k = 0; k < w.alpha; ++k) dd += w.BT(e, k) * d[k];
        prod[e] = gg * dd;
      }
      for (int i = 0; i < m; ++i) {
        double want = 0, got = 0;
        for (int k = 0; k < 3; ++k) want += g[k] * d[i + k];
        for (int e = 0; e < w.alpha; ++e) got += w.AT(i, e) * prod[e];
        EXPECT_NEAR(got, want, 1e-9) << "m=" << m << " i=" << i;
      }
    }
  }
  // F(4, 3) with points 0, +-1, +-2 gives Lavin & Gray's integral B^T.
  WinogradMatrices w = MakeWinogradMatrices(4, 3, {0, 1, -1, 2, -2});
  std::vector<double> row0{4, 0, -5, 0, 1, 0}, row5{0, 4, 0, -5, 0, 1};
  for (int j = 0; j < 6; ++j) {
    EXPECT_EQ(w.BT(0, j), row0[j]);
    EXPECT_EQ(w.BT(5, j), row5[j]);
  }
  EXPECT_DOUBLE_EQ(w.G(0, 0), 0.25);
}

// The same for the filters of the 5x5 and one-dimensional convs (r = 5, 7), and
// F(1, 1), the identity along an axis the filter does not extend.
TEST(WinogradTest, MatricesComputeLongerFilters) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto [m, r] : std::vector<std::pair<int, int>>{{1, 1}, {2, 5}, {4, 5}, {2, 7}, {4, 7}}) {
    WinogradMatrices w = MakeWinogradMatrices(m, r);
    ASSERT_EQ(w.alpha, m + r - 1);
    for (int trial = 0; trial < 10; ++trial) {
      std::vector<double> d(w.alpha), g(r), prod(w.alpha);
      for (double& v : d) v = u(rng);
      for (double& v : g) v = u(rng);
      for (int e = 0; e < w.alpha; ++e) {
        double gg = 0, dd = 0;
        for (int k = 0; k < r; ++k) gg += w.G(e, k) * g[k];
        for (int k = 0; k < w.alpha; ++k) dd += w.BT(e, k) * d[k];
        prod[e] = gg * dd;
      }
      for (int i = 0; i < m; ++i) {
        double want = 0, got = 0;
        for (int k = 0; k < r; ++k) want += g[k] * d[i + k];
        for (int e = 0; e < w.alpha; ++e) got += w.AT(i, e) * prod[e];
        EXPECT_NEAR(got, want, 1e-9) << "F(" << m << ", " << r << ") i=" << i;
      }
    }
  }
}

// fp32 error of one F(m x m, 3x3) tile summed over 256 input channels (the
// transforms and products in float, the weights' transform in double as at
// compile time), relative to the largest |output|, against the direct sum in double.
double TileError(const WinogradMatrices& w, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  int a = w.alpha, m = w.m, channels = 256;
  std::vector<float> acc(a * a, 0.0f);
  std::vector<double> want(m * m, 0.0);
  for (int c = 0; c < channels; ++c) {
    std::vector<float> d(a * a);
    double g[3][3];
    for (float& v : d) v = u(rng);
    for (auto& row : g)
      for (double& v : row) v = u(rng);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j)
        for (int y = 0; y < 3; ++y)
          for (int x = 0; x < 3; ++x) want[i * m + j] += g[y][x] * d[(i + y) * a + j + x];
    for (int e = 0; e < a; ++e)
      for (int n = 0; n < a; ++n) {
        float v = 0;
        double uu = 0;
        for (int y = 0; y < a; ++y)
          for (int x = 0; x < a; ++x)
            v += static_cast<float>(w.BT(e, y)) * d[y * a + x] * static_cast<float>(w.BT(n, x));
        for (int y = 0; y < 3; ++y)
          for (int x = 0; x < 3; ++x) uu += w.G(e, y) * g[y][x] * w.G(n, x);
        acc[e * a + n] += static_cast<float>(uu) * v;
      }
  }
  double err = 0, scale = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) {
      float y = 0;
      for (int e = 0; e < a; ++e)
        for (int n = 0; n < a; ++n)
          y += static_cast<float>(w.AT(i, e)) * acc[e * a + n] * static_cast<float>(w.AT(j, n));
      err = std::max(err, std::fabs(y - want[i * m + j]));
      scale = std::max(scale, std::fabs(want[i * m + j]));
    }
  return err / scale;
}

// fp32 error of one one-dimensional F(m, r) tile (a 1 x r conv's) summed over
// 256 input channels, as TileError computes it.
double RowTileError(const WinogradMatrices& w, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  int a = w.alpha, m = w.m, r = w.r, channels = 256;
  std::vector<float> acc(a, 0.0f);
  std::vector<double> want(m, 0.0);
  for (int c = 0; c < channels; ++c) {
    std::vector<float> d(a);
    std::vector<double> g(r);
    for (float& v : d) v = u(rng);
    for (double& v : g) v = u(rng);
    for (int i = 0; i < m; ++i)
      for (int k = 0; k < r; ++k) want[i] += g[k] * d[i + k];
    for (int e = 0; e < a; ++e) {
      float v = 0;
      double uu = 0;
      for (int x = 0; x < a; ++x) v += static_cast<float>(w.BT(e, x)) * d[x];
      for (int k = 0; k < r; ++k) uu += w.G(e, k) * g[k];
      acc[e] += static_cast<float>(uu) * v;
    }
  }
  double err = 0, scale = 0;
  for (int i = 0; i < m; ++i) {
    float y = 0;
    for (int e = 0; e < a; ++e) y += static_cast<float>(w.AT(i, e)) * acc[e];
    err = std::max(err, std::fabs(y - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return err / scale;
}

// F(4, 7)'s default points (3/2 and -3/4 where the general list would go on
// with +-3) keep a 1x7 conv's error near F(4x4, 3x3)'s and below +-3's. The
// median over 41 tiles: the worst of a few tiles is one unlucky cancellation
// and ranks point sets no better than chance.
TEST(WinogradTest, Fp32ErrorOfTheSevenTapPoints) {
  auto median = [](const WinogradMatrices& w) {
    std::vector<double> e;
    for (uint32_t seed = 0; seed < 41; ++seed) e.push_back(RowTileError(w, seed));
    std::nth_element(e.begin(), e.begin() + 20, e.end());
    return e[20];
  };
  double chosen = median(MakeWinogradMatrices(4, 7));
  double threes = median(MakeWinogradMatrices(4, 7, {0, 1, -1, 2, -2, 0.5, -0.5, 3, -3}));
  double two = median(MakeWinogradMatrices(2, 7));
  double five = median(MakeWinogradMatrices(2, 5));
  std::vector<double> square;  // F(4x4, 3x3), the form ResNet-50 ships with
  for (uint32_t seed = 0; seed < 41; ++seed) square.push_back(TileError(MakeWinogradMatrices(4, 3), seed));
  std::nth_element(square.begin(), square.begin() + 20, square.end());
  double three = square[20];
  RecordProperty("f47_default_median", std::to_string(chosen));
  RecordProperty("f47_pm3_median", std::to_string(threes));
  RecordProperty("f27_median", std::to_string(two));
  RecordProperty("f25_median", std::to_string(five));
  RecordProperty("f44_33_median", std::to_string(three));
  EXPECT_LT(chosen, 2 * three) << "F(4, 7) " << chosen << " vs F(4x4, 3x3) " << three;
  EXPECT_LT(chosen * 1.3, threes) << "default " << chosen << " vs +-3: " << threes;
  EXPECT_LT(two, chosen);
  EXPECT_LT(five, chosen);
}

// The default F(4x4, 3x3) points keep the fp32 error within the tests'
// tolerance and below Lavin & Gray's 0, +-1, +-2 (the reason for the default);
// each set's error is recorded as a test property (in the XML report).
TEST(WinogradTest, Fp32ErrorOfThePoints) {
  auto worst = [](const WinogradMatrices& w) {
    double e = 0;
    for (uint32_t seed = 0; seed < 20; ++seed) e = std::max(e, TileError(w, seed));
    return e;
  };
  double chosen = worst(MakeWinogradMatrices(4, 3));
  double lavin = worst(MakeWinogradMatrices(4, 3, {0, 1, -1, 2, -2}));
  double halves = worst(MakeWinogradMatrices(4, 3, {0, 1, -1, 0.5, -0.5}));
  double two = worst(MakeWinogradMatrices(2, 3));
  RecordProperty("f43_default_0_pm1_half_m2", std::to_string(chosen));
  RecordProperty("f43_0_pm1_pm2", std::to_string(lavin));
  RecordProperty("f43_0_pm1_pmhalf", std::to_string(halves));
  RecordProperty("f23_0_pm1", std::to_string(two));
  EXPECT_LT(chosen, 1e-5);
  EXPECT_LT(chosen * 2, lavin) << "default " << chosen << " vs 0, +-1, +-2: " << lavin;
  EXPECT_LT(chosen, halves) << "default " << chosen << " vs 0, +-1, +-1/2: " << halves;
  EXPECT_LT(two, 1e-5);
}

struct Case {
  graph::Shape x, w;
  int64_t pad = 1;
  bool bias = true, relu = true;
  std::vector<int64_t> pads = {};  // ONNX pads (h begin, w begin, h end, w end); empty: `pad` on every side
};

Graph ConvGraph(const Case& c, int64_t stride = 1) {
  Graph g;
  g.AddInput("x", TensorType{kF32, c.x});
  g.AddConstant("w", RandomTensor(c.w, 5));
  std::vector<std::string> inputs{"x", "w"};
  if (c.bias) {
    g.AddConstant("b", RandomTensor({c.w[0]}, 6));
    inputs.push_back("b");
  }
  std::vector<std::pair<std::string, Attribute>> attrs{
      {"pads", Attribute(c.pads.empty() ? std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad} : c.pads)},
      {"strides", Attribute(std::vector<int64_t>{stride, stride})}};
  Add(&g, "Conv", "conv", inputs, {c.relu ? "c" : "y"}, attrs);
  if (c.relu) Add(&g, "Relu", "relu", {"c"}, {"y"});
  return Finish(g, {"y"});
}

// The schedule summaries of every conv group of `g` lowered with `o`.
std::vector<std::string> ConvSummaries(const Graph& g, const LowerGroupOptions& o) {
  Graph fused = testing::Fuse(g);
  std::vector<std::string> out;
  for (size_t i = 0; i < fused.groups.size(); ++i) {
    const graph::FusedGroup& group = fused.groups[i];
    if (group.anchor < 0 || fused.nodes[group.anchor].op != "Conv") continue;
    out.push_back(LowerGroup(fused, group, target::Target::Host(), "k" + std::to_string(i), o).schedule_summary);
  }
  return out;
}

CheckOptions Forced(int tile = 4) {
  CheckOptions o;
  o.tolerance = kWinogradTolerance;
  o.lower.conv_winograd = 1;
  o.lower.winograd_tile = tile;
  return o;
}

TEST(WinogradTest, ForcedBlockedConvsMatchReference) {
  std::vector<Case> cases = {
      {{1, 16, 8, 8}, {16, 16, 3, 3}},                 // whole tiles
      {{1, 32, 9, 11}, {16, 32, 3, 3}},                // tiles overhang both edges
      {{1, 16, 10, 7}, {32, 16, 3, 3}, 0},             // no padding: 8 x 5 output
      {{2, 16, 6, 5}, {16, 16, 3, 3}, 1, false, false},  // batch 2, no bias/relu
      {{1, 24, 6, 7}, {32, 24, 3, 3}},                 // 8c in, 16c out with block 16
  };
  for (int64_t block : {16, 8}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      Graph g = graph::TransformLayout(ConvGraph(cases[i]), block);
      for (const std::string& s : ConvSummaries(g, Forced().lower))
        EXPECT_NE(s.find("conv2d_winograd F(4x4,3x3)"), std::string::npos) << s;
      EXPECT_TRUE(CheckAgainstReference(g, Forced())) << "case " << i << " block " << block;
    }
  }
}

TEST(WinogradTest, TwoByTwoTiles) {
  Graph g = graph::TransformLayout(ConvGraph({{1, 16, 7, 9}, {16, 16, 3, 3}}), 16);
  for (const std::string& s : ConvSummaries(g, Forced(2).lower))
    EXPECT_NE(s.find("conv2d_winograd F(2x2,3x3)"), std::string::npos) << s;
  EXPECT_TRUE(CheckAgainstReference(g, Forced(2)));
}

// 5x5 and the factorized 1xr / rx1 convs (Inception's 1x7 / 7x1 at 17x17 and
// 1x3 / 3x1 at 8x8, GoogLeNet's 5x5), forced on: tiles overhanging the edge,
// "same" and no padding, both tile sizes of the one-dimensional form.
TEST(WinogradTest, FiveByFiveAndOneDimensionalConvsMatchReference) {
  struct Shaped {
    Case c;
    int tile;
    const char* form;
  };
  std::vector<Shaped> cases = {
      {{{1, 16, 9, 11}, {16, 16, 1, 7}, 0, true, true, {0, 3, 0, 3}}, 4, "F(1x4,1x7)"},
      {{{1, 16, 11, 9}, {32, 16, 7, 1}, 0, true, true, {3, 0, 3, 0}}, 4, "F(4x1,7x1)"},
      {{{1, 16, 9, 17}, {16, 16, 1, 7}, 0, true, true, {0, 3, 0, 3}}, 2, "F(1x2,1x7)"},
      {{{1, 16, 8, 8}, {16, 16, 1, 3}, 0, true, true, {0, 1, 0, 1}}, 4, "F(1x4,1x3)"},
      {{{2, 16, 8, 6}, {16, 16, 3, 1}, 0, false, false, {1, 0, 1, 0}}, 2, "F(2x1,3x1)"},
      {{{1, 16, 11, 10}, {16, 16, 1, 5}, 0}, 4, "F(1x4,1x5)"},  // no padding: 11 x 6 output
      {{{1, 16, 9, 9}, {16, 16, 5, 5}, 2}, 4, "F(2x2,5x5)"},    // 5x5 takes 2x2 tiles whatever the knob
      {{{1, 32, 7, 10}, {16, 32, 5, 5}, 0}, 0, "F(2x2,5x5)"},
  };
  for (int64_t block : {16, 8}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      Graph g = graph::TransformLayout(ConvGraph(cases[i].c), block);
      CheckOptions o = Forced(cases[i].tile);
      for (const std::string& s : ConvSummaries(g, o.lower))
        EXPECT_NE(s.find(std::string("conv2d_winograd ") + cases[i].form), std::string::npos) << s;
      EXPECT_TRUE(CheckAgainstReference(g, o)) << "case " << i << " block " << block;
    }
  }
}

// A prime tile count above the GEMM's tile limit (13 tiles of 4x4 in a 4x52
// output; Inception's stem has 37x37): the GEMM's register tile takes 7 tiles
// with a guarded tail of 6, not 1 tile at a time.
TEST(WinogradTest, PrimeTileCountsGetAGuardedGemmTile) {
  Graph g = graph::TransformLayout(ConvGraph({{1, 16, 4, 52}, {16, 16, 3, 3}}), 16);
  for (const std::string& s : ConvSummaries(g, Forced().lower))
    EXPECT_NE(s.find("tiles=13 gemm tile=7x16"), std::string::npos) << s;
  EXPECT_TRUE(CheckAgainstReference(g, Forced()));
}

// conv + bias + relu, conv + bias + residual add + relu: the second conv's group
// applies its epilogue at the Winograd output tile.
Graph ResidualBlock() {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 16, 9, 10}});
  g.AddConstant("w1", RandomTensor({16, 16, 3, 3}, 11));
  g.AddConstant("b1", RandomTensor({16}, 12));
  g.AddConstant("w2", RandomTensor({16, 16, 3, 3}, 13));
  g.AddConstant("b2", RandomTensor({16}, 14));
  std::vector<std::pair<std::string, Attribute>> pad1{{"pads", Attribute(std::vector<int64_t>{1, 1, 1, 1})}};
  Add(&g, "Conv", "conv1", {"x", "w1", "b1"}, {"c1"}, pad1);
  Add(&g, "Relu", "relu1", {"c1"}, {"r1"});
  Add(&g, "Conv", "conv2", {"r1", "w2", "b2"}, {"c2"}, pad1);
  Add(&g, "Add", "add", {"c2", "x"}, {"s"});
  Add(&g, "Relu", "relu2", {"s"}, {"y"});
  return Finish(g, {"y"});
}

TEST(WinogradTest, FusedBiasReluAddEpilogue) {
  Graph blocked = graph::TransformLayout(ResidualBlock(), 16);
  std::vector<std::string> summaries = ConvSummaries(blocked, Forced().lower);
  ASSERT_EQ(summaries.size(), 2u);
  for (const std::string& s : summaries) {
    EXPECT_NE(s.find("conv2d_winograd"), std::string::npos) << s;
    EXPECT_NE(s.find("epilogue at the output tile"), std::string::npos) << s;
  }
  EXPECT_TRUE(CheckAgainstReference(blocked, Forced()));
  CheckOptions two = Forced();
  two.eval = false;
  two.threads = 2;
  EXPECT_TRUE(CheckAgainstReference(blocked, two));
}

// The automatic rule on the ResNet-50 3x3 stride-1 layers: Winograd with 4x4
// tiles at 56x56 and 28x28 (and 24x24: 36 tiles), 2x2 tiles at 14x14 and 9x9 (25
// tiles); direct at 8x8 and 7x7 (16 tiles of 2x2) and below.
TEST(WinogradTest, AutomaticRule) {
  for (int64_t hw : {56, 28, 24, 14, 9, 8, 7, 6}) {
    Graph g = graph::TransformLayout(ConvGraph({{1, 16, hw, hw}, {16, 16, 3, 3}}), 16);
    std::vector<std::string> s = ConvSummaries(g, LowerGroupOptions{});
    ASSERT_EQ(s.size(), 1u);
    const char* want = hw >= 24 ? "conv2d_winograd F(4x4" : hw >= 9 ? "conv2d_winograd F(2x2" : "conv2d_nchwc 3x3";
    EXPECT_NE(s[0].find(want), std::string::npos) << hw << ": " << s[0];
  }
}

// The automatic rule on the other forms: Inception-v3's 1x7 / 7x1 at 17x17
// (85 tiles of 1x4) and 5x5 at 35x35 (324 tiles of 2x2) take Winograd, its 1x3 /
// 3x1 at 8x8 (16 tiles of 1x4) stay direct, as do strided and 1x1 convs.
TEST(WinogradTest, AutomaticRuleForTheOtherForms) {
  struct Shaped {
    Case c;
    const char* want;
  };
  std::vector<Shaped> cases = {
      {{{1, 16, 17, 17}, {16, 16, 1, 7}, 0, true, true, {0, 3, 0, 3}}, "conv2d_winograd F(1x4,1x7)"},
      {{{1, 16, 17, 17}, {16, 16, 7, 1}, 0, true, true, {3, 0, 3, 0}}, "conv2d_winograd F(4x1,7x1)"},
      {{{1, 16, 35, 35}, {16, 16, 5, 5}, 2}, "conv2d_winograd F(2x2,5x5)"},
      {{{1, 16, 8, 8}, {16, 16, 1, 3}, 0, true, true, {0, 1, 0, 1}}, "conv2d_nchwc 1x3"},
      {{{1, 16, 8, 8}, {16, 16, 3, 1}, 0, true, true, {1, 0, 1, 0}}, "conv2d_nchwc 3x1"},
      {{{1, 16, 17, 17}, {16, 16, 1, 1}, 0}, "conv2d_nchwc 1x1"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Graph g = graph::TransformLayout(ConvGraph(cases[i].c), 16);
    std::vector<std::string> s = ConvSummaries(g, LowerGroupOptions{});
    ASSERT_EQ(s.size(), 1u);
    EXPECT_NE(s[0].find(cases[i].want), std::string::npos) << i << ": " << s[0];
  }
  Graph strided = graph::TransformLayout(ConvGraph({{1, 16, 17, 17}, {16, 16, 5, 5}, 2}, 2), 16);
  for (const std::string& s : ConvSummaries(strided, Forced().lower)) EXPECT_EQ(s.find("winograd"), std::string::npos) << s;
}

// The tuner's space offers Winograd (and its tile) on the new forms as on 3x3;
// a 5x5 conv has one tile, so no tile knob whose values would be aliases.
TEST(WinogradTest, KnobSpacesOfTheOtherForms) {
  auto space = [](const Case& c) {
    Graph fused = testing::Fuse(graph::TransformLayout(ConvGraph(c), 16));
    for (const graph::FusedGroup& group : fused.groups)
      if (group.anchor >= 0 && fused.nodes[group.anchor].op == "Conv")
        return KnobSpaceOf(fused, group, target::Target::Host()).ToString();
    return std::string();
  };
  std::string row = space({{1, 16, 17, 17}, {16, 16, 1, 7}, 0, true, true, {0, 3, 0, 3}});
  EXPECT_NE(row.find("conv_winograd{-1,0,1}"), std::string::npos) << row;
  EXPECT_NE(row.find("winograd_tile{0,2,4}"), std::string::npos) << row;
  std::string five = space({{1, 16, 35, 35}, {16, 16, 5, 5}, 2});
  EXPECT_NE(five.find("conv_winograd{-1,0,1}"), std::string::npos) << five;
  EXPECT_EQ(five.find("winograd_tile{"), std::string::npos) << five;
  std::string pointwise = space({{1, 16, 17, 17}, {16, 16, 1, 1}, 0});
  EXPECT_EQ(pointwise.find("winograd"), std::string::npos) << pointwise;
}

// Large transformed intermediates with few channels per byte stay direct (the rule's table in
// winograd.cc): Inception-v3's 32 -> 64 conv at 147x147 and VGG-16's 64 -> 64 at 224x224 with a
// 512 KiB L2, while ResNet-50's 64-channel 56x56 layer, Inception's 80 -> 192 at 73x73 and any
// shape without a known L2 keep Winograd.
TEST(WinogradTest, LargeIntermediatesWithFewChannelsStayDirect) {
  auto padded = [](int64_t hw, int64_t pad) {
    graph::WindowGeometry g;
    g.kernel = {3, 3};
    g.strides = {1, 1};
    g.dilations = {1, 1};
    g.pad_begin = {pad, pad};
    g.pad_end = {pad, pad};
    g.out = {hw + 2 * pad - 2, hw + 2 * pad - 2};
    return g;
  };
  const int64_t l2 = 512 << 10;
  EXPECT_FALSE(WinogradByShape({1, 4, 147, 147, 8}, {64, 32, 3, 3}, padded(147, 1), l2));
  EXPECT_FALSE(WinogradByShape({1, 8, 224, 224, 8}, {64, 64, 3, 3}, padded(224, 1), l2));
  EXPECT_TRUE(WinogradByShape({1, 8, 56, 56, 8}, {64, 64, 3, 3}, padded(56, 1), l2));
  EXPECT_TRUE(WinogradByShape({1, 10, 73, 73, 8}, {192, 80, 3, 3}, padded(73, 0), l2));
  EXPECT_TRUE(WinogradByShape({1, 8, 224, 224, 8}, {64, 64, 3, 3}, padded(224, 1), 0));
  // A bigger L2 (Zen 5's 1 MiB) moves the limit: the 147x147 layer's 19 MB still exceed it.
  EXPECT_FALSE(WinogradByShape({1, 4, 147, 147, 8}, {64, 32, 3, 3}, padded(147, 1), 1 << 20));
}

// Forcing never applies Winograd where it does not compute the conv (stride 2),
// and 0 turns it off.
TEST(WinogradTest, KnobAndApplicability) {
  Graph strided = graph::TransformLayout(ConvGraph({{1, 16, 8, 8}, {16, 16, 3, 3}}, 2), 16);
  for (const std::string& s : ConvSummaries(strided, Forced().lower))
    EXPECT_EQ(s.find("winograd"), std::string::npos) << s;
  Graph g = graph::TransformLayout(ConvGraph({{1, 16, 8, 8}, {16, 16, 3, 3}}), 16);
  LowerGroupOptions off;
  off.conv_winograd = 0;
  for (const std::string& s : ConvSummaries(g, off)) EXPECT_NE(s.find("conv2d_nchwc 3x3"), std::string::npos) << s;
}

}  // namespace
}  // namespace ops
}  // namespace agate
