// --precision fp16|bf16 (weight_precision.h): the option's values and targets, the rounding of
// packed weights, and every operator family that packs weights at compile time (GEMM panels with
// more than one row, matrix-vector panels, blocked direct / 1x1 / depthwise convs) lowered with
// narrow weights on the loop-IR interpreter and as LLVM code:
//  - its constants are stored narrow (half the bytes of the float32 lowering's);
//  - its outputs equal, to float32 rounding, the reference interpreter run with the weights
//    rounded to the narrow type: the only error is the weights' rounding (accumulation, bias and
//    epilogue stay float32). A kernel that kept float32 weights fails this (bf16 moves results by
//    about 1e-3, fp16 by about 1e-4, against a tolerance of 2e-5 for short sums);
//  - cuda kernels read them too (the evaluator with CUDA semantics; NVRTC for sm_75/80/90);
//  - they stay within K * u of the float32 model (K products of |a|, |w| <= 1, each weight off by
//    at most u = 2^-11 (fp16) or 2^-8 (bf16) of itself).
// Winograd's transformed weights are not narrowed (they stay float32, exactly the fp32 result),
// the generated x86 code widens each B vector with one vcvtph2ps / shift, not per element, and
// the C target's kernels widen them with portable conversions (compiled with gcc and run).
#include "core/ops/weight_precision.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/codegen/c/codegen_c.h"
#include "core/codegen/cuda/build_cuda.h"
#include "core/codegen/cuda/nvrtc.h"
#include "core/codegen/llvm/build_llvm.h"
#include "core/codegen/llvm/dynamic_library.h"
#include "core/codegen/testing/loop_kernels.h"
#include "core/graph/passes/layout_transformation.h"
#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/ops/lower_group.h"
#include "core/ops/testing/reference_check.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::Shape;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::RandomTensor;
using testing::Backend;

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kF16 = ir::DType::Float(16);
const ir::DType kBF16 = ir::DType::BFloat16();

// ---------------------------------------------------------------- the option

TEST(WeightPrecisionTest, ParsesTheThreePrecisionsAndRefusesOthers) {
  EXPECT_EQ(ParseWeightPrecision("fp32"), kF32);
  EXPECT_EQ(ParseWeightPrecision("fp16"), kF16);
  EXPECT_EQ(ParseWeightPrecision("bf16"), kBF16);
  for (const char* name : {"fp16", "bf16", "fp32"}) EXPECT_EQ(WeightPrecisionName(ParseWeightPrecision(name)), name);
  for (const char* bad : {"", "FP16", "float16", "int8", "fp8", "fp16 "}) {
    try {
      ParseWeightPrecision(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("expected fp32, fp16 or bf16"), std::string::npos) << e.what();
    }
  }
}

std::string RefusalOf(ir::DType precision, const std::string& target) {
  try {
    CheckWeightPrecision(precision, target::Target::Parse(target));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported) << e.what();
    return e.what();
  }
  return "";
}

TEST(WeightPrecisionTest, TargetsThatCannotReadNarrowWeightsAreRefusedByName) {
  for (const char* t : {"llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3", "llvm -mtriple=aarch64-linux-gnu",
                        "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512"}) {
    EXPECT_EQ(RefusalOf(kF16, t), "") << t;
    EXPECT_EQ(RefusalOf(kBF16, t), "") << t;
  }
  // bfloat16 is a shift everywhere; float16 needs a hardware conversion.
  EXPECT_EQ(RefusalOf(kBF16, "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v2"), "");
  EXPECT_EQ(RefusalOf(kBF16, "llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4"), "");
  EXPECT_NE(RefusalOf(kF16, "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v2").find("F16C"), std::string::npos);
  EXPECT_NE(RefusalOf(kF16, "llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4").find("--precision bf16"),
            std::string::npos);
  for (const char* t : {"c", "c -mcpu=cortex-m4"}) {
    EXPECT_EQ(RefusalOf(kF16, t), "") << t;
    EXPECT_EQ(RefusalOf(kBF16, t), "") << t;
  }
  for (const char* t : {"cuda -arch=sm_80", "cuda -arch=sm_90"}) {
    EXPECT_EQ(RefusalOf(kF16, t), "") << t;
    EXPECT_EQ(RefusalOf(kBF16, t), "") << t;
  }
  for (const char* t : {"llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v2", "llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4"}) {
    std::string message = RefusalOf(kF16, t);
    EXPECT_NE(message.find("--precision fp16"), std::string::npos) << t << ": " << message;
    EXPECT_NE(message.find(target::Target::Parse(t).ToString()), std::string::npos) << t << ": " << message;
    EXPECT_EQ(RefusalOf(kF32, t), "") << t;
  }
}

