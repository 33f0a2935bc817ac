// MaxUnpool's compiled kernel (max_unpool.h) on the loop-IR evaluator and as LLVM host code
// against the reference interpreter: after a MaxPool with its Indices output (disjoint and
// overlapping windows, padding, an output_shape larger than the unpooled shape, int32 values);
// an index outside the unpooled shape fails the kernel naming the node; cuda is refused by name.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/ops/lower_group.h"
#include "core/ops/testing/reference_check.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using Ints = std::vector<int64_t>;
using graph::Shape;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI64 = ir::DType::Int(64);

// x -> MaxPool (y, idx) -> MaxUnpool(y, idx[, output_shape]) -> out.
Graph PoolUnpool(const Shape& x, const Ints& kernel, const Ints& strides, const Ints& pads, const Ints& output_shape) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  std::vector<std::pair<std::string, Attribute>> attrs = {
      {"kernel_shape", Attribute(kernel)}, {"strides", Attribute(strides)}, {"pads", Attribute(pads)}};
  Add(&g, "MaxPool", "pool", {"x"}, {"y", "idx"}, attrs);
  std::vector<std::string> inputs = {"y", "idx"};
  if (!output_shape.empty()) {
    g.AddConstant("output_shape", graph::Tensor::FromInts(kI64, {static_cast<int64_t>(output_shape.size())}, output_shape));
    inputs.push_back("output_shape");
  }
  Add(&g, "MaxUnpool", "unpool", inputs, {"out"}, attrs);
  return Finish(g, {"out"});
}

TEST(MaxUnpoolTest, UndoesMaxPoolOnEveryBackend) {
  struct Case {
    std::string name;
    Shape x;
    Ints kernel, strides, pads, output_shape;
  };
  for (const Case& c : std::vector<Case>{
           {"2x2 stride 2", {1, 3, 6, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {}},
           {"3x3 stride 2 pad 1 (overlapping windows)", {2, 2, 7, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}},
           {"explicit larger output_shape", {1, 2, 4, 4}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 2, 5, 6}},
           {"1-D", {1, 4, 9}, {3}, {3}, {0, 0}, {}},
       }) {
    Graph g = PoolUnpool(c.x, c.kernel, c.strides, c.pads, c.output_shape);
    testing::CheckOptions options;
    options.tolerance = 0;
    EXPECT_TRUE(testing::CheckAgainstReference(g, options)) << c.name;
  }
}

// Indices given by the user (a graph input): one outside the unpooled shape fails the kernel
// before it writes, on both backends; the reference refuses it too.
TEST(MaxUnpoolTest, AnIndexOutsideTheUnpooledShapeFailsTheKernel) {
  Graph g;
  g.AddInput("y", TensorType{kF32, {1, 1, 2, 2}});
  g.AddInput("idx", TensorType{kI64, {1, 1, 2, 2}});
  Add(&g, "MaxUnpool", "unpool", {"y", "idx"}, {"out"},
      {{"kernel_shape", Attribute(Ints{2, 2})}, {"strides", Attribute(Ints{2, 2})}});
  g = Finish(g, {"out"});
  std::map<std::string, graph::Tensor> inputs = {
      {"y", graph::Tensor::FromDoubles(kF32, {1, 1, 2, 2}, {1, 2, 3, 4})},
      {"idx", graph::Tensor::FromInts(kI64, {1, 1, 2, 2}, {0, 7, 15, 5})}};
  graph::Tensor want = graph_eval::Interpret(g, inputs).at("out");
  Graph fused = testing::Fuse(g);
  for (testing::Backend backend : {testing::Backend::kEval, testing::Backend::kLLVM}) {
    auto got = testing::RunGroups(fused, inputs, backend, target::Target::Parse("llvm"));
    EXPECT_EQ(got.at("out").ToDoubles(), want.ToDoubles());
  }
  inputs["idx"] = graph::Tensor::FromInts(kI64, {1, 1, 2, 2}, {0, 16, 3, 5});
  testing::ExpectRunTimeOperandRefused(g, inputs, "'unpool'", StatusCode::kOutOfRange);
  try {
    LowerGroup(fused, fused.groups.at(0), target::Target::Parse("cuda -arch=sm_80"), "unpool_kernel");
    ADD_FAILURE() << "lowered for cuda";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("MaxUnpool"), std::string::npos) << e.what();
  }
}

// output_shape read at run time (as the ONNX frontend compiles a model declaring the output's
// shape): the kernel is compiled for [1,1,5,6], runs when the operand holds exactly that, and fails
// before writing when it holds another shape or another count of values.
TEST(MaxUnpoolTest, OutputShapeAtRunTimeMustBeTheDeclaredOne) {
  for (int64_t values : {4, 3}) {
    Graph g;
    g.AddInput("y", TensorType{kF32, {1, 1, 2, 2}});
    g.AddInput("idx", TensorType{kI64, {1, 1, 2, 2}});
    g.AddInput("shape", TensorType{kI64, {values}});
    Add(&g, "MaxUnpool", "unpool", {"y", "idx", "shape"}, {"out"},
        {{"kernel_shape", Attribute(Ints{2, 2})}, {"strides", Attribute(Ints{2, 2})},
         {"output_shape", Attribute(Ints{1, 1, 5, 6})}, {"run_time_operand", Attribute("output_shape")}});
    g = Finish(g, {"out"});
    std::map<std::string, graph::Tensor> inputs = {
        {"y", graph::Tensor::FromDoubles(kF32, {1, 1, 2, 2}, {1, 2, 3, 4})},
        {"idx", graph::Tensor::FromInts(kI64, {1, 1, 2, 2}, {0, 7, 15, 5})}};
    if (values == 4) {
      inputs["shape"] = graph::Tensor::FromInts(kI64, {4}, {1, 1, 5, 6});
      testing::CheckOptions options;
      options.inputs = inputs;
      options.tolerance = 0;
      EXPECT_TRUE(testing::CheckAgainstReference(g, options));
      inputs["shape"] = graph::Tensor::FromInts(kI64, {4}, {1, 1, 4, 6});
    } else {
      inputs["shape"] = graph::Tensor::FromInts(kI64, {3}, {1, 5, 6});
    }
    testing::ExpectRunTimeOperandRefused(g, inputs, "'unpool'");
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
