// Embedded kernel objects of several modules loaded at once: each module runs its own
// kernels. The loader recognises an already-loaded library by its path
// (/proc/self/fd/N), so the memory file of a loaded object must stay open: were it
// closed after dlopen, the next module's file could get the same descriptor number and
// its dlopen would return the first module's library (the same bug 0bb74e0 fixed in
// core/codegen/llvm's DynamicLibrary).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "agate/runtime.h"
#include "core/compiler/compiler.h"
#include "core/graph/testing/graph_builder.h"

namespace agate {
namespace {

std::string Message() { return agate_last_error_message(); }

constexpr int64_t kN = 64;

// y = LeakyRelu(x, alpha): alpha is an attribute compiled into the kernel, so each module's
// kernel is different code under the same kernel name ("k0_leakyrelu"); or y = -x when
// `negate` (another kernel name).
std::vector<uint8_t> CompileLeakyRelu(double alpha, bool negate = false) {
  graph::Graph g;
  g.AddInput("x", graph::TensorType{graph::DType::Float(32), {kN}});
  if (negate) {
    graph::testing::Add(&g, "Neg", "op", {"x"}, {"y"});
  } else {
    graph::testing::Add(&g, "LeakyRelu", "op", {"x"}, {"y"}, {{"alpha", graph::Attribute(alpha)}});
  }
  return compiler::CompileGraph(graph::testing::Finish(g, {"y"}), compiler::CompileOptions{}).module;
}

float LeakyRelu(float x, double alpha) { return x < 0 ? x * static_cast<float>(alpha) : x; }

std::vector<float> RunModule(agate_module_t* module, std::vector<float> x) {
  agate_executor_t* executor = nullptr;
  EXPECT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK) << Message();
  if (executor == nullptr) return {};
  int64_t shape[1] = {kN};
  DLTensor t;
  std::memset(&t, 0, sizeof(t));
  t.data = x.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape;
  EXPECT_EQ(agate_executor_set_input(executor, 0, &t), AGATE_OK) << Message();
  EXPECT_EQ(agate_executor_run(executor), AGATE_OK) << Message();
  std::vector<float> y(kN);
  t.data = y.data();
  EXPECT_EQ(agate_executor_copy_output(executor, 0, &t), AGATE_OK) << Message();
  agate_executor_free(executor);
  return y;
}

TEST(HostObjectTest, ModulesLoadedTogetherRunTheirOwnKernels) {
  const std::vector<double> alphas = {0.5, 0.25, -2.0};
  std::vector<std::vector<uint8_t>> bytes;
  for (double alpha : alphas) bytes.push_back(CompileLeakyRelu(alpha));
  bytes.push_back(CompileLeakyRelu(0, true));  // a different kernel name too
  std::vector<float> x(kN);
  for (int64_t i = 0; i < kN; ++i) x[i] = static_cast<float>(i) - 20.0f;

  // All alive at once; loading them one after the other is what reused descriptor numbers.
  std::vector<agate_module_t*> modules(bytes.size(), nullptr);
  for (size_t m = 0; m < bytes.size(); ++m) {
    ASSERT_EQ(agate_module_load_from_memory(bytes[m].data(), bytes[m].size(), nullptr, &modules[m]), AGATE_OK)
        << "module " << m << ": " << Message();
  }
  for (int round = 0; round < 2; ++round) {  // and in any order
    for (size_t i = 0; i < modules.size(); ++i) {
      size_t m = round == 0 ? i : modules.size() - 1 - i;
      std::vector<float> y = RunModule(modules[m], x);
      ASSERT_EQ(y.size(), x.size());
      for (int64_t j = 0; j < kN; ++j) {
        float want = m < alphas.size() ? LeakyRelu(x[j], alphas[m]) : -x[j];
        ASSERT_EQ(y[j], want) << "module " << m << " element " << j << ": it ran another module's kernels";
      }
    }
  }
  // Freeing one leaves the others' kernels in place, and a module loaded afterwards gets its own.
  agate_module_free(modules[0]);
  std::vector<uint8_t> again = CompileLeakyRelu(0.125);
  ASSERT_EQ(agate_module_load_from_memory(again.data(), again.size(), nullptr, &modules[0]), AGATE_OK) << Message();
  EXPECT_EQ(RunModule(modules[0], x)[0], LeakyRelu(x[0], 0.125));
  EXPECT_EQ(RunModule(modules[1], x)[0], LeakyRelu(x[0], alphas[1]));
  for (agate_module_t* m : modules) agate_module_free(m);
}

}  // namespace
}  // namespace agate
