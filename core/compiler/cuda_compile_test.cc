// Whole models compiled for cuda targets, checked without a GPU: the module
// verifies and carries the format-1.1 CUDA payload (the cubin for the target's
// architecture first, then PTX; every kernel's launch and ptxas figures), the
// generated source compiles for every architecture this NVRTC supports, and the
// plan run on the evaluator with GPU semantics (racecheck included) matches the
// reference interpreter: the demo CNN and a transformer encoder block. Without
// NVRTC the compile fails with kUnavailable naming it, and the rest is skipped.
#include <gtest/gtest.h>

#include <cmath>

#include "core/codegen/cuda/nvrtc.h"
#include "core/compiler/compiler.h"
#include "core/compiler/plan_evaluator.h"
#include "core/graph_eval/interpreter.h"
#include "core/graph/testing/graph_builder.h"
#include "core/ops/lower_group.h"
#include "core/support/error.h"
#include "core/target/cuda_arch.h"
#include "frontends/onnx/importer.h"
#include "runtime_minimal/core/verify.h"
#include "runtime_minimal/schema/module_generated.h"

namespace agate {
namespace compiler {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::RandomTensor;
using Ints = std::vector<int64_t>;

const ir::DType kF32 = ir::DType::Float(32);

bool Has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

CompileOptions Cuda(const std::string& arch = "sm_80") {
  CompileOptions o;
  o.target = "cuda -arch=" + arch;
  return o;
}

// Compiles, or says why the machine cannot: true when the test should go on.
bool CompileOrExplain(const Graph& graph, const CompileOptions& options, CompileResult* result) {
  try {
    *result = CompileGraph(graph, options);
    return true;
  } catch (const Error& e) {
    if (codegen::NvrtcAvailable()) throw;
    EXPECT_EQ(e.code(), StatusCode::kUnavailable) << e.message();
    EXPECT_TRUE(Has(e.message(), "NVRTC")) << e.message();
    return false;
  }
}

// The compile result's plan on the evaluator against the reference interpreter.
void ExpectMatchesReference(const Graph& graph, const CompileResult& result, double tolerance) {
  std::map<std::string, graph::Tensor> named;
  std::vector<graph::Tensor> inputs;
  uint32_t seed = 11;
  for (const std::string& name : graph.inputs) {
    const TensorType& t = graph.TypeOf(name);
    named[name] = RandomTensor(t.shape, seed++);
    inputs.push_back(named[name]);
  }
  std::map<std::string, graph::Tensor> want = graph_eval::Interpret(graph, named);
  std::vector<graph::Tensor> got = EvaluatePlan(result, inputs);
  ASSERT_EQ(got.size(), graph.outputs.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const graph::Tensor& w = want.at(graph.outputs[i]);
    ASSERT_EQ(got[i].numel(), w.numel());
    double worst = 0;
    for (int64_t k = 0; k < w.numel(); ++k) {
      double g = got[i].GetDouble(k), r = w.GetDouble(k);
      worst = std::max(worst, std::fabs(g - r) / (1 + std::fabs(r)));
    }
    EXPECT_LE(worst, tolerance) << "output " << graph.outputs[i] << "\n" << result.Summary();
  }
}

// What every cuda module must hold: format 1.1 images and a launch per kernel.
void ExpectCudaModule(const CompileResult& result, int arch) {
  const fb::Module* m = fb::GetModule(result.module.data());
  rt::ModuleFacts facts;
  const fb::Module* verified = nullptr;
  EXPECT_EQ(rt::VerifyModule(result.module.data(), result.module.size(), &verified, &facts), AGATE_OK);
  EXPECT_EQ(m->target_kind(), fb::TargetKind::Cuda);
  ASSERT_NE(m->cuda_images(), nullptr);
  ASSERT_EQ(m->cuda_images()->size(), 2u);
  EXPECT_EQ(m->cuda_images()->Get(0)->kind(), fb::CudaImageKind::Cubin);
  EXPECT_EQ(m->cuda_images()->Get(0)->arch(), static_cast<uint32_t>(arch));
  EXPECT_EQ(m->cuda_images()->Get(1)->kind(), fb::CudaImageKind::Ptx);
  EXPECT_EQ(m->host_object(), nullptr);
  ASSERT_EQ(m->kernels()->size(), m->plan()->size());
  for (uint32_t k = 0; k < m->kernels()->size(); ++k) {
    const fb::Kernel* kernel = m->kernels()->Get(k);
    const fb::CudaKernel* cuda = kernel->cuda();
    ASSERT_NE(cuda, nullptr) << kernel->name()->str();
    EXPECT_EQ(cuda->image()->size(), 0u);
    EXPECT_GT(cuda->registers_per_thread(), 0u) << kernel->name()->str();
    EXPECT_GE(cuda->grid()->x() * cuda->block()->x(), 1u);
    EXPECT_TRUE(Has(result.cuda_source, "void __launch_bounds__(" +
                                            std::to_string(cuda->block()->x() * cuda->block()->y() * cuda->block()->z()) +
                                            ") " + kernel->name()->str() + "("))
        << kernel->name()->str();
  }
}

// The demo CNN at 16x16 instead of 32x32 (it ends in a global pool): a quarter
// of the work for the evaluator, every kernel and schedule the same.
Graph DemoCnn() {
  onnx_frontend::ImportOptions options;
  options.input_shapes["input"] = {1, 3, 16, 16};
  return onnx_frontend::ImportOnnxFile("examples/demo/demo_cnn.onnx", options);
}

TEST(CudaCompileTest, DemoCnnMatchesTheReferenceOnTheEvaluator) {
  Graph graph = DemoCnn();
  CompileResult result;
  if (!CompileOrExplain(graph, Cuda(), &result)) GTEST_SKIP() << "NVRTC is not installed";
  ExpectCudaModule(result, 80);
  std::string summary = result.Summary();
  EXPECT_TRUE(Has(summary, "implicit GEMM")) << summary;
  EXPECT_TRUE(Has(summary, "occupancy")) << summary;
  ExpectMatchesReference(graph, result, 1e-4);
}

// A pre-norm transformer encoder block: attention with two heads, then an MLP
// with GELU; residuals around both.
Graph TransformerBlock() {
  const int64_t seq = 8, dim = 32, heads = 2, head = dim / heads, hidden = 64;
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, seq, dim}});
  uint32_t seed = 20;
  auto weight = [&](const std::string& name, const graph::Shape& shape, double scale) {
    g.AddConstant(name, RandomTensor(shape, seed++, -scale, scale));
  };
  for (const char* ln : {"ln1", "ln2"}) {
    weight(std::string(ln) + "_s", {dim}, 1.0);
    weight(std::string(ln) + "_b", {dim}, 0.1);
  }
  for (const char* w : {"wq", "wk", "wv", "wo"}) weight(w, {dim, dim}, 0.3);
  weight("w1", {dim, hidden}, 0.3);
  weight("b1", {hidden}, 0.1);
  weight("w2", {hidden, dim}, 0.3);
  g.AddConstant("scale", graph::Tensor::Scalar(kF32, 1.0 / std::sqrt(static_cast<double>(head))));
  g.AddConstant("half", graph::Tensor::Scalar(kF32, 0.5));
  g.AddConstant("one", graph::Tensor::Scalar(kF32, 1.0));
  g.AddConstant("inv_sqrt2", graph::Tensor::Scalar(kF32, 1.0 / std::sqrt(2.0)));
  Add(&g, "LayerNormalization", "ln1", {"x", "ln1_s", "ln1_b"}, {"h"}, {{"axis", Attribute(int64_t{-1})}});
  for (const char* p : {"q", "k", "v"}) {
    std::string name(p);
    Add(&g, "MatMul", name + "_proj", {"h", "w" + name}, {name + "_flat"});
    Add(&g, "Reshape", name + "_split", {name + "_flat"}, {name + "_4d"},
        {{"shape", Attribute(Ints{1, seq, heads, head})}});
  }
  Add(&g, "Transpose", "q_t", {"q_4d"}, {"qh"}, {{"perm", Attribute(Ints{0, 2, 1, 3})}});
  Add(&g, "Transpose", "k_t", {"k_4d"}, {"kh"}, {{"perm", Attribute(Ints{0, 2, 3, 1})}});
  Add(&g, "Transpose", "v_t", {"v_4d"}, {"vh"}, {{"perm", Attribute(Ints{0, 2, 1, 3})}});
  Add(&g, "MatMul", "scores", {"qh", "kh"}, {"s"});
  Add(&g, "Mul", "scaled", {"s", "scale"}, {"ss"});
  Add(&g, "Softmax", "attn", {"ss"}, {"a"}, {{"axis", Attribute(int64_t{-1})}});
  Add(&g, "MatMul", "mix", {"a", "vh"}, {"o4"});
  Add(&g, "Transpose", "o_t", {"o4"}, {"ot"}, {{"perm", Attribute(Ints{0, 2, 1, 3})}});
  Add(&g, "Reshape", "merge", {"ot"}, {"o"}, {{"shape", Attribute(Ints{1, seq, dim})}});
  Add(&g, "MatMul", "out_proj", {"o", "wo"}, {"attn_out"});
  Add(&g, "Add", "residual1", {"x", "attn_out"}, {"r1"});
  Add(&g, "LayerNormalization", "ln2", {"r1", "ln2_s", "ln2_b"}, {"h2"}, {{"axis", Attribute(int64_t{-1})}});
  Add(&g, "MatMul", "fc1", {"h2", "w1"}, {"f1"});
  Add(&g, "Add", "fc1_bias", {"f1", "b1"}, {"f1b"});
  // GELU, erf form: x * 0.5 * (1 + erf(x / sqrt(2))).
  Add(&g, "Mul", "gelu_scale", {"f1b", "inv_sqrt2"}, {"g0"});
  Add(&g, "Erf", "gelu_erf", {"g0"}, {"g1"});
  Add(&g, "Add", "gelu_one", {"g1", "one"}, {"g2"});
  Add(&g, "Mul", "gelu_x", {"f1b", "g2"}, {"g3"});
  Add(&g, "Mul", "gelu_half", {"g3", "half"}, {"gelu"});
  Add(&g, "MatMul", "fc2", {"gelu", "w2"}, {"f2"});
  Add(&g, "Add", "residual2", {"r1", "f2"}, {"y"});
  return graph::testing::Finish(g, {"y"});
}

