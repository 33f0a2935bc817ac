#include "core/graph/passes/batch_axis_analysis.h"

#include <gtest/gtest.h>

#include <functional>

#include "core/graph/testing/graph_builder.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using testing::Add;

// x [n, 8] -> body -> outputs, for n in {1, 4}.
using Body = std::function<std::vector<std::string>(Graph*)>;

Graph At(int64_t n, const Body& body) {
  Graph g;
  g.inputs = {"x"};
  g.types["x"] = TensorType{DType::Float(32), {n, 8}};
  g.constants["w"] = testing::RandomTensor({8, 3}, 1);
  g.types["w"] = TensorType{DType::Float(32), {8, 3}};
  std::vector<std::string> outputs = body(&g);
  return testing::Finish(std::move(g), outputs);
}

BatchAxes Analyze(const Body& body) { return AnalyzeBatchAxes(At(1, body), 1, At(4, body), 4, "N", {"x"}); }

std::string Refusal(const Body& body) {
  try {
    Analyze(body);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    return e.what();
  }
  return "";
}

TEST(BatchAxisAnalysisTest, RowWiseOperatorsKeepTheBatchAxis) {
  BatchAxes axes = Analyze([](Graph* g) {
    Add(g, "MatMul", "mm", {"x", "w"}, {"h"});
    Add(g, "Relu", "relu", {"h"}, {"r"});
    Add(g, "Softmax", "sm", {"r"}, {"y"}, {{"axis", int64_t{1}}});
    Add(g, "ReduceSum", "wsum", {"w"}, {"s"}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}});
    return std::vector<std::string>{"y", "s"};
  });
  EXPECT_EQ(axes.inputs, std::vector<bool>({true}));
  EXPECT_EQ(axes.outputs, std::vector<bool>({true, false}));
}

TEST(BatchAxisAnalysisTest, ReductionOverTheBatchAxisIsRefusedNamingTheNode) {
  const std::string message = Refusal([](Graph* g) {
    Add(g, "ReduceMean", "r1", {"x"}, {"m"}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{1}}});
    Add(g, "Sub", "centre", {"x", "m"}, {"y"});
    return std::vector<std::string>{"y"};
  });
  EXPECT_NE(message.find("ReduceMean 'r1' output 'm' has shapes [1,8] and [1,8] at N = 1 and 4: it reduces or drops "
                         "axis 0, which carries N, so N cannot vary at run time"),
            std::string::npos)
      << message;
}

TEST(BatchAxisAnalysisTest, SoftmaxOverTheBatchAxisIsRefused) {
  const std::string message = Refusal([](Graph* g) {
    Add(g, "Softmax", "sm0", {"x"}, {"y"}, {{"axis", int64_t{0}}});
    return std::vector<std::string>{"y"};
  });
  EXPECT_NE(message.find("Softmax 'sm0' combines elements along axis 0, which carries N"), std::string::npos) << message;
}

TEST(BatchAxisAnalysisTest, MovingTheBatchAxisIsRefused) {
  const std::string message = Refusal([](Graph* g) {
    Add(g, "Transpose", "t", {"x"}, {"y"}, {{"perm", std::vector<int64_t>{1, 0}}});
    return std::vector<std::string>{"y"};
  });
  EXPECT_NE(message.find("Transpose 't' output 'y' has shapes [8,1] and [8,4]"), std::string::npos) << message;
  EXPECT_NE(message.find("moves or merges axis 0"), std::string::npos) << message;
}

// Operators that keep the shape yet combine rows by attributes other than an axis: a whole-tensor
// scale, normalization over axis 0, training statistics.
TEST(BatchAxisAnalysisTest, WholeTensorStatisticsAreRefused) {
  EXPECT_NE(Refusal([](Graph* g) {
              Add(g, "DynamicQuantizeLinear", "dq", {"x"}, {"q", "scale", "zero"});
              return std::vector<std::string>{"q"};
            }).find("DynamicQuantizeLinear 'dq' combines elements along axis 0"),
            std::string::npos);
  EXPECT_NE(Refusal([](Graph* g) {
              Add(g, "MeanVarianceNormalization", "mvn", {"x"}, {"y"}, {{"axes", std::vector<int64_t>{0, 1}}});
              return std::vector<std::string>{"y"};
            }).find("MeanVarianceNormalization 'mvn' combines elements along axis 0"),
            std::string::npos);
  EXPECT_EQ(Refusal([](Graph* g) {
              Add(g, "MeanVarianceNormalization", "mvn", {"x"}, {"y"}, {{"axes", std::vector<int64_t>{1}}});
              return std::vector<std::string>{"y"};
            }),
            "");
}

