// RunTimeNonZero, RunTimeCompress and RunTimeUnique (selections whose extents depend on values
// read at run time) on the loop-IR evaluator and as LLVM host code against the reference
// interpreter, over ragged, all-zero and all-nonzero inputs of every dtype the operators allow,
// and the reference itself against ONNX's documented examples.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/ops/testing/reference_check.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::Shape;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI64 = ir::DType::Int(64);
const ir::DType kBool = ir::DType::Bool();
const std::vector<ir::DType> kDTypes = {kF32,
                                        ir::DType::Float(64),
                                        ir::DType::Float(16),
                                        ir::DType::Int(8),
                                        ir::DType::Int(32),
                                        kI64,
                                        ir::DType::UInt(8),
                                        kBool};

using Attrs = std::vector<std::pair<std::string, Attribute>>;
using Tensors = std::map<std::string, graph::Tensor>;

// A graph of one run-time selection whose data outputs `data` (each followed by its extents)
// are the graph's outputs.
Graph SelectionGraph(const std::string& op, const std::vector<std::pair<std::string, TensorType>>& inputs,
                     const std::vector<std::string>& data, const Attrs& attrs) {
  Graph g;
  std::vector<std::string> input_names, outputs, visible;
  for (const auto& [name, type] : inputs) {
    g.AddInput(name, type);
    input_names.push_back(name);
  }
  for (const std::string& d : data) {
    outputs.push_back(d);
    outputs.push_back(d + "_extents");
    g.run_time_extents[d] = d + "_extents";
    visible.push_back(d);
  }
  Add(&g, op, "sel", input_names, outputs, attrs);
  for (const std::string& d : data) visible.push_back(d + "_extents");
  return Finish(g, visible);
}

// Compares each data output's extents and its compact elements with the reference's on both
// backends; returns the reference's outputs.
Tensors ExpectMatchesReference(const Graph& g, const Tensors& inputs, const std::vector<std::string>& data,
                               const std::string& where) {
  Tensors want = graph_eval::Interpret(g, inputs);
  Graph fused = testing::Fuse(g);
  for (testing::Backend backend : {testing::Backend::kEval, testing::Backend::kLLVM}) {
    Tensors got = testing::RunGroups(fused, inputs, backend, target::Target::Parse("llvm"));
    std::string at = where + (backend == testing::Backend::kEval ? " (loop-IR evaluator)" : " (LLVM)");
    for (const std::string& d : data) {
      Shape extents = want.at(d + "_extents").ToInts();
      EXPECT_EQ(got.at(d + "_extents").ToInts(), extents) << at << " " << d;
      size_t bytes = static_cast<size_t>(graph::NumElements(extents)) * want.at(d).dtype().element_bytes();
      EXPECT_EQ(std::memcmp(got.at(d).raw_data(), want.at(d).raw_data(), bytes), 0)
          << at << " " << d << ": got " << got.at(d).ToString(24) << ", want " << want.at(d).ToString(24);
    }
  }
  return want;
}

// Values drawn from {-1, 0, 1, 2} ({0, 1, 2, 3} unsigned, {0, 1} bool: zeros, repeats and
// negatives), or all `fill` when fill >= 0.
graph::Tensor Values(ir::DType dtype, const Shape& shape, uint32_t seed, int fill = -1) {
  graph::Tensor t(dtype, shape);
  std::mt19937 rng(seed);
  const int64_t shift = dtype.is_uint() || dtype.is_bool() ? 0 : 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t v = static_cast<int64_t>(rng() % (dtype.is_bool() ? 2 : 4)) - shift;
    t.SetInt(i, fill >= 0 ? fill : v);
  }
  return t;
}

std::string Describe(ir::DType dtype, const Shape& shape, const std::string& what) {
  std::ostringstream s;
  s << dtype << graph::ShapeToString(shape) << " " << what;
  return s.str();
}

