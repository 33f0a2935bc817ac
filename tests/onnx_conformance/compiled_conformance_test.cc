// ONNX's node conformance suite through the compiled path, as a user's model goes: the
// compiler (graph passes, one kernel per fused group, LLVM) writes a module, the minimal
// runtime loads it from memory through its C ABI and runs it. Fails when the pass rate drops
// below the committed threshold or a case fails outright (other than the known ones below).
#include <gtest/gtest.h>

#include <iostream>
#include <set>

#include "tests/onnx_conformance/compiled_executor.h"
#include "tests/onnx_conformance/conformance.h"

namespace agate {
namespace conformance {
namespace {

constexpr char kSuite[] = "/usr/share/libonnx-testdata/data/node";
// Committed threshold: raise it when support grows, never lower it silently.
constexpr double kMinimumPassRate = 0.85;  // 700 of 810 (86.4%) pass

TEST(CompiledConformanceTest, NodeSuiteThroughTheCompilerAndRuntime) {
  Executor executor = CompiledExecutor(fusion::FusionPolicy::kRule);
  std::vector<CaseResult> results;
  for (const std::string& dir : ListCases(kSuite, false)) results.push_back(RunCase(dir, executor));
  SuiteReport report = Tally(std::move(results));
  std::cout << FormatReport(report, kSuite, executor.label, false);
  EXPECT_EQ(report.total(), 810);
  EXPECT_GE(report.pass_rate(), kMinimumPassRate) << report.passed << " of " << report.total() << " passed";
  // Folded cases (every output a compile-time constant) are counted apart from computed ones:
  // Shape and Size fold, Relu computes.
  for (const CaseResult& c : report.cases) {
    if (c.name == "test_shape" || c.name == "test_size") EXPECT_TRUE(c.folded) << c.name;
    if (c.name == "test_relu") EXPECT_FALSE(c.folded) << c.name;
  }
  EXPECT_GT(report.folded, 0);
  EXPECT_EQ(report.computed() + report.folded, report.passed);
  // Only the known failures may fail (conformance.h gives each one's reason).
  for (const CaseResult& c : report.cases) {
    if (c.outcome == Outcome::kFailed && !KnownFailures().count(c.name)) {
      ADD_FAILURE() << c.name << " (" << c.op << ") failed: " << c.detail;
    }
  }
}

}  // namespace
}  // namespace conformance
}  // namespace agate
