// Kernel prefixes, kernel fingerprints and the microcontroller package (package.h): what a
// firmware links must carry the model's prefix, and the module and its generated kernel table
// must agree on one fingerprint that differs between models whose kernels share names.
#include "core/compiler/package.h"

#include <gtest/gtest.h>

#include <random>

#include "core/graph/passes/graph_memory_plan.h"
#include "core/ops/lower_group.h"
#include "core/serialize/kernel_fingerprint.h"
#include "core/support/error.h"
#include "frontends/onnx/importer.h"
#include "frontends/onnx/model_builder.h"

namespace agate {
namespace compiler {
namespace {

using graph::Graph;
using graph::Tensor;
using onnx_frontend::ModelBuilder;

constexpr int kFloat = 1;  // onnx::TensorProto::FLOAT

Tensor RandomTensor(const graph::Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-0.5, 0.5);
  std::vector<double> values(graph::NumElements(shape));
  for (double& v : values) v = dist(rng);
  return Tensor::FromDoubles(graph::DType::Float(32), shape, values);
}

// conv (k x k, same padding) -> relu -> global average pool: two of these with different k
// have kernels of the same names and argument sizes except the weights.
Graph ConvModel(int k, int channels = 4) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {1, 2, 8, 8});
  b.Initializer("w", RandomTensor({channels, 2, k, k}, 3));
  int pad = k / 2;
  b.Node("Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{pad, pad, pad, pad}}}, "conv");
  b.Node("Relu", {"c"}, {"r"}, {}, "relu");
  b.Node("GlobalAveragePool", {"r"}, {"y"}, {}, "pool");
  b.Output("y", kFloat, {1, channels, 1, 1});
  return onnx_frontend::ImportOnnxModel(b.Build());
}

CompileResult Compile(const Graph& graph, const std::string& target, const std::string& prefix) {
  CompileOptions options;
  options.target = target;
  options.kernel_prefix = prefix;
  return CompileGraph(graph, options);
}

const PackageFile* FindFile(const std::vector<PackageFile>& files, const std::string& name) {
  for (const PackageFile& f : files)
    if (f.name == name) return &f;
  return nullptr;
}

TEST(KernelPrefixTest, NamesEveryKernelSymbol) {
  CompileResult result = Compile(ConvModel(3), "c -mcpu=cortex-m4", "kws");
  ASSERT_FALSE(result.spec.kernels.empty());
  for (const serialize::KernelSpec& k : result.spec.kernels) {
    EXPECT_EQ(k.name.rfind("kws_k", 0), 0u) << k.name;
    EXPECT_NE(result.firmware_kernels.find("int32_t " + k.name + "("), std::string::npos) << k.name;
  }
  CompileResult plain = Compile(ConvModel(3), "c -mcpu=cortex-m4", "");
  EXPECT_EQ(plain.spec.kernels[0].name.rfind("k0_", 0), 0u) << plain.spec.kernels[0].name;
}

TEST(KernelPrefixTest, RefusesWhatIsNoCIdentifier) {
  for (const char* bad : {"9lives", "a-b", "has space", "_reserved", "x.y"}) {
    try {
      Compile(ConvModel(3), "c", bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << bad;
      EXPECT_NE(e.message().find("not a C identifier"), std::string::npos) << e.message();
    }
  }
  EXPECT_EQ(KernelPrefixFromPath("out/kws-v2.agm"), "kws_v2");
  EXPECT_EQ(KernelPrefixFromPath("/tmp/3dnet.agm"), "m3dnet");
  EXPECT_EQ(KernelPrefixFromPath("pkg/demo_cnn"), "demo_cnn");
  EXPECT_EQ(KernelPrefixFromPath("dir/.hidden"), "model");
}

TEST(KernelFingerprintTest, SameKernelsSameValueOtherKernelsAnother) {
  const std::string target = "c -mcpu=cortex-m4";
  CompileResult a = Compile(ConvModel(3), target, "m");
  CompileResult again = Compile(ConvModel(3), target, "m");
  CompileResult b = Compile(ConvModel(5), target, "m");  // same kernel names, another model
  CompileResult other_prefix = Compile(ConvModel(3), target, "n");
  ASSERT_EQ(a.spec.kernels.size(), b.spec.kernels.size());
  for (size_t i = 0; i < a.spec.kernels.size(); ++i) EXPECT_EQ(a.spec.kernels[i].name, b.spec.kernels[i].name);
  EXPECT_NE(a.spec.kernel_fingerprint, 0u);
  EXPECT_EQ(a.spec.kernel_fingerprint, again.spec.kernel_fingerprint);
  EXPECT_NE(a.spec.kernel_fingerprint, b.spec.kernel_fingerprint);
  EXPECT_NE(a.spec.kernel_fingerprint, other_prefix.spec.kernel_fingerprint);
  // Argument sizes alone tell kernels apart even with the same code.
  std::vector<serialize::KernelSpec> kernels = a.spec.kernels;
  uint64_t before = serialize::KernelFingerprint("m", kernels, "code");
  kernels[0].param_bytes[0] += 4;
  EXPECT_NE(serialize::KernelFingerprint("m", kernels, "code"), before);
  // Host modules record one too (over their shared object).
  EXPECT_NE(Compile(ConvModel(3), "llvm", "").spec.kernel_fingerprint, 0u);
}

TEST(PackageTest, HoldsTheModuleKernelsTableAndSizes) {
  CompileResult result = Compile(ConvModel(3), "c -mcpu=cortex-m4", "kws");
  std::vector<PackageFile> files = MakePackage(result, "kws");
  for (const char* name : {"agate_kws.h", "agate_kws.c", "agate_kws_module.c", "agate_kws_kernels.c", "README.md"}) {
    EXPECT_NE(FindFile(files, name), nullptr) << name;
  }
  const std::string& header = FindFile(files, "agate_kws.h")->contents;
  const std::string fingerprint = serialize::FingerprintHex(result.spec.kernel_fingerprint);
  EXPECT_NE(header.find("#define AGATE_KWS_KERNEL_FINGERPRINT " + fingerprint + "ull"), std::string::npos) << header;
  EXPECT_NE(header.find("#define AGATE_KWS_ARENA_BYTES " + std::to_string(result.spec.arena_bytes) + "u"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("#define AGATE_KWS_INPUT0_BYTES 512u"), std::string::npos) << header;
  EXPECT_NE(header.find("agate_status_t agate_kws_run(const void* const* inputs, void* const* outputs, void* memory);"),
            std::string::npos);
  const std::string& table = FindFile(files, "agate_kws.c")->contents;
  for (const serialize::KernelSpec& k : result.spec.kernels) {
    EXPECT_NE(table.find("{\"" + k.name + "\", " + k.name + "}"), std::string::npos) << k.name;
  }
  EXPECT_NE(table.find("agate_module_load_in_place_fingerprinted"), std::string::npos);
  const std::string& module = FindFile(files, "agate_kws_module.c")->contents;
  EXPECT_NE(module.find("__attribute__((aligned(64))) const uint8_t agate_kws_module[" +
                        std::to_string(result.module.size()) + "]"),
            std::string::npos);
  EXPECT_EQ(FindFile(files, "agate_kws_kernels.c")->contents, result.firmware_kernels);

  PackageMemory memory = PackageMemoryOf(result);
  EXPECT_EQ(memory.arena, result.spec.arena_bytes);
  EXPECT_EQ(memory.outputs, 64u);  // one 16-byte output, rounded up
  EXPECT_GT(memory.executor_state, 0u);
  EXPECT_GE(memory.total, memory.arena + memory.workspace + memory.outputs + memory.module_state);
  EXPECT_NE(header.find("#define AGATE_KWS_MEMORY_BYTES " + std::to_string(memory.total) + "u"), std::string::npos);
}

TEST(PackageTest, RefusesHostTargetsAndKernelsWithoutThePrefix) {
  try {
    MakePackage(Compile(ConvModel(3), "llvm", "kws"), "kws");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("microcontroller targets"), std::string::npos) << e.message();
  }
  try {
    MakePackage(Compile(ConvModel(3), "c -mcpu=cortex-m4", ""), "kws");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("does not carry the prefix 'kws_'"), std::string::npos) << e.message();
  }
  std::vector<PackageFile> object_package =
      MakePackage(Compile(ConvModel(3), "llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4", "kws"), "kws");
  EXPECT_NE(FindFile(object_package, "agate_kws_kernels.o"), nullptr);
  EXPECT_NE(FindFile(object_package, "README.md")->contents.find("-mfloat-abi=hard"), std::string::npos);
}

// A 3x3 convolution wide enough for Winograd on the host.
Graph WideConvModel() {
  ModelBuilder b(13);
  b.Input("x", kFloat, {1, 16, 16, 16});
  b.Initializer("w", RandomTensor({16, 16, 3, 3}, 5));
  b.Node("Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "conv");
  b.Node("Relu", {"c"}, {"y"}, {}, "relu");
  b.Output("y", kFloat, {1, 16, 16, 16});
  return onnx_frontend::ImportOnnxModel(b.Build());
}

TEST(MemoryBudgetTest, KernelsOverTheWorkspaceBudgetDropWinogradOrAreRefused) {
  CompileOptions options;
  options.target = "llvm";
  ops::SetScheduleKnob(&options.schedule_knobs, "conv_winograd", 1);
  CompileResult winograd = CompileGraph(WideConvModel(), options);
  ops::SetScheduleKnob(&options.schedule_knobs, "conv_winograd", 0);
  CompileResult direct = CompileGraph(WideConvModel(), options);
  ASSERT_GT(winograd.spec.workspace_bytes, direct.spec.workspace_bytes) << winograd.Summary() << direct.Summary();

  ops::SetScheduleKnob(&options.schedule_knobs, "conv_winograd", 1);
  options.max_workspace_bytes = static_cast<int64_t>(direct.spec.workspace_bytes);
  CompileResult budgeted = CompileGraph(WideConvModel(), options);
  EXPECT_LE(budgeted.spec.workspace_bytes, direct.spec.workspace_bytes);
  EXPECT_EQ(budgeted.kernels[0].schedule, direct.kernels[0].schedule);

  if (direct.spec.workspace_bytes > 0) {
    options.max_workspace_bytes = static_cast<int64_t>(direct.spec.workspace_bytes) - 1;
    try {
      CompileGraph(WideConvModel(), options);
      FAIL() << "a kernel over the budget must be refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kResourceExhausted);
      EXPECT_NE(e.message().find("over --max-workspace"), std::string::npos) << e.message();
    }
  }
}

// --memory-plan min-peak never needs a larger arena than the default placement, and on the
// DS-CNN-like chain of equal-sized tensors it needs fewer slots.
TEST(MemoryBudgetTest, MinPeakArenaIsNeverLarger) {
  for (int k : {3, 5}) {
    CompileOptions options;
    options.target = "c -mcpu=cortex-m4";
    CompileResult greedy = CompileGraph(ConvModel(k), options);
    options.memory_plan = graph::MemoryPlanPolicy::kMinPeak;
    CompileResult min_peak = CompileGraph(ConvModel(k), options);
    EXPECT_LE(min_peak.spec.arena_bytes, greedy.spec.arena_bytes);
    EXPECT_GE(min_peak.spec.arena_bytes, static_cast<uint64_t>(graph::ArenaLowerBound(min_peak.graph.memory_plan)));
  }
}

}  // namespace
}  // namespace compiler
}  // namespace agate
