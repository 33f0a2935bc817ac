#include "core/autotune/measure.h"

#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/autotune/tuner.h"
#include "core/compiler/compiler.h"
#include "core/graph/testing/graph_builder.h"
#include "core/support/error.h"

namespace agate {
namespace autotune {
namespace {

TEST(RunInChildTest, ReturnsTheOutput) {
  ChildOutcome out = RunInChild([] { return std::string("hello"); }, 10);
  EXPECT_TRUE(out.ok) << out.error;
  EXPECT_EQ(out.output, "hello");
}

TEST(RunInChildTest, AnErrorIsReportedWithItsMessage) {
  ChildOutcome out = RunInChild([]() -> std::string { AGATE_THROW(kInvalidArgument) << "bad knob"; }, 10);
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.error.find("bad knob"), std::string::npos) << out.error;
}

TEST(RunInChildTest, ASegfaultIsAFailureNotACrash) {
  ChildOutcome out = RunInChild([]() -> std::string {
    ::raise(SIGSEGV);
    return "unreachable";
  }, 10);
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.error.find("signal 11"), std::string::npos) << out.error;
}

TEST(RunInChildTest, AHangIsKilledAtTheTimeout) {
  auto t0 = std::chrono::steady_clock::now();
  ChildOutcome out = RunInChild([]() -> std::string {
    for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }, 0.5);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.error.find("timed out"), std::string::npos) << out.error;
  EXPECT_LT(s, 5.0);
}

TEST(RunInChildrenTest, RunsManyAtOnceAndKeepsTheirOrder) {
  std::vector<std::function<std::string()>> fns;
  for (int i = 0; i < 6; ++i) fns.push_back([i] { return std::to_string(i * i); });
  std::vector<ChildOutcome> out = RunInChildren(fns, 3, 10);
  ASSERT_EQ(out.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i].output, std::to_string(i * i));
}

// A module whose builder crashes, one that hangs, and a good one: only the good one is timed.
TEST(MeasureModulesTest, CrashingAndHangingCandidatesAreRecordedAsFailed) {
  MeasureOptions options;
  options.build_timeout_s = 1;
  std::vector<std::function<std::string()>> builders = {
      []() -> std::string {
        ::raise(SIGSEGV);
        return "";
      },
      []() -> std::string {
        for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      },
      [] { return std::string("not a module"); },
  };
  std::vector<MeasureResult> r = MeasureModules(builders, options);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_FALSE(r[0].ok);
  EXPECT_NE(r[0].error.find("signal 11"), std::string::npos) << r[0].error;
  EXPECT_FALSE(r[1].ok);
  EXPECT_NE(r[1].error.find("timed out"), std::string::npos) << r[1].error;
  EXPECT_FALSE(r[2].ok);
  EXPECT_NE(r[2].error.find("run failed"), std::string::npos) << r[2].error;
}

// x [1, 16, 14, 14] -> Conv 3x3 pad 1 (32 channels) -> Relu.
graph::Graph ConvRelu() {
  graph::Graph g;
  g.AddInput("x", graph::TensorType{ir::DType::Float(32), {1, 16, 14, 14}});
  g.AddConstant("w", graph::testing::RandomTensor({32, 16, 3, 3}, 3));
  graph::testing::Add(&g, "Conv", "conv", {"x", "w"}, {"c"},
                      {{"pads", graph::Attribute(std::vector<int64_t>{1, 1, 1, 1})}});
  graph::testing::Add(&g, "Relu", "relu", {"c"}, {"y"});
  return graph::testing::Finish(g, {"y"});
}

// A measured result: ok, a median inside its fastest and slowest run.
void ExpectTimed(const MeasureResult& r) {
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_GT(r.ms, 0);
  EXPECT_LE(r.min_ms, r.ms);
  EXPECT_GE(r.max_ms, r.ms);
}

// ConvRelu planned for the host.
graph::Graph PlannedConv(compiler::CompileOptions* options) {
  options->target = "llvm";  // the host: the candidates run here
  return compiler::PlanGraph(ConvRelu(), *options);
}

// The index of the fused group whose anchor is the conv (groups.size() when none is).
size_t ConvGroup(const graph::Graph& planned) {
  for (size_t i = 0; i < planned.groups.size(); ++i)
    if (planned.groups[i].anchor >= 0 && planned.nodes[planned.groups[i].anchor].op == "Conv") return i;
  return planned.groups.size();
}

// Real candidates of a conv group, built in parallel children and timed one by one; a knob
// value its template refuses fails that candidate only.
TEST(KernelMeasurerTest, TimesCandidatesOfAGroupAndRecordsBadOnesAsFailed) {
  compiler::CompileOptions options;
  graph::Graph planned = PlannedConv(&options);
  size_t conv = ConvGroup(planned);
  ASSERT_LT(conv, planned.groups.size());
  MeasureOptions m;
  m.repeats = 3;
  m.threads = 1;
  KernelMeasurer measurer(planned, conv, target::Target::Parse(options.target), m);
  std::vector<MeasureResult> r =
      measurer.Measure({{}, {{"conv_ow_block", 7}, {"conv_winograd", 0}}, {{"winograd_tile", 3}}});
  ASSERT_EQ(r.size(), 3u);
  for (int i = 0; i < 2; ++i) ExpectTimed(r[i]);
  EXPECT_FALSE(r[2].ok);
  EXPECT_NE(r[2].error.find("winograd_tile"), std::string::npos) << r[2].error;
  EXPECT_THROW(KernelMeasurer(planned, planned.groups.size(), target::Target::Parse(options.target), m), Error);
}

