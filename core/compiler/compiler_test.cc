// End to end through every layer: ONNX ModelProto -> compiler -> module bytes -> the minimal
// runtime's C ABI -> outputs, compared with the graph reference interpreter, for every fusion
// policy. Also the driver's compile-time refusals.
#include "core/compiler/compiler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

#include "agate/runtime.h"
#include "core/graph_eval/interpreter.h"
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

Tensor RandomTensor(const graph::Shape& shape, uint32_t seed, double scale = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-scale, scale);
  std::vector<double> values(graph::NumElements(shape));
  for (double& v : values) v = dist(rng);
  return Tensor::FromDoubles(graph::DType::Float(32), shape, values);
}

// conv -> batchnorm -> relu -> (+ residual) -> relu -> global pool -> gemm -> softmax.
Graph ResidualBlockModel() {
  ModelBuilder b(13);
  b.Input("x", kFloat, {1, 8, 12, 12});
  b.Initializer("w", RandomTensor({8, 8, 3, 3}, 1, 0.2));
  b.Initializer("scale", RandomTensor({8}, 2));
  b.Initializer("shift", RandomTensor({8}, 3));
  b.Initializer("mean", RandomTensor({8}, 4, 0.1));
  b.Initializer("var", Tensor::FromDoubles(graph::DType::Float(32), {8}, std::vector<double>(8, 0.9)));
  b.Initializer("fc_w", RandomTensor({5, 8}, 5));
  b.Initializer("fc_b", RandomTensor({5}, 6));
  b.Node("Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "conv");
  b.Node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"bn"}, {}, "bn");
  b.Node("Relu", {"bn"}, {"r1"}, {}, "relu1");
  b.Node("Add", {"r1", "x"}, {"sum"}, {}, "add");
  b.Node("Relu", {"sum"}, {"r2"}, {}, "relu2");
  b.Node("GlobalAveragePool", {"r2"}, {"pool"}, {}, "pool");
  b.Node("Flatten", {"pool"}, {"flat"}, {}, "flatten");
  b.Node("Gemm", {"flat", "fc_w", "fc_b"}, {"logits"}, {{"transB", int64_t{1}}}, "fc");
  b.Node("Softmax", {"logits"}, {"probs"}, {}, "softmax");
  b.Output("probs", kFloat, {1, 5}, true);
  b.Output("r2", kFloat, {1, 8, 12, 12}, true);
  return onnx_frontend::ImportOnnxModel(b.Build());
}

std::string RuntimeError() { return agate_last_error_message(); }

// A module loaded through the C ABI with one executor; both freed with it.
struct LoadedExecutor {
  agate_module_t* module = nullptr;
  agate_executor_t* executor = nullptr;
  LoadedExecutor() = default;
  LoadedExecutor(const LoadedExecutor&) = delete;
  LoadedExecutor& operator=(const LoadedExecutor&) = delete;
  ~LoadedExecutor() {
    agate_executor_free(executor);
    agate_module_free(module);
  }
  ::testing::AssertionResult Load(const std::vector<uint8_t>& bytes) {
    if (agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module) != AGATE_OK ||
        agate_executor_create(module, nullptr, &executor) != AGATE_OK) {
      return ::testing::AssertionFailure() << RuntimeError();
    }
    return ::testing::AssertionSuccess();
  }
};

// Binds `tensor` (host memory, its own shape and dtype) to input `index` of `e`.
agate_status_t SetInput(agate_executor_t* e, uint32_t index, const Tensor& tensor) {
  std::vector<int64_t> shape = tensor.shape();
  const graph::DType t = tensor.dtype();
  DLTensor dl;
  std::memset(&dl, 0, sizeof(dl));
  dl.data = const_cast<void*>(tensor.raw_data());
  dl.device = DLDevice{kDLCPU, 0};
  dl.ndim = static_cast<int32_t>(shape.size());
  const uint8_t code = t.is_float() ? kDLFloat : t.is_uint() ? kDLUInt : kDLInt;
  dl.dtype = DLDataType{code, static_cast<uint8_t>(t.bits()), 1};
  dl.shape = shape.data();
  return agate_executor_set_input(e, index, &dl);
}

// Loads `module` through the public C ABI, runs it on `inputs`, returns the outputs by name.
std::map<std::string, std::vector<float>> RunModule(const std::vector<uint8_t>& module,
                                                    const std::map<std::string, Tensor>& inputs) {
  agate_module_t* m = nullptr;
  EXPECT_EQ(agate_module_load_from_memory(module.data(), module.size(), nullptr, &m), AGATE_OK) << RuntimeError();
  agate_executor_t* e = nullptr;
  EXPECT_EQ(agate_executor_create(m, nullptr, &e), AGATE_OK) << RuntimeError();
  for (const auto& [name, tensor] : inputs) {
    uint32_t index = 0;
    EXPECT_EQ(agate_module_find_input(m, name.c_str(), &index), AGATE_OK) << RuntimeError();
    EXPECT_EQ(SetInput(e, index, tensor), AGATE_OK) << RuntimeError();
  }
  EXPECT_EQ(agate_executor_run(e), AGATE_OK) << RuntimeError();
  std::map<std::string, std::vector<float>> outputs;
  uint32_t count = 0;
  agate_module_num_outputs(m, &count);
  for (uint32_t i = 0; i < count; ++i) {
    agate_tensor_info info;
    agate_module_output_info(m, i, &info);
    DLTensor out;
    EXPECT_EQ(agate_executor_get_output(e, i, &out), AGATE_OK) << RuntimeError();
    const float* data = static_cast<const float*>(out.data);
    outputs[info.name].assign(data, data + info.bytes / sizeof(float));
  }
  agate_executor_free(e);
  agate_module_free(m);
  return outputs;
}

