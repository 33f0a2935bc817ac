// What the auto-tuner needs from the compiler: per-kernel knob spaces and task keys on the
// planned graph, one-kernel modules (CompileGroup), and per-task knobs applied by CompileGraph.
#include <gtest/gtest.h>

#include "core/compiler/compiler.h"
#include "core/graph/testing/graph_builder.h"
#include "core/ops/knob_space.h"
#include "core/support/error.h"

namespace agate {
namespace compiler {
namespace {

using graph::Attribute;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::RandomTensor;

const char* kTarget = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512";

// x [1, 16, 14, 14] -> Conv 3x3 pad 1 (32 channels, bias) -> Relu -> Conv 3x3 pad 1 (32) -> Relu
// -> Conv 3x3 pad 1 (32) -> Relu: the second and third convs are the same workload.
graph::Graph ThreeConvs() {
  graph::Graph g;
  g.AddInput("x", TensorType{ir::DType::Float(32), {1, 16, 14, 14}});
  std::vector<std::pair<std::string, Attribute>> pad{{"pads", Attribute(std::vector<int64_t>{1, 1, 1, 1})}};
  std::string in = "x";
  for (int i = 0; i < 3; ++i) {
    std::string n = std::to_string(i);
    g.AddConstant("w" + n, RandomTensor({32, i == 0 ? 16 : 32, 3, 3}, 3 + i));
    g.AddConstant("b" + n, RandomTensor({32}, 7 + i));
    Add(&g, "Conv", "conv" + n, {in, "w" + n, "b" + n}, {"c" + n}, pad);
    Add(&g, "Relu", "relu" + n, {"c" + n}, {"r" + n});
    in = "r" + n;
  }
  return Finish(g, {in});
}

CompileOptions Options() {
  CompileOptions o;
  o.target = kTarget;
  return o;
}

std::vector<size_t> ConvGroups(const graph::Graph& planned) {
  std::vector<size_t> convs;
  for (size_t i = 0; i < planned.groups.size(); ++i)
    if (planned.groups[i].anchor >= 0 && planned.nodes[planned.groups[i].anchor].op == "Conv") convs.push_back(i);
  return convs;
}

TEST(TuningTest, EqualWorkloadsShareATaskKeyAndDifferentOnesDoNot) {
  graph::Graph planned = PlanGraph(ThreeConvs(), Options());
  target::Target target = target::Target::Parse(kTarget);
  std::vector<size_t> convs = ConvGroups(planned);
  ASSERT_EQ(convs.size(), 3u);
  std::string k0 = ops::TaskKeyOf(planned, planned.groups[convs[0]], target);
  std::string k1 = ops::TaskKeyOf(planned, planned.groups[convs[1]], target);
  std::string k2 = ops::TaskKeyOf(planned, planned.groups[convs[2]], target);
  EXPECT_EQ(k1, k2);
  EXPECT_NE(k0, k1);
  EXPECT_EQ(k0.rfind("conv_", 0), 0u) << k0;
  EXPECT_EQ(k0.size(), 5u + 16u);
  // Stable: the same graph planned again, and another target, give the same / another key.
  graph::Graph again = PlanGraph(ThreeConvs(), Options());
  EXPECT_EQ(ops::TaskKeyOf(again, again.groups[convs[1]], target), k1);
  EXPECT_NE(ops::TaskKeyOf(planned, planned.groups[convs[1]], target::Target::Parse("llvm -mcpu=haswell")), k1);
}

// The 32 -> 32 channel conv on AVX-512: NCHW16c, 2 channel blocks, 14 columns, Winograd-able.
TEST(TuningTest, TheBlockedConvDeclaresItsKnobs) {
  graph::Graph planned = PlanGraph(ThreeConvs(), Options());
  target::Target target = target::Target::Parse(kTarget);
  ops::KnobSpace space = ops::KnobSpaceOf(planned, planned.groups[ConvGroups(planned)[1]], target);
  EXPECT_EQ(space.ToString(),
            "conv_ow_block{0,2,7,14} conv_oc_block{0,16,32} conv_parallel_rows{-1,0,1} conv_winograd{-1,0,1} "
            "winograd_tile{0,2,4} winograd_tile_block{0,4,6,8,12,16} parallel{1,0}");
}

TEST(TuningTest, CompileGroupBuildsOneKernelWithTheSameTaskKey) {
  graph::Graph planned = PlanGraph(ThreeConvs(), Options());
  target::Target target = target::Target::Parse(kTarget);
  size_t group = ConvGroups(planned)[1];
  CompileResult r = CompileGroup(planned, group, target, ops::ApplyKnobConfig({{"conv_ow_block", 7}, {"conv_winograd", 0}}));
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].task_key, ops::TaskKeyOf(planned, planned.groups[group], target));
  EXPECT_NE(r.kernels[0].schedule.find("ow_block=7"), std::string::npos) << r.kernels[0].schedule;
  EXPECT_EQ(r.spec.inputs.size(), 1u);   // the activation; weights and bias are constants
  EXPECT_EQ(r.spec.outputs.size(), 1u);
  EXPECT_FALSE(r.module.empty());
  EXPECT_THROW(CompileGroup(planned, planned.groups.size(), target, {}), Error);
}

TEST(TuningTest, CompileGraphAppliesPerTaskKnobsAndRefusesKnobsOutsideTheSpace) {
  CompileOptions options = Options();
  graph::Graph planned = PlanGraph(ThreeConvs(), options);
  target::Target target = target::Target::Parse(kTarget);
  size_t group = ConvGroups(planned)[1];
  std::string key = ops::TaskKeyOf(planned, planned.groups[group], target);
  options.task_knobs[key] = {{"conv_ow_block", 2}, {"conv_winograd", 0}};
  CompileResult r = CompileGraph(ThreeConvs(), options);
  int tuned = 0;
  for (const KernelSummary& k : r.kernels) {
    if (!k.tuned) continue;
    ++tuned;
    EXPECT_EQ(k.task_key, key);
    EXPECT_NE(k.schedule.find("ow_block=2"), std::string::npos) << k.schedule;
  }
  EXPECT_EQ(tuned, 2);  // both kernels of the shared workload
  options.task_knobs[key] = {{"conv_ow_block", 5}};
  try {
    CompileGraph(ThreeConvs(), options);
    FAIL() << "applied a knob value outside the space";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(key), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace compiler
}  // namespace agate
