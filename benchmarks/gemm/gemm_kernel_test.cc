// The GEMM loop nest computes C = A * B for block-aligned and ragged sizes, with 1 and 2 threads.
#include "benchmarks/gemm/gemm_kernel.h"

#include <gtest/gtest.h>

#include <random>

#include "core/codegen/llvm/build_llvm.h"
#include "core/codegen/testing/loop_kernels.h"
#include "core/ir/printer.h"
#include "core/target/target.h"

namespace agate {
namespace benchmarks {
namespace {

using codegen::testing::HostArray;

void CheckGemm(int m, int n, int k, const GemmBlocking& blocking, bool te = false) {
  ir::LoweredFunc func = te ? MakeTeGemmKernel("gemm", m, n, k, blocking) : MakeGemmKernel("gemm", m, n, k, blocking);
  if (getenv("AGATE_SHOW_IR")) std::cerr << ir::ToString(func) << "\n";
  codegen::HostKernels kernels = codegen::HostKernels::Build({func});
  HostArray a(ir::DType::Float(32), size_t(m) * k), b(ir::DType::Float(32), size_t(k) * n),
      c(ir::DType::Float(32), size_t(m) * n);
  std::mt19937 rng(m * 131 + n * 7 + k);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (size_t i = 0; i < a.count(); ++i) a.as<float>()[i] = dist(rng);
  for (size_t i = 0; i < b.count(); ++i) b.as<float>()[i] = dist(rng);
  for (int threads : {1, 2}) {
    for (size_t i = 0; i < c.count(); ++i) c.as<float>()[i] = 12345.0f;  // must be overwritten
    codegen::testing::TestContext context(threads, static_cast<size_t>(func.workspace_bytes));
    void* args[3] = {a.data(), b.data(), c.data()};
    ASSERT_EQ(kernels.Get("gemm")(args, &context.ctx), 0);
    int bad = 0;
    for (int i = 0; i < m && bad < 5; ++i) {
      for (int j = 0; j < n && bad < 5; ++j) {
        double want = 0;
        for (int p = 0; p < k; ++p) want += double(a.as<float>()[i * k + p]) * b.as<float>()[p * n + j];
        float got = c.as<float>()[i * n + j];
        if (std::fabs(got - want) > 1e-4 * std::max(1.0, std::fabs(want))) {
          ADD_FAILURE() << m << "x" << n << "x" << k << " threads " << threads << ": C[" << i << "," << j << "] = " << got
                        << ", want " << want;
          ++bad;
        }
      }
    }
  }
}

TEST(GemmKernelTest, BlockAlignedSizes) {
  int width = target::Target::Host().vector_width_bits();
  CheckGemm(64, 64, 64, DefaultBlocking(64, 64, 64, width, 2));
  CheckGemm(128, 96, 80, DefaultBlocking(128, 96, 80, width, 2));
}

TEST(GemmKernelTest, RaggedSizesUseGuardsAndPredicates) {
  int width = target::Target::Host().vector_width_bits();
  CheckGemm(37, 45, 29, DefaultBlocking(37, 45, 29, width, 2));
  CheckGemm(100, 70, 1100, DefaultBlocking(100, 70, 1100, width, 2));  // two K slices
  GemmBlocking small;
  small.lanes = 4;
  small.nr = 8;
  small.mr = 3;
  small.mc = 9;
  small.kc = 7;
  CheckGemm(20, 19, 23, small);
}

TEST(GemmKernelTest, TensorExpressionSchedule) {
  int width = target::Target::Host().vector_width_bits();
  CheckGemm(64, 64, 64, TeBlocking(64, 64, 64, width, 2), /*te=*/true);
  CheckGemm(40, 120, 60, TeBlocking(40, 120, 60, width, 2), /*te=*/true);
  CheckGemm(100, 70, 1100, DefaultBlocking(100, 70, 1100, width, 2), /*te=*/true);
}

}  // namespace
}  // namespace benchmarks
}  // namespace agate