void ExpectClose(const std::vector<float>& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.size(), static_cast<size_t>(want.numel())) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    double w = want.GetDouble(static_cast<int64_t>(i));
    ASSERT_NEAR(got[i], w, 1e-4 + 1e-4 * std::fabs(w)) << what << " element " << i;
  }
}

class CompilerPolicyTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CompilerPolicyTest, ModuleMatchesReferenceThroughTheRuntime) {
  Graph model = ResidualBlockModel();
  std::map<std::string, Tensor> inputs = {{"x", RandomTensor({1, 8, 12, 12}, 42)}};
  std::map<std::string, Tensor> reference = graph_eval::Interpret(model, inputs);

  CompileOptions options;
  options.fusion = fusion::ParseFusionPolicy(GetParam());
  CompileResult result = CompileGraph(model, options);
  EXPECT_FALSE(result.module.empty());
  EXPECT_EQ(result.spec.plan.size(), result.kernels.size());
  EXPECT_NE(result.Summary().find("kernels:"), std::string::npos);

  std::map<std::string, std::vector<float>> outputs = RunModule(result.module, inputs);
  ExpectClose(outputs.at("probs"), reference.at("probs"), std::string("probs, fusion ") + GetParam());
  ExpectClose(outputs.at("r2"), reference.at("r2"), std::string("r2, fusion ") + GetParam());
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, CompilerPolicyTest, ::testing::Values("rule", "none", "all"));

TEST(CompilerTest, FusionPoliciesGiveTheExpectedKernelCounts) {
  Graph model = ResidualBlockModel();
  auto kernels = [&](const char* policy) {
    CompileOptions options;
    options.fusion = fusion::ParseFusionPolicy(policy);
    return CompileGraph(model, options).kernels.size();
  };
  size_t none = kernels("none"), rule = kernels("rule"), all = kernels("all");
  // Batch norm folds into the conv before fusion: 8 operators remain, plus the
  // two layout transforms where the blocked region (x -> conv ... relu2) begins
  // and ends on hosts with SIMD (8 channels: NCHW8c).
  CompileOptions plain;
  plain.opt_level = 1;  // no layout transformation
  plain.fusion = fusion::FusionPolicy::kNone;
  EXPECT_EQ(CompileGraph(model, plain).kernels.size(), 8u);
  EXPECT_EQ(none, 10u);
  EXPECT_LT(rule, none);
  EXPECT_LE(all, rule);
}

TEST(CompilerTest, BadTargetIsAClearError) {
  CompileOptions options;
  options.target = "llvm -mcpu=not-a-cpu -bogus";
  try {
    CompileGraph(ResidualBlockModel(), options);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << e.what();
  }
}

TEST(CompilerTest, MicrocontrollerTargetsGetFirmwareKernels) {
  CompileOptions options;
  options.target = "c -mcpu=cortex-m4";
  CompileResult result = CompileGraph(ResidualBlockModel(), options);
  EXPECT_EQ(result.spec.target_kind, serialize::TargetKind::kMicro);
  EXPECT_TRUE(result.spec.host_object.empty());
  EXPECT_EQ(result.firmware_kernels_suffix, ".c");
  for (const KernelSummary& k : result.kernels) {
    EXPECT_NE(result.firmware_kernels.find(k.name + "("), std::string::npos) << k.name;
  }
}

// conv (strided: direct, not Winograd) -> relu -> pool -> FC (Gemm transB + bias) -> relu -> MatMul.
Graph ConvAndDenseModel() {
  ModelBuilder b(13);
  b.Input("x", kFloat, {1, 16, 10, 10});
  b.Initializer("w", RandomTensor({32, 16, 3, 3}, 1, 0.2));
  b.Initializer("fc_w", RandomTensor({64, 32}, 2, 0.5));
  b.Initializer("fc_b", RandomTensor({64}, 3));
  b.Initializer("proj", RandomTensor({64, 16}, 4, 0.5));
  b.Node("Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}},
         "conv");
  b.Node("Relu", {"c"}, {"r"}, {}, "relu");
  b.Node("GlobalAveragePool", {"r"}, {"pool"}, {}, "pool");
  b.Node("Flatten", {"pool"}, {"flat"}, {}, "flatten");
  b.Node("Gemm", {"flat", "fc_w", "fc_b"}, {"h"}, {{"transB", int64_t{1}}}, "fc");
  b.Node("Relu", {"h"}, {"hr"}, {}, "relu2");
  b.Node("MatMul", {"hr", "proj"}, {"y"}, {}, "proj");
  b.Output("y", kFloat, {1, 16}, true);
  return onnx_frontend::ImportOnnxModel(b.Build());
}

