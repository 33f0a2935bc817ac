// Tensor expressions lowered by core/lower and compiled by the LLVM backend agree
// with plain C++ loops and with the loop-IR evaluator (core/loop_eval), on the host
// with 1 and 2 threads, on AArch64 under qemu and on an emulated Cortex-M4.
#include <gtest/gtest.h>

#include "core/codegen/llvm/build_llvm.h"
#include "core/codegen/testing/te_kernels.h"
#include "core/codegen/testing/loop_kernels.h"
#include "core/loop_eval/evaluator.h"
#include "core/ir/printer.h"

namespace agate {
namespace codegen {
namespace {

using testing::TeCase;

std::vector<void*> Pointers(std::vector<testing::HostArray>& arrays) {
  std::vector<void*> out;
  for (auto& a : arrays) out.push_back(a.data());
  return out;
}

// Copies float vectors into 64-byte aligned arrays (the kernel ABI promises alignment).
std::vector<testing::HostArray> ToArrays(const std::vector<std::vector<float>>& args) {
  std::vector<testing::HostArray> out;
  for (const auto& v : args) {
    out.emplace_back(ir::DType::Float(32), v.size());
    std::copy(v.begin(), v.end(), out.back().as<float>());
  }
  return out;
}

TEST(TeCodeGenLLVMTest, LoweredKernelsMatchReferenceAndEvaluator) {
  std::vector<TeCase> cases = testing::AllTeCases();
  std::vector<ir::LoweredFunc> funcs;
  for (const TeCase& c : cases) funcs.push_back(c.func);
  HostKernels kernels = HostKernels::Build(funcs);
  for (TeCase& c : cases) {
    if (getenv("AGATE_SHOW_IR")) std::cerr << ir::ToString(c.func) << "\n";
    std::vector<std::vector<float>> expected = c.args;
    c.reference(expected);
    std::vector<std::vector<float>> evaluated = c.args;
    std::vector<std::vector<float>*> eval_args;
    for (auto& v : evaluated) eval_args.push_back(&v);
    ASSERT_EQ(loop_eval::RunFloat(c.func, eval_args), 0) << c.func.name;
    for (int threads : {1, 2}) {
      std::vector<testing::HostArray> arrays = ToArrays(c.args);
      std::vector<void*> args = Pointers(arrays);
      testing::TestContext context(threads, static_cast<size_t>(c.func.workspace_bytes));
      ASSERT_EQ(kernels.Get(c.func.name)(args.data(), &context.ctx), 0) << c.func.name;
      for (int o : c.outputs) {
        std::vector<float> got(arrays[o].as<float>(), arrays[o].as<float>() + arrays[o].count());
        EXPECT_EQ(testing::CompareFloats(got, expected[o], c.tolerance), "")
            << c.func.name << " vs C++ reference, " << threads << " threads\n" << ir::ToString(c.func);
        EXPECT_EQ(testing::CompareFloats(got, evaluated[o], c.tolerance), "")
            << c.func.name << " vs core/loop_eval, " << threads << " threads";
      }
    }
  }
}

TEST(TeCodeGenLLVMTest, LoweredKernelsRunOnAArch64UnderQemu) {
  if (!testing::HaveTool("aarch64-linux-gnu-gcc") || !testing::HaveTool("qemu-aarch64-static")) {
    GTEST_SKIP() << "needs aarch64-linux-gnu-gcc (gcc-aarch64-linux-gnu) and qemu-aarch64-static (qemu-user-static)";
  }
  std::vector<TeCase> cases = testing::AllTeCases();
  std::vector<ir::LoweredFunc> funcs;
  for (const TeCase& c : cases) funcs.push_back(c.func);
  std::string dir = testing::MakeTempDir();
  target::Target a64 = target::Target::Parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72");
  testing::WriteTextFile(dir + "/kernels.o", BuildLLVMObject(funcs, a64).object);
  testing::WriteTextFile(dir + "/driver.c", testing::DriverSource(funcs));
  std::string log;
  ASSERT_EQ(testing::RunCommand("aarch64-linux-gnu-gcc -std=c99 -O1 -static -I" + testing::KernelAbiIncludeDir() + " " +
                                    dir + "/driver.c " + dir + "/kernels.o -o " + dir + "/driver -lm",
                                &log),
            0)
      << log;
  for (TeCase& c : cases) {
    std::vector<std::vector<float>> expected = c.args;
    c.reference(expected);
    std::vector<testing::HostArray> arrays = ToArrays(c.args);
    testing::WriteArgsFile(dir + "/in.bin", arrays, static_cast<uint64_t>(c.func.workspace_bytes));
    ASSERT_EQ(testing::RunCommand("qemu-aarch64-static " + dir + "/driver " + c.func.name + " " + dir + "/in.bin " +
                                      dir + "/out.bin",
                                  &log),
              0)
        << log;
    ASSERT_EQ(testing::ReadResultsFile(dir + "/out.bin", &arrays), 0) << c.func.name;
    for (int o : c.outputs) {
      std::vector<float> got(arrays[o].as<float>(), arrays[o].as<float>() + arrays[o].count());
      EXPECT_EQ(testing::CompareFloats(got, expected[o], c.tolerance), "") << "aarch64 " << c.func.name;
    }
  }
}

TEST(TeCodeGenLLVMTest, LoweredKernelsRunOnCortexM4) {
  if (!testing::HaveCortexM4Emulation()) {
    GTEST_SKIP() << "needs arm-none-eabi-gcc (gcc-arm-none-eabi) and qemu-system-arm (qemu-system-arm)";
  }
  std::vector<TeCase> cases = testing::AllTeCases();
  std::vector<ir::LoweredFunc> funcs;
  for (const TeCase& c : cases) funcs.push_back(c.func);
  std::string dir = testing::MakeTempDir();
  target::Target m4 = target::Target::Parse("llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4 -mfloat-abi=hard");
  testing::WriteTextFile(dir + "/kernels.o", BuildLLVMObject(funcs, m4).object);
  ASSERT_EQ(testing::LinkCortexM4Firmware(dir, {dir + "/kernels.o"}, funcs), "");
  for (TeCase& c : cases) {
    std::vector<std::vector<float>> expected = c.args;
    c.reference(expected);
    std::vector<testing::HostArray> arrays = ToArrays(c.args);
    testing::WriteArgsFile(dir + "/in.bin", arrays, static_cast<uint64_t>(c.func.workspace_bytes));
    std::string log;
    ASSERT_EQ(testing::RunCortexM4Firmware(dir, c.func.name, &log), 0) << c.func.name << ": " << log;
    ASSERT_EQ(testing::ReadResultsFile(dir + "/out.bin", &arrays), 0) << c.func.name;
    for (int o : c.outputs) {
      std::vector<float> got(arrays[o].as<float>(), arrays[o].as<float>() + arrays[o].count());
      EXPECT_EQ(testing::CompareFloats(got, expected[o], c.tolerance), "") << "cortex-m4 " << c.func.name;
    }
  }
}

}  // namespace
}  // namespace codegen
}  // namespace agate
