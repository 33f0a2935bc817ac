// Elementwise and broadcast operators, alone and as fused injective chains,
// against the reference interpreter on the loop-IR interpreter and LLVM.
#include <gtest/gtest.h>

#include <cstring>

#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/ir/printer.h"
#include "core/ops/lower_group.h"
#include "core/ops/testing/reference_check.h"
#include "core/support/error.h"
#include "core/target/target.h"

namespace agate {
namespace ops {
namespace {

using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using testing::CheckAgainstReference;
using testing::CheckOptions;

const ir::DType kF32 = ir::DType::Float(32);

Graph Unary(const std::string& op, graph::Shape shape, std::vector<std::pair<std::string, graph::Attribute>> attrs = {}) {
  Graph g;
  g.AddInput("x", TensorType{kF32, shape});
  Add(&g, op, "n", {"x"}, {"y"}, attrs);
  return Finish(g, {"y"});
}

TEST(ElementwiseTest, UnaryFloatOps) {
  for (const char* op : {"Abs", "Neg", "Relu", "Sigmoid", "Tanh", "Exp", "Erf", "Floor", "Ceil", "Round", "Sign",
                         "Sin", "Cos", "Tan", "Sinh", "Cosh", "Asinh", "Atan", "Asin", "Acos", "Atanh", "HardSwish",
                         "Softplus", "Softsign", "Identity", "LeakyRelu", "Elu", "Celu", "Selu", "ThresholdedRelu",
                         "HardSigmoid", "Shrink", "Dropout"}) {
    CheckOptions o;
    o.tolerance = 2e-5;
    EXPECT_TRUE(CheckAgainstReference(Unary(op, {2, 3, 17}), o)) << op;
  }
}

// The activations the pattern fusion produces (graph/passes/activation_fusion.h).
TEST(ElementwiseTest, GeluAndSwish) {
  CheckOptions o;
  o.tolerance = 2e-5;
  EXPECT_TRUE(CheckAgainstReference(Unary("Gelu", {2, 3, 17}), o));
  EXPECT_TRUE(CheckAgainstReference(Unary("Gelu", {2, 3, 17}, {{"approximate", std::string("tanh")}}), o));
  EXPECT_TRUE(CheckAgainstReference(Unary("Swish", {2, 3, 17}), o));
  EXPECT_TRUE(CheckAgainstReference(Unary("Swish", {2, 3, 17}, {{"alpha", 1.702}}), o));
}

// A standalone elementwise kernel runs its rows in parallel and each row's vectors in a plain
// inner loop: with the vector loop fused into the parallel one, every vector recomputed its
// coordinates from the fused index (three 64-bit divisions for a 4-D output), which cost more
// than GELU itself. Rows too few to share among threads keep the fused loop.
TEST(ElementwiseTest, InjectiveRowsKeepTheirVectorsInAnInnerLoop) {
  const target::Target avx2 = target::Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell");
  auto lower = [&](graph::Shape shape) {
    Graph fused = testing::Fuse(Unary("Gelu", shape), true);
    return ir::ToString(LowerGroup(fused, fused.groups[0], avx2, "gelu").func);
  };
  std::string rows = lower({1, 96, 20, 32});  // 1920 rows of 4 vectors
  EXPECT_NE(rows.find(", 0, 1920) parallel {"), std::string::npos) << rows;
  EXPECT_NE(rows.find(", 0, 4) {"), std::string::npos) << rows;
  std::string few = lower({1, 8, 4096});  // 8 rows: the vectors share the parallel loop
  EXPECT_NE(few.find(", 0, 4096) parallel {"), std::string::npos) << few;
  CheckOptions o;
  o.tolerance = 2e-5;
  EXPECT_TRUE(CheckAgainstReference(Unary("Gelu", {2, 70, 48}), o));
  EXPECT_TRUE(CheckAgainstReference(Unary("Sigmoid", {3, 40, 5, 24}), o));
}

TEST(ElementwiseTest, PositiveDomainOps) {
  for (const char* op : {"Log", "Sqrt", "Reciprocal", "Acosh"}) {
    Graph g;
    g.AddInput("x", TensorType{kF32, {5, 16}});
    Add(&g, "Abs", "abs", {"x"}, {"a"});
    Add(&g, "Add", "plus", {"a", "two"}, {"b"});
    Add(&g, op, "n", {"b"}, {"y"});
    g.AddConstant("two", graph::Tensor::Scalar(kF32, 1.5));
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << op;
  }
}

// Float32 -> bfloat16 rounds to nearest even in compiled kernels (ties to the even mantissa,
// NaN stays NaN). ONNX's Cast-13 leaves the rounding unspecified; ONNX 1.12's test data
// truncates, later ONNX test data rounds like this. The reference interpreter rounds the same
// way (core/graph_eval/reference_test.cc); this test states the compiled behaviour bit by bit.
TEST(ElementwiseTest, CastFloatToBFloat16RoundsToNearestEven) {
  struct Case {
    uint32_t in;
    uint16_t want;
  };
  const Case cases[] = {
      {0x3EF5EEB0u, 0x3EF6u},  // 0.48033667: truncation would give 0x3EF5
      {0x3F808000u, 0x3F80u},  // exactly halfway, even mantissa: stays
      {0x3F818000u, 0x3F82u},  // exactly halfway, odd mantissa: up to even
      {0x3F80C000u, 0x3F81u},  // above halfway: up
      {0x3F807FFFu, 0x3F80u},  // below halfway: down
      {0xBF818000u, 0xBF82u},  // negative halfway, odd: away from zero to even
      {0x7F800000u, 0x7F80u},  // +inf
      {0x7F7FFFFFu, 0x7F80u},  // the largest float rounds up to +inf
  };
  const int n = static_cast<int>(sizeof(cases) / sizeof(cases[0]));
  Graph g;
  g.AddInput("x", TensorType{kF32, {n}});
  Add(&g, "Cast", "to_bf16", {"x"}, {"y"}, {{"to", graph::Attribute("bfloat16")}});
  g = Finish(g, {"y"});
  graph::Tensor x(kF32, {n});
  for (int i = 0; i < n; ++i) std::memcpy(static_cast<uint32_t*>(x.mutable_raw_data()) + i, &cases[i].in, 4);
  for (auto backend : {testing::Backend::kEval, testing::Backend::kLLVM}) {
    graph::Tensor y = testing::RunGroups(testing::Fuse(g), {{"x", x}}, backend, target::Target::Host()).at("y");
    ASSERT_EQ(y.dtype(), ir::DType::BFloat16());
    for (int i = 0; i < n; ++i) {
      uint16_t got = static_cast<const uint16_t*>(y.raw_data())[i];
      EXPECT_EQ(got, cases[i].want) << "case " << i << (backend == testing::Backend::kEval ? " (eval)" : " (llvm)");
    }
  }
}

TEST(ElementwiseTest, CastClipAndPredicates) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {4, 33}});
  g.AddConstant("lo", graph::Tensor::Scalar(kF32, -0.25));
  g.AddConstant("hi", graph::Tensor::Scalar(kF32, 0.5));
  Add(&g, "Clip", "clip", {"x", "lo", "hi"}, {"c"});
  Add(&g, "Mul", "scale", {"c", "ten"}, {"d"});
  g.AddConstant("ten", graph::Tensor::Scalar(kF32, 10));
  Add(&g, "Cast", "to_int", {"d"}, {"i"}, {{"to", graph::Attribute("int32")}});
  Add(&g, "Cast", "back", {"i"}, {"f"}, {{"to", graph::Attribute("float32")}});
  Add(&g, "IsNaN", "nan", {"f"}, {"isnan"});
  Add(&g, "Not", "not", {"isnan"}, {"y"});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"f", "y"})));
}

