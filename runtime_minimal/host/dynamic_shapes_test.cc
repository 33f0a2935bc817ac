// Dynamic shapes in the host runtime (module format 2.0, ABI 1.5): a batch-variant module run at
// several batch sizes (greedy chunks of its variants), the bounds and symbol-consistency checks,
// run-time output shapes, a value-dependent output, and the verifier's checks of the new fields.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "agate/runtime.h"
#include "core/serialize/serialize_module.h"
#include "runtime_minimal/core/verify.h"
#include "runtime_minimal/testing/test_kernels.h"
#include "runtime_minimal/testing/test_modules.h"

namespace agate {
namespace {

using serialize::TargetKind;

std::string Message() { return agate_last_error_message(); }

DLTensor Tensor(void* data, DLDataType dtype, int32_t ndim, int64_t* shape) {
  DLTensor t;
  std::memset(&t, 0, sizeof(t));
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

constexpr DLDataType kF32{kDLFloat, 32, 1};

agate_module_t* Load(const serialize::ModuleSpec& spec) {
  const std::vector<uint8_t> bytes = serialize::SerializeModule(spec);
  agate_module_t* module = nullptr;
  EXPECT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_OK) << Message();
  return module;
}

// Items of the batch: item b is MlpInput(b).
std::vector<float> BatchInput(int64_t n) {
  std::vector<float> x;
  for (int64_t b = 0; b < n; ++b) {
    const std::vector<float> item = testing::MlpInput(static_cast<int>(b));
    x.insert(x.end(), item.begin(), item.end());
  }
  return x;
}

std::vector<float> BatchReference(int64_t n) {
  std::vector<float> y;
  for (int64_t b = 0; b < n; ++b) {
    const std::vector<float> item = testing::MlpReference(testing::MlpInput(static_cast<int>(b)));
    y.insert(y.end(), item.begin(), item.end());
  }
  return y;
}

TEST(DynamicShapesTest, BatchModuleRunsEveryExtentInItsBoundsByGreedyChunks) {
  agate_module_t* module = Load(testing::BatchMlpSpec(TargetKind::kHostCpu, 11, {1, 2, 4}));
  ASSERT_NE(module, nullptr);
  agate_tensor_info info;
  ASSERT_EQ(agate_module_input_info(module, 0, &info), AGATE_OK);
  EXPECT_EQ(info.shape[0], 11);  // the upper bound
  EXPECT_EQ(info.bytes, 11u * AGATE_TEST_VEC_BYTES);
  agate_dim_info dim;
  ASSERT_EQ(agate_module_input_dim(module, 0, 0, &dim), AGATE_OK) << Message();
  EXPECT_EQ(dim.kind, AGATE_DIM_SYMBOLIC);
  EXPECT_EQ(dim.min, 1);
  EXPECT_EQ(dim.max, 11);
  EXPECT_STREQ(dim.symbol, "N");
  ASSERT_EQ(agate_module_output_dim(module, 0, 2, &dim), AGATE_OK);
  EXPECT_EQ(dim.kind, AGATE_DIM_STATIC);
  EXPECT_EQ(dim.max, 16);
  EXPECT_EQ(agate_module_output_dim(module, 0, 3, &dim), AGATE_OUT_OF_RANGE);

  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK) << Message();
  for (int64_t n : {1, 7, 11, 3}) {  // 7 = 4 + 2 + 1, 11 = 4 + 4 + 2 + 1
    std::vector<float> x = BatchInput(n);
    int64_t shape[3] = {n, 16, 16};
    DLTensor in = Tensor(x.data(), kF32, 3, shape);
    ASSERT_EQ(agate_executor_set_input(executor, 0, &in), AGATE_OK) << Message();
    ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << Message();
    int64_t dims[3] = {};
    int32_t ndim = 0;
    ASSERT_EQ(agate_executor_output_shape(executor, 0, dims, 3, &ndim), AGATE_OK) << Message();
    EXPECT_EQ(ndim, 3);
    EXPECT_EQ(dims[0], n);
    DLTensor view;
    ASSERT_EQ(agate_executor_get_output(executor, 0, &view), AGATE_OK);
    EXPECT_EQ(view.shape[0], n);
    std::vector<float> y(static_cast<size_t>(n) * AGATE_TEST_VEC);
    DLTensor out = Tensor(y.data(), kF32, 3, shape);
    ASSERT_EQ(agate_executor_copy_output(executor, 0, &out), AGATE_OK) << Message();
    EXPECT_EQ(y, BatchReference(n)) << "batch " << n;
    // A destination of another extent than this run's is refused.
    int64_t wrong[3] = {n + 1, 16, 16};
    std::vector<float> big(static_cast<size_t>(n + 1) * AGATE_TEST_VEC);
    DLTensor bad = Tensor(big.data(), kF32, 3, wrong);
    EXPECT_EQ(agate_executor_copy_output(executor, 0, &bad), AGATE_INVALID_ARGUMENT);
  }
  int32_t ndim = 0;
  int64_t small[1];
  EXPECT_EQ(agate_executor_output_shape(executor, 0, small, 1, &ndim), AGATE_OUT_OF_RANGE);
  EXPECT_EQ(ndim, 3);
  agate_executor_free(executor);
  agate_module_free(module);
}

// A padded module (format 3.0) runs each extent once on the smallest variant covering it: its
// input staged zero-padded, its output copied out at the run's extent, into the executor's buffer
// or one the caller bound at that extent.
TEST(DynamicShapesTest, PaddedModuleRunsEachExtentOnTheSmallestVariantCoveringIt) {
  agate_module_t* module = Load(testing::PaddedMlpSpec(TargetKind::kHostCpu, 5, {2, 5}));
  ASSERT_NE(module, nullptr);
  agate_dim_info dim;
  ASSERT_EQ(agate_module_input_dim(module, 0, 0, &dim), AGATE_OK) << Message();
  EXPECT_EQ(dim.kind, AGATE_DIM_SYMBOLIC);
  EXPECT_STREQ(dim.symbol, "S");
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK) << Message();
  for (int64_t n : {4, 1, 2, 5, 3}) {
    std::vector<float> x = BatchInput(n);
    int64_t shape[3] = {n, 16, 16};
    DLTensor in = Tensor(x.data(), kF32, 3, shape);
    ASSERT_EQ(agate_executor_set_input(executor, 0, &in), AGATE_OK) << Message();
    // Odd extents write into the caller's buffer (64-byte aligned, as set_output requires).
    std::vector<float> storage(static_cast<size_t>(n) * AGATE_TEST_VEC + 16, -1.0f);
    float* aligned = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64 / sizeof(float);
    DLTensor out = Tensor(aligned, kF32, 3, shape);
    if (n % 2 == 1) {
      ASSERT_EQ(agate_executor_set_output(executor, 0, &out), AGATE_OK) << Message();
    } else {
      ASSERT_EQ(agate_executor_set_output(executor, 0, nullptr), AGATE_OK) << Message();
    }
    ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << Message();
    DLTensor view;
    ASSERT_EQ(agate_executor_get_output(executor, 0, &view), AGATE_OK);
    ASSERT_EQ(view.shape[0], n);
    const float* y = static_cast<const float*>(view.data);
    if (n % 2 == 1) EXPECT_EQ(y, aligned);
    EXPECT_EQ(std::vector<float>(y, y + n * AGATE_TEST_VEC), BatchReference(n)) << "extent " << n;
  }
  agate_executor_free(executor);
  agate_module_free(module);
  // The variants must cover the symbol's max.
  serialize::ModuleSpec short_of_max = testing::PaddedMlpSpec(TargetKind::kHostCpu, 5, {2, 5});
  short_of_max.dynamic_shapes.variants.pop_back();
  const std::vector<uint8_t> bytes = serialize::SerializeModuleUnverifiedForTesting(short_of_max);
  EXPECT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_CORRUPT);
  EXPECT_NE(Message().find("padded symbol S's largest variant extent is 2, not its upper bound 5"), std::string::npos)
      << Message();
  // Variants are compared pairwise when loading: their count is bounded first.
  serialize::ModuleSpec many = testing::PaddedMlpSpec(TargetKind::kHostCpu, 5, {5});
  many.dynamic_shapes.variants.resize(rt::kMaxPaddedVariants + 1, many.dynamic_shapes.variants[0]);
  const std::vector<uint8_t> many_bytes = serialize::SerializeModuleUnverifiedForTesting(many);
  EXPECT_EQ(agate_module_load_from_memory(many_bytes.data(), many_bytes.size(), nullptr, &module), AGATE_CORRUPT);
  EXPECT_NE(Message().find("padded module has 1025 variants (at most 1024)"), std::string::npos) << Message();
}

