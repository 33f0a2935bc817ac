// Data-movement operators (alone and fused into injective chains) and layout
// transforms, against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/ir/printer.h"
#include "core/ops/lower_group.h"
#include "core/ops/testing/reference_check.h"
#include "core/target/target.h"
#include "core/support/error.h"

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

const ir::DType kF32 = ir::DType::Float(32);
using Attrs = std::vector<std::pair<std::string, Attribute>>;
using Ints = std::vector<int64_t>;

Graph OneOp(const std::string& op, graph::Shape x, Attrs attrs, int outputs = 1) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  std::vector<std::string> outs;
  for (int i = 0; i < outputs; ++i) outs.push_back("y" + std::to_string(i));
  Add(&g, op, "op", {"x"}, outs, attrs);
  return Finish(g, outs);
}

TEST(TransformTest, ShapeOps) {
  EXPECT_TRUE(CheckAgainstReference(OneOp("Reshape", {2, 3, 8}, {{"shape", Attribute(Ints{4, -1, 2})}})));
  EXPECT_TRUE(CheckAgainstReference(OneOp("Flatten", {2, 3, 4, 5}, {{"axis", Attribute(int64_t{2})}})));
  EXPECT_TRUE(CheckAgainstReference(OneOp("Squeeze", {2, 1, 5, 1}, {{"axes", Attribute(Ints{1, 3})}})));
  EXPECT_TRUE(CheckAgainstReference(OneOp("Unsqueeze", {2, 5}, {{"axes", Attribute(Ints{0, 3})}})));
  EXPECT_TRUE(CheckAgainstReference(OneOp("Transpose", {2, 3, 4, 5}, {{"perm", Attribute(Ints{0, 3, 1, 2})}})));
  EXPECT_TRUE(CheckAgainstReference(OneOp("Transpose", {3, 17}, {})));
  EXPECT_TRUE(CheckAgainstReference(OneOp("Tile", {2, 3, 4}, {{"repeats", Attribute(Ints{2, 1, 3})}})));
  EXPECT_TRUE(CheckAgainstReference(OneOp("Expand", {3, 1}, {{"shape", Attribute(Ints{2, 3, 16})}})));
  EXPECT_TRUE(CheckAgainstReference(OneOp("Trilu", {2, 5, 6}, {{"upper", Attribute(int64_t{0})}, {"k", Attribute(Ints{1})}})));
  EXPECT_TRUE(CheckAgainstReference(OneOp("DepthToSpace", {1, 8, 3, 4}, {{"blocksize", Attribute(int64_t{2})}})));
  EXPECT_TRUE(CheckAgainstReference(
      OneOp("DepthToSpace", {1, 8, 3, 4}, {{"blocksize", Attribute(int64_t{2})}, {"mode", Attribute("CRD")}})));
  EXPECT_TRUE(CheckAgainstReference(OneOp("SpaceToDepth", {1, 2, 4, 6}, {{"blocksize", Attribute(int64_t{2})}})));
}

// Trilu's k as graph input "k" (a scalar), read when the kernel runs, alone and fused into
// the element-wise consumer after it.
TEST(TransformTest, TriluWithARunTimeKMatchesTheReference) {
  for (int64_t upper : {0, 1}) {
    for (bool fused_consumer : {false, true}) {
      Graph g;
      g.AddInput("x", TensorType{kF32, {2, 4, 6}});
      g.AddInput("k", TensorType{ir::DType::Int(64), {}});
      Add(&g, "Trilu", "tri", {"x", "k"}, {"t"}, {{"upper", Attribute(upper)}});
      if (fused_consumer) Add(&g, "Neg", "neg", {"t"}, {"y"});
      g = Finish(g, {fused_consumer ? "y" : "t"});
      for (int64_t k : {-7, -2, 0, 1, 5, 9}) {
        testing::CheckOptions options;
        options.inputs["x"] = RandomTensor({2, 4, 6}, 5);
        options.inputs["k"] = graph::Tensor::FromInts(ir::DType::Int(64), {}, {k});
        EXPECT_TRUE(CheckAgainstReference(g, options)) << "upper " << upper << " k " << k << " fused " << fused_consumer;
      }
    }
  }
}

