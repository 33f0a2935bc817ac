// End-to-end checks of the LLVM plumbing with hand-built LLVM IR: optimize, emit
// objects for the host and cross targets, link with ld.lld, dlopen, run; and the
// accuracy of the inline math expansions against libm, as scalars and vectors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "core/codegen/llvm/dynamic_library.h"
#include "core/codegen/llvm/emit.h"
#include "core/codegen/llvm/link.h"
#include "core/codegen/llvm/math_functions.h"
#include "core/codegen/llvm/optimize.h"
#include "core/codegen/llvm/target_machine.h"
#include "core/support/error.h"

namespace agate {
namespace codegen {
namespace {

// void name(const float* in, float* out, int64 n): out[i] = f(in[i]), `lanes` at a time (n % lanes == 0).
void AddMapFunction(llvm::Module& module, const std::string& name, const std::string& math, int lanes) {
  llvm::LLVMContext& context = module.getContext();
  llvm::IRBuilder<> b(context);
  llvm::Type* f32 = b.getFloatTy();
  llvm::Type* ptr = llvm::PointerType::getUnqual(f32);
  auto* type = llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, b.getInt64Ty()}, false);
  auto* function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  auto* entry = llvm::BasicBlock::Create(context, "entry", function);
  auto* loop = llvm::BasicBlock::Create(context, "loop", function);
  auto* exit = llvm::BasicBlock::Create(context, "exit", function);
  b.SetInsertPoint(entry);
  b.CreateCondBr(b.CreateICmpSGT(function->getArg(2), b.getInt64(0)), loop, exit);
  b.SetInsertPoint(loop);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(b.getInt64(0), entry);
  llvm::Type* value_type = lanes == 1 ? f32 : static_cast<llvm::Type*>(llvm::FixedVectorType::get(f32, lanes));
  llvm::Value* in = b.CreateBitCast(b.CreateGEP(f32, function->getArg(0), i), llvm::PointerType::getUnqual(value_type));
  llvm::Value* out = b.CreateBitCast(b.CreateGEP(f32, function->getArg(1), i), llvm::PointerType::getUnqual(value_type));
  llvm::Value* x = b.CreateAlignedLoad(value_type, in, llvm::Align(4));
  b.CreateAlignedStore(EmitMathFunction(b, math, {x}), out, llvm::Align(4));
  llvm::Value* next = b.CreateAdd(i, b.getInt64(lanes));
  i->addIncoming(next, loop);
  b.CreateCondBr(b.CreateICmpSLT(next, function->getArg(2)), loop, exit);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
}

const char* kFunctions[] = {"exp", "log", "tanh", "sigmoid", "erf", "sqrt", "exp2", "log2", "log10", "rsqrt"};

double Reference(const std::string& name, double x) {
  if (name == "exp") return std::exp(x);
  if (name == "log") return std::log(x);
  if (name == "tanh") return std::tanh(x);
  if (name == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "erf") return std::erf(x);
  if (name == "sqrt") return std::sqrt(x);
  if (name == "exp2") return std::exp2(x);
  if (name == "log2") return std::log2(x);
  if (name == "log10") return std::log10(x);
  if (name == "rsqrt") return 1.0 / std::sqrt(x);
  return NAN;
}

bool PositiveDomain(const std::string& name) {
  return name == "log" || name == "sqrt" || name == "log2" || name == "log10" || name == "rsqrt";
}

// Inputs spanning the interesting ranges, including special values, 64 of them.
std::vector<float> Inputs(const std::string& name) {
  std::vector<float> xs;
  std::mt19937 rng(7);
  if (PositiveDomain(name)) {
    std::uniform_real_distribution<float> log_scale(-40.0f, 38.0f);
    for (int i = 0; i < 52; ++i) xs.push_back(std::pow(10.0f, log_scale(rng)));
    for (float v : {1.0f, 2.0f, 0.5f, 1e-40f, 1.5e-45f, 3.4e38f, 0.0f, -1.0f, INFINITY, NAN, 1.0000001f, 0.9999999f})
      xs.push_back(v);
  } else {
    std::uniform_real_distribution<float> wide(-20.0f, 20.0f), narrow(-0.7f, 0.7f);
    for (int i = 0; i < 26; ++i) xs.push_back(wide(rng));
    for (int i = 0; i < 26; ++i) xs.push_back(narrow(rng));
    for (float v : {0.0f, -0.0f, 1e-6f, -1e-6f, 0.3f, 0.5f, 88.0f, -88.0f, 100.0f, -110.0f, 0.29999f, NAN}) xs.push_back(v);
  }
  return xs;
}

void ExpectClose(const std::string& name, float x, float got) {
  double want = static_cast<float>(Reference(name, x));  // what a float result can be at best
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << name << "(" << x << ") = " << got;
    return;
  }
  if (std::isinf(want)) {
    EXPECT_EQ(got, static_cast<float>(want)) << name << "(" << x << ")";
    return;
  }
  double error = std::fabs(got - want);
  // Relative 2e-6 with an absolute floor of 3e-7 (tanh/erf near 0 use series, so
  // they meet the relative bound; the floor covers denormal results of exp).
  double bound = std::max(2e-6 * std::fabs(want), (name == "exp" || name == "exp2") ? 1e-44 : 3e-7 * 1e-3);
  if (name == "tanh" || name == "erf") bound = std::max(bound, 3e-7);
  EXPECT_LE(error, bound) << name << "(" << x << ") = " << got << ", libm says " << want;
}