// --precision: the packed weights (conv, FC, projection) are stored in half the bytes, every
// other constant is kept, the module records the precision and runs through the runtime within
// the weights' rounding of the float32 model; targets that cannot read them are refused.
TEST(CompilerTest, NarrowWeightPrecisionHalvesThePackedWeights) {
  Graph model = ConvAndDenseModel();
  std::map<std::string, Tensor> inputs = {{"x", RandomTensor({1, 16, 10, 10}, 42)}};
  std::map<std::string, Tensor> reference = graph_eval::Interpret(model, inputs);
  CompileOptions options;
  options.target = "llvm -mcpu=native";
  const CompileResult wide = CompileGraph(model, options);
  EXPECT_EQ(wide.narrow_weights, 0u);
  for (const char* name : {"fp16", "bf16"}) {
    options.precision = std::string(name) == "fp16" ? ir::DType::Float(16) : ir::DType::BFloat16();
    const CompileResult narrow = CompileGraph(model, options);
    EXPECT_GE(narrow.narrow_weights, 3u) << name << ": conv, FC and projection weights";
    EXPECT_EQ(narrow.constant_bytes() + narrow.narrow_weight_bytes, wide.constant_bytes()) << name;
    EXPECT_GE(narrow.narrow_weight_bytes * 2, wide.constant_bytes() * 9 / 10) << name << ": most bytes are weights";
    EXPECT_NE(narrow.Summary().find(std::string("precision: ") + name + " weights"), std::string::npos)
        << narrow.Summary();
    bool recorded = false;
    for (const auto& [key, value] : narrow.spec.metadata.options) recorded |= key == "precision" && value == name;
    EXPECT_TRUE(recorded) << name;
    // Relative weight error u (2^-11, 2^-8) through 144 + 32 + 64 products of values below 1.
    std::vector<float> got = RunModule(narrow.module, inputs).at("y");
    const double u = std::string(name) == "fp16" ? 1.0 / 2048 : 1.0 / 256;
    const Tensor& want = reference.at("y");
    ASSERT_EQ(got.size(), static_cast<size_t>(want.numel()));
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want.GetDouble(i)));
    EXPECT_LE(worst, 64 * u) << name;
    EXPECT_GT(worst, 0.0) << name << ": bit-exact with float32 weights: were they narrowed?";
  }
  options.target = "llvm -mcpu=x86-64-v2";
  options.precision = ir::DType::Float(16);
  try {
    CompileGraph(model, options);
    ADD_FAILURE() << "fp16 weights compiled for a CPU without F16C";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("--precision fp16"), std::string::npos) << e.what();
  }
}

TEST(CompilerTest, OutputThatFoldsToAConstantIsCopiedByAKernel) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2});
  Tensor c = RandomTensor({2}, 1);
  b.Initializer("c", c);
  b.Node("Identity", {"c"}, {"y"}, {}, "id");
  b.Node("Relu", {"x"}, {"z"}, {}, "relu");
  b.Output("y", kFloat, {2}, true);
  b.Output("z", kFloat, {2}, true);
  CompileResult result = CompileGraph(onnx_frontend::ImportOnnxModel(b.Build()), CompileOptions());
  Tensor x = RandomTensor({2}, 9);
  std::map<std::string, std::vector<float>> outputs = RunModule(result.module, {{"x", x}});
  ExpectClose(outputs.at("y"), c, "constant output");
  EXPECT_EQ(outputs.at("z")[0], std::max(0.0f, static_cast<float>(x.GetDouble(0))));
}

// A zero-element output has nothing to write: no copy kernel, and the runtime hands back an
// empty tensor instead of refusing the module (ONNX's ConstantOfShape of shape [0] is one).
TEST(CompilerTest, ZeroElementConstantOutputIsAnEmptyTensor) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2});
  b.Initializer("empty", RandomTensor({0}, 1));
  b.Node("Identity", {"empty"}, {"y"}, {}, "id");
  b.Node("Relu", {"x"}, {"z"}, {}, "relu");
  b.Output("y", kFloat, {0}, true);
  b.Output("z", kFloat, {2}, true);
  CompileResult result = CompileGraph(onnx_frontend::ImportOnnxModel(b.Build()), CompileOptions());
  EXPECT_EQ(result.kernels.size(), 1u) << result.Summary();  // the Relu only
  Tensor x = RandomTensor({2}, 9);
  std::map<std::string, std::vector<float>> outputs = RunModule(result.module, {{"x", x}});
  EXPECT_TRUE(outputs.at("y").empty());
  EXPECT_EQ(outputs.at("z")[1], std::max(0.0f, static_cast<float>(x.GetDouble(1))));
}

// A module whose only output is empty has no kernels (and no host object); a zero-element input
// may come without storage (DLPack data NULL), and copying an empty output copies nothing.
TEST(CompilerTest, ModuleWithOnlyEmptyTensorsRuns) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {0, 3});
  b.Initializer("empty", RandomTensor({0}, 1));
  b.Node("Identity", {"empty"}, {"y"}, {}, "id");
  b.Output("y", kFloat, {0}, true);
  CompileResult result = CompileGraph(onnx_frontend::ImportOnnxModel(b.Build()), CompileOptions());
  EXPECT_TRUE(result.kernels.empty());
  EXPECT_TRUE(result.spec.host_object.empty());
  LoadedExecutor loaded;
  ASSERT_TRUE(loaded.Load(result.module));
  agate_module_t* m = loaded.module;
  agate_executor_t* e = loaded.executor;
  uint32_t num_inputs = 0;
  agate_module_num_inputs(m, &num_inputs);
  int64_t x_shape[2] = {0, 3};
  DLTensor x;
  std::memset(&x, 0, sizeof(x));
  x.device = DLDevice{kDLCPU, 0};
  x.ndim = 2;
  x.dtype = DLDataType{kDLFloat, 32, 1};
  x.shape = x_shape;  // data stays NULL: no storage for no elements
  for (uint32_t i = 0; i < num_inputs; ++i) EXPECT_EQ(agate_executor_set_input(e, i, &x), AGATE_OK) << RuntimeError();
  EXPECT_EQ(agate_executor_run(e), AGATE_OK) << RuntimeError();
  DLTensor y;
  ASSERT_EQ(agate_executor_get_output(e, 0, &y), AGATE_OK) << RuntimeError();
  ASSERT_EQ(y.ndim, 1);
  EXPECT_EQ(y.shape[0], 0);
  int64_t y_shape[1] = {0};
  DLTensor dst = x;
  dst.ndim = 1;
  dst.shape = y_shape;
  EXPECT_EQ(agate_executor_copy_output(e, 0, &dst), AGATE_OK) << RuntimeError();
  agate_tensor_info info;
  agate_module_output_info(m, 0, &info);
  EXPECT_EQ(info.bytes, 0u);
}

