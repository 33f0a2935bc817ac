// The [core] functions of agate/runtime.h: everything a microcontroller links.
#include <string.h>

#include "agate/runtime.h"
#include "runtime_minimal/core/device.h"
#include "runtime_minimal/core/executor.h"
#include "runtime_minimal/core/message.h"
#include "runtime_minimal/core/module.h"

namespace rt = agate::rt;
namespace fb = agate::fb;

namespace {

size_t AlignUp(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

agate_status_t FillInfo(const fb::Tensor& t, agate_tensor_info* out) {
  out->name = t.name()->c_str();
  out->dtype = rt::ToDLDataType(*t.dtype());
  out->ndim = static_cast<int32_t>(t.shape()->size());
  out->shape = t.shape()->data();
  out->bytes = rt::TensorBytes(t);
  return AGATE_OK;
}

agate_status_t FindTensor(const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>& tensors, const char* role,
                          const char* name, uint32_t* out_index) {
  if (name == nullptr || out_index == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "name or out_index is NULL";
  for (uint32_t i = 0; i < tensors.size(); ++i) {
    if (rt::SameString(tensors.Get(i)->name()->c_str(), name)) {
      *out_index = i;
      return AGATE_OK;
    }
  }
  return rt::Fail(AGATE_NOT_FOUND) << "the module has no " << role << " named '" << name << "'";
}

int32_t DeviceTypeOf(const agate_module& module) {
  return module.device != nullptr ? module.device->device_type : static_cast<int32_t>(kDLCPU);
}

}  // namespace

#define AGATE_REQUIRE_ARG(cond, what) \
  if (!(cond)) return rt::Fail(AGATE_INVALID_ARGUMENT) << what

extern "C" {

AGATE_API uint32_t agate_runtime_abi_version(void) { return AGATE_RUNTIME_ABI_VERSION; }

AGATE_API const char* agate_status_name(agate_status_t status) { return rt::StatusName(status); }

AGATE_API const char* agate_last_error_message(void) { return rt::LastMessage(); }

AGATE_API agate_status_t agate_module_in_place_bytes(const void* data, size_t size, size_t* out_bytes) {
  AGATE_REQUIRE_ARG(out_bytes != nullptr, "out_bytes is NULL");
  const fb::Module* m = nullptr;
  rt::ModuleFacts facts;
  agate_status_t status = rt::VerifyModule(static_cast<const uint8_t*>(data), size, &m, &facts);
  if (status != AGATE_OK) return status;
  *out_bytes = rt::ModuleInPlaceBytes(*m);
  return AGATE_OK;
}

AGATE_API agate_status_t agate_module_load_in_place(const void* data, size_t size, const agate_kernel_table* kernels,
                                                    void* memory, size_t memory_bytes, agate_module_t** out_module) {
  return rt::LoadModuleInPlace(static_cast<const uint8_t*>(data), size, kernels, nullptr, nullptr, memory,
                               memory_bytes, out_module);
}

AGATE_API agate_status_t agate_module_load_in_place_fingerprinted(const void* data, size_t size,
                                                                  const agate_kernel_table* kernels,
                                                                  uint64_t kernel_fingerprint, void* memory,
                                                                  size_t memory_bytes, agate_module_t** out_module) {
  if (out_module == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "out_module is NULL";
  if (kernel_fingerprint == 0) {
    return rt::Fail(AGATE_INVALID_ARGUMENT)
           << "kernel_fingerprint is 0 (none); a table without one loads with agate_module_load_in_place";
  }
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  const fb::Module* fbm = nullptr;
  rt::ModuleFacts facts;
  agate_status_t status = rt::VerifyModule(bytes, size, &fbm, &facts);
  if (status != AGATE_OK) return status;
  status = rt::CheckKernelFingerprint(*fbm, kernel_fingerprint);
  if (status != AGATE_OK) return status;
  return rt::BuildModule(bytes, size, fbm, facts, kernels, nullptr, nullptr, 0, memory, memory_bytes, out_module);
}

AGATE_API agate_status_t agate_module_free(agate_module_t* module) {
  if (module == nullptr) return AGATE_OK;
  if (module->device != nullptr) module->device->unload(module);
  if (module->release != nullptr) module->release(module);
  return AGATE_OK;
}

AGATE_API agate_status_t agate_module_target(const agate_module_t* module, const char** out_target) {
  AGATE_REQUIRE_ARG(module != nullptr && out_target != nullptr, "module or out_target is NULL");
  *out_target = module->fb->target()->c_str();
  return AGATE_OK;
}

AGATE_API agate_status_t agate_module_num_inputs(const agate_module_t* module, uint32_t* out_count) {
  AGATE_REQUIRE_ARG(module != nullptr && out_count != nullptr, "module or out_count is NULL");
  *out_count = module->fb->inputs()->size();
  return AGATE_OK;
}

AGATE_API agate_status_t agate_module_num_outputs(const agate_module_t* module, uint32_t* out_count) {
  AGATE_REQUIRE_ARG(module != nullptr && out_count != nullptr, "module or out_count is NULL");
  *out_count = module->fb->outputs()->size();
  return AGATE_OK;
}

AGATE_API agate_status_t agate_module_input_info(const agate_module_t* module, uint32_t index,
                                                 agate_tensor_info* out_info) {
  AGATE_REQUIRE_ARG(module != nullptr && out_info != nullptr, "module or out_info is NULL");
  if (index >= module->fb->inputs()->size()) {
    return rt::Fail(AGATE_OUT_OF_RANGE) << "input " << index << " of " << module->fb->inputs()->size();
  }
  return FillInfo(*module->fb->inputs()->Get(index), out_info);
}

AGATE_API agate_status_t agate_module_output_info(const agate_module_t* module, uint32_t index,
                                                  agate_tensor_info* out_info) {
  AGATE_REQUIRE_ARG(module != nullptr && out_info != nullptr, "module or out_info is NULL");
  if (index >= module->fb->outputs()->size()) {
    return rt::Fail(AGATE_OUT_OF_RANGE) << "output " << index << " of " << module->fb->outputs()->size();
  }
  return FillInfo(*module->fb->outputs()->Get(index), out_info);
}

namespace {

// Axis `axis` of `tensor`, whose dynamic description is `dims` (NULL: static).
agate_status_t FillDim(const agate_module& module, const fb::Tensor& tensor, const void* dims_ptr, const char* role,
                       uint32_t index, int32_t axis, agate_dim_info* out) {
  if (axis < 0 || axis >= static_cast<int32_t>(tensor.shape()->size())) {
    return rt::Fail(AGATE_OUT_OF_RANGE) << role << " " << index << " '" << tensor.name()->c_str() << "' has no axis "
                                        << axis << " (it has " << tensor.shape()->size() << ")";
  }
  const int64_t bound = tensor.shape()->Get(static_cast<flatbuffers::uoffset_t>(axis));
  out->min = bound;
  out->max = bound;
  out->symbol = nullptr;
  out->kind = AGATE_DIM_STATIC;
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  const fb::TensorDims* dims = static_cast<const fb::TensorDims*>(dims_ptr);
  if (dims == nullptr) return AGATE_OK;
  const fb::DimKind kind = dims->kinds()->Get(static_cast<flatbuffers::uoffset_t>(axis));
  if (kind == fb::DimKind::Symbolic) {
    const fb::Symbol& symbol =
        *module.facts.dynamic->symbols()->Get(rt::AxisSymbol(*dims, static_cast<uint32_t>(axis)));
    out->min = symbol.min();
    out->symbol = symbol.name()->c_str();
    out->kind = AGATE_DIM_SYMBOLIC;
  } else if (kind == fb::DimKind::ValueDependent) {
    out->min = 0;
    out->kind = AGATE_DIM_VALUE_DEPENDENT;
  }
#else
  (void)module;
  (void)dims_ptr;
#endif
  return AGATE_OK;
}

}  // namespace

AGATE_API agate_status_t agate_module_input_dim(const agate_module_t* module, uint32_t index, int32_t axis,
                                                agate_dim_info* out_info) {
  AGATE_REQUIRE_ARG(module != nullptr && out_info != nullptr, "module or out_info is NULL");
  if (index >= module->fb->inputs()->size()) {
    return rt::Fail(AGATE_OUT_OF_RANGE) << "input " << index << " of " << module->fb->inputs()->size();
  }
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  const void* dims = rt::InputDims(module->facts, index);
#else
  const void* dims = nullptr;
#endif
  return FillDim(*module, *module->fb->inputs()->Get(index), dims, "input", index, axis, out_info);
}

AGATE_API agate_status_t agate_module_output_dim(const agate_module_t* module, uint32_t index, int32_t axis,
                                                 agate_dim_info* out_info) {
  AGATE_REQUIRE_ARG(module != nullptr && out_info != nullptr, "module or out_info is NULL");
  if (index >= module->fb->outputs()->size()) {
    return rt::Fail(AGATE_OUT_OF_RANGE) << "output " << index << " of " << module->fb->outputs()->size();
  }
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  const void* dims = rt::OutputDims(module->facts, index);
#else
  const void* dims = nullptr;
#endif
  return FillDim(*module, *module->fb->outputs()->Get(index), dims, "output", index, axis, out_info);
}

AGATE_API agate_status_t agate_module_find_input(const agate_module_t* module, const char* name, uint32_t* out_index) {
  AGATE_REQUIRE_ARG(module != nullptr, "module is NULL");
  return FindTensor(*module->fb->inputs(), "input", name, out_index);
}

AGATE_API agate_status_t agate_module_find_output(const agate_module_t* module, const char* name,
                                                  uint32_t* out_index) {
  AGATE_REQUIRE_ARG(module != nullptr, "module is NULL");
  return FindTensor(*module->fb->outputs(), "output", name, out_index);
}

AGATE_API agate_status_t agate_executor_in_place_bytes(const agate_module_t* module, size_t* out_bytes) {
  AGATE_REQUIRE_ARG(module != nullptr && out_bytes != nullptr, "module or out_bytes is NULL");
  if (module->device != nullptr) {
    return rt::Fail(AGATE_UNSUPPORTED) << module->device->name << " modules need agate_executor_create";
  }
  *out_bytes = rt::ExecutorInPlaceBytes(*module);
  return AGATE_OK;
}

AGATE_API agate_status_t agate_executor_create_in_place(const agate_module_t* module, void* memory,
                                                        size_t memory_bytes, agate_executor_t** out_executor) {
  AGATE_REQUIRE_ARG(module != nullptr && out_executor != nullptr, "module or out_executor is NULL");
  if (module->device != nullptr) {
    return rt::Fail(AGATE_UNSUPPORTED) << module->device->name << " modules need agate_executor_create";
  }
  const size_t needed = rt::ExecutorInPlaceBytes(*module);
  if (memory == nullptr || memory_bytes < needed) {
    return rt::Fail(AGATE_RESOURCE_EXHAUSTED) << "executor needs " << needed << " bytes of memory, " << memory_bytes
                                              << " were given";
  }
  const uintptr_t base = reinterpret_cast<uintptr_t>(memory);
  AGATE_REQUIRE_ARG(base % 64 == 0, "executor memory must be 64-byte aligned");
  const fb::Module& m = *module->fb;
  uint8_t* tables = static_cast<uint8_t*>(memory);
  uint8_t* outputs = tables + rt::ExecutorTablesBytes(*module);
  const uintptr_t arena_address = AlignUp(reinterpret_cast<uintptr_t>(outputs) + module->facts.outputs_bytes,
                                          m.arena_alignment());
  uint8_t* arena = reinterpret_cast<uint8_t*>(arena_address);
  uint8_t* workspace = arena + AlignUp(static_cast<size_t>(m.arena_bytes()), 64);
  *out_executor = rt::InitExecutor(*module, tables, arena, workspace, outputs);
  return AGATE_OK;
}

AGATE_API agate_status_t agate_executor_set_input(agate_executor_t* executor, uint32_t index, const DLTensor* tensor) {
  AGATE_REQUIRE_ARG(executor != nullptr, "executor is NULL");
  const agate_module& module = *executor->module;
  const fb::Module& m = *module.fb;
  if (index >= m.inputs()->size()) return rt::Fail(AGATE_OUT_OF_RANGE) << "input " << index << " of " << m.inputs()->size();
  if (module.device != nullptr) return module.device->set_input(executor, index, tensor);
  const fb::Tensor& info = *m.inputs()->Get(index);
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  const fb::Symbol* symbol = rt::InputSymbol(module, index);
  int64_t extents[rt::kMaxSymbols] = {0};
  agate_status_t status =
      rt::CheckTensorShape(info, info.shape()->data(), rt::InputDims(module.facts, index),
                           symbol != nullptr ? module.facts.dynamic->symbols() : nullptr, tensor, kDLCPU, "input", index,
                           extents);
  if (status != AGATE_OK) return status;
  const uint32_t num_symbols = rt::NumSymbols(module.facts);
  for (uint32_t s = 0; s < num_symbols; ++s) executor->input_rows[index * num_symbols + s] = extents[s];
#else
  agate_status_t status = rt::CheckTensorMatches(info, tensor, kDLCPU, "input", index);
  if (status != AGATE_OK) return status;
#endif
  // A NULL input slot means "not bound" (RunOnCpu); a zero-element tensor without storage is
  // bound to a byte that no kernel reads (its loops have no iterations).
  static uint8_t no_storage = 0;
  void* data = tensor->data != nullptr ? static_cast<uint8_t*>(tensor->data) + tensor->byte_offset : &no_storage;
  executor->inputs[index] = data;
  void** slot = executor->args;
  for (uint32_t c = 0; c < module.facts.num_calls; ++c) {
    for (const fb::Arg* arg : *m.plan()->Get(c)->args()) {
      if (arg->kind() == fb::ArgKind::Input && arg->index() == index) *slot = data;
      ++slot;
    }
  }
  return AGATE_OK;
}

AGATE_API agate_status_t agate_executor_run(agate_executor_t* executor) {
  AGATE_REQUIRE_ARG(executor != nullptr, "executor is NULL");
  if (executor->module->device != nullptr) return executor->module->device->run(executor, nullptr);
  return rt::RunPlanOnCpu(executor, nullptr, nullptr);
}

AGATE_API agate_status_t agate_executor_get_output(agate_executor_t* executor, uint32_t index, DLTensor* out) {
  AGATE_REQUIRE_ARG(executor != nullptr && out != nullptr, "executor or out is NULL");
  const fb::Module& m = *executor->module->fb;
  if (index >= m.outputs()->size()) {
    return rt::Fail(AGATE_OUT_OF_RANGE) << "output " << index << " of " << m.outputs()->size();
  }
  const fb::Tensor& info = *m.outputs()->Get(index);
  out->data = executor->outputs[index];
  out->device.device_type = static_cast<DLDeviceType>(DeviceTypeOf(*executor->module));
  out->device.device_id = executor->module->device_id;
  out->ndim = static_cast<int32_t>(info.shape()->size());
  out->dtype = rt::ToDLDataType(*info.dtype());
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  out->shape = const_cast<int64_t*>(rt::OutputShape(*executor, index));
#else
  out->shape = const_cast<int64_t*>(info.shape()->data());
#endif
  out->strides = nullptr;
  out->byte_offset = 0;
  return AGATE_OK;
}

AGATE_API agate_status_t agate_executor_copy_output(agate_executor_t* executor, uint32_t index, const DLTensor* dst) {
  AGATE_REQUIRE_ARG(executor != nullptr, "executor is NULL");
  const fb::Module& m = *executor->module->fb;
  if (index >= m.outputs()->size()) {
    return rt::Fail(AGATE_OUT_OF_RANGE) << "output " << index << " of " << m.outputs()->size();
  }
  if (executor->module->device != nullptr) return executor->module->device->copy_output(executor, index, dst);
  const fb::Tensor& info = *m.outputs()->Get(index);
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  // Dynamic modules: dst must have the run-time shape of the last run.
  agate_status_t status =
      rt::CheckTensorShape(info, rt::OutputShape(*executor, index), nullptr, nullptr, dst, kDLCPU, "output", index,
                           nullptr);
  if (status != AGATE_OK) return status;
  const size_t bytes = static_cast<size_t>(rt::OutputBytes(*executor, index));
#else
  agate_status_t status = rt::CheckTensorMatches(info, dst, kDLCPU, "output", index);
  if (status != AGATE_OK) return status;
  const size_t bytes = static_cast<size_t>(rt::TensorBytes(info));
#endif
  void* target = static_cast<uint8_t*>(dst->data) + dst->byte_offset;
  // A zero-element output may have no storage on either side (NULL): memcpy must not see it.
  if (bytes != 0) memcpy(target, executor->outputs[index], bytes);
  return AGATE_OK;
}

AGATE_API agate_status_t agate_executor_output_shape(agate_executor_t* executor, uint32_t index, int64_t* dims,
                                                     int32_t capacity, int32_t* out_ndim) {
  AGATE_REQUIRE_ARG(executor != nullptr && out_ndim != nullptr, "executor or out_ndim is NULL");
  const fb::Module& m = *executor->module->fb;
  if (index >= m.outputs()->size()) {
    return rt::Fail(AGATE_OUT_OF_RANGE) << "output " << index << " of " << m.outputs()->size();
  }
  const int32_t ndim = static_cast<int32_t>(m.outputs()->Get(index)->shape()->size());
  *out_ndim = ndim;
  if (capacity < ndim || (ndim > 0 && dims == nullptr)) {
    return rt::Fail(AGATE_OUT_OF_RANGE) << "output " << index << " has " << ndim << " dimensions; dims holds "
                                        << capacity;
  }
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  const int64_t* shape = rt::OutputShape(*executor, index);
#else
  const int64_t* shape = m.outputs()->Get(index)->shape()->data();
#endif
  for (int32_t axis = 0; axis < ndim; ++axis) dims[axis] = shape[axis];
  return AGATE_OK;
}

AGATE_API agate_status_t agate_executor_arena_bytes(const agate_executor_t* executor, uint64_t* out_bytes) {
  AGATE_REQUIRE_ARG(executor != nullptr && out_bytes != nullptr, "executor or out_bytes is NULL");
  *out_bytes = executor->arena_bytes;
  return AGATE_OK;
}

AGATE_API agate_status_t agate_executor_free(agate_executor_t* executor) {
  if (executor == nullptr) return AGATE_OK;
  if (executor->module->device != nullptr) executor->module->device->free_executor(executor);
  if (executor->release != nullptr) executor->release(executor);
  return AGATE_OK;
}

}  // extern "C"