class PipelineTest : public ::testing::Test {
 protected:
  llvm::LLVMContext context_;
};

TEST_F(PipelineTest, MathFunctionsMatchLibmAsScalarsAndVectors) {
  auto module = std::make_unique<llvm::Module>("math", context_);
  for (const char* name : kFunctions) {
    AddMapFunction(*module, std::string("scalar_") + name, name, 1);
    AddMapFunction(*module, std::string("vector_") + name, name, 16);
  }
  auto machine = CreateTargetMachine(target::Target::Host());
  OptimizeModule(*module, *machine);
  DynamicLibrary library = DynamicLibrary::Load(LinkSharedObject({EmitObject(*module, *machine)}));
  using MapFn = void (*)(const float*, float*, int64_t);
  for (const char* name : kFunctions) {
    std::vector<float> xs = Inputs(name);
    ASSERT_EQ(xs.size() % 16, 0u);
    for (const char* form : {"scalar_", "vector_"}) {
      std::vector<float> out(xs.size());
      reinterpret_cast<MapFn>(library.Symbol(std::string(form) + name))(xs.data(), out.data(), xs.size());
      for (size_t i = 0; i < xs.size(); ++i) ExpectClose(name, xs[i], out[i]);
    }
  }
}

TEST_F(PipelineTest, VectorMathUsesTheWidestHostRegisters) {
  target::Target host = target::Target::Host();
  if (!host.HasFeature("avx512f")) GTEST_SKIP() << "host has no AVX-512; nothing to check about zmm registers";
  auto module = std::make_unique<llvm::Module>("wide", context_);
  AddMapFunction(*module, "vector_exp", "exp", 16);
  auto machine = CreateTargetMachine(host);
  OptimizeModule(*module, *machine);
  std::string assembly = EmitAssembly(*module, *machine);
  EXPECT_NE(assembly.find("zmm"), std::string::npos) << assembly;
  EXPECT_EQ(assembly.find("call"), std::string::npos) << "no libm calls expected:\n" << assembly;
}

TEST_F(PipelineTest, CrossTargetsEmitObjectsForTheirMachine) {
  struct Case {
    const char* target;
    uint16_t elf_machine;  // e_machine: 183 AArch64, 40 ARM
  };
  for (const Case& c : {Case{"llvm -mtriple=aarch64-linux-gnu -mattr=+neon", 183},
                        Case{"llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4 -mfloat-abi=hard", 40},
                        Case{"llvm -mtriple=thumbv8m.main-none-eabi -mcpu=cortex-m33", 40}}) {
    auto module = std::make_unique<llvm::Module>("cross", context_);
    AddMapFunction(*module, "vector_tanh", "tanh", 4);
    auto machine = CreateTargetMachine(target::Target::Parse(c.target));
    OptimizeModule(*module, *machine);
    std::string object = EmitObject(*module, *machine);
    ASSERT_GT(object.size(), 64u) << c.target;
    EXPECT_EQ(object.substr(0, 4), "\x7f" "ELF") << c.target;
    uint16_t machine_field = 0;
    std::memcpy(&machine_field, object.data() + 18, 2);
    EXPECT_EQ(machine_field, c.elf_machine) << c.target;
    // Freestanding: the inline expansions leave nothing for libm to provide.
    std::string assembly = EmitAssembly(*module, *machine);
    for (const char* libm : {"tanhf", "expf"}) EXPECT_EQ(assembly.find(libm), std::string::npos) << c.target;
  }
}

TEST_F(PipelineTest, NonLLVMTargetsAreRejected) {
  try {
    CreateTargetMachine(target::Target::Parse("c"));
    FAIL() << "a C target made a TargetMachine";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
  }
}

TEST_F(PipelineTest, MalformedModulesAreInternalErrors) {
  auto module = std::make_unique<llvm::Module>("broken", context_);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(context_), false);
  auto* function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, "no_terminator", *module);
  llvm::BasicBlock::Create(context_, "entry", function);
  try {
    VerifyModule(*module);
    FAIL() << "verifier accepted a block without terminator";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInternal);
  }
}

TEST_F(PipelineTest, UnknownMathFunctionsAreUnsupported) {
  auto module = std::make_unique<llvm::Module>("m", context_);
  llvm::IRBuilder<> b(context_);
  try {
    EmitMathFunction(b, "lgamma", {llvm::ConstantFP::get(b.getFloatTy(), 1.0)});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(e.message().find("lgamma"), std::string::npos);
  }
}

}  // namespace
}  // namespace codegen
}  // namespace agate