TEST(RunTimeSelectionTest, NonZeroMatchesTheReference) {
  struct Case {
    ir::DType dtype;
    Shape shape;
  };
  std::vector<Case> cases;
  for (ir::DType dtype : kDTypes) cases.push_back({dtype, {3, 4}});
  for (const Shape& shape : {Shape{7}, Shape{2, 3, 2}, Shape{}}) cases.push_back({kF32, shape});
  for (const auto& [dtype, shape] : cases) {
    {
      Graph g = SelectionGraph("RunTimeNonZero", {{"x", TensorType{dtype, shape}}}, {"y"}, {});
      for (int fill : {-1, 0, 1}) {
        if (dtype != kF32 && fill != -1) continue;  // all-zero and all-nonzero: float32
        Tensors want = ExpectMatchesReference(g, {{"x", Values(dtype, shape, 5, fill)}}, {"y"},
                                              Describe(dtype, shape, "fill " + std::to_string(fill)));
        Shape extents = want.at("y_extents").ToInts();
        EXPECT_EQ(extents[0], std::max<int64_t>(static_cast<int64_t>(shape.size()), 1));
        if (fill == 0) {
          EXPECT_EQ(extents[1], 0);
        }
        if (fill == 1) {
          EXPECT_EQ(extents[1], graph::NumElements(shape));
        }
      }
    }
  }
}

TEST(RunTimeSelectionTest, CompressMatchesTheReference) {
  const Shape shape = {3, 5, 2};
  for (ir::DType dtype : kDTypes) {  // the data is only copied: every dtype once, float32 every way
    for (int64_t axis : {0, 1, -1, 99}) {  // 99: no axis (flattened)
      if (dtype != kF32 && axis != 1) continue;
      Attrs attrs;
      if (axis != 99) attrs.push_back({"axis", Attribute(axis)});
      int64_t extent = axis == 99 ? 30 : shape[axis < 0 ? axis + 3 : axis];
      for (int64_t entries : {extent, std::max<int64_t>(extent - 2, 1)}) {
        if (dtype != kF32 && entries != extent) continue;
        Graph g = SelectionGraph("RunTimeCompress",
                                 {{"x", TensorType{dtype, shape}}, {"condition", TensorType{kBool, {entries}}}}, {"y"},
                                 attrs);
        for (int fill : {-1, 0, 1}) {
          if ((dtype != kF32 || entries != extent) && fill != -1) continue;
          Tensors inputs = {{"x", Values(dtype, shape, 3)}, {"condition", Values(kBool, {entries}, 11, fill)}};
          ExpectMatchesReference(g, inputs, {"y"},
                                 Describe(dtype, shape, "axis " + std::to_string(axis) + " entries " +
                                                            std::to_string(entries) + " fill " + std::to_string(fill)));
        }
      }
    }
  }
}

TEST(RunTimeSelectionTest, UniqueMatchesTheReference) {
  const std::vector<std::string> data = {"y", "indices", "inverse", "counts"};
  struct Case {
    Shape shape;
    int64_t axis;  // 99: flattened
  };
  for (const Case& c : {Case{{9}, 99}, Case{{4, 3}, 99}, Case{{4, 3}, 0}, Case{{3, 4}, 1}, Case{{2, 3, 2}, 1},
                        Case{{2, 3, 2}, -1}}) {
    {
      const ir::DType dtype = kF32;  // every dtype below, flattened
      for (int64_t sorted : {0, 1}) {
        Attrs attrs = {{"sorted", Attribute(sorted)}};
        if (c.axis != 99) attrs.push_back({"axis", Attribute(c.axis)});
        Graph g = SelectionGraph("RunTimeUnique", {{"x", TensorType{dtype, c.shape}}}, data, attrs);
        for (int fill : {-1, 2}) {  // ragged repeats; one value throughout
          ExpectMatchesReference(g, {{"x", Values(dtype, c.shape, 1, fill)}}, data,
                                 Describe(dtype, c.shape, "axis " + std::to_string(c.axis) + " sorted " +
                                                              std::to_string(sorted) + " fill " + std::to_string(fill)));
        }
      }
    }
  }
  // Every dtype Unique allows, flattened and sorted.
  for (ir::DType dtype : kDTypes) {
    if (dtype.is_bool()) continue;  // Unique takes numbers only
    Graph g = SelectionGraph("RunTimeUnique", {{"x", TensorType{dtype, {9}}}}, data, {});
    ExpectMatchesReference(g, {{"x", Values(dtype, {9}, 3)}}, data, Describe(dtype, {9}, "flattened"));
  }
  // All distinct (every output at its bound).
  Graph g = SelectionGraph("RunTimeUnique", {{"x", TensorType{kF32, {6}}}}, data, {{"sorted", Attribute(int64_t{1})}});
  Tensors want = ExpectMatchesReference(g, {{"x", graph::testing::RandomTensor({6}, 4)}}, data, "distinct");
  EXPECT_EQ(want.at("y_extents").ToInts(), (std::vector<int64_t>{6}));
}

