#include "runtime_minimal/testing/test_modules.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "runtime_minimal/testing/test_kernels.h"

namespace agate {
namespace testing {
namespace {

using serialize::ArgSpec;
using serialize::CallSpec;
using serialize::ConstantSpec;
using serialize::KernelSpec;
using serialize::ModuleSpec;
using serialize::TargetKind;
using serialize::TensorSpec;

constexpr uint64_t kVecBytes = AGATE_TEST_VEC_BYTES;

std::vector<uint8_t> FloatBytes(const std::vector<float>& v) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(p, p + v.size() * sizeof(float));
}

std::vector<float> Weights() {
  std::vector<float> w(AGATE_TEST_VEC);
  for (int i = 0; i < AGATE_TEST_VEC; ++i) w[i] = static_cast<float>((i * 7) % 13 - 6) / 8.0f;
  return w;
}

std::vector<float> Bias() {
  std::vector<float> b(AGATE_TEST_VEC);
  for (int i = 0; i < AGATE_TEST_VEC; ++i) b[i] = static_cast<float>(i % 5 - 2) / 4.0f;
  return b;
}

ModuleSpec BaseSpec(TargetKind kind) {
  ModuleSpec spec;
  spec.target_kind = kind;
  spec.target = kind == TargetKind::kMicro ? "c -mcpu=cortex-m4" : "llvm -mtriple=x86_64-linux-gnu";
  if (kind == TargetKind::kHostCpu) spec.host_object = TestKernelObject();
  spec.metadata.compiler_version = "agate-test 0";
  spec.metadata.options = {{"opt_level", "3"}, {"origin", "runtime_minimal/testing"}};
  return spec;
}

TensorSpec Matrix(const std::string& name) { return TensorSpec{name, ir::DType::Float(32), {16, 16}}; }

}  // namespace

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<uint8_t> TestKernelObject() {
  const std::string relative = "runtime_minimal/testing/libagate_test_kernels.so";
  std::ifstream probe(relative);
  if (probe) return ReadFile(relative);
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return ReadFile(std::string(srcdir != nullptr ? srcdir : ".") + "/agate/" + relative);
}

const agate_kernel_table* TestKernelTable() {
  static const agate_kernel_entry kEntries[] = {
      {"agate_test_add", agate_test_add},
      {"agate_test_relu", agate_test_relu},
      {"agate_test_matmul", agate_test_matmul},
      {"agate_test_double_via_workspace", agate_test_double_via_workspace},
      {"agate_test_fail", agate_test_fail},
      {"agate_test_check_failed", agate_test_check_failed},
      {"agate_test_noop", agate_test_noop},
      {"agate_test_check_page_aligned", agate_test_check_page_aligned},
      {"agate_test_nonzero", agate_test_nonzero},
      {"agate_test_report_overflow", agate_test_report_overflow},
  };
  static const agate_kernel_table kTable = {kEntries, sizeof(kEntries) / sizeof(kEntries[0])};
  return &kTable;
}

ModuleSpec BatchMlpSpec(TargetKind kind, int64_t max_batch, const std::vector<int64_t>& variants) {
  const ModuleSpec mlp = MlpSpec(kind);
  ModuleSpec spec = mlp;
  spec.plan.clear();
  spec.inputs = {TensorSpec{"x", ir::DType::Float(32), {max_batch, 16, 16}}};
  spec.outputs = {TensorSpec{"y", ir::DType::Float(32), {max_batch, 16, 16}}};
  spec.has_dynamic_shapes = true;
  serialize::DynamicShapesSpec& d = spec.dynamic_shapes;
  d.symbols = {serialize::SymbolSpec{"N", 1, max_batch}};
  const serialize::TensorDimsSpec rows{{serialize::DimKind::kSymbolic, serialize::DimKind::kStatic,
                                        serialize::DimKind::kStatic}, 0, 0};
  d.inputs = {rows};
  d.outputs = {rows};
  for (int64_t extent : variants) {
    serialize::VariantSpec variant{extent, {}};
    for (int64_t item = 0; item < extent; ++item) {
      for (CallSpec call : mlp.plan) {
        for (ArgSpec& arg : call.args) {
          if (arg.kind == ArgSpec::Kind::kInput || arg.kind == ArgSpec::Kind::kOutput) {
            arg.offset = static_cast<uint64_t>(item) * kVecBytes;
          }
        }
        variant.plan.push_back(call);
      }
    }
    d.variants.push_back(variant);
  }
  return spec;
}

ModuleSpec PaddedMlpSpec(TargetKind kind, int64_t max, const std::vector<int64_t>& variants) {
  const ModuleSpec mlp = MlpSpec(kind);
  ModuleSpec spec = mlp;
  spec.plan.clear();
  spec.inputs = {TensorSpec{"x", ir::DType::Float(32), {max, 16, 16}}};
  spec.outputs = {TensorSpec{"y", ir::DType::Float(32), {max, 16, 16}}};
  spec.has_dynamic_shapes = true;
  serialize::DynamicShapesSpec& d = spec.dynamic_shapes;
  d.symbols = {serialize::SymbolSpec{"S", 1, max}};
  d.padded = true;
  const uint64_t staged_bytes = (static_cast<uint64_t>(max) * kVecBytes + 63) / 64 * 64;
  serialize::TensorDimsSpec items{{serialize::DimKind::kSymbolic, serialize::DimKind::kStatic,
                                   serialize::DimKind::kStatic}, 0, 0};
  items.axis_symbols = {0, 0, 0};
  d.inputs = {items};
  d.outputs = {items};
  d.inputs[0].staging = (mlp.arena_bytes + 63) / 64 * 64;
  d.outputs[0].staging = d.inputs[0].staging + staged_bytes;
  d.extent_slots = {d.outputs[0].staging + staged_bytes};
  spec.arena_bytes = d.extent_slots[0] + 64;
  for (int64_t extent : variants) {
    serialize::VariantSpec variant{extent, {}, {extent}};
    for (int64_t item = 0; item < extent; ++item) {
      for (CallSpec call : mlp.plan) {
        for (ArgSpec& arg : call.args) {
          const uint64_t at = static_cast<uint64_t>(item) * kVecBytes;
          if (arg.kind == ArgSpec::Kind::kInput) arg = ArgSpec::Arena(d.inputs[0].staging + at, arg.bytes);
          if (arg.kind == ArgSpec::Kind::kOutput) arg = ArgSpec::Arena(d.outputs[0].staging + at, arg.bytes);
        }
        variant.plan.push_back(call);
      }
    }
    d.variants.push_back(variant);
  }
  return spec;
}

ModuleSpec NonZeroSpec(TargetKind kind, bool overflow) {
  ModuleSpec spec = BaseSpec(kind);
  spec.inputs = {TensorSpec{"x", ir::DType::Float(32), {AGATE_TEST_VEC}}};
  spec.outputs = {TensorSpec{"indices", ir::DType::Int(64), {AGATE_TEST_VEC}}};
  spec.kernels = {KernelSpec{"agate_test_nonzero", {kVecBytes, 2 * kVecBytes, 8}},
                  KernelSpec{"agate_test_report_overflow", {8, 8}}};
  spec.arena_bytes = 64;
  spec.plan = {CallSpec{0, {ArgSpec::Input(0, kVecBytes), ArgSpec::Output(0, 2 * kVecBytes), ArgSpec::Arena(8, 8)}}};
  if (overflow) spec.plan.push_back(CallSpec{1, {ArgSpec::Arena(0, 8), ArgSpec::Arena(8, 8)}});
  spec.has_dynamic_shapes = true;
  spec.dynamic_shapes.inputs = {serialize::TensorDimsSpec{{serialize::DimKind::kStatic}, 0, 0}};
  spec.dynamic_shapes.outputs = {serialize::TensorDimsSpec{{serialize::DimKind::kValueDependent}, 0, 8}};
  return spec;
}

ModuleSpec MlpSpec(TargetKind kind) {
  ModuleSpec spec = BaseSpec(kind);
  spec.inputs = {Matrix("x")};
  spec.outputs = {Matrix("y")};
  spec.constants = {ConstantSpec{FloatBytes(Weights()), 64}, ConstantSpec{FloatBytes(Bias()), 4096}};
  spec.kernels = {KernelSpec{"agate_test_matmul", {kVecBytes, kVecBytes, kVecBytes}},
                  KernelSpec{"agate_test_add", {kVecBytes, kVecBytes, kVecBytes}},
                  KernelSpec{"agate_test_relu", {kVecBytes, kVecBytes}}};
  spec.arena_bytes = 2 * kVecBytes;
  spec.plan = {
      CallSpec{0, {ArgSpec::Input(0, kVecBytes), ArgSpec::Constant(0, kVecBytes), ArgSpec::Arena(0, kVecBytes)}},
      CallSpec{1, {ArgSpec::Arena(0, kVecBytes), ArgSpec::Constant(1, kVecBytes), ArgSpec::Arena(kVecBytes, kVecBytes)}},
      CallSpec{2, {ArgSpec::Arena(kVecBytes, kVecBytes), ArgSpec::Output(0, kVecBytes)}},
  };
  return spec;
}

std::vector<float> MlpInput(int seed) {
  std::vector<float> x(AGATE_TEST_VEC);
  for (int i = 0; i < AGATE_TEST_VEC; ++i) x[i] = static_cast<float>((i * 31 + seed * 17) % 23 - 11) / 8.0f;
  return x;
}

std::vector<float> MlpReference(const std::vector<float>& x) {
  const std::vector<float> w = Weights();
  const std::vector<float> b = Bias();
  std::vector<float> y(AGATE_TEST_VEC);
  for (int i = 0; i < AGATE_TEST_N; ++i) {
    for (int j = 0; j < AGATE_TEST_N; ++j) {
      float sum = 0.0f;
      for (int k = 0; k < AGATE_TEST_N; ++k) sum += x[i * AGATE_TEST_N + k] * w[k * AGATE_TEST_N + j];
      const float v = sum + b[i * AGATE_TEST_N + j];
      y[i * AGATE_TEST_N + j] = v > 0.0f ? v : 0.0f;
    }
  }
  return y;
}

ModuleSpec WorkspaceSpec(TargetKind kind) {
  ModuleSpec spec = BaseSpec(kind);
  spec.inputs = {Matrix("x")};
  spec.outputs = {Matrix("y")};
  KernelSpec kernel{"agate_test_double_via_workspace", {kVecBytes, kVecBytes}};
  kernel.workspace_bytes = kVecBytes;
  spec.kernels = {kernel};
  spec.plan = {CallSpec{0, {ArgSpec::Input(0, kVecBytes), ArgSpec::Output(0, kVecBytes)}}};
  return spec;
}

ModuleSpec NoopChainSpec(TargetKind kind, int calls) {
  ModuleSpec spec = BaseSpec(kind);
  spec.inputs = {TensorSpec{"x", ir::DType::UInt(8), {1}}};
  spec.outputs = {TensorSpec{"y", ir::DType::UInt(8), {1}}};
  spec.kernels = {KernelSpec{"agate_test_noop", {1}}};
  spec.arena_bytes = 64;
  spec.plan.push_back(CallSpec{0, {ArgSpec::Input(0, 1)}});
  for (int c = 0; c < calls - 2; ++c) spec.plan.push_back(CallSpec{0, {ArgSpec::Arena(c % 64, 1)}});
  spec.plan.push_back(CallSpec{0, {ArgSpec::Output(0, 1)}});
  return spec;
}

DLTensor MatrixTensor(float* data, int64_t* shape_storage) {
  shape_storage[0] = AGATE_TEST_N;
  shape_storage[1] = AGATE_TEST_N;
  DLTensor t;
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape_storage;
  t.strides = nullptr;
  t.byte_offset = 0;
  return t;
}

}  // namespace testing
}  // namespace agate
