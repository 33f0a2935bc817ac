// Load-time checks of a host module against this machine: its CPU features (a module for AVX-512
// on a CPU without it is refused naming the features, not run into SIGILL) and its architecture
// (named, both sides). The CPU's lack of a feature is simulated with PretendCpuLacksForTesting,
// so the refusal is tested on any machine.
#include "runtime_minimal/host/cpu_features.h"

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "agate/runtime.h"
#include "core/compiler/compiler.h"
#include "core/graph/testing/graph_builder.h"
#include "core/serialize/serialize_module.h"
#include "runtime_minimal/testing/test_kernels.h"
#include "runtime_minimal/testing/test_modules.h"

namespace agate {
namespace {

using rt::CpuFeature;
using rt::HostCpuFeature;
using rt::PretendCpuLacksForTesting;

std::string Message() { return agate_last_error_message(); }

constexpr int64_t kN = 64;

// y = Relu(x) * 2 compiled for `target`.
std::vector<uint8_t> Compile(const std::string& target) {
  graph::Graph g;
  g.AddInput("x", graph::TensorType{graph::DType::Float(32), {kN}});
  graph::testing::Add(&g, "Relu", "relu", {"x"}, {"r"});
  graph::testing::Add(&g, "Add", "add", {"r", "r"}, {"y"});
  compiler::CompileOptions options;
  options.target = target;
  return compiler::CompileGraph(graph::testing::Finish(g, {"y"}), options).module;
}

std::vector<std::string> RecordedFeatures(const std::vector<uint8_t>& bytes) {
  std::vector<std::string> out;
  const flatbuffers::String* features = fb::GetModule(bytes.data())->cpu_features();
  if (features != nullptr) {
    std::istringstream names(features->str());
    for (std::string name; names >> name;) out.push_back(name);
  }
  return out;
}

bool Has(const std::vector<std::string>& list, const std::string& name) {
  for (const std::string& s : list) {
    if (s == name) return true;
  }
  return false;
}

agate_status_t Load(const std::vector<uint8_t>& bytes, agate_module_t** module) {
  return agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, module);
}

void ExpectRuns(agate_module_t* module) {
  std::vector<float> x(kN), y;
  for (int64_t i = 0; i < kN; ++i) x[i] = static_cast<float>(i) - 20.0f;
  ASSERT_EQ(testing::RunVectorModule(module, x, &y), AGATE_OK) << Message();
  for (int64_t i = 0; i < kN; ++i) EXPECT_EQ(y[i], x[i] > 0 ? 2 * x[i] : 0.0f) << i;
}

class CpuFeaturesTest : public ::testing::Test {
 protected:
  void TearDown() override { PretendCpuLacksForTesting(nullptr); }
};

#if defined(__x86_64__)
TEST_F(CpuFeaturesTest, AsksTheCpu) {
  EXPECT_EQ(HostCpuFeature("sse2"), CpuFeature::kPresent);  // every x86-64 CPU
  EXPECT_EQ(HostCpuFeature("avx2"), __builtin_cpu_supports("avx2") ? CpuFeature::kPresent : CpuFeature::kAbsent);
  EXPECT_EQ(HostCpuFeature("avx512f"),
            __builtin_cpu_supports("avx512f") ? CpuFeature::kPresent : CpuFeature::kAbsent);
  EXPECT_EQ(HostCpuFeature("neon"), CpuFeature::kUnknown);  // another architecture's
  EXPECT_EQ(HostCpuFeature("64bit"), CpuFeature::kUnknown);  // not a detectable instruction set
  PretendCpuLacksForTesting("avx,sse2");
  EXPECT_EQ(HostCpuFeature("sse2"), CpuFeature::kAbsent);
  EXPECT_EQ(HostCpuFeature("sse"), CpuFeature::kPresent);  // whole names only
}
#endif

TEST_F(CpuFeaturesTest, RefusesAModuleNamingEveryMissingFeatureAndIgnoresUnknownNames) {
  serialize::ModuleSpec spec = testing::MlpSpec(serialize::TargetKind::kHostCpu);
  spec.cpu_features = {"sse2", "fma", "avx2", "64bit", "not-a-feature-yet"};
  const std::vector<uint8_t> bytes = serialize::SerializeModule(spec);
  if (HostCpuFeature("avx2") != CpuFeature::kPresent || HostCpuFeature("fma") != CpuFeature::kPresent) {
    GTEST_SKIP() << "this test's module needs an x86-64 CPU with AVX2 and FMA";
  }
  agate_module_t* module = nullptr;
  ASSERT_EQ(Load(bytes, &module), AGATE_OK) << Message();
  agate_module_free(module);

  PretendCpuLacksForTesting("avx2,fma");
  module = nullptr;
  EXPECT_EQ(Load(bytes, &module), AGATE_UNSUPPORTED);
  EXPECT_EQ(module, nullptr);
  const std::string message = Message();
  EXPECT_NE(message.find("CPU features fma, avx2 that this CPU lacks"), std::string::npos) << message;
  EXPECT_EQ(message.find("sse2"), std::string::npos) << message;
  EXPECT_EQ(message.find("not-a-feature-yet"), std::string::npos) << message;
  EXPECT_NE(message.find("llvm -mcpu=x86-64-v3"), std::string::npos) << message;

  PretendCpuLacksForTesting(nullptr);
  ASSERT_EQ(Load(bytes, &module), AGATE_OK) << Message();
  agate_module_free(module);
}

#if defined(__x86_64__)
// A module the compiler built for AVX-512 is refused on a CPU without it, and loaded by one with it.
TEST_F(CpuFeaturesTest, ModuleForAvx512IsRefusedWhereTheCpuLacksIt) {
  const std::vector<uint8_t> bytes = Compile("llvm -mcpu=skylake-avx512");
  const std::vector<std::string> features = RecordedFeatures(bytes);
  ASSERT_TRUE(Has(features, "avx512f"));
  ASSERT_TRUE(Has(features, "avx2"));

  PretendCpuLacksForTesting("avx512f,avx512bw,avx512cd,avx512dq,avx512vl");
  agate_module_t* module = nullptr;
  EXPECT_EQ(Load(bytes, &module), AGATE_UNSUPPORTED);
  const std::string message = Message();
  EXPECT_NE(message.find("avx512f"), std::string::npos) << message;
  EXPECT_NE(message.find("skylake-avx512"), std::string::npos) << message;  // the module's target
  EXPECT_EQ(module, nullptr);

  PretendCpuLacksForTesting(nullptr);
  if (HostCpuFeature("avx512f") != CpuFeature::kPresent || HostCpuFeature("avx512bw") != CpuFeature::kPresent ||
      HostCpuFeature("avx512vl") != CpuFeature::kPresent || HostCpuFeature("avx512dq") != CpuFeature::kPresent) {
    return;  // this machine cannot run it: the refusal above is what it would get
  }
  ASSERT_EQ(Load(bytes, &module), AGATE_OK) << Message();
  ExpectRuns(module);
  agate_module_free(module);
}

// The portable AVX2 level records no AVX-512 feature, so it runs where AVX-512 is missing.
TEST_F(CpuFeaturesTest, PortableTargetLoadsWithoutAvx512) {
  if (HostCpuFeature("avx2") != CpuFeature::kPresent || HostCpuFeature("fma") != CpuFeature::kPresent) {
    GTEST_SKIP() << "needs an AVX2 CPU";
  }
  const std::vector<uint8_t> bytes = Compile("llvm -mcpu=x86-64-v3");
  const std::vector<std::string> features = RecordedFeatures(bytes);
  EXPECT_TRUE(Has(features, "avx2"));
  EXPECT_TRUE(Has(features, "fma"));
  EXPECT_FALSE(Has(features, "avx512f"));
  PretendCpuLacksForTesting("avx512f,avx512bw,avx512cd,avx512dq,avx512vl");
  agate_module_t* module = nullptr;
  ASSERT_EQ(Load(bytes, &module), AGATE_OK) << Message();
  ExpectRuns(module);
  agate_module_free(module);
}

TEST_F(CpuFeaturesTest, AnotherArchitectureIsNamedWithThisOne) {
  const std::vector<uint8_t> bytes = Compile("llvm -mtriple=aarch64-linux-gnu");
  agate_module_t* module = nullptr;
  EXPECT_EQ(Load(bytes, &module), AGATE_VERSION_MISMATCH);
  EXPECT_NE(Message().find("module built for aarch64, this runtime runs on x86-64"), std::string::npos) << Message();
  EXPECT_EQ(module, nullptr);
}
#endif

}  // namespace
}  // namespace agate