// The one-node form the importer uses for rows counted at run time.
TEST(BatchAxisAnalysisTest, RowMixingReasonForOneNode) {
  Graph g = At(4, [](Graph* g) {
    Add(g, "MatMul", "mm", {"x", "w"}, {"h"});
    Add(g, "CumSum", "running", {"h"}, {"c"}, {{"axis", std::vector<int64_t>{0}}});
    Add(g, "ReduceMax", "best", {"h"}, {"m"}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
    return std::vector<std::string>{"c", "m"};
  });
  EXPECT_EQ(RowMixingReason(g.nodes[0], {{"x", 0}}, g.types, g.constants), "");
  EXPECT_EQ(RowMixingReason(g.nodes[1], {{"h", 0}}, g.types, g.constants),
            "CumSum combines elements along axis 0, which holds the rows");
  EXPECT_EQ(RowMixingReason(g.nodes[2], {{"h", 0}}, g.types, g.constants), "");
  // The weights as the rows: MatMul contracts them away (one more row no longer multiplies).
  EXPECT_NE(RowMixingReason(g.nodes[0], {{"w", 0}}, g.types, g.constants).find("do not follow the rows"),
            std::string::npos);
}

// Rows on axis 1 after an axis of extent 1 (NonZero's positions of a mask, [1, rows]): a
// Transpose brings them to axis 0, the same bytes; a Softmax along them combines them.
TEST(BatchAxisAnalysisTest, RowsAfterAnAxisOfExtentOne) {
  Graph g;
  g.AddInput("p", TensorType{DType::Int(64), {1, 6}});
  g.AddInput("f", TensorType{DType::Float(32), {1, 6}});
  Add(&g, "Transpose", "flip", {"p"}, {"t"}, {{"perm", std::vector<int64_t>{1, 0}}});
  Add(&g, "Softmax", "norm", {"f"}, {"s"}, {{"axis", int64_t{1}}});
  Add(&g, "Softmax", "norm0", {"f"}, {"s0"}, {{"axis", int64_t{0}}});
  g = testing::Finish(std::move(g), {"t", "s", "s0"});
  std::vector<int> axes;
  EXPECT_EQ(RowMixingReason(g.nodes[0], {{"p", 1}}, g.types, g.constants, &axes), "");
  EXPECT_EQ(axes, std::vector<int>({0}));
  EXPECT_EQ(RowMixingReason(g.nodes[1], {{"f", 1}}, g.types, g.constants),
            "Softmax combines elements along axis 1, which holds the rows");
  EXPECT_EQ(RowMixingReason(g.nodes[2], {{"f", 1}}, g.types, g.constants, &axes), "");
  EXPECT_EQ(axes, std::vector<int>({1}));
}

// Rows after an axis longer than 1 (NonZero's positions of a 2-D mask, [2, rows]; read in the
// bound layout): a Transpose moves them to axis 0, elementwise operators keep them on axis 1.
// Operators that combine elements along the rows' axis by attributes other than `axis` are
// refused on that axis and allowed on the others: normalization over `axes`, the recurrent
// layers' time axis (axis 1 in layout 1), ReverseSequence's time_axis.
TEST(BatchAxisAnalysisTest, RowsAfterAnAxisLongerThanOne) {
  Graph g;
  g.AddInput("p", TensorType{DType::Int(64), {2, 6}});
  g.AddInput("f", TensorType{DType::Float(32), {3, 6, 4}});
  Add(&g, "Transpose", "flip", {"p"}, {"t"}, {{"perm", std::vector<int64_t>{1, 0}}});
  Add(&g, "Neg", "negate", {"p"}, {"n"});
  Add(&g, "MeanVarianceNormalization", "mvn1", {"f"}, {"m1"}, {{"axes", std::vector<int64_t>{1}}});
  Add(&g, "MeanVarianceNormalization", "mvn2", {"f"}, {"m2"}, {{"axes", std::vector<int64_t>{-1}}});
  Add(&g, "ReverseSequence", "reverse", {"f", "lens"}, {"r"}, {{"time_axis", int64_t{1}}, {"batch_axis", int64_t{0}}});
  g.AddInput("lens", TensorType{DType::Int(64), {3}});
  g = testing::Finish(std::move(g), {"t", "n", "m1", "m2", "r"});
  std::vector<int> axes;
  EXPECT_EQ(RowMixingReason(g.nodes[0], {{"p", 1}}, g.types, g.constants, &axes), "");
  EXPECT_EQ(axes, std::vector<int>({0}));
  EXPECT_EQ(RowMixingReason(g.nodes[1], {{"p", 1}}, g.types, g.constants, &axes), "");
  EXPECT_EQ(axes, std::vector<int>({1}));
  EXPECT_EQ(RowMixingReason(g.nodes[2], {{"f", 1}}, g.types, g.constants),
            "MeanVarianceNormalization combines elements along axis 1, which holds the rows");
  EXPECT_EQ(RowMixingReason(g.nodes[3], {{"f", 1}}, g.types, g.constants, &axes), "");
  EXPECT_EQ(axes, std::vector<int>({1}));
  EXPECT_EQ(RowMixingReason(g.nodes[4], {{"f", 1}}, g.types, g.constants),
            "ReverseSequence combines elements along axis 1, which holds the rows");
}

// A recurrent layer in layout 1 ([batch, time, features]) runs along axis 1: rows there are
// time steps and mix; rows on the batch axis do not (layout 0 is the other way round).
TEST(BatchAxisAnalysisTest, RecurrentLayersMixRowsAlongTheirTimeAxis) {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {2, 5, 3}});
  g.AddConstant("w", Tensor(DType::Float(32), {1, 16, 3}));
  g.AddConstant("r", Tensor(DType::Float(32), {1, 16, 4}));
  Add(&g, "LSTM", "lstm", {"x", "w", "r"}, {"y"}, {{"hidden_size", int64_t{4}}, {"layout", int64_t{1}}});
  g = testing::Finish(std::move(g), {"y"});
  EXPECT_EQ(RowMixingReason(g.nodes[0], {{"x", 1}}, g.types, g.constants),
            "LSTM combines elements along axis 1, which holds the rows");
  EXPECT_EQ(RowMixingReason(g.nodes[0], {{"x", 0}}, g.types, g.constants), "");
}

}  // namespace
}  // namespace graph
}  // namespace agate
