// Reductions, ArgMax/ArgMin and the softmax family, against the reference.
#include <gtest/gtest.h>

#include <limits>

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

const ir::DType kF32 = ir::DType::Float(32);
using Attrs = std::vector<std::pair<std::string, Attribute>>;
using Ints = std::vector<int64_t>;

Graph OneOp(const std::string& op, graph::Shape x, Attrs attrs, bool positive = false) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  std::string in = "x";
  if (positive) {
    Add(&g, "Abs", "abs", {"x"}, {"ax"});
    in = "ax";
  }
  Add(&g, op, "op", {in}, {"y"}, attrs);
  return Finish(g, {"y"});
}

TEST(ReduceTest, ReduceOps) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    bool positive = std::string(op) == "ReduceLogSum";
    for (const Attrs& attrs : std::vector<Attrs>{{{"axes", Attribute(Ints{1})}},
                                                 {{"axes", Attribute(Ints{-1})}, {"keepdims", Attribute(int64_t{0})}},
                                                 {{"axes", Attribute(Ints{0, 2})}, {"keepdims", Attribute(int64_t{0})}},
                                                 {}}) {
      EXPECT_TRUE(CheckAgainstReference(OneOp(op, {3, 4, 32}, attrs, positive))) << op;
    }
  }
}

// Reductions over the last axis whose output takes no vectors (a scalar, [rows, 1], [3, 4])
// accumulate in vector partials (LLVM kernels on 2 threads and the loop-IR interpreter), with and without an epilogue
// (ReduceMean's division; DynamicQuantizeLinear's Min(ReduceMin(x), 0)); a last axis the lanes do not
// divide, or another axis, keeps the default schedule. Both match the reference.
TEST(ReduceTest, LastAxisReductionsAccumulateInVectorPartials) {
  struct Case {
    const char* op;
    graph::Shape x;
    Attrs attrs;
    bool partials;
  };
  const Attrs all_scalar = {{"keepdims", Attribute(int64_t{0})}};
  const std::vector<Case> cases = {
      {"ReduceMax", {128, 96}, all_scalar, true},
      {"ReduceMin", {2, 64, 48}, all_scalar, true},
      {"ReduceSum", {40, 80}, {{"axes", Attribute(Ints{-1})}}, true},
      {"ReduceMean", {3, 4, 32}, {{"axes", Attribute(Ints{-1})}, {"keepdims", Attribute(int64_t{0})}}, true},
      {"ReduceMax", {5, 33}, {{"axes", Attribute(Ints{-1})}}, false},   // 33: no whole vectors
      {"ReduceSum", {64, 48}, {{"axes", Attribute(Ints{0})}}, false},   // not the last axis
  };
  for (const Case& c : cases) {
    testing::CheckOptions options;
    options.threads = 2;  // the LLVM kernels on 2 threads: the parallel data loop where there is one
    EXPECT_TRUE(CheckAgainstReference(OneOp(c.op, c.x, c.attrs), options)) << c.op;
    Graph g = testing::Fuse(OneOp(c.op, c.x, c.attrs));
    std::vector<std::string> summaries;
    testing::RunGroups(g, testing::RandomInputs(g, 3), testing::Backend::kEval, target::Target::Host(), {},
                       &summaries);
    bool found = false, epilogue = false;
    for (const std::string& s : summaries) {
      found |= s.find("vector partials over the last axis") != std::string::npos;
      epilogue |= s.find("vector partials over the last axis, epilogue inlined") != std::string::npos;
    }
    EXPECT_EQ(found, c.partials) << c.op << " " << graph::ShapeToString(c.x);
    // ReduceMean's division is the anchor's epilogue, computed at the fused data loop.
    EXPECT_EQ(epilogue, std::string(c.op) == "ReduceMean") << c.op;
  }
  // DynamicQuantizeLinear's form: the scalar min, then Min with 0.
  Graph g;
  g.AddInput("x", TensorType{kF32, {64, 96}});
  g.AddConstant("zero", graph::Tensor::FromDoubles(kF32, {}, {0.0}));
  Add(&g, "ReduceMin", "rmin", {"x"}, {"m"}, all_scalar);
  Add(&g, "Min", "min0", {"m", "zero"}, {"y"});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"})));
  Graph fused = testing::Fuse(Finish(g, {"y"}));
  std::vector<std::string> summaries;
  testing::RunGroups(fused, testing::RandomInputs(fused, 4), testing::Backend::kEval, target::Target::Host(), {},
                     &summaries);
  ASSERT_FALSE(summaries.empty());
  EXPECT_NE(summaries[0].find("vector partials over the last axis"), std::string::npos) << summaries[0];
}

TEST(ReduceTest, ArgMaxArgMin) {
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (int64_t last : {0, 1}) {
      Graph g;
      g.AddInput("x", TensorType{ir::DType::Int(32), {3, 7, 5}});  // small ints: many ties
      Add(&g, op, "arg", {"x"}, {"y"},
          {{"axis", Attribute(int64_t{1})}, {"keepdims", Attribute(int64_t{0})}, {"select_last_index", Attribute(last)}});
      EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << op << " last=" << last;
    }
  }
}

// Infinite elements are candidates like any other: a row of -inf has its argmax at 0 (and of
// +inf its argmin), not at the reducer's "no candidate" index -1.
TEST(ReduceTest, ArgMaxArgMinOverInfinities) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const char* op : {"ArgMax", "ArgMin"}) {
    double fill = std::string(op) == "ArgMax" ? -inf : inf;
    std::vector<double> c(4 * 6, 0.0);
    for (int j = 0; j < 6; ++j) c[j] = fill;         // row 0: all infinite
    for (int j = 0; j < 6; j += 2) c[6 + j] = fill;  // row 1: some
    Graph g;
    g.AddInput("x", TensorType{kF32, {4, 6}});
    g.AddConstant("c", graph::Tensor::FromDoubles(kF32, {4, 6}, c));
    Add(&g, "Add", "add", {"x", "c"}, {"s"});
    Add(&g, op, "arg", {"s"}, {"y"}, {{"axis", Attribute(int64_t{1})}});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << op;
  }
}

// ReduceMax of a row of -inf is -inf (and ReduceMin of +inf is +inf), not the
// lowest (highest) finite float: te::max/min start from the infinities for floats.
TEST(ReduceTest, MaxMinOverInfinities) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    double fill = std::string(op) == "ReduceMax" ? -inf : inf;
    std::vector<double> c(4 * 6, 0.0);
    for (int j = 0; j < 6; ++j) c[j] = fill;  // row 0: all infinite
    Graph g;
    g.AddInput("x", TensorType{kF32, {4, 6}});
    g.AddConstant("c", graph::Tensor::FromDoubles(kF32, {4, 6}, c));
    Add(&g, "Add", "add", {"x", "c"}, {"s"});
    Add(&g, op, "r", {"s"}, {"y"}, {{"axes", Attribute(std::vector<int64_t>{1})}, {"keepdims", Attribute(int64_t{0})}});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << op;
  }
}

TEST(SoftmaxTest, SoftmaxFamily) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    EXPECT_TRUE(CheckAgainstReference(OneOp(op, {4, 6, 32}, {}))) << op << " last axis";
    EXPECT_TRUE(CheckAgainstReference(OneOp(op, {2, 5, 3, 4}, {{"axis", Attribute(int64_t{1})}}))) << op << " axis 1";
    EXPECT_TRUE(CheckAgainstReference(
        OneOp(op, {2, 5, 3, 4}, {{"axis", Attribute(int64_t{1})}, {"coerce_2d", Attribute(int64_t{1})}})))
        << op << " coerce_2d";
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