TEST(WeightPrecisionTest, NarrowWeightsRoundsToNearestEvenAndKeepsWhatWouldOverflow) {
  graph::Tensor w = graph::Tensor::FromDoubles(kF32, {5}, {1.0, 1.0 + 1.0 / 4096, -3.14159, 1e-3, 65504.0});
  graph::Tensor h = NarrowWeights(w, kF16);
  ASSERT_EQ(h.dtype(), kF16);
  EXPECT_EQ(h.nbytes() * 2, w.nbytes());
  EXPECT_EQ(h.GetDouble(1), 1.0);  // halfway between 1 and 1 + 2^-10: to even
  EXPECT_NEAR(h.GetDouble(2), -3.14159, 3.14159 / 2048);
  EXPECT_EQ(h.GetDouble(4), 65504.0);
  graph::Tensor b = NarrowWeights(w, kBF16);
  ASSERT_EQ(b.dtype(), kBF16);
  EXPECT_NEAR(b.GetDouble(2), -3.14159, 3.14159 / 256);
  // 70000 is no float16: the tensor stays float32 (exact) instead of holding an infinity.
  graph::Tensor big = graph::Tensor::FromDoubles(kF32, {2}, {1.0, 70000.0});
  EXPECT_EQ(NarrowWeights(big, kF16).dtype(), kF32);
  EXPECT_EQ(NarrowWeights(big, kBF16).dtype(), kBF16);
  EXPECT_EQ(NarrowWeights(w, kF32).dtype(), kF32);
  EXPECT_EQ(NarrowWeights(graph::Tensor::FromDoubles(ir::DType::Float(64), {1}, {1.0}), kF16).dtype(),
            ir::DType::Float(64));
}

// ---------------------------------------------------------------- operator families

// The graph with its float32 weights (constants of rank 2 or more: not biases) rounded to
// `precision` and stored as float32 again: what a kernel with narrow weights computes, up to
// float32 rounding.
Graph WithRoundedWeights(Graph g, ir::DType precision) {
  for (auto& [name, value] : g.constants) {
    if (value.dtype() != kF32 || value.rank() < 2) continue;
    graph::Tensor narrow = NarrowWeights(value, precision);
    value = graph::Tensor::FromDoubles(kF32, narrow.shape(), narrow.ToDoubles());
  }
  return g;
}

struct CreatedBytes {
  int narrow_tensors = 0;
  int64_t narrow = 0;   // bytes of created constants of the asked precision
  int64_t float32 = 0;  // bytes of created float32 constants
};

CreatedBytes CreatedConstants(const Graph& fused, const LowerGroupOptions& options) {
  CreatedBytes bytes;
  for (size_t i = 0; i < fused.groups.size(); ++i) {
    GroupKernel k = LowerGroup(fused, fused.groups[i], target::Target::Host(), "k" + std::to_string(i), options);
    for (const KernelParam& p : k.params) {
      if (p.kind != KernelParam::Kind::kConstant) continue;
      if (p.constant.dtype() == kF32) {
        bytes.float32 += static_cast<int64_t>(p.constant.nbytes());
      } else if (p.constant.dtype() == options.weight_precision) {
        bytes.narrow += static_cast<int64_t>(p.constant.nbytes());
        ++bytes.narrow_tensors;
      }
    }
  }
  return bytes;
}

double UnitRoundoff(ir::DType precision) { return precision == kF16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8); }