TEST(TransformTest, SliceSplitConcatPad) {
  EXPECT_TRUE(CheckAgainstReference(OneOp("Slice", {5, 12}, {{"starts", Attribute(Ints{1, -2})},
                                                             {"ends", Attribute(Ints{4, 0})},
                                                             {"axes", Attribute(Ints{0, 1})},
                                                             {"steps", Attribute(Ints{2, -3})}})));
  EXPECT_TRUE(CheckAgainstReference(
      OneOp("Split", {4, 10}, {{"axis", Attribute(int64_t{1})}, {"split", Attribute(Ints{3, 7})}}, 2)));
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {  // wrap: opset 19
    EXPECT_TRUE(CheckAgainstReference(OneOp(
        "Pad", {2, 5, 6}, {{"pads", Attribute(Ints{0, 2, 1, 0, 3, 2})}, {"mode", Attribute(mode)}, {"value", Attribute(1.5)}})))
        << mode;
  }
  // wrap with pads longer than the axis: the period repeats (begin 7 on an axis of 5).
  EXPECT_TRUE(CheckAgainstReference(OneOp("Pad", {5, 3}, {{"pads", Attribute(Ints{7, 0, 1, 4})}, {"mode", Attribute("wrap")}})));
  Graph g;
  g.AddInput("a", TensorType{kF32, {2, 3, 4}});
  g.AddInput("b", TensorType{kF32, {2, 5, 4}});
  g.AddConstant("c", RandomTensor({2, 1, 4}, 9));
  Add(&g, "Concat", "cat", {"a", "b", "c"}, {"y"}, {{"axis", Attribute(int64_t{1})}});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"})));
}

// A concat (Inception's channel concats, on NCHW8c) copies each input in a loop of its own: the concat axis is a serial loop that the loop partition pass cuts where each
// input starts, so no select is left for up to four inputs (three cuts); five inputs leave
// the last cut's selects. Values against the reference on the evaluator, LLVM and the GPU
// evaluator (cuda keeps the injective schedule), for a channel concat, a ReLU fused after
// it, a concat of many leading rows (parallel over them), a concat on axis 0 and one on the
// last axis (the plain injective schedule).
TEST(TransformTest, ConcatCopiesEachInputInALoopOfItsOwn) {
  auto concat = [](const std::vector<Ints>& shapes, int64_t axis, bool relu) {
    Graph g;
    std::vector<std::string> names;
    for (size_t i = 0; i < shapes.size(); ++i) {
      names.push_back("x" + std::to_string(i));
      g.AddInput(names.back(), TensorType{kF32, shapes[i]});
    }
    Add(&g, "Concat", "cat", names, {relu ? "c" : "y"}, {{"axis", Attribute(axis)}});
    if (relu) Add(&g, "Relu", "relu", {"c"}, {"y"});
    return Finish(g, {"y"});
  };
  testing::CheckOptions gpu;
  gpu.cuda_target = "cuda -arch=sm_80";
  struct Case {
    std::vector<Ints> shapes;
    int64_t axis;
    bool relu;
    bool selects_left;
  };
  const std::vector<Case> cases = {
      {{{1, 3, 5, 6}, {1, 2, 5, 6}, {1, 4, 5, 6}, {1, 1, 5, 6}}, 1, false, false},
      {{{1, 3, 5, 6}, {1, 2, 5, 6}, {1, 4, 5, 6}}, 1, true, false},
      {{{1, 1, 4, 3}, {1, 2, 4, 3}, {1, 1, 4, 3}, {1, 3, 4, 3}, {1, 1, 4, 3}}, 1, false, true},
      {{{16, 2, 3, 8}, {16, 3, 3, 8}}, 1, false, false},
      {{{2, 3, 8}, {3, 3, 8}}, 0, false, false},
      {{{2, 3, 5}, {2, 3, 2}}, 2, false, false},  // a serial innermost loop: partitioned too
  };
  for (size_t index = 0; index < cases.size(); ++index) {
    const Case& c = cases[index];
    Graph graph = concat(c.shapes, c.axis, c.relu);
    EXPECT_TRUE(CheckAgainstReference(graph)) << "case " << index;
    EXPECT_TRUE(CheckAgainstReference(graph, gpu)) << "case " << index;
    Graph fused = testing::Fuse(graph);
    for (const graph::FusedGroup& group : fused.groups) {
      bool has_concat = false;
      for (int n : group.nodes) has_concat = has_concat || fused.nodes[n].op == "Concat";
      if (!has_concat) continue;
      GroupKernel k = LowerGroup(fused, group, target::Target::Parse("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell"),
                                 "cat");
      std::string text = ir::ToString(k.func);
      bool last_axis = c.axis + 1 == static_cast<int64_t>(c.shapes[0].size());
      EXPECT_EQ(k.schedule_summary.find("concat, one loop per input") != std::string::npos, !last_axis)
          << "case " << index << ": " << k.schedule_summary;
      EXPECT_EQ(text.find("select(") != std::string::npos, c.selects_left) << "case " << index << "\n" << text;
    }
  }
}