TEST(CompilerTest, PassThroughInputAsOutputIsRefused) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2});
  b.Node("Identity", {"x"}, {"y"}, {}, "id");
  b.Output("y", kFloat, {2}, true);
  try {
    CompileGraph(onnx_frontend::ImportOnnxModel(b.Build()), CompileOptions());
    // Simplification may keep the Identity as a copy kernel: then it must run.
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(e.message().find("passed through"), std::string::npos) << e.what();
  }
}

// A Reshape whose shape arrives at run time, next to a static output: the module marks the
// reshaped output ValueDependent on every axis (format 2.0) with its extents in an arena slot
// after the planned buffers; each run reports the extents it computed and the input's bytes; a
// bad shape fails the run naming the kernel, and the previous run's shape stays.
TEST(CompilerTest, RunTimeReshapeOutputReportsItsShapeThroughTheRuntime) {
  ModelBuilder b(14);
  b.Input("x", kFloat, {2, 3, 4}).Input("shape", 7 /* INT64 */, {3});
  b.Node("Relu", {"x"}, {"r"}, {}, "act");
  b.Node("Reshape", {"x", "shape"}, {"y"}, {}, "reshape");
  b.Output("r");
  b.Output("y");
  Graph model = onnx_frontend::ImportOnnxModel(b.Build());
  CompileResult result = CompileGraph(model, CompileOptions{});
  const serialize::ModuleSpec& spec = result.spec;
  ASSERT_EQ(spec.outputs.size(), 2u);
  EXPECT_EQ(spec.outputs[0].name, "r");
  EXPECT_EQ(spec.outputs[1].name, "y");
  EXPECT_EQ(spec.outputs[1].shape, (graph::Shape{24, 24, 24}));
  ASSERT_TRUE(spec.has_dynamic_shapes);
  EXPECT_TRUE(spec.dynamic_shapes.symbols.empty());
  EXPECT_EQ(spec.dynamic_shapes.outputs[0].kinds, std::vector<serialize::DimKind>(3, serialize::DimKind::kStatic));
  EXPECT_EQ(spec.dynamic_shapes.outputs[1].kinds, std::vector<serialize::DimKind>(3, serialize::DimKind::kValueDependent));
  const uint64_t slot = spec.dynamic_shapes.outputs[1].shape_slot;
  EXPECT_EQ(slot % 8, 0u);
  EXPECT_LE(slot + 24, spec.arena_bytes);

  LoadedExecutor loaded;
  ASSERT_TRUE(loaded.Load(result.module));
  agate_executor_t* e = loaded.executor;
  Tensor x = RandomTensor({2, 3, 4}, 8);
  std::vector<int64_t> x_shape{2, 3, 4}, shape_shape{3}, target;
  auto bind = [&](uint32_t index, void* data, std::vector<int64_t>* shape, DLDataType dtype) {
    DLTensor dl;
    std::memset(&dl, 0, sizeof(dl));
    dl.data = data;
    dl.device = DLDevice{kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape->size());
    dl.dtype = dtype;
    dl.shape = shape->data();
    return agate_executor_set_input(e, index, &dl);
  };
  auto run_with = [&](std::vector<int64_t> values) {
    target = values;
    EXPECT_EQ(bind(0, const_cast<void*>(x.raw_data()), &x_shape, DLDataType{kDLFloat, 32, 1}), AGATE_OK);
    EXPECT_EQ(bind(1, target.data(), &shape_shape, DLDataType{kDLInt, 64, 1}), AGATE_OK) << RuntimeError();
    return agate_executor_run(e);
  };
  auto output_shape = [&] {
    int64_t dims[3] = {0, 0, 0};
    int32_t ndim = 0;
    EXPECT_EQ(agate_executor_output_shape(e, 1, dims, 3, &ndim), AGATE_OK) << RuntimeError();
    return std::vector<int64_t>(dims, dims + ndim);
  };
  ASSERT_EQ(run_with({4, -1, 2}), AGATE_OK) << RuntimeError();
  EXPECT_EQ(output_shape(), (std::vector<int64_t>{4, 3, 2}));
  DLTensor out;
  ASSERT_EQ(agate_executor_get_output(e, 1, &out), AGATE_OK) << RuntimeError();
  EXPECT_EQ(std::vector<int64_t>(out.shape, out.shape + out.ndim), (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(std::memcmp(out.data, x.raw_data(), x.nbytes()), 0);
  ASSERT_EQ(run_with({0, 12, -1}), AGATE_OK) << RuntimeError();
  EXPECT_EQ(output_shape(), (std::vector<int64_t>{2, 12, 1}));
  // A shape that does not fit the input is the caller's error, named by node and operand.
  EXPECT_EQ(run_with({5, 5, 1}), AGATE_INVALID_ARGUMENT);
  EXPECT_NE(RuntimeError().find("'reshape'"), std::string::npos) << RuntimeError();
  EXPECT_EQ(output_shape(), (std::vector<int64_t>{2, 12, 1}));
}

// A Resize whose scales arrive at run time, compiled for the declared output shape: through the
// C ABI, scales that give that shape compute ONNX's coordinates (0.6 for 5 -> 3 is not 3/5), and
// scales that do not fail the run with AGATE_INVALID_ARGUMENT naming the node, the operand and
// the shape (the kernel's check message, recorded in the module), not AGATE_INTERNAL.
TEST(CompilerTest, RunTimeScalesAreCheckedAgainstTheDeclaredShape) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {1, 1, 5, 5}).Input("scales", kFloat, {4});
  b.Node("Resize", {"x", "", "scales"}, {"y"}, {{"mode", std::string("linear")}}, "resize");
  b.Output("y", kFloat, {1, 1, 3, 10}, true);
  Graph model = onnx_frontend::ImportOnnxModel(b.Build());
  CompileResult result = CompileGraph(model, CompileOptions{});
  size_t checks = 0;
  for (const serialize::KernelSpec& k : result.spec.kernels) checks += k.check_messages.size();
  EXPECT_EQ(checks, 1u);  // the shape (the kept axes have extent 1: any scale copies them)
  Tensor x = RandomTensor({1, 1, 5, 5}, 3);
  auto scales = [](std::vector<double> v) { return Tensor::FromDoubles(graph::DType::Float(32), {4}, v); };
  for (double s : {0.6, 0.7}) {
    Tensor good = scales({1, 1, s, 2});
    Tensor want = graph_eval::Interpret(model, {{"x", x}, {"scales", good}}).at("y");
    ExpectClose(RunModule(result.module, {{"x", x}, {"scales", good}}).at("y"), want, "scale " + std::to_string(s));
  }
  LoadedExecutor loaded;
  ASSERT_TRUE(loaded.Load(result.module));
  agate_executor_t* e = loaded.executor;
  Tensor bad = scales({1, 1, 2, 2});
  std::vector<int64_t> x_shape{1, 1, 5, 5}, s_shape{4};
  for (auto [index, tensor, shape] : {std::make_tuple(0u, &x, &x_shape), std::make_tuple(1u, &bad, &s_shape)}) {
    DLTensor dl;
    std::memset(&dl, 0, sizeof(dl));
    dl.data = const_cast<void*>(tensor->raw_data());
    dl.device = DLDevice{kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape->size());
    dl.dtype = DLDataType{kDLFloat, 32, 1};
    dl.shape = shape->data();
    ASSERT_EQ(agate_executor_set_input(e, index, &dl), AGATE_OK) << RuntimeError();
  }
  EXPECT_EQ(agate_executor_run(e), AGATE_INVALID_ARGUMENT);
  for (const char* fragment : {"'resize'", "scales ('scales')", "[1,1,3,10]"}) {
    EXPECT_NE(RuntimeError().find(fragment), std::string::npos) << RuntimeError();
  }
}