TEST(DynamicShapesTest, OutOfBoundsExtentIsRefusedNamingInputSymbolAndBoundsAndKeepsTheBinding) {
  agate_module_t* module = Load(testing::BatchMlpSpec(TargetKind::kHostCpu, 4, {1, 2}));
  ASSERT_NE(module, nullptr);
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK);
  std::vector<float> x = BatchInput(3);
  int64_t shape[3] = {3, 16, 16};
  DLTensor in = Tensor(x.data(), kF32, 3, shape);
  ASSERT_EQ(agate_executor_set_input(executor, 0, &in), AGATE_OK) << Message();
  std::vector<float> big(5 * AGATE_TEST_VEC);
  int64_t big_shape[3] = {5, 16, 16};
  DLTensor too_big = Tensor(big.data(), kF32, 3, big_shape);
  EXPECT_EQ(agate_executor_set_input(executor, 0, &too_big), AGATE_INVALID_ARGUMENT);
  EXPECT_EQ(Message(), "input 0 'x' has extent 5 on axis 0 (symbol N), outside its bounds 1..4");
  int64_t zero_shape[3] = {0, 16, 16};
  DLTensor empty = Tensor(big.data(), kF32, 3, zero_shape);
  EXPECT_EQ(agate_executor_set_input(executor, 0, &empty), AGATE_INVALID_ARGUMENT);
  int64_t other_shape[3] = {3, 16, 8};
  DLTensor other = Tensor(big.data(), kF32, 3, other_shape);
  EXPECT_EQ(agate_executor_set_input(executor, 0, &other), AGATE_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("extent 8 on axis 2; the module needs 16"), std::string::npos) << Message();
  // The 3-row binding stayed.
  ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << Message();
  DLTensor view;
  ASSERT_EQ(agate_executor_get_output(executor, 0, &view), AGATE_OK);
  EXPECT_EQ(view.shape[0], 3);
  agate_executor_free(executor);
  agate_module_free(module);
}

