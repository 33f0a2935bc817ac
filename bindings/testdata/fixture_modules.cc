#include "bindings/testdata/fixture_modules.h"

#include "bindings/testdata/fixture_kernels.h"
#include "core/serialize/serialize_module.h"

namespace agate {
namespace bindings_testdata {
namespace {

using serialize::ArgSpec;
using serialize::CallSpec;
using serialize::ConstantSpec;
using serialize::KernelSpec;
using serialize::ModuleSpec;
using serialize::TargetKind;
using serialize::TensorSpec;

constexpr uint64_t kFloatBytes = 4;
constexpr uint64_t kAddBytes = AGATE_FX_ADD_COUNT * kFloatBytes;
constexpr uint64_t kXBytes = AGATE_FX_BATCH * AGATE_FX_FEATURES * kFloatBytes;
constexpr uint64_t kWBytes = AGATE_FX_FEATURES * AGATE_FX_CLASSES * kFloatBytes;
constexpr uint64_t kBiasBytes = AGATE_FX_CLASSES * kFloatBytes;
constexpr uint64_t kLogitsBytes = AGATE_FX_BATCH * AGATE_FX_CLASSES * kFloatBytes;
constexpr uint64_t kClassesBytes = AGATE_FX_BATCH * 4;

std::vector<uint8_t> FloatBytes(const std::vector<float>& v) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(p, p + v.size() * sizeof(float));
}

ModuleSpec HostSpec(const std::vector<uint8_t>& kernel_object, const std::string& origin) {
  ModuleSpec spec;
  spec.target_kind = TargetKind::kHostCpu;
  spec.target = "llvm -mtriple=x86_64-linux-gnu";
  spec.host_object = kernel_object;
  spec.metadata.compiler_version = "agate-bindings-testdata 0";
  spec.metadata.options = {{"origin", origin}};
  return spec;
}

}  // namespace

ModuleSpec AddReluSpec(const std::vector<uint8_t>& kernel_object) {
  ModuleSpec spec = HostSpec(kernel_object, "bindings/testdata add_relu");
  const TensorSpec matrix_a{"a", ir::DType::Float(32), {AGATE_FX_ADD_ROWS, AGATE_FX_ADD_COLS}};
  TensorSpec matrix_b = matrix_a;
  matrix_b.name = "b";
  TensorSpec matrix_y = matrix_a;
  matrix_y.name = "y";
  spec.inputs = {matrix_a, matrix_b};
  spec.outputs = {matrix_y};
  spec.kernels = {KernelSpec{"agate_fx_add", {kAddBytes, kAddBytes, kAddBytes}},
                  KernelSpec{"agate_fx_relu", {kAddBytes, kAddBytes}}};
  spec.arena_bytes = kAddBytes;
  spec.plan = {
      CallSpec{0, {ArgSpec::Input(0, kAddBytes), ArgSpec::Input(1, kAddBytes), ArgSpec::Arena(0, kAddBytes)}},
      CallSpec{1, {ArgSpec::Arena(0, kAddBytes), ArgSpec::Output(0, kAddBytes)}},
  };
  return spec;
}

ModuleSpec BatchAddReluSpec(const std::vector<uint8_t>& kernel_object) {
  const ModuleSpec item = AddReluSpec(kernel_object);
  ModuleSpec spec = item;
  spec.plan.clear();
  for (TensorSpec* t : {&spec.inputs[0], &spec.inputs[1], &spec.outputs[0]}) {
    t->shape.insert(t->shape.begin(), kBatchMax);
  }
  spec.has_dynamic_shapes = true;
  serialize::DynamicShapesSpec& d = spec.dynamic_shapes;
  d.symbols = {serialize::SymbolSpec{"N", 1, kBatchMax}};
  const serialize::TensorDimsSpec rows{
      {serialize::DimKind::kSymbolic, serialize::DimKind::kStatic, serialize::DimKind::kStatic}, 0, 0};
  d.inputs = {rows, rows};
  d.outputs = {rows};
  for (int64_t extent : {1, 2}) {
    serialize::VariantSpec variant{extent, {}};
    for (int64_t row = 0; row < extent; ++row) {
      for (CallSpec call : item.plan) {
        for (ArgSpec& arg : call.args) {
          if (arg.kind != ArgSpec::Kind::kArena) arg.offset = static_cast<uint64_t>(row) * kAddBytes;
        }
        variant.plan.push_back(call);
      }
    }
    d.variants.push_back(std::move(variant));
  }
  return spec;
}

ModuleSpec PaddedAddReluSpec(const std::vector<uint8_t>& kernel_object) {
  static_assert(AGATE_FX_ADD_COLS == kSequenceMax, "the padded variant is add_relu's own [2,3]");
  ModuleSpec spec = AddReluSpec(kernel_object);
  spec.has_dynamic_shapes = true;
  serialize::DynamicShapesSpec& d = spec.dynamic_shapes;
  d.symbols = {serialize::SymbolSpec{"S", 1, kSequenceMax}};
  d.padded = true;
  // The arena: add's result at 0, then a's, b's and y's staging buffers and the extent slot.
  serialize::TensorDimsSpec columns{{serialize::DimKind::kStatic, serialize::DimKind::kSymbolic}, 0, 0, 0};
  d.inputs = {columns, columns};
  d.outputs = {columns};
  d.inputs[0].staging = 64;
  d.inputs[1].staging = 128;
  d.outputs[0].staging = 192;
  d.extent_slots = {256};
  spec.arena_bytes = 320;
  serialize::VariantSpec variant{kSequenceMax, spec.plan, {kSequenceMax}};
  for (CallSpec& call : variant.plan) {
    for (ArgSpec& arg : call.args) {
      if (arg.kind == ArgSpec::Kind::kInput) arg = ArgSpec::Arena(d.inputs[arg.index].staging, arg.bytes);
      if (arg.kind == ArgSpec::Kind::kOutput) arg = ArgSpec::Arena(d.outputs[arg.index].staging, arg.bytes);
    }
  }
  d.variants = {variant};
  spec.plan.clear();
  return spec;
}

std::vector<float> ClassifierWeights() {
  std::vector<float> w(AGATE_FX_FEATURES * AGATE_FX_CLASSES);
  for (int k = 0; k < AGATE_FX_FEATURES; ++k) {
    for (int j = 0; j < AGATE_FX_CLASSES; ++j) w[k * AGATE_FX_CLASSES + j] = ((3 * k + 5 * j) % 7 - 3) / 4.0f;
  }
  return w;
}

std::vector<float> ClassifierBias() {
  std::vector<float> b(AGATE_FX_CLASSES);
  for (int j = 0; j < AGATE_FX_CLASSES; ++j) b[j] = (j - 1) / 2.0f;
  return b;
}

ModuleSpec ClassifierSpec(const std::vector<uint8_t>& kernel_object) {
  ModuleSpec spec = HostSpec(kernel_object, "bindings/testdata classifier");
  spec.inputs = {TensorSpec{"x", ir::DType::Float(32), {AGATE_FX_BATCH, AGATE_FX_FEATURES}}};
  spec.outputs = {TensorSpec{"logits", ir::DType::Float(32), {AGATE_FX_BATCH, AGATE_FX_CLASSES}},
                  TensorSpec{"classes", ir::DType::Int(32), {AGATE_FX_BATCH}}};
  spec.constants = {ConstantSpec{FloatBytes(ClassifierWeights()), 64}, ConstantSpec{FloatBytes(ClassifierBias()), 64}};
  spec.kernels = {
      KernelSpec{"agate_fx_dense_argmax", {kXBytes, kWBytes, kBiasBytes, kLogitsBytes, kClassesBytes}}};
  spec.plan = {CallSpec{0,
                        {ArgSpec::Input(0, kXBytes), ArgSpec::Constant(0, kWBytes), ArgSpec::Constant(1, kBiasBytes),
                         ArgSpec::Output(0, kLogitsBytes), ArgSpec::Output(1, kClassesBytes)}}};
  return spec;
}

std::vector<std::pair<std::string, std::vector<uint8_t>>> AllFixtures(const std::vector<uint8_t>& kernel_object) {
  return {{"add_relu.agm", serialize::SerializeModule(AddReluSpec(kernel_object))},
          {"classifier.agm", serialize::SerializeModule(ClassifierSpec(kernel_object))},
          {"batch_add_relu.agm", serialize::SerializeModule(BatchAddReluSpec(kernel_object))},
          {"padded_add_relu.agm", serialize::SerializeModule(PaddedAddReluSpec(kernel_object))}};
}

}  // namespace bindings_testdata
}  // namespace agate