// Lowers `g` (already fused when `fused`) with narrow weights and checks the three properties
// of the file comment. `k`: the products per output (the error bound's K).
void CheckNarrowWeights(const Graph& g, int64_t k, bool eval,
                        LowerGroupOptions knobs = {}) {
  Graph fused = testing::Fuse(g);
  std::map<std::string, graph::Tensor> inputs = testing::RandomInputs(g, 11);
  std::map<std::string, graph::Tensor> exact = graph_eval::Interpret(g, inputs);
  CreatedBytes wide = CreatedConstants(fused, knobs);
  ASSERT_GT(wide.float32, 0) << "nothing was packed at compile time";
  for (ir::DType precision : {kF16, kBF16}) {
    const std::string name = WeightPrecisionName(precision);
    LowerGroupOptions options = knobs;
    options.weight_precision = precision;
    CreatedBytes narrow = CreatedConstants(fused, options);
    EXPECT_GT(narrow.narrow_tensors, 0) << name;
    EXPECT_EQ(narrow.narrow * 2, wide.float32) << name << ": the packed weights are not stored in half the bytes";
    std::map<std::string, graph::Tensor> rounded = graph_eval::Interpret(WithRoundedWeights(g, precision), inputs);
    for (Backend backend : {Backend::kEval, Backend::kLLVM}) {
      if (backend == Backend::kEval && !eval) continue;
      const char* where = backend == Backend::kEval ? "eval" : "llvm";
      std::map<std::string, graph::Tensor> got = testing::RunGroups(fused, inputs, backend, target::Target::Host(), options);
      for (const std::string& out : g.outputs) {
        // float32 summation order: 2e-5, or 1e-7 per product for long sums.
        EXPECT_TRUE(testing::TensorsClose(got.at(out), rounded.at(out), std::max(2e-5, 1e-7 * static_cast<double>(k))))
            << name << " " << where << ": not the model with rounded weights";
        EXPECT_TRUE(testing::TensorsClose(got.at(out), exact.at(out), static_cast<double>(k) * UnitRoundoff(precision)))
            << name << " " << where << ": further from float32 than the weights' rounding allows";
      }
    }
  }
}

Graph MatMulGraph(const Shape& a, const Shape& b, bool bias) {
  Graph g;
  g.AddInput("a", TensorType{kF32, a});
  g.AddConstant("w", RandomTensor(b, 7));
  Add(&g, "MatMul", "mm", {"a", "w"}, {bias ? "p" : "y"});
  if (bias) {
    g.AddConstant("bias", RandomTensor({b.back()}, 8));
    Add(&g, "Add", "add", {"p", "bias"}, {"s"});
    Add(&g, "Relu", "relu", {"s"}, {"y"});
  }
  return Finish(g, {"y"});
}

Graph GemmTransBGraph(int64_t m, int64_t n, int64_t k) {
  Graph g;
  g.AddInput("a", TensorType{kF32, {m, k}});
  g.AddConstant("w", RandomTensor({n, k}, 3));
  g.AddConstant("c", RandomTensor({n}, 4));
  Add(&g, "Gemm", "fc", {"a", "w", "c"}, {"y"}, {{"transB", Attribute(int64_t{1})}});
  return Finish(g, {"y"});
}

TEST(WeightPrecisionTest, GemmPanelsWithSeveralRows) {
  CheckNarrowWeights(MatMulGraph({7, 40}, {40, 33}, true), 40, true);
  CheckNarrowWeights(MatMulGraph({2, 5, 24}, {24, 20}, false), 24, true);  // batch folded into the rows
  CheckNarrowWeights(GemmTransBGraph(5, 37, 24), 24, true);
  CheckNarrowWeights(MatMulGraph({67, 301}, {301, 129}, true), 301, false);
}

TEST(WeightPrecisionTest, MatrixVectorPanels) {
  CheckNarrowWeights(MatMulGraph({1, 40}, {40, 64}, true), 40, true);
  // A decoder step: [1, 1, K] activations by a 2-D weight, a ragged N (lanes past it masked).
  CheckNarrowWeights(MatMulGraph({1, 1, 48}, {48, 260}, true), 48, true);
  CheckNarrowWeights(GemmTransBGraph(1, 96, 24), 24, true);
  CheckNarrowWeights(MatMulGraph({1, 768}, {768, 531}, false), 768, false);
}

Graph ConvGraph(const Shape& x, const Shape& w, int64_t group, std::vector<int64_t> strides, std::vector<int64_t> pads) {
  Graph g;
  g.AddInput("x", TensorType{kF32, x});
  g.AddConstant("w", RandomTensor(w, 5));
  g.AddConstant("b", RandomTensor({w[0]}, 6));
  std::vector<std::pair<std::string, Attribute>> attrs{{"group", Attribute(group)}};
  if (!strides.empty()) attrs.push_back({"strides", Attribute(strides)});
  if (!pads.empty()) attrs.push_back({"pads", Attribute(pads)});
  Add(&g, "Conv", "conv", {"x", "w", "b"}, {"c"}, attrs);
  Add(&g, "Relu", "relu", {"c"}, {"y"});
  return Finish(g, {"y"});
}