TEST(BroadcastTest, BinaryOpsWithBroadcasting) {
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "PRelu", "Mean", "Sum"}) {
    Graph g;
    g.AddInput("a", TensorType{kF32, {2, 3, 4, 8}});
    g.AddInput("b", TensorType{kF32, {3, 1, 8}});
    std::string bname = "b";
    if (std::string(op) == "Pow") {
      Add(&g, "Abs", "abs", {"a"}, {"pa"});
      Add(&g, op, "n", {"pa", "b"}, {"y"});
    } else {
      Add(&g, op, "n", {"a", "b"}, {"y"});
    }
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << op;
  }
}

TEST(BroadcastTest, ComparisonsLogicAndWhere) {
  Graph g;
  g.AddInput("a", TensorType{kF32, {3, 5, 7}});
  g.AddInput("b", TensorType{kF32, {5, 1}});
  Add(&g, "Greater", "gt", {"a", "b"}, {"gt"});
  Add(&g, "LessOrEqual", "le", {"a", "zero"}, {"le"});
  g.AddConstant("zero", graph::Tensor::Scalar(kF32, 0));
  Add(&g, "Xor", "xor", {"gt", "le"}, {"x"});
  Add(&g, "Where", "where", {"x", "a", "b"}, {"y"});
  EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"})));
}

TEST(BroadcastTest, IntegerDivAndMod) {
  for (int fmod : {0, 1}) {
    Graph g;
    g.AddInput("a", TensorType{ir::DType::Int(32), {4, 9}});
    g.AddInput("b", TensorType{ir::DType::Int(32), {9}});
    Add(&g, "Sub", "shift", {"a", "two"}, {"s"});
    g.AddConstant("two", graph::Tensor::FromInts(ir::DType::Int(32), {}, {2}));
    Add(&g, "Div", "div", {"s", "b"}, {"d"});
    Add(&g, "Mod", "mod", {"s", "b"}, {"m"}, {{"fmod", graph::Attribute(int64_t{fmod})}});
    Add(&g, "Add", "sum", {"d", "m"}, {"y"});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}))) << "fmod=" << fmod;
  }
}