TEST(DynamicShapesTest, InputsBindingOneSymbolDifferentlyAreRefusedNamingBoth) {
  serialize::ModuleSpec spec = testing::BatchMlpSpec(TargetKind::kHostCpu, 4, {1, 2});
  // A second input "z" carrying N that no call reads.
  spec.inputs.push_back(serialize::TensorSpec{"z", ir::DType::Float(32), {4, 16, 16}});
  spec.dynamic_shapes.inputs.push_back(spec.dynamic_shapes.inputs[0]);
  agate_module_t* module = Load(spec);
  ASSERT_NE(module, nullptr);
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK);
  std::vector<float> x = BatchInput(3), z = BatchInput(2);
  int64_t x_shape[3] = {3, 16, 16}, z_shape[3] = {2, 16, 16};
  DLTensor xt = Tensor(x.data(), kF32, 3, x_shape), zt = Tensor(z.data(), kF32, 3, z_shape);
  ASSERT_EQ(agate_executor_set_input(executor, 0, &xt), AGATE_OK);
  ASSERT_EQ(agate_executor_set_input(executor, 1, &zt), AGATE_OK);
  EXPECT_EQ(agate_executor_run(executor), AGATE_INVALID_ARGUMENT);
  EXPECT_EQ(Message(), "inputs 0 'x' and 1 'z' bind symbol N to different extents: 3 and 2");
  z = BatchInput(3);
  zt = Tensor(z.data(), kF32, 3, x_shape);
  ASSERT_EQ(agate_executor_set_input(executor, 1, &zt), AGATE_OK);
  EXPECT_EQ(agate_executor_run(executor), AGATE_OK) << Message();
  agate_executor_free(executor);
  agate_module_free(module);
}

