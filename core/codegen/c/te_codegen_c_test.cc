// Tensor expressions lowered by core/lower and emitted as C99 agree with plain C++
// loops and with the loop-IR evaluator (core/loop_eval); the C compiles with -Werror.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/codegen/c/codegen_c.h"
#include "core/codegen/llvm/dynamic_library.h"
#include "core/codegen/testing/te_kernels.h"
#include "core/codegen/testing/loop_kernels.h"
#include "core/loop_eval/evaluator.h"

namespace agate {
namespace codegen {
namespace {

TEST(TeCodeGenCTest, LoweredKernelsMatchReferenceAndEvaluator) {
  if (!testing::HaveTool("gcc")) GTEST_SKIP() << "needs gcc";
  std::vector<testing::TeCase> cases = testing::AllTeCases();
  std::vector<ir::LoweredFunc> funcs;
  for (const auto& c : cases) funcs.push_back(c.func);
  std::string dir = testing::MakeTempDir();
  testing::WriteTextFile(dir + "/kernels.c", GenerateC(funcs, target::Target::Parse("c")));
  std::string log;
  ASSERT_EQ(testing::RunCommand("gcc -std=c99 -Wall -Wextra -Werror -Wno-unused-parameter -O2 -fPIC -shared -I" +
                                    testing::KernelAbiIncludeDir() + " " + dir + "/kernels.c -o " + dir +
                                    "/kernels.so -lm",
                                &log),
            0)
      << log;
  std::ifstream in(dir + "/kernels.so", std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  DynamicLibrary library = DynamicLibrary::Load(bytes.str());
  for (auto& c : cases) {
    std::vector<std::vector<float>> expected = c.args;
    c.reference(expected);
    std::vector<std::vector<float>> evaluated = c.args;
    std::vector<std::vector<float>*> eval_args;
    for (auto& v : evaluated) eval_args.push_back(&v);
    ASSERT_EQ(loop_eval::RunFloat(c.func, eval_args), 0) << c.func.name;
    auto kernel = reinterpret_cast<agate_kernel_fn>(library.Symbol(c.func.name));
    for (int threads : {1, 2}) {
      std::vector<testing::HostArray> arrays;
      std::vector<void*> args;
      for (const auto& v : c.args) {
        arrays.emplace_back(ir::DType::Float(32), v.size());
        std::copy(v.begin(), v.end(), arrays.back().as<float>());
        args.push_back(arrays.back().data());
      }
      testing::TestContext context(threads, static_cast<size_t>(c.func.workspace_bytes));
      ASSERT_EQ(kernel(args.data(), &context.ctx), 0) << c.func.name;
      for (int o : c.outputs) {
        std::vector<float> got(arrays[o].as<float>(), arrays[o].as<float>() + arrays[o].count());
        EXPECT_EQ(testing::CompareFloats(got, expected[o], c.tolerance), "") << c.func.name << " vs C++ reference";
        EXPECT_EQ(testing::CompareFloats(got, evaluated[o], c.tolerance), "") << c.func.name << " vs core/loop_eval";
      }
    }
  }
}

}  // namespace
}  // namespace codegen
}  // namespace agate
