// Runs ONNX's whole node conformance suite (Debian libonnx-testdata) through the
// ONNX frontend, the graph pipeline and the reference interpreter, and fails
// when the pass rate drops below the committed threshold or when any case of an
// operator agate promises to cover fails.
#include "tests/onnx_conformance/conformance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/graph/passes/pipeline.h"
#include "core/graph_eval/interpreter.h"

namespace agate {
namespace conformance {
namespace {

constexpr char kSuite[] = "/usr/share/libonnx-testdata/data/node";
// Committed threshold: raise it when support grows, never lower it silently.
constexpr double kMinimumPassRate = 0.945;  // 766 of 810 (94.6%) pass
constexpr int kExpectedCases = 810;  // the node cases without the _expanded variants (ONNX 1.12)

// Operators of CNNs and transformer encoders that agate covers completely.
const char* const kCoveredOps[] = {
    "Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Pow", "Relu", "LeakyRelu", "Clip",
    "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Erf", "BatchNormalization", "InstanceNormalization",
    "LayerNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Flatten", "Reshape",
    "Transpose", "Concat", "Split", "Slice", "Gather", "Squeeze", "Unsqueeze", "Pad", "Softmax", "LogSoftmax",
    "ReduceMean", "ReduceSum", "ReduceMax", "Shape", "ConstantOfShape", "Range", "Expand", "Cast", "Constant",
    "Identity", "Dropout", "Resize", "Upsample"};

// Cases of covered operators that are outside what agate promises, with the reason.
const std::set<std::string> kOutOfScope = {
    "test_cast_FLOAT_to_STRING", "test_cast_STRING_to_FLOAT",  // string tensors
    "test_identity_sequence", "test_identity_opt",              // sequence and optional values
    "test_training_dropout", "test_training_dropout_default",   // random masks (training mode)
    "test_training_dropout_default_mask", "test_training_dropout_mask",
};

SuiteReport RunSuite(const std::string& suite = kSuite, graph::PipelineOptions options = {}) {
  Executor executor;
  executor.label = "reference interpreter";
  executor.transform = [options](const graph::Graph& g) { return graph::BuildPipeline(options).Run(g); };
  executor.run = InterpretGraph;
  std::vector<CaseResult> results;
  for (const std::string& dir : ListCases(suite, false)) results.push_back(
      RunCase(dir, executor, InputBinding::kShapeOperandsAtCompileTime));
  return Tally(std::move(results));
}

TEST(OnnxConformanceTest, NodeSuitePassRate) {
  SuiteReport report = RunSuite();
  std::cout << FormatReport(report, kSuite, "reference interpreter", InputBinding::kShapeOperandsAtCompileTime, false);
  // Every case is counted: passed, failed or unsupported, never skipped.
  EXPECT_EQ(report.total(), kExpectedCases);
  EXPECT_GE(report.pass_rate(), kMinimumPassRate)
      << report.passed << " of " << report.total() << " passed";
  // Folded cases (every output a compile-time constant) are counted apart from computed ones:
  // Shape and Size fold, Relu computes.
  for (const CaseResult& c : report.cases) {
    if (c.name == "test_shape" || c.name == "test_size") EXPECT_TRUE(c.folded) << c.name;
    if (c.name == "test_relu") EXPECT_FALSE(c.folded) << c.name;
  }
  EXPECT_GT(report.folded, 0);
  EXPECT_EQ(report.computed() + report.folded, report.passed);
  for (const CaseResult& c : report.cases) {
    bool covered = std::find(std::begin(kCoveredOps), std::end(kCoveredOps), c.op) != std::end(kCoveredOps);
    if (!covered || kOutOfScope.count(c.name) || KnownFailures().count(c.name)) continue;
    EXPECT_EQ(c.outcome, Outcome::kPassed) << c.name << " (" << c.op << "): " << c.detail;
  }
  // No case may fail outright (what agate cannot run must be reported as unsupported), except
  // the known failures (conformance.h says why), which do fail: a known failure that passes
  // leaves the list.
  for (const CaseResult& c : report.cases) {
    if (KnownFailures().count(c.name)) {
      EXPECT_EQ(c.outcome, Outcome::kFailed) << c.name << " is a known failure but " << OutcomeName(c.outcome);
    } else {
      EXPECT_NE(c.outcome, Outcome::kFailed) << c.name << ": " << c.detail;
    }
  }
}

// The other pipeline configurations compute the same results: blocked layout and maximal fusion
// change how a model runs, never what it computes.
TEST(OnnxConformanceTest, BlockedLayoutAndMaximalFusionChangeNoResult) {
  graph::PipelineOptions options;
  options.fusion = fusion::FusionPolicy::kAll;
  options.layout_block = 4;
  SuiteReport blocked = RunSuite(kSuite, options);
  EXPECT_GE(blocked.pass_rate(), kMinimumPassRate);
  for (const CaseResult& c : blocked.cases) {
    if (!KnownFailures().count(c.name)) EXPECT_NE(c.outcome, Outcome::kFailed) << c.name << ": " << c.detail;
  }
}

// The models PyTorch exported for ONNX's suite (operators and small modules): all pass today.
TEST(OnnxConformanceTest, PyTorchSuites) {
  for (const char* suite : {"/usr/share/libonnx-testdata/data/pytorch-converted",
                            "/usr/share/libonnx-testdata/data/pytorch-operator"}) {
    SuiteReport report = RunSuite(suite);
    std::cout << FormatReport(report, suite, "reference interpreter", InputBinding::kShapeOperandsAtCompileTime, true);
    EXPECT_GT(report.total(), 30) << suite;
    EXPECT_EQ(report.passed, report.total()) << suite;
  }
}

}  // namespace
}  // namespace conformance
}  // namespace agate
