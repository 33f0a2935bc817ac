// Test helpers: random inputs, a lower-and-evaluate call, and comparison with a
// reference computed by plain C++ loops.
#ifndef AGATE_CORE_LOWER_TESTING_LOWER_AND_RUN_H_
#define AGATE_CORE_LOWER_TESTING_LOWER_AND_RUN_H_

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/loop_eval/evaluator.h"
#include "core/ir/printer.h"
#include "core/lower/lower.h"

namespace agate {
namespace lower {
namespace testing {

inline std::vector<float> RandomData(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Lowers, runs on `buffers` (one per argument) and returns the lowered function.
inline ir::LoweredFunc LowerAndRun(const te::Schedule& s, const std::vector<te::Tensor>& args,
                                   const std::vector<std::vector<float>*>& buffers, const std::string& name = "f") {
  ir::LoweredFunc f = Lower(s, args, name);
  EXPECT_EQ(loop_eval::RunFloat(f, buffers), 0);
  return f;
}

inline ::testing::AssertionResult AllClose(const std::vector<float>& got, const std::vector<float>& want,
                                           float tol = 1e-4f) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace testing
}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_TESTING_LOWER_AND_RUN_H_