TEST(DynamicShapesTest, BoundOutputMustHaveTheRunsExtent) {
  agate_module_t* module = Load(testing::BatchMlpSpec(TargetKind::kHostCpu, 4, {1, 2}));
  ASSERT_NE(module, nullptr);
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK);
  std::vector<float> x = BatchInput(3);
  int64_t shape[3] = {3, 16, 16};
  DLTensor in = Tensor(x.data(), kF32, 3, shape);
  ASSERT_EQ(agate_executor_set_input(executor, 0, &in), AGATE_OK);
  alignas(64) static float y[4 * AGATE_TEST_VEC];
  int64_t two[3] = {2, 16, 16};
  DLTensor out2 = Tensor(y, kF32, 3, two);
  ASSERT_EQ(agate_executor_set_output(executor, 0, &out2), AGATE_OK) << Message();
  EXPECT_EQ(agate_executor_run(executor), AGATE_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("output 0 'y' is bound (agate_executor_set_output) to N = 2, but the inputs give N = 3"), std::string::npos)
      << Message();
  DLTensor out3 = Tensor(y, kF32, 3, shape);
  ASSERT_EQ(agate_executor_set_output(executor, 0, &out3), AGATE_OK) << Message();
  ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << Message();
  EXPECT_EQ(std::vector<float>(y, y + 3 * AGATE_TEST_VEC), BatchReference(3));
  agate_executor_free(executor);
  agate_module_free(module);
}

TEST(DynamicShapesTest, ValueDependentOutputReportsItsRunTimeShape) {
  agate_module_t* module = Load(testing::NonZeroSpec(TargetKind::kHostCpu, false));
  ASSERT_NE(module, nullptr);
  agate_dim_info dim;
  ASSERT_EQ(agate_module_output_dim(module, 0, 0, &dim), AGATE_OK);
  EXPECT_EQ(dim.kind, AGATE_DIM_VALUE_DEPENDENT);
  EXPECT_EQ(dim.max, AGATE_TEST_VEC);
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK);
  for (int stride : {3, 50}) {
    std::vector<float> x(AGATE_TEST_VEC, 0.0f);
    std::vector<int64_t> want;
    for (int i = 0; i < AGATE_TEST_VEC; i += stride) {
      x[i] = 1.0f + i;
      want.push_back(i);
    }
    int64_t shape[1] = {AGATE_TEST_VEC};
    DLTensor in = Tensor(x.data(), kF32, 1, shape);
    ASSERT_EQ(agate_executor_set_input(executor, 0, &in), AGATE_OK);
    ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << Message();
    DLTensor view;
    ASSERT_EQ(agate_executor_get_output(executor, 0, &view), AGATE_OK);
    ASSERT_EQ(view.shape[0], static_cast<int64_t>(want.size()));
    std::vector<int64_t> got(want.size());
    int64_t got_shape[1] = {static_cast<int64_t>(want.size())};
    DLTensor out = Tensor(got.data(), DLDataType{kDLInt, 64, 1}, 1, got_shape);
    ASSERT_EQ(agate_executor_copy_output(executor, 0, &out), AGATE_OK) << Message();
    EXPECT_EQ(got, want);
  }
  agate_executor_free(executor);
  agate_module_free(module);
}

TEST(DynamicShapesTest, ValueDependentExtentPastItsBoundIsInternal) {
  agate_module_t* module = Load(testing::NonZeroSpec(TargetKind::kHostCpu, true));
  ASSERT_NE(module, nullptr);
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK);
  std::vector<float> x(AGATE_TEST_VEC, 1.0f);
  int64_t shape[1] = {AGATE_TEST_VEC};
  DLTensor in = Tensor(x.data(), kF32, 1, shape);
  ASSERT_EQ(agate_executor_set_input(executor, 0, &in), AGATE_OK);
  EXPECT_EQ(agate_executor_run(executor), AGATE_INTERNAL);
  EXPECT_EQ(Message(), "output 0 'indices': the plan reported extent 257 on axis 0, outside its upper bound 0..256");
  agate_executor_free(executor);
  agate_module_free(module);
}

