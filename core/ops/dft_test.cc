// DFT and STFT compiled against the reference: real and complex input, axes, dft_length shorter and
// longer than the signal, onesided, inverse; STFT with and without a window.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ops
}  // namespace agate
