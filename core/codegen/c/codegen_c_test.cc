// CodeGenC on the shared hand-built kernels: the emitted C must compile warning-free
// with gcc -std=c99 -Wall -Werror, run correctly (loaded into this process, with
// 1, 2 and 4 threads through ctx->parallel_for), and build for Cortex-M with
// arm-none-eabi-gcc into a firmware image with newlib.
#include "core/codegen/c/codegen_c.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/codegen/llvm/dynamic_library.h"
#include "core/codegen/testing/loop_kernels.h"
#include "core/ir/buffer.h"
#include "core/ir/stmt.h"
#include "core/support/error.h"

namespace agate {
namespace codegen {
namespace {

using testing::AllKernelCases;
using testing::AllKernelFuncs;
using testing::KernelCase;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

const char* kWarnings = " -std=c99 -Wall -Wextra -Werror -Wno-unused-parameter ";

TEST(CodeGenCTest, HostCCompilesCleanlyAndMatchesReferences) {
  if (!testing::HaveTool("gcc")) GTEST_SKIP() << "needs gcc";
  std::string source = GenerateC(AllKernelFuncs(), target::Target::Parse("c"));
  std::string dir = testing::MakeTempDir();
  testing::WriteTextFile(dir + "/kernels.c", source);
  std::string log;
  int status = testing::RunCommand(std::string("gcc") + kWarnings + "-O2 -fPIC -shared -I" +
                                       testing::KernelAbiIncludeDir() + " " + dir + "/kernels.c -o " + dir +
                                       "/kernels.so -lm",
                                   &log);
  ASSERT_EQ(status, 0) << log << "\n" << source;
  DynamicLibrary library = DynamicLibrary::Load(ReadFile(dir + "/kernels.so"));
  for (const KernelCase& c : AllKernelCases()) {
    auto kernel = reinterpret_cast<agate_kernel_fn>(library.Symbol(c.func.name));
    for (int threads : {1, 2, 4}) {
      EXPECT_EQ(testing::RunAndCheck(c, kernel, threads), "") << c.func.name << ", " << threads << " threads";
    }
  }
}

TEST(CodeGenCTest, SourceIsReadableFreestandingC) {
  std::string source = GenerateC(AllKernelFuncs(), target::Target::Parse("c"));
  EXPECT_NE(source.find("int32_t matmul_tiled(void* const* args, const agate_kernel_ctx* ctx) {"), std::string::npos);
  EXPECT_NE(source.find("float* restrict A = (float*)args[0];"), std::string::npos) << source;
  EXPECT_NE(source.find("ctx->parallel_for(ctx->pool, matmul_tiled_task0"), std::string::npos) << source;
  EXPECT_NE(source.find("AGATE_ALIGNED(64)"), std::string::npos);
  EXPECT_NE(source.find("ctx->workspace + 64"), std::string::npos);
  for (const char* libc : {"malloc", "stdio", "stdlib", "memcpy", "printf"}) {
    EXPECT_EQ(source.find(libc), std::string::npos) << libc;
  }
  // Bare-metal C runs parallel loops in place.
  std::string bare = GenerateC(AllKernelFuncs(), target::Target::Parse("c -mcpu=cortex-m4"));
  EXPECT_EQ(bare.find("parallel_for("), std::string::npos);
  EXPECT_NE(bare.find("/* parallel, run serially */"), std::string::npos);
}

TEST(CodeGenCTest, CortexMBuildWithArmNoneEabiGcc) {
  if (!testing::HaveTool("arm-none-eabi-gcc")) GTEST_SKIP() << "needs arm-none-eabi-gcc (gcc-arm-none-eabi)";
  std::string dir = testing::MakeTempDir();
  testing::WriteTextFile(dir + "/kernels.c", GenerateC(AllKernelFuncs(), target::Target::Parse("c -mcpu=cortex-m4")));
  testing::WriteTextFile(dir + "/driver.c", testing::DriverSource(AllKernelFuncs()));
  std::string flags = std::string(kWarnings) + "-O2 -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -I" +
                      testing::KernelAbiIncludeDir() + " ";
  std::string log;
  ASSERT_EQ(testing::RunCommand("arm-none-eabi-gcc" + flags + "-c " + dir + "/kernels.c -o " + dir + "/kernels.o", &log), 0)
      << log;
  int status = testing::RunCommand("arm-none-eabi-gcc -std=c99 -O1 -mcpu=cortex-m4 -mthumb -mfloat-abi=hard "
                                   "-mfpu=fpv4-sp-d16 -specs=nosys.specs -I" +
                                       testing::KernelAbiIncludeDir() + " " + dir + "/driver.c " + dir +
                                       "/kernels.o -o " + dir + "/firmware.elf -lm",
                                   &log);
  EXPECT_EQ(status, 0) << log;
}

TEST(CodeGenCTest, CortexM4KernelsRunOnQemuMps2) {
  if (!testing::HaveCortexM4Emulation()) {
    GTEST_SKIP() << "needs arm-none-eabi-gcc (gcc-arm-none-eabi) and qemu-system-arm (qemu-system-arm)";
  }
  std::string dir = testing::MakeTempDir();
  testing::WriteTextFile(dir + "/kernels.c", GenerateC(AllKernelFuncs(), target::Target::Parse("c -mcpu=cortex-m4")));
  ASSERT_EQ(testing::LinkCortexM4Firmware(dir, {dir + "/kernels.c"}, AllKernelFuncs()), "");
  for (const KernelCase& c : AllKernelCases()) {
    std::vector<testing::HostArray> args = c.make_args();
    testing::WriteArgsFile(dir + "/in.bin", args, static_cast<uint64_t>(c.func.workspace_bytes));
    std::string log;
    ASSERT_EQ(testing::RunCortexM4Firmware(dir, c.func.name, &log), 0) << c.func.name << ": " << log;
    int32_t status = testing::ReadResultsFile(dir + "/out.bin", &args);
    EXPECT_EQ(testing::CheckOutputs(c, status, args), "") << "cortex-m4 C " << c.func.name;
  }
}

TEST(CodeGenCTest, UnsupportedInputsAreErrors) {
  using namespace ir;  // NOLINT
  try {
    GenerateC(AllKernelFuncs(), target::Target::Parse("llvm"));
    FAIL() << "an LLVM target was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
  }
  Buffer h = CreateBuffer("H", DType::Float(16), {Expr(4)});
  Var i("i");
  LoweredFunc half{"half_kernel", {h}, For::make(i, 0, 4, ForKind::kSerial, Store::make(h, Load::make(h, i), i)), 0};
  try {
    GenerateC({half}, target::Target::Parse("c"));
    FAIL() << "float16 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported) << e.what();
    EXPECT_NE(e.message().find("half_kernel"), std::string::npos);
  }
}

}  // namespace
}  // namespace codegen
}  // namespace agate