// A detector's tail compiled: NonMaxSuppression over random boxes, its selected rows read row for
// row (the box column, the boxes it selects, scaled; the class column as float) on their upper
// bound. Through the C ABI each output's run-time shape is the selection's row count and its rows
// equal the reference interpreter's, under every fusion policy.
TEST(CompilerTest, RowsSelectedAtRunTimeFeedGathersAndArithmetic) {
  ModelBuilder b(13);
  const int64_t n = 40;
  b.Input("boxes", kFloat, {1, n, 4}).Input("scores", kFloat, {1, 2, n});
  b.Initializer("max", Tensor::FromInts(graph::DType::Int(64), {1}, {6}));
  b.Initializer("iou", Tensor::FromDoubles(graph::DType::Float(32), {1}, {0.3}));
  b.Initializer("box_column", Tensor::FromInts(graph::DType::Int(64), {}, {2}));
  b.Initializer("class_column", Tensor::FromInts(graph::DType::Int(64), {}, {1}));
  b.Initializer("first", Tensor::FromInts(graph::DType::Int(64), {1}, {0}));
  b.Initializer("scale", Tensor::FromDoubles(graph::DType::Float(32), {4}, {2.0, 0.5, 3.0, -1.0}));
  b.Node("NonMaxSuppression", {"boxes", "scores", "max", "iou"}, {"sel"}, {}, "nms");
  b.Node("Gather", {"sel", "box_column"}, {"box"}, {{"axis", int64_t{1}}}, "which_box");
  b.Node("Gather", {"sel", "class_column"}, {"class"}, {{"axis", int64_t{1}}}, "which_class");
  b.Node("Squeeze", {"boxes", "first"}, {"all_boxes"}, {}, "drop_batch");
  b.Node("Gather", {"all_boxes", "box"}, {"picked"}, {{"axis", int64_t{0}}}, "pick");
  b.Node("Mul", {"picked", "scale"}, {"scaled"}, {}, "rescale");
  b.Node("Relu", {"scaled"}, {"kept"}, {}, "clip");
  b.Node("Cast", {"class"}, {"label"}, {{"to", int64_t{1}}}, "to_float");
  b.Output("kept").Output("label");
  Graph model = onnx_frontend::ImportOnnxModel(b.Build());
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> corner(0.0, 10.0), side(0.5, 3.0), score(0.0, 1.0);
  std::vector<double> boxes, scores;
  for (int64_t i = 0; i < n; ++i) {
    double y = corner(rng), x = corner(rng);
    boxes.insert(boxes.end(), {y, x, y + side(rng), x + side(rng)});
  }
  for (int64_t i = 0; i < 2 * n; ++i) scores.push_back(score(rng));
  std::map<std::string, Tensor> inputs = {{"boxes", Tensor::FromDoubles(graph::DType::Float(32), {1, n, 4}, boxes)},
                                          {"scores", Tensor::FromDoubles(graph::DType::Float(32), {1, 2, n}, scores)}};
  auto reference = graph_eval::Interpret(model, inputs);
  const int64_t rows = reference.at(model.run_time_extents.at("kept")).GetInt(0);
  ASSERT_GT(rows, 2);
  ASSERT_LE(rows, 12);
  for (auto policy : {fusion::FusionPolicy::kRule, fusion::FusionPolicy::kNone, fusion::FusionPolicy::kAll}) {
    CompileOptions options;
    options.fusion = policy;
    CompileResult result = CompileGraph(model, options);
    LoadedExecutor loaded;
    ASSERT_TRUE(loaded.Load(result.module));
    agate_executor_t* e = loaded.executor;
    ASSERT_EQ(SetInput(e, 0, inputs.at("boxes")), AGATE_OK) << RuntimeError();
    ASSERT_EQ(SetInput(e, 1, inputs.at("scores")), AGATE_OK) << RuntimeError();
    ASSERT_EQ(agate_executor_run(e), AGATE_OK) << RuntimeError();
    for (uint32_t out = 0; out < 2; ++out) {
      const std::string name = out == 0 ? "kept" : "label";
      int64_t dims[2] = {0, 0};
      int32_t ndim = 0;
      ASSERT_EQ(agate_executor_output_shape(e, out, dims, 2, &ndim), AGATE_OK) << RuntimeError();
      EXPECT_EQ(std::vector<int64_t>(dims, dims + ndim), out == 0 ? (std::vector<int64_t>{rows, 4})
                                                                   : (std::vector<int64_t>{rows}))
          << name;
      DLTensor got;
      ASSERT_EQ(agate_executor_get_output(e, out, &got), AGATE_OK) << RuntimeError();
      const float* data = static_cast<const float*>(got.data);
      const Tensor& want = reference.at(name);
      for (int64_t i = 0; i < rows * (out == 0 ? 4 : 1); ++i) {
        ASSERT_NEAR(data[i], want.GetDouble(i), 1e-6) << name << " element " << i << " (" << fusion::FusionPolicyName(policy)
                                                      << ")";
      }
    }
  }
}