TEST(WeightPrecisionTest, BlockedConvolutions) {
  LowerGroupOptions direct;
  direct.conv_winograd = 0;
  // 3x3 (direct), strided 3x3, 1x1 in the blocked layout; the first reads NCHW and writes blocked.
  CheckNarrowWeights(graph::TransformLayout(ConvGraph({1, 3, 9, 9}, {16, 3, 3, 3}, 1, {}, {1, 1, 1, 1}), 8),
                     27, true, direct);
  CheckNarrowWeights(graph::TransformLayout(ConvGraph({1, 16, 9, 9}, {16, 16, 3, 3}, 1, {}, {1, 1, 1, 1}), 8),
                     144, true, direct);
  CheckNarrowWeights(graph::TransformLayout(ConvGraph({1, 16, 10, 10}, {32, 16, 3, 3}, 1, {2, 2}, {1, 1, 1, 1}), 16),
                     144, false);
  CheckNarrowWeights(graph::TransformLayout(ConvGraph({1, 32, 7, 7}, {64, 32, 1, 1}, 1, {}, {}), 16), 32, true);
}

TEST(WeightPrecisionTest, BlockedDepthwiseConvolutions) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 32, 9, 11}});
  g.AddConstant("w", RandomTensor({32, 1, 3, 3}, 5));
  g.AddConstant("b", RandomTensor({32}, 6));
  Add(&g, "LayoutTransform", "to", {"x"}, {"xb"},
      {{"src_layout", Attribute("NCHW")}, {"dst_layout", Attribute("NCHW16c")}});
  Add(&g, "Conv", "dw", {"xb", "w", "b"}, {"c"},
      {{"group", Attribute(int64_t{32})}, {"data_layout", Attribute("NCHW16c")},
       {"pads", Attribute(std::vector<int64_t>{1, 1, 1, 1})}});
  Add(&g, "LayoutTransform", "from", {"c"}, {"y"},
      {{"src_layout", Attribute("NCHW16c")}, {"dst_layout", Attribute("NCHW")}});
  CheckNarrowWeights(Finish(g, {"y"}), 9, true);
}

// Winograd's weights are transformed at compile time (winograd.h) and kept float32: with
// --precision the conv computes exactly what it computes without it.
TEST(WeightPrecisionTest, WinogradKeepsFloat32Weights) {
  LowerGroupOptions winograd;
  winograd.conv_winograd = 1;
  Graph g = graph::TransformLayout(ConvGraph({1, 16, 12, 12}, {16, 16, 3, 3}, 1, {}, {1, 1, 1, 1}), 16);
  Graph fused = testing::Fuse(g);
  std::map<std::string, graph::Tensor> inputs = testing::RandomInputs(g, 3);
  std::vector<std::string> summaries;
  std::map<std::string, graph::Tensor> wide =
      testing::RunGroups(fused, inputs, Backend::kLLVM, target::Target::Host(), winograd, &summaries);
  bool winograd_used = false;
  for (const std::string& summary : summaries) winograd_used |= summary.find("winograd") != std::string::npos;
  ASSERT_TRUE(winograd_used);
  LowerGroupOptions half = winograd;
  half.weight_precision = kF16;
  EXPECT_EQ(CreatedConstants(fused, half).narrow_tensors, 0);
  std::map<std::string, graph::Tensor> got = testing::RunGroups(fused, inputs, Backend::kLLVM, target::Target::Host(), half);
  EXPECT_TRUE(testing::TensorsClose(got.at("y"), wide.at("y"), 0));
}

// ---------------------------------------------------------------- the C target