// BitShift on every unsigned type, with shift amounts from 0 to past the bit width (which give 0, as
// numpy and the reference do), broadcast amounts, and vectorised rows (37: vector body plus tail).
TEST(BroadcastTest, BitShiftLeftAndRight) {
  for (int bits : {8, 16, 32, 64}) {
    for (const char* direction : {"LEFT", "RIGHT"}) {
      ir::DType t = ir::DType::UInt(bits);
      Graph g;
      g.AddInput("x", TensorType{t, {3, 37}});
      std::vector<int64_t> values, amounts;
      for (int i = 0; i < 3 * 37; ++i) values.push_back(static_cast<int64_t>((0x9E3779B97F4A7C15ull * (i + 1)) >> (64 - bits)));
      for (int i = 0; i < 37; ++i) amounts.push_back(i * (bits + 8) / 36);  // 0 .. bits + 8
      g.AddConstant("n", graph::Tensor::FromInts(t, {37}, amounts));
      Add(&g, "BitShift", "shift", {"x", "n"}, {"y"}, {{"direction", graph::Attribute(direction)}});
      CheckOptions options;
      options.inputs["x"] = graph::Tensor::FromInts(t, {3, 37}, values);
      EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}), options)) << direction << " uint" << bits;
    }
  }
}

TEST(ElementwiseTest, InjectiveChainIsOneKernelInOneGroup) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {8, 64}});
  g.AddInput("b", TensorType{kF32, {64}});
  Add(&g, "Add", "add", {"x", "b"}, {"a"});
  Add(&g, "Sigmoid", "sig", {"a"}, {"s"});
  Add(&g, "Mul", "mul", {"a", "s"}, {"y"});
  Graph finished = Finish(g, {"y"});
  Graph fused = testing::Fuse(finished);
  ASSERT_EQ(fused.groups.size(), 1u);
  GroupKernel k = LowerGroup(fused, fused.groups[0], target::Target::Host(), "silu");
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[0].value, "x");
  EXPECT_EQ(k.params[1].value, "b");
  EXPECT_EQ(k.params[2].value, "y");
  EXPECT_EQ(k.func.params.size(), 3u);
  EXPECT_TRUE(CheckAgainstReference(finished));
}

// Dropout whose ratio and training_mode arrive when the model runs (ONNX's training-mode
// cases with every input a model input): the identity with an all-true mask in inference or
// with ratio 0; training with a nonzero ratio (random masks) fails when the kernel runs, naming
// the node, in the reference and the compiled kernel alike. Also with the ratio a constant.
TEST(ElementwiseTest, DropoutChecksARunTimeTrainingModeWhenItRuns) {
  for (bool constant_ratio : {false, true}) {
    for (double ratio : {0.0, 0.25}) {
      Graph g;
      g.AddInput("x", TensorType{kF32, {3, 5}});
      if (constant_ratio) g.AddConstant("r", graph::Tensor::Scalar(kF32, ratio));
      else g.AddInput("r", TensorType{kF32, {}});
      g.AddInput("t", TensorType{ir::DType::Bool(), {}});
      Add(&g, "Dropout", "drop", {"x", "r", "t"}, {"y", "mask"},
          {{"ratio", graph::Attribute(ratio)}});
      if (constant_ratio) g.nodes.back().inputs[1] = "";  // the importer's form: the constant as the attribute
      g = Finish(g, {"y", "mask"});
      graph::Graph fused = testing::Fuse(g);
      for (bool training : {false, true}) {
        std::map<std::string, graph::Tensor> inputs{{"x", graph::testing::RandomTensor({3, 5}, 4)},
                                                    {"t", graph::Tensor::FromInts(ir::DType::Bool(), {}, {training})}};
        if (!constant_ratio) inputs["r"] = graph::Tensor::Scalar(kF32, ratio);
        for (testing::Backend backend : {testing::Backend::kEval, testing::Backend::kLLVM}) {
          std::string label = std::string(constant_ratio ? "constant" : "run-time") + " ratio " + std::to_string(ratio) +
                              (training ? " training" : " inference") + " backend " +
                              std::to_string(static_cast<int>(backend));
          if (training && ratio != 0.0) {
            EXPECT_THROW(graph_eval::Interpret(g, inputs), Error) << label;
            EXPECT_THROW(testing::RunGroups(fused, inputs, backend, target::Target::Host()), Error) << label;
            continue;
          }
          auto got = testing::RunGroups(fused, inputs, backend, target::Target::Host());
          EXPECT_EQ(std::memcmp(got.at("y").raw_data(), inputs.at("x").raw_data(), 15 * sizeof(float)), 0) << label;
          for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(got.at("mask").GetInt(i), 1) << label;
        }
      }
    }
  }
}

TEST(ElementwiseTest, UnsupportedOpNamesTheNode) {
  Graph g;
  g.AddInput("a", TensorType{ir::DType::Int(32), {4}});
  g.AddInput("b", TensorType{ir::DType::Int(32), {4}});
  Add(&g, "BitShift", "shifty", {"a", "b"}, {"y"}, {{"direction", graph::Attribute("LEFT")}});
  Graph fused = testing::Fuse(Finish(g, {"y"}));
  try {
    LowerGroup(fused, fused.groups[0], target::Target::Host(), "k");
    FAIL() << "BitShift was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(e.message().find("shifty"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("int32[4]"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