// ONNX's examples (the operator documentation) through the compiled kernels.
TEST(RunTimeSelectionTest, DocumentedExamples) {
  auto ints = [](const graph::Tensor& t, const Shape& extents) {
    std::vector<int64_t> v = t.ToInts();
    v.resize(graph::NumElements(extents));
    return v;
  };
  {
    Graph g = SelectionGraph("RunTimeNonZero", {{"x", TensorType{kBool, {2, 2}}}}, {"y"}, {});
    Tensors want = ExpectMatchesReference(g, {{"x", graph::Tensor::FromInts(kBool, {2, 2}, {1, 0, 1, 1})}}, {"y"},
                                          "nonzero example");
    EXPECT_EQ(want.at("y_extents").ToInts(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(ints(want.at("y"), {2, 3}), (std::vector<int64_t>{0, 1, 1, 0, 0, 1}));
  }
  const std::vector<std::string> data = {"y", "indices", "inverse", "counts"};
  graph::Tensor x = graph::Tensor::FromDoubles(kF32, {6}, {2, 1, 1, 3, 4, 3});
  struct Expected {
    int64_t sorted;
    std::vector<int64_t> y, indices, inverse, counts;
  };
  for (const Expected& e : {Expected{1, {1, 2, 3, 4}, {1, 0, 3, 4}, {1, 0, 0, 2, 3, 2}, {2, 1, 2, 1}},
                            Expected{0, {2, 1, 3, 4}, {0, 1, 3, 4}, {0, 1, 1, 2, 3, 2}, {1, 2, 2, 1}}}) {
    Graph g = SelectionGraph("RunTimeUnique", {{"x", TensorType{kF32, {6}}}}, data, {{"sorted", Attribute(e.sorted)}});
    Tensors want = ExpectMatchesReference(g, {{"x", x}}, data, "unique example sorted " + std::to_string(e.sorted));
    EXPECT_EQ(ints(want.at("y"), {4}), e.y);
    EXPECT_EQ(ints(want.at("indices"), {4}), e.indices);
    EXPECT_EQ(ints(want.at("inverse"), {6}), e.inverse);
    EXPECT_EQ(ints(want.at("counts"), {4}), e.counts);
  }
  // Unique along axis 0 of [[1, 0, 0], [1, 0, 0], [2, 3, 4]]: two distinct rows.
  Graph g = SelectionGraph("RunTimeUnique", {{"x", TensorType{kF32, {3, 3}}}}, data,
                           {{"axis", Attribute(int64_t{0})}, {"sorted", Attribute(int64_t{1})}});
  Tensors want = ExpectMatchesReference(
      g, {{"x", graph::Tensor::FromDoubles(kF32, {3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4})}}, data, "unique rows");
  EXPECT_EQ(want.at("y_extents").ToInts(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ints(want.at("y"), {2, 3}), (std::vector<int64_t>{1, 0, 0, 2, 3, 4}));
  EXPECT_EQ(ints(want.at("inverse"), {3}), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(ints(want.at("counts"), {2}), (std::vector<int64_t>{2, 1}));
}

}  // namespace
}  // namespace ops
}  // namespace agate