// PyTorch's boolean indexing as torch 1.13 exports it: boxes[scores > t] is NonZero -> Transpose ->
// GatherND, boxes[torch.where(scores > t)[0]] is NonZero -> Transpose -> Split -> Squeeze ->
// Gather. NonZero's positions of a 1-D mask are [1, rows]: the rows follow an axis of extent 1,
// so every reader computes on the bound. Through the C ABI: the selected boxes at their run-time
// shape, equal to the reference's, for masks selecting some, none and all of the boxes.
TEST(CompilerTest, BooleanIndexingAsPyTorchExportsIt) {
  const int64_t n = 10;
  auto model = [&](bool where) {
    ModelBuilder b(13);
    b.Input("boxes", kFloat, {n, 4}).Input("scores", kFloat, {n});
    b.Initializer("threshold", Tensor::FromDoubles(graph::DType::Float(32), {}, {0.5}));
    b.Initializer("two", Tensor::FromDoubles(graph::DType::Float(32), {}, {2.0}));
    b.Node("Greater", {"scores", "threshold"}, {"keep"}, {}, "compare");
    b.Node("NonZero", {"keep"}, {"positions"}, {}, "nonzero");
    b.Node("Transpose", {"positions"}, {"rows"}, {{"perm", std::vector<int64_t>{1, 0}}}, "flip");
    if (where) {
      b.Initializer("one", Tensor::FromInts(graph::DType::Int(64), {1}, {1}));
      b.Node("Split", {"rows", "one"}, {"column"}, {{"axis", int64_t{1}}}, "split");
      b.Node("Squeeze", {"column", "one"}, {"index"}, {}, "squeeze");
      b.Node("Gather", {"boxes", "index"}, {"picked"}, {{"axis", int64_t{0}}}, "gather");
    } else {
      b.Node("GatherND", {"boxes", "rows"}, {"picked"}, {}, "gather");
    }
    b.Node("Mul", {"picked", "two"}, {"out"}, {}, "scale");
    b.Output("out");
    return onnx_frontend::ImportOnnxModel(b.Build());
  };
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> value(-1.0, 1.0), score(0.0, 1.0);
  std::vector<double> boxes;
  for (int64_t i = 0; i < 4 * n; ++i) boxes.push_back(value(rng));
  for (bool where : {false, true}) {
    Graph g = model(where);
    CompileResult result = CompileGraph(g, CompileOptions{});
    LoadedExecutor loaded;
    ASSERT_TRUE(loaded.Load(result.module));
    agate_executor_t* e = loaded.executor;
    for (double fraction : {0.5, 2.0, -1.0}) {  // random scores, then every score above 0.5, then none
      std::vector<double> scores;
      for (int64_t i = 0; i < n; ++i) scores.push_back(fraction == 0.5 ? score(rng) : fraction);
      std::map<std::string, Tensor> inputs = {{"boxes", Tensor::FromDoubles(graph::DType::Float(32), {n, 4}, boxes)},
                                              {"scores", Tensor::FromDoubles(graph::DType::Float(32), {n}, scores)}};
      auto reference = graph_eval::Interpret(g, inputs);
      const int64_t rows = reference.at(g.run_time_extents.at("out")).GetInt(0);
      EXPECT_EQ(rows, fraction == 2.0 ? n : fraction == -1.0 ? 0 : rows);
      ASSERT_EQ(SetInput(e, 0, inputs.at("boxes")), AGATE_OK) << RuntimeError();
      ASSERT_EQ(SetInput(e, 1, inputs.at("scores")), AGATE_OK) << RuntimeError();
      ASSERT_EQ(agate_executor_run(e), AGATE_OK) << RuntimeError();
      int64_t dims[2] = {-1, -1};
      int32_t ndim = 0;
      ASSERT_EQ(agate_executor_output_shape(e, 0, dims, 2, &ndim), AGATE_OK) << RuntimeError();
      EXPECT_EQ(std::vector<int64_t>(dims, dims + ndim), (std::vector<int64_t>{rows, 4}));
      DLTensor got;
      ASSERT_EQ(agate_executor_get_output(e, 0, &got), AGATE_OK) << RuntimeError();
      const float* data = static_cast<const float*>(got.data);
      for (int64_t i = 0; i < rows * 4; ++i) {
        ASSERT_EQ(data[i], reference.at("out").GetDouble(i)) << (where ? "where" : "mask") << " element " << i;
      }
      // The reference's rows are the boxes whose score passes, doubled.
      int64_t row = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (!(static_cast<float>(scores[i]) > 0.5f)) continue;
        for (int c = 0; c < 4; ++c) EXPECT_EQ(data[row * 4 + c], static_cast<float>(boxes[i * 4 + c]) * 2.0f);
        ++row;
      }
      EXPECT_EQ(row, rows);
    }
  }
}