TEST(DynamicShapesTest, StaticModulesStayFormat12AndReportStaticDims) {
  const std::vector<uint8_t> bytes = serialize::SerializeModule(testing::MlpSpec(TargetKind::kHostCpu));
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_OK);
  agate_dim_info dim;
  ASSERT_EQ(agate_module_input_dim(module, 0, 1, &dim), AGATE_OK);
  EXPECT_EQ(dim.kind, AGATE_DIM_STATIC);
  EXPECT_EQ(dim.min, 16);
  EXPECT_EQ(dim.symbol, nullptr);
  EXPECT_EQ(agate_runtime_abi_version(), (1u << 16) | 5u);
  agate_module_free(module);
}

// The verifier refuses what would make the executor read or write out of bounds.
void ExpectRefused(const serialize::ModuleSpec& spec, agate_status_t status, const std::string& message_part) {
  const std::vector<uint8_t> bytes = serialize::SerializeModuleUnverifiedForTesting(spec);
  agate_module_t* module = nullptr;
  EXPECT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), status) << Message();
  EXPECT_NE(Message().find(message_part), std::string::npos) << Message();
  agate_module_free(module);
}

TEST(DynamicShapesTest, VerifierRefusesCorruptBoundsAndVariantsPastTheirChunk) {
  serialize::ModuleSpec spec = testing::BatchMlpSpec(TargetKind::kHostCpu, 4, {1, 2});
  serialize::ModuleSpec bad = spec;
  bad.dynamic_shapes.symbols[0].min = 0;
  ExpectRefused(bad, AGATE_CORRUPT, "symbol N has bounds 0..4");
  bad = spec;
  bad.dynamic_shapes.symbols[0].min = 5;
  ExpectRefused(bad, AGATE_CORRUPT, "symbol N has bounds 5..4");
  bad = spec;
  bad.inputs[0].shape[0] = 3;  // not the symbol's upper bound
  ExpectRefused(bad, AGATE_CORRUPT, "not the upper bound 4 of its symbol N");
  bad = spec;
  bad.dynamic_shapes.inputs[0].kinds = {serialize::DimKind::kStatic, serialize::DimKind::kSymbolic,
                                        serialize::DimKind::kStatic};
  ExpectRefused(bad, AGATE_CORRUPT, "only axis 0 may carry a symbol");
  bad = spec;
  bad.dynamic_shapes.variants[1].plan[3].args[0].offset = 2 * AGATE_TEST_VEC_BYTES;  // past the 2-row chunk
  ExpectRefused(bad, AGATE_OUT_OF_RANGE, "outside its variant's chunk of 2048 bytes");
  bad = spec;
  bad.dynamic_shapes.variants[1].plan[0].args[2].offset = bad.arena_bytes;  // past the arena
  ExpectRefused(bad, AGATE_OUT_OF_RANGE, "outside the arena");
  bad = spec;
  bad.dynamic_shapes.variants[0].extent = 2;
  ExpectRefused(bad, AGATE_CORRUPT, "extents must ascend from 1");
  bad = spec;
  bad.dynamic_shapes.variants[1].extent = 8;
  ExpectRefused(bad, AGATE_CORRUPT, "extents must ascend from 1 to at most 4");
  bad = spec;
  bad.dynamic_shapes.variants.clear();
  ExpectRefused(bad, AGATE_CORRUPT, "has symbol N but no variants");
  bad = spec;
  bad.dynamic_shapes.inputs[0].kinds[0] = serialize::DimKind::kStatic;
  bad.inputs[0].shape[0] = 4;
  ExpectRefused(bad, AGATE_CORRUPT, "no input carries symbol N");
  bad = spec;
  bad.dynamic_shapes.outputs.clear();
  ExpectRefused(bad, AGATE_CORRUPT, "describe 1 inputs and 0 outputs");
  serialize::ModuleSpec nonzero = testing::NonZeroSpec(TargetKind::kHostCpu, false);
  nonzero.dynamic_shapes.outputs[0].shape_slot = 60;  // 8 bytes past the 64-byte arena, and unaligned
  ExpectRefused(nonzero, AGATE_OUT_OF_RANGE, "shape slot [60, +8)");
  nonzero = testing::NonZeroSpec(TargetKind::kHostCpu, false);
  nonzero.dynamic_shapes.inputs[0].kinds = {serialize::DimKind::kValueDependent};
  ExpectRefused(nonzero, AGATE_CORRUPT, "input 0 'x' axis 0 has dimension kind 2");
}

}  // namespace
}  // namespace agate