std::string ReadBinary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// `fused`'s groups lowered for the portable C target, compiled with gcc, loaded into this
// process and run in order on `inputs`; the graph outputs.
std::map<std::string, graph::Tensor> RunAsC(const Graph& fused, const std::map<std::string, graph::Tensor>& inputs,
                                            const LowerGroupOptions& options) {
  const target::Target c = target::Target::Parse("c");
  std::vector<GroupKernel> kernels;
  std::vector<ir::LoweredFunc> funcs;
  for (size_t i = 0; i < fused.groups.size(); ++i) {
    kernels.push_back(LowerGroup(fused, fused.groups[i], c, "k" + std::to_string(i), options));
    funcs.push_back(kernels.back().func);
  }
  const std::string dir = codegen::testing::MakeTempDir();
  codegen::testing::WriteTextFile(dir + "/kernels.c", codegen::GenerateC(funcs, c));
  std::string log;
  int status = codegen::testing::RunCommand("gcc -std=c99 -Wall -Wextra -Werror -Wno-unused-parameter -O1 -fPIC "
                                            "-shared -I" + codegen::testing::KernelAbiIncludeDir() + " " + dir +
                                                "/kernels.c -o " + dir + "/kernels.so -lm",
                                            &log);
  EXPECT_EQ(status, 0) << log;
  if (status != 0) return {};
  codegen::DynamicLibrary library = codegen::DynamicLibrary::Load(ReadBinary(dir + "/kernels.so"));
  std::map<std::string, graph::Tensor> values = inputs;
  for (const auto& [name, value] : fused.constants) values[name] = value;
  for (const GroupKernel& k : kernels) {
    std::vector<graph::Tensor> args;
    for (const KernelParam& p : k.params) {
      if (p.kind == KernelParam::Kind::kConstant) {
        args.push_back(p.constant);
      } else if (values.count(p.value)) {
        args.push_back(values.at(p.value));
      } else {
        const graph::TensorType& t = fused.TypeOf(p.value);
        args.push_back(graph::Tensor(t.dtype, t.shape));
      }
    }
    std::vector<void*> pointers;
    for (graph::Tensor& a : args) pointers.push_back(a.mutable_raw_data());
    codegen::testing::TestContext context(1, static_cast<size_t>(k.func.workspace_bytes));
    auto kernel = reinterpret_cast<agate_kernel_fn>(library.Symbol(k.func.name));
    EXPECT_EQ(kernel(pointers.data(), &context.ctx), 0) << k.func.name;
    for (size_t i = 0; i < args.size(); ++i)
      if (k.params[i].kind == KernelParam::Kind::kValue) values[k.params[i].value] = args[i];
  }
  std::map<std::string, graph::Tensor> outputs;
  for (const std::string& out : fused.outputs) outputs[out] = values.at(out);
  return outputs;
}

// The C target (firmware and any C99 compiler) stores narrow weights too and widens them with
// exact portable conversions: its kernels compute the model with rounded weights.
TEST(WeightPrecisionTest, CKernelsWidenNarrowWeightsInPortableC) {
  if (!codegen::testing::HaveTool("gcc")) GTEST_SKIP() << "needs gcc";
  LowerGroupOptions direct;
  direct.conv_winograd = 0;
  for (const Graph& g : {MatMulGraph({1, 40}, {40, 64}, true), MatMulGraph({7, 40}, {40, 33}, true),
                         graph::TransformLayout(ConvGraph({1, 16, 9, 9}, {16, 16, 3, 3}, 1, {}, {1, 1, 1, 1}), 8)}) {
    Graph fused = testing::Fuse(g);
    std::map<std::string, graph::Tensor> inputs = testing::RandomInputs(g, 5);
    for (ir::DType precision : {kF16, kBF16}) {
      LowerGroupOptions options = direct;
      options.weight_precision = precision;
      std::map<std::string, graph::Tensor> want = graph_eval::Interpret(WithRoundedWeights(g, precision), inputs);
      std::map<std::string, graph::Tensor> got = RunAsC(fused, inputs, options);
      for (const std::string& out : g.outputs) {
        ASSERT_TRUE(got.count(out)) << out;
        EXPECT_TRUE(testing::TensorsClose(got.at(out), want.at(out), 2e-5)) << WeightPrecisionName(precision);
      }
    }
  }
}

// ---------------------------------------------------------------- cuda targets