TEST(TransformTest, Gathers) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {5, 4, 3}});
  g.AddConstant("i", graph::Tensor::FromInts(ir::DType::Int(64), {2, 2}, {0, -1, 3, 2}));
  Add(&g, "Gather", "gather", {"x", "i"}, {"y"}, {{"axis", Attribute(int64_t{1})}});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"})));

  Graph e;
  e.AddInput("x", TensorType{kF32, {3, 4}});
  e.AddConstant("i", graph::Tensor::FromInts(ir::DType::Int(64), {2, 4}, {0, 2, 1, -1, 2, 0, 0, 1}));
  Add(&e, "GatherElements", "ge", {"x", "i"}, {"y"}, {{"axis", Attribute(int64_t{0})}});
  EXPECT_TRUE(CheckAgainstReference(Finish(e, {"y"})));

  Graph n;
  n.AddInput("x", TensorType{kF32, {3, 4, 5}});
  n.AddConstant("i", graph::Tensor::FromInts(ir::DType::Int(64), {2, 2}, {0, 1, 2, 3}));
  Add(&n, "GatherND", "gnd", {"x", "i"}, {"y"});
  EXPECT_TRUE(CheckAgainstReference(Finish(n, {"y"})));
}

TEST(TransformTest, GathersOfAConstantScalarIndexInAProductsEpilogue) {
  // Q, K and V picked from one projection with Gather(axis 0, constant scalar), as Swin exports
  // its attention; in one kernel with the product (fusion `all`) the index was an unbound read.
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 6, 8}});
  g.AddConstant("w", RandomTensor({8, 24}, 3));
  Add(&g, "MatMul", "qkv", {"x", "w"}, {"p"});
  Add(&g, "Reshape", "split", {"p"}, {"r"}, {{"shape", Attribute(Ints{1, 6, 3, 2, 4})}});
  Add(&g, "Transpose", "heads", {"r"}, {"t"}, {{"perm", Attribute(Ints{2, 0, 3, 1, 4})}});
  std::vector<std::string> outputs;
  for (int64_t i : {0, 1, -1}) {
    std::string n = "pick" + std::to_string(i + 1);
    g.AddConstant(n + "_index", graph::Tensor::FromInts(ir::DType::Int(64), {}, {i}));
    Add(&g, "Gather", n, {"t", n + "_index"}, {n + "_out"}, {{"axis", Attribute(int64_t{0})}});
    outputs.push_back(n + "_out");
  }
  Graph model = Finish(g, outputs);
  EXPECT_TRUE(CheckAgainstReference(model));
  testing::CheckOptions one_kernel;
  one_kernel.one_group = true;
  EXPECT_TRUE(CheckAgainstReference(model, one_kernel));
}

