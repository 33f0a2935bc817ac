#include "runtime_minimal/core/module.h"

#include <stdint.h>
#include <string.h>

#include "runtime_minimal/core/device.h"
#include "runtime_minimal/core/message.h"

namespace agate {
namespace rt {
namespace {

size_t AlignUp(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

agate_kernel_fn FindInTable(const agate_kernel_table* table, const char* name) {
  if (table == nullptr) return nullptr;
  for (uint32_t i = 0; i < table->count; ++i) {
    const agate_kernel_entry& e = table->entries[i];
    if (e.name != nullptr && e.fn != nullptr && SameString(e.name, name)) return e.fn;
  }
  return nullptr;
}

// Every kernel present for this target: CPU kernels resolve by name now, so a
// missing one is reported at load and never in the middle of a run.
agate_status_t ResolveCpuKernels(const fb::Module& m, const agate_kernel_table* table, const KernelSource* source,
                                 agate_kernel_fn* out) {
  const bool embedded_first = m.target_kind() == fb::TargetKind::HostCpu;
  for (flatbuffers::uoffset_t k = 0; k < m.kernels()->size(); ++k) {
    const char* name = m.kernels()->Get(k)->name()->c_str();
    agate_kernel_fn fn = nullptr;
    if (embedded_first && source != nullptr) fn = source->lookup(source->self, name);
    if (fn == nullptr) fn = FindInTable(table, name);
    if (fn == nullptr) {
      Message msg = Fail(AGATE_NOT_FOUND);
      msg << "kernel " << k << " '" << name << "' is not in ";
      if (embedded_first && source != nullptr) msg << source->description << " or ";
      if (table != nullptr) {
        msg << "the static kernel table (" << table->count << " entries)";
      } else {
        msg << "any kernel table (none was given)";
      }
      return msg;
    }
    out[k] = fn;
  }
  return AGATE_OK;
}

}  // namespace

size_t ModuleInPlaceBytes(const fb::Module& module) {
  return AlignUp(sizeof(agate_module), 8) + sizeof(agate_kernel_fn) * module.kernels()->size();
}

DLDataType ToDLDataType(const fb::DType& dtype) {
  DLDataType out;
  out.bits = dtype.bits();
  out.lanes = dtype.lanes();
  switch (dtype.code()) {
    case fb::ElemCode::Int: out.code = kDLInt; break;
    case fb::ElemCode::UInt: out.code = kDLUInt; break;
    case fb::ElemCode::Float: out.code = kDLFloat; break;
    case fb::ElemCode::BFloat: out.code = kDLBfloat; break;
    case fb::ElemCode::Bool: out.code = kDLUInt; break;  // DLPack 0.6 (and TVM): bool is uint1
    case fb::ElemCode::Handle: out.code = kDLOpaqueHandle; break;
  }
  return out;
}

agate_status_t CheckKernelFingerprint(const fb::Module& module, uint64_t table_fingerprint) {
  const uint64_t recorded = module.kernel_fingerprint();
  if (recorded == 0) {
    return Fail(AGATE_VERSION_MISMATCH) << "module (format " << module.format_major() << "." << module.format_minor()
                                        << ") records no kernel fingerprint, so kernel table "
                                        << Hex64{table_fingerprint}
                                        << " cannot be matched to it; recompile it (format 1.2 or later)";
  }
  if (recorded != table_fingerprint) {
    return Fail(AGATE_INVALID_ARGUMENT) << "kernel table fingerprint " << Hex64{table_fingerprint}
                                        << " differs from the module's " << Hex64{recorded}
                                        << ": the kernels were generated for another model or another compile of it";
  }
  return AGATE_OK;
}

agate_status_t LoadModuleInPlace(const uint8_t* data, size_t size, const agate_kernel_table* table,
                                 const KernelSource* source, const DeviceBackend* device, void* memory,
                                 size_t memory_bytes, agate_module** out_module) {
  if (out_module == nullptr) return Fail(AGATE_INVALID_ARGUMENT) << "out_module is NULL";
  const fb::Module* fbm = nullptr;
  ModuleFacts facts;
  agate_status_t status = VerifyModule(data, size, &fbm, &facts);
  if (status != AGATE_OK) return status;
  return BuildModule(data, size, fbm, facts, table, source, device, 0, memory, memory_bytes, out_module);
}

agate_status_t BuildModule(const uint8_t* data, size_t size, const fb::Module* fbm, const ModuleFacts& facts,
                           const agate_kernel_table* table, const KernelSource* source, const DeviceBackend* device,
                           int32_t device_id, void* memory, size_t memory_bytes, agate_module** out_module) {
  agate_status_t status = AGATE_OK;
  // Constants are used in place: their absolute addresses must be aligned too.
  if (reinterpret_cast<uintptr_t>(data) % facts.max_alignment != 0) {
    return Fail(AGATE_INVALID_ARGUMENT) << "module bytes at address " << reinterpret_cast<uintptr_t>(data)
                                        << " are not aligned to " << facts.max_alignment
                                        << " bytes, which its constants need to be used in place";
  }
  const size_t needed = ModuleInPlaceBytes(*fbm);
  if (memory == nullptr || memory_bytes < needed) {
    return Fail(AGATE_RESOURCE_EXHAUSTED) << "module needs " << needed << " bytes of memory, " << memory_bytes
                                          << " were given";
  }
  if (reinterpret_cast<uintptr_t>(memory) % 8 != 0) {
    return Fail(AGATE_INVALID_ARGUMENT) << "module memory must be 8-byte aligned";
  }
  agate_module* module = static_cast<agate_module*>(memory);
  memset(module, 0, sizeof(*module));
  module->fb = fbm;
  module->data = data;
  module->size = size;
  module->facts = facts;
  if (table != nullptr && table->count != 0 && table->entries == nullptr) {
    return Fail(AGATE_INVALID_ARGUMENT) << "kernel table has " << table->count << " entries but entries is NULL";
  }
  if (fbm->target_kind() == fb::TargetKind::Cuda) {
    if (device == nullptr) {
      return Fail(AGATE_UNAVAILABLE) << "module targets CUDA ('" << fbm->target()->c_str()
                                     << "'); this runtime was built without the cuda profile (or the module was "
                                        "loaded in place: CUDA modules load with agate_module_load_from_file or "
                                        "_from_memory)";
    }
    module->device = device;
    module->device_id = device_id;
    status = device->load(module);
    if (status != AGATE_OK) return status;
    *out_module = module;
    return AGATE_OK;
  }
  module->kernels = reinterpret_cast<agate_kernel_fn*>(static_cast<uint8_t*>(memory) + AlignUp(sizeof(agate_module), 8));
  status = ResolveCpuKernels(*fbm, table, source, module->kernels);
  if (status != AGATE_OK) return status;
  *out_module = module;
  return AGATE_OK;
}

}  // namespace rt
}  // namespace agate