TEST(CudaCompileTest, TransformerBlockMatchesTheReferenceOnTheEvaluator) {
  Graph graph = TransformerBlock();
  for (fusion::FusionPolicy policy : {fusion::FusionPolicy::kRule, fusion::FusionPolicy::kNone, fusion::FusionPolicy::kAll}) {
    CompileOptions options = Cuda();
    options.fusion = policy;
    CompileResult result;
    if (!CompileOrExplain(graph, options, &result)) GTEST_SKIP() << "NVRTC is not installed";
    ExpectCudaModule(result, 80);
    std::string summary = result.Summary();
    EXPECT_TRUE(Has(summary, "threads per row")) << summary;  // softmax and layer norm rows
    ExpectMatchesReference(graph, result, 1e-4);
  }
}

// Every kernel of both models compiles for every architecture agate knows that
// this NVRTC supports; the others are refused naming the archs it has.
TEST(CudaCompileTest, EveryArchitectureThisNvrtcSupports) {
  if (!codegen::NvrtcAvailable()) GTEST_SKIP() << "NVRTC is not installed";
  std::vector<int> supported = codegen::NvrtcSupportedArchs();
  Graph transformer = TransformerBlock();
  Graph cnn = DemoCnn();
  for (const target::CudaArch& arch : target::CudaArchs()) {
    bool ok = std::find(supported.begin(), supported.end(), arch.sm) != supported.end();
    for (const Graph* g : {&transformer, &cnn}) {
      try {
        CompileResult result = CompileGraph(*g, Cuda(arch.name()));
        EXPECT_TRUE(ok) << arch.name() << " compiled but NVRTC does not list it";
        ExpectCudaModule(result, arch.sm);
      } catch (const Error& e) {
        EXPECT_FALSE(ok) << arch.name() << ": " << e.message();
        EXPECT_EQ(e.code(), StatusCode::kUnsupported) << e.message();
        EXPECT_TRUE(Has(e.message(), "cannot compile for " + arch.name())) << e.message();
      }
    }
  }
}