TEST(TransformTest, Resize) {
  std::vector<Attrs> cases = {
      {{"mode", Attribute("nearest")}, {"scales", Attribute(std::vector<double>{1, 1, 2, 1.5})}},
      {{"mode", Attribute("linear")}, {"scales", Attribute(std::vector<double>{1, 1, 2, 2})}},
      {{"mode", Attribute("linear")}, {"sizes", Attribute(Ints{1, 2, 3, 7})},
       {"coordinate_transformation_mode", Attribute("align_corners")}},
      {{"mode", Attribute("cubic")}, {"scales", Attribute(std::vector<double>{1, 1, 0.5, 2})}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(CheckAgainstReference(OneOp("Resize", {1, 2, 6, 5}, cases[i]))) << "case " << i;
  }
}

// What a corrupt model's Resize may ask for is refused by name before anything is sized by it:
// the compiler ABI fuzzer's input that had the operator library build a tap table with a row per
// output coordinate of a 2e18-long axis (the output held no element: another axis was 0).
std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "no error";
}

TEST(TransformTest, ResizeRefusesAbsurdExtentsBeforeSizingAnything) {
  auto scaled = [](std::vector<double> scales) {
    return OneOp("Resize", {1, 1, 2, 2}, {{"mode", Attribute("nearest")}, {"scales", Attribute(scales)}});
  };
  EXPECT_NE(ErrorOf([&] { scaled({0.9999998, 0.996, 2, 9.95e17}); }).find("agate resizes an axis to at most 4194304"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { scaled({1, 1, 1, 1e300}); }).find("at most"), std::string::npos);
  for (double bad : {-1.0, 0.0, std::nan(""), HUGE_VAL}) {
    EXPECT_NE(ErrorOf([&] { scaled({1, 1, 1, bad}); }).find("must be positive and finite"), std::string::npos) << bad;
  }
  // `sizes` give the extents directly: an empty output beside a 2^30-long axis passes shape
  // inference (no element), and the tap tables refuse it, in the operator library and the reference.
  Graph g = OneOp("Resize", {1, 1, 1, 1}, {{"mode", Attribute("linear")}, {"sizes", Attribute(Ints{0, 1, 1, 1 << 30})}});
  Graph fused = testing::Fuse(g);
  std::string lowered = ErrorOf([&] {
    LowerGroup(fused, fused.groups[0], target::Target::Parse("llvm"), "k");
  });
  EXPECT_NE(lowered.find("'op'"), std::string::npos) << lowered;
  EXPECT_NE(lowered.find("resizing axis 3 to 1073741824 positions"), std::string::npos) << lowered;
  std::string interpreted = ErrorOf([&] { graph_eval::Interpret(g, {{"x", RandomTensor({1, 1, 1, 1}, 1)}}); });
  EXPECT_NE(interpreted.find("resizing axis 3"), std::string::npos) << interpreted;
  // A dimension beyond 2^40 is refused even where another is 0.
  EXPECT_NE(ErrorOf([&] {
              OneOp("Resize", {1, 1, 1, 1}, {{"sizes", Attribute(Ints{0, 1, 1, int64_t{1} << 50})}});
            }).find("too large"),
            std::string::npos);
}

// reshape -> transpose -> add -> relu: one injective kernel.
TEST(TransformTest, InjectiveChain) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {2, 12, 16}});
  g.AddConstant("b", RandomTensor({16, 1, 1}, 3));
  Add(&g, "Reshape", "r", {"x"}, {"r"}, {{"shape", Attribute(Ints{2, 3, 4, 16})}});
  Add(&g, "Transpose", "t", {"r"}, {"t"}, {{"perm", Attribute(Ints{0, 3, 1, 2})}});
  Add(&g, "Add", "a", {"t", "b"}, {"a"});
  Add(&g, "Relu", "relu", {"a"}, {"y"});
  Graph finished = Finish(g, {"y"});
  EXPECT_EQ(testing::Fuse(finished).groups.size(), 1u);
  EXPECT_TRUE(CheckAgainstReference(finished));
}