// features[mask] with a 2-D mask, as torch exports it (NonZero -> Transpose -> GatherND): the
// positions, [2, rows], have their rows after an axis longer than 1, so the readers read them in
// the bound layout, and a model output computed from them with the rows still on axis 1 (the
// positions plus one) is packed again. Through the C ABI under every fusion policy: both outputs
// at their run-time shapes equal the reference's, and the gathered rows are the features whose
// mask is set, in row-major order, for masks selecting some, none and all positions.
TEST(CompilerTest, BooleanIndexingWithA2DMask) {
  const int64_t b = 3, n = 5, f = 4;
  ModelBuilder mb(13);
  mb.Input("features", kFloat, {b, n, f}).Input("scores", kFloat, {b, n});
  mb.Initializer("threshold", Tensor::FromDoubles(graph::DType::Float(32), {}, {0.5}));
  mb.Initializer("two", Tensor::FromDoubles(graph::DType::Float(32), {}, {2.0}));
  mb.Initializer("one", Tensor::FromInts(graph::DType::Int(64), {}, {1}));
  mb.Node("Greater", {"scores", "threshold"}, {"keep"}, {}, "compare");
  mb.Node("NonZero", {"keep"}, {"positions"}, {}, "nonzero");
  mb.Node("Transpose", {"positions"}, {"rows"}, {{"perm", std::vector<int64_t>{1, 0}}}, "flip");
  mb.Node("GatherND", {"features", "rows"}, {"picked"}, {}, "gather");
  mb.Node("Mul", {"picked", "two"}, {"out"}, {}, "scale");
  mb.Node("Add", {"positions", "one"}, {"coords"}, {}, "shift");
  mb.Output("out").Output("coords");
  Graph g = onnx_frontend::ImportOnnxModel(mb.Build());
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> value(-1.0, 1.0), score(0.0, 1.0);
  std::vector<double> features;
  for (int64_t i = 0; i < b * n * f; ++i) features.push_back(value(rng));
  for (auto policy : {fusion::FusionPolicy::kRule, fusion::FusionPolicy::kNone, fusion::FusionPolicy::kAll}) {
    CompileOptions options;
    options.fusion = policy;
    CompileResult result = CompileGraph(g, options);
    LoadedExecutor loaded;
    ASSERT_TRUE(loaded.Load(result.module));
    agate_executor_t* e = loaded.executor;
    for (double fill : {0.5, 2.0, -1.0}) {  // random scores, then every score above 0.5, then none
      std::vector<double> scores;
      for (int64_t i = 0; i < b * n; ++i) scores.push_back(fill == 0.5 ? score(rng) : fill);
      std::map<std::string, Tensor> inputs = {
          {"features", Tensor::FromDoubles(graph::DType::Float(32), {b, n, f}, features)},
          {"scores", Tensor::FromDoubles(graph::DType::Float(32), {b, n}, scores)}};
      auto reference = graph_eval::Interpret(g, inputs);
      int64_t rows = 0;
      for (double sc : scores) rows += static_cast<float>(sc) > 0.5f ? 1 : 0;
      ASSERT_EQ(SetInput(e, 0, inputs.at("features")), AGATE_OK) << RuntimeError();
      ASSERT_EQ(SetInput(e, 1, inputs.at("scores")), AGATE_OK) << RuntimeError();
      ASSERT_EQ(agate_executor_run(e), AGATE_OK) << RuntimeError();
      const std::string how = std::string(fusion::FusionPolicyName(policy)) + ", fill " + std::to_string(fill);
      int64_t dims[2] = {-1, -1};
      int32_t ndim = 0;
      ASSERT_EQ(agate_executor_output_shape(e, 0, dims, 2, &ndim), AGATE_OK) << RuntimeError();
      EXPECT_EQ(std::vector<int64_t>(dims, dims + ndim), (std::vector<int64_t>{rows, f})) << how;
      ASSERT_EQ(agate_executor_output_shape(e, 1, dims, 2, &ndim), AGATE_OK) << RuntimeError();
      EXPECT_EQ(std::vector<int64_t>(dims, dims + ndim), (std::vector<int64_t>{2, rows})) << how;
      DLTensor out, coords;
      ASSERT_EQ(agate_executor_get_output(e, 0, &out), AGATE_OK) << RuntimeError();
      ASSERT_EQ(agate_executor_get_output(e, 1, &coords), AGATE_OK) << RuntimeError();
      const float* picked = static_cast<const float*>(out.data);
      const int64_t* shifted = static_cast<const int64_t*>(coords.data);
      int64_t row = 0;
      for (int64_t i = 0; i < b * n; ++i) {
        if (!(static_cast<float>(scores[i]) > 0.5f)) continue;
        for (int64_t c = 0; c < f; ++c) {
          ASSERT_EQ(picked[row * f + c], static_cast<float>(features[i * f + c]) * 2.0f) << how << " row " << row;
          ASSERT_EQ(picked[row * f + c], reference.at("out").GetDouble(row * f + c)) << how;
        }
        EXPECT_EQ(shifted[row], i / n + 1) << how << " row " << row;
        EXPECT_EQ(shifted[rows + row], i % n + 1) << how << " row " << row;
        EXPECT_EQ(shifted[rows + row], reference.at("coords").GetInt(rows + row)) << how;
        ++row;
      }
    }
  }
}