TEST(CudaCompileTest, DumpIrWritesTheCudaSource) {
  char dir[] = "/tmp/agate_cuda_dump_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  CompileOptions options = Cuda();
  options.dump_ir_dir = dir;
  CompileResult result;
  if (!CompileOrExplain(TransformerBlock(), options, &result)) GTEST_SKIP() << "NVRTC is not installed";
  FILE* f = std::fopen((std::string(dir) + "/kernels.cu").c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string text(1 << 20, '\0');
  text.resize(std::fread(&text[0], 1, text.size(), f));
  std::fclose(f);
  EXPECT_EQ(text, result.cuda_source);
  EXPECT_TRUE(Has(text, "extern \"C\" __global__")) << text.substr(0, 300);
}

// A group with nothing to compute (a zero-element output) launches nothing.
TEST(CudaCompileTest, ZeroElementOutputsNeedNoLaunch) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {3, 4}});
  Add(&g, "Slice", "empty", {"x"}, {"e"}, {{"starts", Attribute(Ints{5})}, {"ends", Attribute(Ints{9})},
                                          {"axes", Attribute(Ints{0})}});
  Add(&g, "Relu", "relu", {"x"}, {"y"});
  Graph done = graph::testing::Finish(g, {"e", "y"});
  CompileResult result;
  if (!CompileOrExplain(done, Cuda(), &result)) GTEST_SKIP() << "NVRTC is not installed";
  ExpectCudaModule(result, 80);
  EXPECT_EQ(result.spec.plan.size(), 1u) << result.Summary();
  ExpectMatchesReference(done, result, 1e-6);
}

// An operator whose group has no CUDA schedule is refused naming it and the target:
// here a convolution in the blocked CPU layout NCHW8c.
TEST(CudaCompileTest, AnOperatorWithoutACudaScheduleIsRefused) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {1, 1, 6, 6, 8}});
  g.AddConstant("w", RandomTensor({8, 8, 3, 3}, 3));
  Add(&g, "Conv", "blocked_conv", {"x", "w"}, {"y"},
      {{"data_layout", Attribute("NCHW8c")}, {"out_layout", Attribute("NCHW8c")}});
  Graph done = graph::testing::Finish(g, {"y"});
  graph::FusedGroup group;
  group.nodes = {0};
  group.anchor = 0;
  group.kind = graph::OpKind::kOutEWiseFusable;
  group.inputs = {"x", "w"};
  group.outputs = {"y"};
  try {
    ops::LowerGroup(done, group, target::Target::Parse("cuda -arch=sm_80"), "k0");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_TRUE(Has(e.message(), "Conv") && Has(e.message(), "blocked_conv") && Has(e.message(), "cuda -arch=sm_80"))
        << e.message();
  }
}

}  // namespace
}  // namespace compiler
}  // namespace agate