TEST(TransformTest, LayoutTransforms) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 16, 3, 5}});
  Add(&g, "LayoutTransform", "to", {"x"}, {"b"}, {{"src_layout", Attribute("NCHW")}, {"dst_layout", Attribute("NCHW8c")}});
  Add(&g, "Relu", "relu", {"b"}, {"r"});
  Add(&g, "LayoutTransform", "from", {"r"}, {"y"}, {{"src_layout", Attribute("NCHW8c")}, {"dst_layout", Attribute("NCHW")}});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y", "b"})));
}

// Scatter written as a search from the output side: the last update wins
// without a reduction, add/mul/max/min fold every update that lands on an element;
// negative indices count from the end; indices smaller than data leave the
// rest of data untouched.
TEST(TransformTest, ScatterElementsAndScatterND) {
  using Ints = std::vector<int64_t>;
  const ir::DType kI64 = ir::DType::Int(64);
  for (const char* reduction : {"none", "add", "mul", "max", "min"}) {  // max/min: opset 18
    for (int64_t axis : {0, 1, -1}) {
      Graph g;
      g.AddInput("data", TensorType{kF32, {4, 5}});
      g.AddInput("upd", TensorType{kF32, {2, 3}});
      // Duplicates along the axis (0 twice in a row or column) and a negative index.
      g.AddConstant("idx", graph::Tensor::FromInts(kI64, {2, 3}, {0, -1, 0, 2, 0, 0}));
      Add(&g, "ScatterElements", "s", {"data", "idx", "upd"}, {"y"},
          {{"axis", Attribute(axis)}, {"reduction", Attribute(std::string(reduction))}});
      EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << "ScatterElements axis " << axis << " " << reduction;
    }
    Graph g;
    g.AddInput("data", TensorType{kF32, {4, 3, 2}});
    g.AddInput("upd", TensorType{kF32, {2, 2, 2}});
    g.AddConstant("idx", graph::Tensor::FromInts(kI64, {2, 2, 2}, Ints{0, 1, 3, 2, 0, 1, -1, 0}));
    Add(&g, "ScatterND", "s", {"data", "idx", "upd"}, {"y"}, {{"reduction", Attribute(std::string(reduction))}});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << "ScatterND " << reduction;
    // One index tuple (1-D indices): a row replaced or folded, nothing to search among
    // (the compiler-ABI fuzzer's internal error: a reduction with no axis).
    Graph one;
    one.AddInput("data", TensorType{kF32, {4, 3}});
    one.AddInput("upd", TensorType{kF32, {3}});
    one.AddConstant("idx", graph::Tensor::FromInts(kI64, {1}, Ints{-2}));
    Add(&one, "ScatterND", "s", {"data", "idx", "upd"}, {"y"}, {{"reduction", Attribute(std::string(reduction))}});
    EXPECT_TRUE(CheckAgainstReference(Finish(one, {"y"}))) << "ScatterND of one tuple " << reduction;
  }
}

// Index shapes ONNX does not define are refused by name at shape inference, never read
// past the data (the compiler-ABI fuzzer's crashes: scalar indices, tuples longer than the
// data's rank, indices longer than the data along an axis other than `axis`).
TEST(TransformTest, BadIndexShapesAreRefused) {
  const ir::DType kI64 = ir::DType::Int(64);
  struct Case {
    const char* op;
    graph::Shape data, indices, updates;
    const char* message;
  };
  const Case cases[] = {
      {"GatherND", {2, 4}, {}, {}, "must both have rank >= 1"},
      {"GatherND", {2, 4}, {3, 3}, {}, "index tuples of 3 coordinates"},
      {"GatherND", {2, 4}, {3, 0}, {}, "index tuples of 0 coordinates"},
      {"ScatterND", {2, 4}, {2, 3}, {2}, "index tuples of 3 coordinates"},
      {"ScatterND", {2, 4}, {1}, {3}, "updates float32[3] must be float32[4]"},
      {"ScatterElements", {2, 4}, {}, {}, "must have the rank of the data"},
      {"ScatterElements", {2, 4}, {1, 5}, {1, 5}, "longer than the data [2,4] along axis 1"},
      {"ScatterElements", {2, 4}, {1, 3}, {1, 2}, "must have the indices' shape"},
      {"GatherElements", {2, 4}, {3, 5}, {}, "longer than the data [2,4] along axis 1"},
      {"ArgMax", {}, {}, {}, "a scalar has no axis"},
  };
  for (const Case& c : cases) {
    Graph g;
    g.AddInput("data", TensorType{kF32, c.data});
    std::vector<std::string> inputs{"data"};
    if (std::string(c.op) != "ArgMax") {
      g.AddInput("idx", TensorType{kI64, c.indices});
      inputs.push_back("idx");
    }
    if (std::string(c.op).rfind("Scatter", 0) == 0) {
      g.AddInput("upd", TensorType{kF32, c.updates});
      inputs.push_back("upd");
    }
    try {
      Add(&g, c.op, "bad", inputs, {"y"});
      Finish(g, {"y"});
      ADD_FAILURE() << c.op << " of " << graph::ShapeToString(c.indices) << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << c.op << ": " << e.what();
    }
  }
}

