// Kernels written as tensor expressions with schedules and lowered by
// core/lower, with plain C++ references: the path every real model takes
// (te::compute -> schedule -> lower::Lower -> code generator). Shared by the
// LLVM and C backend tests, which also compare with the loop-IR evaluator.
#ifndef AGATE_CORE_CODEGEN_TESTING_TE_KERNELS_H_
#define AGATE_CORE_CODEGEN_TESTING_TE_KERNELS_H_

#include <functional>
#include <string>
#include <vector>

#include "core/ir/function.h"

namespace agate {
namespace codegen {
namespace testing {

struct TeCase {
  ir::LoweredFunc func;
  std::vector<std::vector<float>> args;  // inputs filled, outputs zero (all float32)
  std::vector<int> outputs;              // indices into args
  std::function<void(std::vector<std::vector<float>>&)> reference;
  double tolerance = 1e-5;
};

// Matmul m x n x k: cache_write accumulator, register tiles, vectorized, unrolled, parallel.
TeCase TeMatmul(int m, int n, int k);
// Y = exp(X/4) + tanh(X) + sigmoid(X) + erf(X/2) + log(|X| + 1), split, vectorized, parallel (ragged width).
TeCase TeElementwise(int rows, int cols);
// Row softmax: max and sum reductions computed at the row, vectorized output, parallel rows.
TeCase TeSoftmax(int rows, int cols);

std::vector<TeCase> AllTeCases();

// Max |got - want| / max(1, |want|) over an output; "" when within tolerance, else a description.
std::string CompareFloats(const std::vector<float>& got, const std::vector<float>& want, double tolerance);

}  // namespace testing
}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_TESTING_TE_KERNELS_H_