// cuda kernels (no GPU needed) keep narrow weights in their own layout and widen them where
// they read them (dense's shared-memory tiles or a thread's column, the direct conv): the kernels
// run on the loop-IR evaluator with CUDA semantics against the model with rounded weights, and
// compile with NVRTC for sm_75, sm_80 and sm_90 where it is installed.
TEST(WeightPrecisionTest, CudaKernelsReadNarrowWeights) {
  const std::vector<Graph> graphs = {MatMulGraph({1, 40}, {40, 64}, true), MatMulGraph({64, 40}, {40, 96}, true),
                                     GemmTransBGraph(33, 64, 24),
                                     ConvGraph({1, 8, 9, 9}, {16, 8, 3, 3}, 1, {}, {1, 1, 1, 1})};
  for (size_t i = 0; i < graphs.size(); ++i) {
    const Graph& g = graphs[i];
    Graph fused = testing::Fuse(g);
    std::map<std::string, graph::Tensor> inputs = testing::RandomInputs(g, 13);
    for (ir::DType precision : {kF16, kBF16}) {
      const std::string name = WeightPrecisionName(precision) + " case " + std::to_string(i);
      LowerGroupOptions options;
      options.weight_precision = precision;
      const target::Target sm80 = target::Target::Parse("cuda -arch=sm_80");
      std::map<std::string, graph::Tensor> want = graph_eval::Interpret(WithRoundedWeights(g, precision), inputs);
      std::map<std::string, graph::Tensor> got = testing::RunGroups(fused, inputs, Backend::kEval, sm80, options);
      for (const std::string& out : g.outputs) EXPECT_TRUE(testing::TensorsClose(got.at(out), want.at(out), 2e-5)) << name;
      // Every architecture for the first graph; sm_80 for the others (NVRTC takes seconds a build).
      const std::vector<const char*> archs = i == 0 ? std::vector<const char*>{"cuda -arch=sm_75", "cuda -arch=sm_80",
                                                                               "cuda -arch=sm_90"}
                                                    : std::vector<const char*>{"cuda -arch=sm_80"};
      for (const char* arch : archs) {
        const target::Target t = target::Target::Parse(arch);
        std::vector<ir::LoweredFunc> funcs;
        int narrow = 0;
        for (size_t k = 0; k < fused.groups.size(); ++k) {
          GroupKernel kernel = LowerGroup(fused, fused.groups[k], t, "k" + std::to_string(k), options);
          for (const KernelParam& p : kernel.params) narrow += p.kind == KernelParam::Kind::kConstant && p.constant.dtype() == precision;
          funcs.push_back(kernel.func);
        }
        EXPECT_EQ(narrow, 1) << name << " " << arch;
        if (codegen::NvrtcAvailable()) {
          codegen::CudaBuild build = codegen::BuildCuda(funcs, t, "precision");
          EXPECT_FALSE(build.cubin.empty()) << name << " " << arch;
        }
      }
    }
  }
}

// ---------------------------------------------------------------- the generated code

// The x86 assembly of `g`'s kernels lowered for `target` with `precision` weights.
std::string Assembly(const Graph& g, const std::string& target, ir::DType precision) {
  Graph fused = testing::Fuse(g);
  target::Target t = target::Target::Parse(target);
  LowerGroupOptions options;
  options.weight_precision = precision;
  std::vector<ir::LoweredFunc> funcs;
  for (size_t i = 0; i < fused.groups.size(); ++i)
    funcs.push_back(LowerGroup(fused, fused.groups[i], t, "k" + std::to_string(i), options).func);
  codegen::LLVMBuildOptions keep;
  keep.keep_assembly = true;
  return codegen::BuildLLVMObject(funcs, t, keep).assembly;
}

int Count(const std::string& text, const std::string& pattern) {
  std::regex re(pattern);
  return static_cast<int>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// One conversion per loaded vector of B, in vector registers: vcvtph2ps into a ymm/zmm for
// float16, a zero-extension and a 16-bit shift of whole vectors for bfloat16; never a call
// to a soft-float helper or a scalar conversion per element.
TEST(WeightPrecisionTest, EachLoadedVectorIsWidenedByOneInstruction) {
  for (const char* target : {"llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3",
                             "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512"}) {
    for (const Graph& g : {MatMulGraph({64, 256}, {256, 128}, true), MatMulGraph({1, 256}, {256, 128}, true)}) {
      std::string f16 = Assembly(g, target, kF16);
      EXPECT_GT(Count(f16, R"(vcvtph2ps\s+[^\n]*%[yz]mm)"), 0) << target;
      EXPECT_EQ(Count(f16, R"(vcvtph2ps\s+[^\n]*%xmm[0-9]+\n)"), 0) << target << ": scalar conversions";
      EXPECT_EQ(Count(f16, R"(extendhfsf2|gnu_h2f)"), 0) << target << ": soft-float calls";
      std::string bf16 = Assembly(g, target, kBF16);
      EXPECT_GT(Count(bf16, R"(vps?lld\s+\$16, [^\n]*%[yz]mm)") + Count(bf16, R"(vpunpck[lh]wd\s+[^\n]*%[yz]mm)"), 0)
          << target;
      EXPECT_EQ(Count(bf16, R"(vcvtph2ps|extendhfsf2|gnu_h2f)"), 0) << target;
    }
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