// TopK along the last axis of [3, 7] with k given at run time: its rows (the k columns) follow an
// axis longer than 1, so the readers read values and indices in the bound layout, both counted by
// one count (values - indices combines them), and the output is packed at [3, k]. Through the C
// ABI for k = 1, 4 and 7: the output's shape and every element against a sort done here.
TEST(CompilerTest, RunTimeTopKAlongTheLastAxisFeedsArithmetic) {
  ModelBuilder mb(13);
  mb.Input("x", kFloat, {3, 7}).Input("k", 7 /* INT64 */, {1});
  mb.Node("TopK", {"x", "k"}, {"values", "indices"}, {{"axis", int64_t{1}}}, "top");
  mb.Node("Cast", {"indices"}, {"where"}, {{"to", int64_t{1}}}, "to_float");
  mb.Node("Sub", {"values", "where"}, {"y"}, {}, "combine");
  mb.Output("y");
  Graph g = onnx_frontend::ImportOnnxModel(mb.Build());
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::vector<double> x;
  for (int i = 0; i < 21; ++i) x.push_back(value(rng));
  CompileResult result = CompileGraph(g, CompileOptions{});
  LoadedExecutor loaded;
  ASSERT_TRUE(loaded.Load(result.module));
  agate_executor_t* e = loaded.executor;
  Tensor xt = Tensor::FromDoubles(graph::DType::Float(32), {3, 7}, x);
  for (int64_t k : {1, 4, 7}) {
    Tensor kt = Tensor::FromInts(graph::DType::Int(64), {1}, {k});
    ASSERT_EQ(SetInput(e, 0, xt), AGATE_OK) << RuntimeError();
    ASSERT_EQ(SetInput(e, 1, kt), AGATE_OK) << RuntimeError();
    ASSERT_EQ(agate_executor_run(e), AGATE_OK) << RuntimeError();
    int64_t dims[2] = {-1, -1};
    int32_t ndim = 0;
    ASSERT_EQ(agate_executor_output_shape(e, 0, dims, 2, &ndim), AGATE_OK) << RuntimeError();
    EXPECT_EQ(std::vector<int64_t>(dims, dims + ndim), (std::vector<int64_t>{3, k}));
    DLTensor out;
    ASSERT_EQ(agate_executor_get_output(e, 0, &out), AGATE_OK) << RuntimeError();
    const float* y = static_cast<const float*>(out.data);
    for (int r = 0; r < 3; ++r) {
      std::vector<int> order(7);
      for (int c = 0; c < 7; ++c) order[c] = c;
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return static_cast<float>(x[r * 7 + a]) > static_cast<float>(x[r * 7 + b]);
      });
      for (int64_t j = 0; j < k; ++j) {
        EXPECT_EQ(y[r * k + j], static_cast<float>(x[r * 7 + order[j]]) - static_cast<float>(order[j]))
            << "k " << k << " row " << r << " column " << j;
      }
    }
  }
}

// Such an output may not feed a batch-variant module or a target without an OS.
TEST(CompilerTest, RunTimeReshapeOutputNeedsAHostModule) {
  ModelBuilder b(14);
  b.Input("x", kFloat, {2, 3}).Input("axes", 7 /* INT64 */, {1});
  b.Node("Unsqueeze", {"x", "axes"}, {"y"}, {}, "widen");
  b.Output("y");
  Graph model = onnx_frontend::ImportOnnxModel(b.Build());
  CompileOptions options;
  options.target = "c -mcpu=cortex-m4";
  try {
    CompileGraph(model, options);
    ADD_FAILURE() << "compiled for a microcontroller";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), StatusCode::kUnsupported) << err.what();
    EXPECT_NE(std::string(err.what()).find("'y'"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace compiler
}  // namespace agate