// TopK along each axis, largest and smallest, with ties (ONNX: the lower index first).
TEST(TransformTest, TopK) {
  for (int64_t largest : {1, 0}) {
    for (int64_t axis : {1, -1, 0}) {
      Graph g;
      g.AddInput("x", TensorType{kF32, {3, 6}});
      g.AddConstant("two", graph::Tensor::Scalar(kF32, 2.0));
      Add(&g, "Mul", "scale", {"x", "two"}, {"x2"});
      Add(&g, "Floor", "ties", {"x2"}, {"v"});  // 4 distinct values over 6 columns: ties in every row
      Add(&g, "TopK", "k", {"v"}, {"values", "indices"},
          {{"k", Attribute(std::vector<int64_t>{axis == 0 ? 2 : 4})}, {"axis", Attribute(axis)}, {"largest", Attribute(largest)}});
      EXPECT_TRUE(CheckAgainstReference(Finish(g, {"values", "indices"}))) << "axis " << axis << " largest " << largest;
    }
  }
}

// Only the values used: the indices output is unnamed (ONNX's "" for an unused output) and has
// no type, so k comes from the values' shape (it once read the missing type's empty shape: a
// crash the compiler-ABI fuzzer found); or the node names the values alone (LowerGroup once
// refused the operator's second output as an internal error).
TEST(TransformTest, TopKWithUnnamedIndices) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {2, 5}});
  Add(&g, "TopK", "k", {"x"}, {"values", ""}, {{"k", Attribute(std::vector<int64_t>{3})}, {"axis", Attribute(int64_t{1})}});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"values"})));
  // The indices left out altogether (a node of one output): the operator still builds them, as
  // an intermediate of the values.
  Graph one;
  one.AddInput("x", TensorType{kF32, {2, 5}});
  Add(&one, "TopK", "k", {"x"}, {"values"}, {{"k", Attribute(std::vector<int64_t>{2})}, {"axis", Attribute(int64_t{1})}});
  EXPECT_TRUE(CheckAgainstReference(Finish(one, {"values"})));
}

TEST(TransformTest, ReblockBetweenBlockSizes) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 24, 3, 5}});
  Add(&g, "LayoutTransform", "to", {"x"}, {"b8"}, {{"src_layout", Attribute("NCHW")}, {"dst_layout", Attribute("NCHW8c")}});
  Add(&g, "LayoutTransform", "reblock", {"b8"}, {"b4"},
      {{"src_layout", Attribute("NCHW8c")}, {"dst_layout", Attribute("NCHW4c")}});
  Add(&g, "LayoutTransform", "from", {"b4"}, {"y"}, {{"src_layout", Attribute("NCHW4c")}, {"dst_layout", Attribute("NCHW")}});
  Graph finished = Finish(g, {"y", "b4"});
  EXPECT_EQ(finished.TypeOf("b4").shape, (graph::Shape{1, 6, 3, 5, 4}));
  EXPECT_TRUE(CheckAgainstReference(finished));
}

}  // namespace
}  // namespace ops
}  // namespace agate
