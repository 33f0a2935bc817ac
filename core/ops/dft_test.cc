// DFT and STFT compiled against the reference: real and complex input, axes, dft_length shorter and
// longer than the signal, onesided, inverse; STFT with and without a window.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/graph/testing/graph_builder.h"
#include "core/ops/testing/reference_check.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using testing::CheckAgainstReference;
using testing::CheckOptions;

TEST(DftTest, MatchesTheReference) {
  struct Case {
    int64_t components, axis, length, onesided, inverse;
  };
  for (const Case& c : {Case{1, 1, 0, 0, 0}, Case{2, 1, 0, 0, 0}, Case{2, 2, 0, 0, 1}, Case{1, 1, 0, 1, 0},
                        Case{1, 2, 12, 1, 0}, Case{2, 1, 5, 0, 0}, Case{2, -2, 9, 0, 1}}) {
    Graph g;
    g.AddInput("x", TensorType{ir::DType::Float(32), {2, 7, 9, c.components}});
    std::vector<std::pair<std::string, Attribute>> attrs{
        {"axis", Attribute(c.axis)}, {"onesided", Attribute(c.onesided)}, {"inverse", Attribute(c.inverse)}};
    if (c.length > 0) attrs.push_back({"dft_length", Attribute(c.length)});
    Add(&g, "DFT", "dft", {"x"}, {"y"}, attrs);
    CheckOptions options;
    options.tolerance = 1e-4;
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}), options))
        << "components " << c.components << " axis " << c.axis << " length " << c.length << " onesided "
        << c.onesided << " inverse " << c.inverse;
  }
}

TEST(DftTest, StftMatchesTheReference) {
  struct Case {
    int64_t components, step, frame, onesided;
    bool window;
  };
  for (const Case& c : {Case{1, 4, 8, 1, true}, Case{1, 3, 7, 0, false}, Case{2, 5, 6, 0, true}, Case{2, 2, 9, 1, false}}) {
    Graph g;
    g.AddInput("x", TensorType{ir::DType::Float(32), {2, 30, c.components}});
    std::vector<std::string> inputs{"x"};
    if (c.window) {
      g.AddInput("w", TensorType{ir::DType::Float(32), {c.frame}});
      inputs.push_back("w");
    }
    std::vector<std::pair<std::string, Attribute>> attrs{{"frame_step", Attribute(c.step)},
                                                          {"onesided", Attribute(c.onesided)}};
    if (!c.window) attrs.push_back({"frame_length", Attribute(c.frame)});
    Add(&g, "STFT", "stft", inputs, {"y"}, attrs);
    CheckOptions options;
    options.tolerance = 1e-4;
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}), options))
        << "components " << c.components << " step " << c.step << " frame " << c.frame << " onesided " << c.onesided
        << " window " << c.window;
  }
}

// frame_step read at run time (as the ONNX frontend compiles a model declaring the output's shape):
// 30 samples in frames of 8 give 3 frames for steps 8 to 11; compiled with the attribute 8, the
// kernel places the frames by the run-time step (11 here, so the values differ from step 8's), and
// a step giving another frame count (5: 5 frames), 0 or a negative one fails the kernel.
TEST(DftTest, StftFrameStepAtRunTime) {
  for (bool window : {false, true}) {
    Graph g;
    g.AddInput("x", TensorType{ir::DType::Float(32), {2, 30, 1}});
    std::vector<std::string> inputs{"x"};
    if (window) {
      g.AddInput("w", TensorType{ir::DType::Float(32), {8}});
      inputs.push_back("w");
    }
    g.AddInput("step", TensorType{ir::DType::Int(64), {}});
    inputs.push_back("step");
    Add(&g, "STFT", "stft", inputs, {"y"},
        {{"frame_step", Attribute(int64_t{8})}, {"frame_length", Attribute(int64_t{8})},
         {"onesided", Attribute(int64_t{1})}, {"run_time_operand", Attribute("frame_step")}});
    g = Finish(g, {"y"});
    ASSERT_EQ(g.TypeOf("y").shape, (graph::Shape{2, 3, 5, 2}));
    std::map<std::string, graph::Tensor> given = testing::RandomInputs(g, 3);
    for (int64_t step : {8, 11}) {
      given["step"] = graph::Tensor::FromInts(ir::DType::Int(64), {}, {step});
      CheckOptions options;
      options.inputs = given;
      EXPECT_TRUE(CheckAgainstReference(g, options)) << "step " << step << " window " << window;
    }
    // The same frames as a graph whose frame_step 11 is a constant.
    Graph fixed;
    fixed.AddInput("x", TensorType{ir::DType::Float(32), {2, 30, 1}});
    if (window) fixed.AddInput("w", TensorType{ir::DType::Float(32), {8}});
    Add(&fixed, "STFT", "stft", std::vector<std::string>(inputs.begin(), inputs.end() - 1), {"y"},
        {{"frame_step", Attribute(int64_t{11})}, {"frame_length", Attribute(int64_t{8})},
         {"onesided", Attribute(int64_t{1})}});
    fixed = Finish(fixed, {"y"});
    std::map<std::string, graph::Tensor> fixed_inputs = given;
    fixed_inputs.erase("step");
    const target::Target host = target::Target::Parse("llvm");
    graph::Tensor want = testing::RunGroups(testing::Fuse(fixed), fixed_inputs, testing::Backend::kLLVM, host).at("y");
    graph::Tensor got = testing::RunGroups(testing::Fuse(g), given, testing::Backend::kLLVM, host).at("y");
    EXPECT_TRUE(testing::TensorsClose(got, want, 1e-6)) << "window " << window;
    for (int64_t step : {5, 0, -3}) {
      given["step"] = graph::Tensor::FromInts(ir::DType::Int(64), {}, {step});
      testing::ExpectRunTimeOperandRefused(g, given, "'stft'");
    }
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