// The cost model's features of a batch, lowered in parallel children, are those of each config
// lowered alone in this process; a config that does not lower gets zeros.
TEST(GroupFeaturesTest, ABatchLoweredInChildrenEqualsEachConfigLoweredAlone) {
  compiler::CompileOptions options;
  graph::Graph planned = PlannedConv(&options);
  size_t conv = ConvGroup(planned);
  ASSERT_LT(conv, planned.groups.size());
  FeatureFn features = GroupFeatures(planned, conv, target::Target::Parse(options.target));
  std::vector<ops::KnobConfig> configs = {
      {}, {{"conv_ow_block", 7}, {"conv_winograd", 0}}, {{"conv_winograd", 1}}, {{"winograd_tile", 3}}};
  std::vector<std::vector<float>> batch = features(configs);
  ASSERT_EQ(batch.size(), configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    std::vector<std::vector<float>> alone = features({configs[i]});
    ASSERT_EQ(alone.size(), 1u);
    EXPECT_EQ(batch[i], alone[0]) << "config " << i;
    bool all_zero = std::all_of(batch[i].begin(), batch[i].end(), [](float v) { return v == 0.0f; });
    EXPECT_EQ(all_zero, i == 3) << "config " << i << " (winograd_tile=3 does not lower)";
  }
  EXPECT_NE(batch[0], batch[1]) << "7 columns without Winograd is another program than the default";
}

// Whole models without and with knobs, timed alternately; a variant whose build fails is a
// failed result naming why, the others are still timed.
TEST(MeasureModelVariantsTest, TimesEachVariantOverRoundsAndReportsAFailedBuild) {
  compiler::CompileOptions options;
  graph::Graph planned = PlannedConv(&options);
  graph::Graph model = ConvRelu();
  target::Target target = target::Target::Parse(options.target);
  compiler::CompileOptions direct = options, bad = options;
  for (const graph::FusedGroup& group : planned.groups) {
    if (group.anchor < 0 || planned.nodes[group.anchor].op != "Conv") continue;
    std::string key = ops::TaskKeyOf(planned, group, target);
    direct.task_knobs[key] = {{"conv_winograd", 0}};
    bad.task_knobs[key] = {{"conv_winograd", 1}, {"winograd_tile", 3}};
  }
  ASSERT_EQ(direct.task_knobs.size(), 1u);
  MeasureOptions m;
  m.repeats = 3;
  m.threads = 1;
  m.cache = CacheState::kWarm;
  std::vector<MeasureResult> r = MeasureModelVariants(model, {options, direct, bad}, m, 3);
  ASSERT_EQ(r.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    ExpectTimed(r[i]);
    EXPECT_GT(r[i].build_ms, 0);
  }
  EXPECT_FALSE(r[2].ok);
  EXPECT_NE(r[2].error.find("build failed"), std::string::npos) << r[2].error;
  EXPECT_NE(r[2].error.find("winograd_tile"), std::string::npos) << r[2].error;
  EXPECT_TRUE(r[0].kernel_ms.empty());  // not asked for
}

// With kernel_times, each kernel's time inside the runs: every kernel of the tasks is there,
// and the kernels' times add up to no more than a whole run's (the profile's clock reads aside).
TEST(MeasureModelVariantsTest, KernelTimesCoverEveryKernelOfTheModel) {
  compiler::CompileOptions options;
  graph::Graph planned = PlannedConv(&options);
  MeasureOptions m;
  m.repeats = 5;
  m.threads = 1;
  m.cache = CacheState::kWarm;
  m.kernel_times = true;
  std::vector<MeasureResult> r = MeasureModelVariants(ConvRelu(), {options}, m, 2);
  ASSERT_EQ(r.size(), 1u);
  ExpectTimed(r[0]);
  std::vector<Task> tasks = ExtractTasks(planned, target::Target::Parse(options.target), 1);
  ASSERT_FALSE(tasks.empty());
  double sum = 0;
  for (const auto& [name, ms] : r[0].kernel_ms) {
    EXPECT_GT(ms, 0) << name;
    sum += ms;
  }
  for (const Task& t : tasks)
    for (const std::string& k : t.kernels) EXPECT_EQ(r[0].kernel_ms.count(k), 1u) << k;
  EXPECT_EQ(r[0].kernel_ms.size(), planned.groups.size());
  EXPECT_LE(sum, r[0].max_ms * 1.5);
}

}  // namespace
}  // namespace autotune
}  // namespace agate
