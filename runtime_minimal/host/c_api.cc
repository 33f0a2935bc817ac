// The [host] functions of agate/runtime.h: files, embedded kernels, threads, heap.
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <new>

#include "agate/runtime.h"
#include "runtime_minimal/core/device.h"
#include "runtime_minimal/core/executor.h"
#include "runtime_minimal/core/message.h"
#include "runtime_minimal/core/module.h"
#include "runtime_minimal/host/cpu_features.h"
#include "runtime_minimal/host/device_registry.h"
#include "runtime_minimal/host/host_object.h"
#include "runtime_minimal/host/module_signature.h"
#include "runtime_minimal/host/thread_pool.h"

namespace rt = agate::rt;
namespace fb = agate::fb;

namespace {

uint64_t MonotonicNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

// What a host-loaded module owns besides its struct.
struct HostModule {
  void* copy = nullptr;  // aligned copy of the bytes (load_from_memory)
  void* mapping = nullptr;  // the mapped file (load_from_file)
  size_t mapping_bytes = 0;
  rt::HostObject object;  // the embedded kernels, loaded
  void* memory = nullptr;  // the agate_module struct and kernel pointers
};

void ReleaseHostModule(HostModule* h) {
  rt::CloseHostObject(&h->object);
  free(h->copy);
  if (h->mapping != nullptr) munmap(h->mapping, h->mapping_bytes);
  free(h->memory);
  delete h;
}

void ReleaseModule(agate_module* module) { ReleaseHostModule(static_cast<HostModule*>(module->owner)); }

const char* ErrnoText(int error, char* buffer, size_t size) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  return strerror_r(error, buffer, size);
#else
  return strerror_r(error, buffer, size) == 0 ? buffer : "unknown error";
#endif
}

// Verifies, opens the embedded kernels and builds the module; takes `owner`
// (its bytes already set) and frees it on failure.
// With `public_key`, the signature is checked first, over the very bytes then parsed
// (module_signature.h); a signature trailer is stripped either way.
agate_status_t LoadOwned(HostModule* owner, const uint8_t* data, size_t size, const agate_kernel_table* kernels,
                         int32_t device_id, const uint8_t* public_key, agate_module_t** out_module) {
  const fb::Module* fbm = nullptr;
  rt::ModuleFacts facts;
  agate_status_t status = rt::CheckModuleSignature(data, size, public_key, &size);
  if (status == AGATE_OK) status = rt::VerifyModule(data, size, &fbm, &facts);
  rt::KernelSource source = {};
  const bool has_object = status == AGATE_OK && fbm->target_kind() == fb::TargetKind::HostCpu &&
                          fbm->host_object() != nullptr && fbm->host_object()->data()->size() != 0;
  if (has_object) {
    // The architecture first (OpenHostObject's ELF check), then the CPU's features: never dlopen
    // code this CPU cannot run (its constructors would run at once).
    status = rt::CheckHostObjectMachine(fbm->host_object()->data()->data(), fbm->host_object()->data()->size());
    if (status == AGATE_OK) status = rt::CheckCpuFeatures(*fbm);
  }
  if (has_object && status == AGATE_OK) {
    status = rt::OpenHostObject(fbm->host_object()->data()->data(), fbm->host_object()->data()->size(),
                                fbm->host_object()->fnv1a64(), &owner->object);
    source = rt::HostObjectKernelSource(owner->object);
  }
  const size_t memory_bytes = status == AGATE_OK ? rt::ModuleInPlaceBytes(*fbm) : 0;
  if (status == AGATE_OK) {
    owner->memory = malloc(memory_bytes);
    if (owner->memory == nullptr) status = rt::Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the module";
  }
  agate_module* module = nullptr;
  if (status == AGATE_OK && device_id != 0 && fbm->target_kind() != fb::TargetKind::Cuda) {
    status = rt::Fail(AGATE_INVALID_ARGUMENT) << "device " << device_id << " was asked for, but the module runs on the "
                                              << "CPU ('" << fbm->target()->c_str() << "')";
  }
  if (status == AGATE_OK) {
    const rt::DeviceBackend* device = fbm->target_kind() == fb::TargetKind::Cuda ? rt::CudaBackend() : nullptr;
    status = rt::BuildModule(data, size, fbm, facts, kernels, has_object ? &source : nullptr, device, device_id,
                             owner->memory, memory_bytes, &module);
  }
  if (status != AGATE_OK) {
    ReleaseHostModule(owner);
    return status;
  }
  module->release = ReleaseModule;
  module->owner = owner;
  *out_module = module;
  return AGATE_OK;
}

// What a heap executor owns besides its tables.
struct HostExecutor {
  void* tables = nullptr;
  void* arena = nullptr;
  void* workspace = nullptr;
  void* outputs = nullptr;
};

void ReleaseHostExecutor(HostExecutor* h) {
  free(h->arena);
  free(h->workspace);
  free(h->outputs);
  free(h->tables);
  delete h;
}

void ReleaseExecutor(agate_executor* executor) { ReleaseHostExecutor(static_cast<HostExecutor*>(executor->owner)); }

// Exactly `bytes` (so sanitizers catch a kernel that runs past them), or NULL for 0.
// Not cleared: the plan writes every byte before reading it, and untouched pages
// of a large arena stay unbacked.
agate_status_t AllocateExact(size_t bytes, size_t alignment, const char* what, void** out) {
  *out = nullptr;
  if (bytes == 0) return AGATE_OK;
  if (posix_memalign(out, alignment < sizeof(void*) ? sizeof(void*) : alignment, bytes) != 0 || *out == nullptr) {
    *out = nullptr;
    return rt::Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate " << bytes << " bytes for the executor's " << what;
  }
  return AGATE_OK;
}

// The options' device id (fields past the caller's struct_size read as zero).
agate_status_t ReadModuleOptions(const agate_module_options* options, int32_t* out_device_id) {
  *out_device_id = 0;
  if (options == nullptr) return AGATE_OK;
  if (options->struct_size < sizeof(uint32_t)) {
    return rt::Fail(AGATE_INVALID_ARGUMENT) << "agate_module_options.struct_size is " << options->struct_size;
  }
  if (options->struct_size >= offsetof(agate_module_options, device_id) + sizeof(int32_t)) {
    *out_device_id = options->device_id;
  }
  if (*out_device_id < 0) return rt::Fail(AGATE_INVALID_ARGUMENT) << "device_id is " << *out_device_id;
  return AGATE_OK;
}

agate_status_t LoadFromMemory(const void* data, size_t size, const agate_kernel_table* kernels, int32_t device_id,
                              const uint8_t* public_key, agate_module_t** out_module) {
  if (out_module == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "out_module is NULL";
  if (data == nullptr && size != 0) return rt::Fail(AGATE_INVALID_ARGUMENT) << "module data is NULL";
  HostModule* owner = new (std::nothrow) HostModule();
  if (owner == nullptr) return rt::Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the module";
  // Page-aligned, so every constant alignment the format allows holds in place.
  if (posix_memalign(&owner->copy, rt::kMaxAlignment, size == 0 ? 1 : size) != 0) {
    owner->copy = nullptr;
    ReleaseHostModule(owner);
    return rt::Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate " << size << " bytes for the module";
  }
  if (size != 0) memcpy(owner->copy, data, size);
  return LoadOwned(owner, static_cast<const uint8_t*>(owner->copy), size, kernels, device_id, public_key, out_module);
}

// Reads `size` bytes of `fd` into an aligned private copy (owner->copy).
agate_status_t ReadCopy(int fd, size_t size, const char* path, HostModule* owner) {
  if (posix_memalign(&owner->copy, rt::kMaxAlignment, size) != 0) {
    owner->copy = nullptr;
    return rt::Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate " << size << " bytes for module '" << path << "'";
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t n = read(fd, static_cast<uint8_t*>(owner->copy) + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return rt::Fail(AGATE_IO) << "cannot read module '" << path << "'";
    done += static_cast<size_t>(n);
  }
  return AGATE_OK;
}

// Maps the file; with `public_key` it reads a private copy instead, so the bytes whose signature
// is verified are the bytes used (a mapping would follow later changes to the file).
agate_status_t LoadFromFile(const char* path, const agate_kernel_table* kernels, int32_t device_id,
                            const uint8_t* public_key, agate_module_t** out_module) {
  if (out_module == nullptr || path == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "path or out_module is NULL";
  char error_text[128];
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    return rt::Fail(error == ENOENT ? AGATE_NOT_FOUND : AGATE_IO)
           << "cannot open module '" << path << "': " << ErrnoText(error, error_text, sizeof(error_text));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return rt::Fail(AGATE_IO) << "module '" << path << "' is not a regular file";
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return rt::Fail(AGATE_CORRUPT) << "module '" << path << "' is empty";
  }
  if (public_key != nullptr) {
    HostModule* owner = new (std::nothrow) HostModule();
    if (owner == nullptr) {
      close(fd);
      return rt::Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the module";
    }
    const agate_status_t status = ReadCopy(fd, size, path, owner);
    close(fd);
    if (status != AGATE_OK) {
      ReleaseHostModule(owner);
      return status;
    }
    return LoadOwned(owner, static_cast<const uint8_t*>(owner->copy), size, kernels, device_id, public_key,
                     out_module);
  }
  void* mapping = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_error = errno;
  close(fd);
  if (mapping == MAP_FAILED) {
    return rt::Fail(AGATE_IO) << "cannot map module '" << path << "': " << ErrnoText(map_error, error_text, sizeof(error_text));
  }
  HostModule* owner = new (std::nothrow) HostModule();
  if (owner == nullptr) {
    munmap(mapping, size);
    return rt::Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the module";
  }
  owner->mapping = mapping;
  owner->mapping_bytes = size;
  return LoadOwned(owner, static_cast<const uint8_t*>(mapping), size, kernels, device_id, nullptr, out_module);
}

// Binds output `index` of a CPU module to `tensor` (NULL: its own buffer again).
agate_status_t SetCpuOutput(agate_executor* e, uint32_t index, const DLTensor* tensor) {
  const agate_module& module = *e->module;
  const fb::Module& m = *module.fb;
  uint8_t* data = e->own_outputs[index];
  // Outputs whose axes carry the symbol take any in-bounds extent there; the run then
  // checks it equals the inputs' (agate_executor_run). Value-dependent outputs take a buffer of
  // their upper bounds.
  const fb::Symbol* symbol = rt::OutputSymbol(module, index);
  int64_t extents[rt::kMaxSymbols] = {0};
  if (tensor != nullptr) {
    const fb::Tensor& info = *m.outputs()->Get(index);
    agate_status_t status =
        rt::CheckTensorShape(info, info.shape()->data(), rt::OutputDims(module.facts, index),
                             symbol != nullptr ? module.facts.dynamic->symbols() : nullptr, tensor, kDLCPU, "output",
                             index, extents);
    if (status != AGATE_OK) return status;
    // A zero-element output may have no storage: it keeps the executor's own pointer.
    if (tensor->data != nullptr) data = static_cast<uint8_t*>(tensor->data) + tensor->byte_offset;
    // The executor's own outputs are 64-byte aligned; kernels may rely on that.
    if (reinterpret_cast<uintptr_t>(data) % 64 != 0) {
      return rt::Fail(AGATE_INVALID_ARGUMENT) << "output " << index << " '" << m.outputs()->Get(index)->name()->c_str()
                                              << "' memory is not 64-byte aligned, which kernels may rely on";
    }
  }
  e->outputs[index] = data;
  const uint32_t num_symbols = rt::NumSymbols(module.facts);
  for (uint32_t s = 0; s < num_symbols; ++s) e->output_rows[index * num_symbols + s] = extents[s];
  void** slot = e->args;
  for (uint32_t c = 0; c < module.facts.num_calls; ++c) {
    for (const fb::Arg* arg : *m.plan()->Get(c)->args()) {
      if (arg->kind() == fb::ArgKind::Output && arg->index() == index) *slot = data;
      ++slot;
    }
  }
  return AGATE_OK;
}

}  // namespace

extern "C" {

AGATE_API agate_status_t agate_module_load_from_memory(const void* data, size_t size, const agate_kernel_table* kernels,
                                                       agate_module_t** out_module) {
  return LoadFromMemory(data, size, kernels, 0, nullptr, out_module);
}

AGATE_API agate_status_t agate_module_load_from_file(const char* path, const agate_kernel_table* kernels,
                                                     agate_module_t** out_module) {
  return LoadFromFile(path, kernels, 0, nullptr, out_module);
}

AGATE_API agate_status_t agate_module_load_from_memory_with_options(const void* data, size_t size,
                                                                    const agate_kernel_table* kernels,
                                                                    const agate_module_options* options,
                                                                    agate_module_t** out_module) {
  int32_t device_id = 0;
  const agate_status_t status = ReadModuleOptions(options, &device_id);
  if (status != AGATE_OK) return status;
  return LoadFromMemory(data, size, kernels, device_id, nullptr, out_module);
}

AGATE_API agate_status_t agate_module_load_from_file_with_options(const char* path, const agate_kernel_table* kernels,
                                                                  const agate_module_options* options,
                                                                  agate_module_t** out_module) {
  int32_t device_id = 0;
  const agate_status_t status = ReadModuleOptions(options, &device_id);
  if (status != AGATE_OK) return status;
  return LoadFromFile(path, kernels, device_id, nullptr, out_module);
}

AGATE_API agate_status_t agate_module_load_from_file_signed(const char* path, const agate_kernel_table* kernels,
                                                            const agate_module_options* options,
                                                            const uint8_t* public_key, agate_module_t** out_module) {
  if (public_key == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "public_key is NULL";
  int32_t device_id = 0;
  const agate_status_t status = ReadModuleOptions(options, &device_id);
  if (status != AGATE_OK) return status;
  return LoadFromFile(path, kernels, device_id, public_key, out_module);
}

AGATE_API agate_status_t agate_module_load_from_memory_signed(const void* data, size_t size,
                                                              const agate_kernel_table* kernels,
                                                              const agate_module_options* options,
                                                              const uint8_t* public_key, agate_module_t** out_module) {
  if (public_key == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "public_key is NULL";
  int32_t device_id = 0;
  const agate_status_t status = ReadModuleOptions(options, &device_id);
  if (status != AGATE_OK) return status;
  return LoadFromMemory(data, size, kernels, device_id, public_key, out_module);
}

AGATE_API agate_status_t agate_module_device(const agate_module_t* module, DLDevice* out_device) {
  if (module == nullptr || out_device == nullptr) {
    return rt::Fail(AGATE_INVALID_ARGUMENT) << "module or out_device is NULL";
  }
  out_device->device_type =
      module->device != nullptr ? static_cast<DLDeviceType>(module->device->device_type) : kDLCPU;
  out_device->device_id = module->device_id;
  return AGATE_OK;
}

AGATE_API agate_status_t agate_runtime_device_count(int32_t device_type, int32_t* out_count) {
  if (out_count == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "out_count is NULL";
  if (device_type == kDLCPU) {
    *out_count = 1;
    return AGATE_OK;
  }
  if (device_type != kDLCUDA) {
    return rt::Fail(AGATE_UNSUPPORTED) << "this runtime runs modules on CPUs (DLPack device type " << static_cast<int32_t>(kDLCPU)
                                       << ") and CUDA GPUs (" << static_cast<int32_t>(kDLCUDA) << "), not on device type " << device_type;
  }
  const rt::DeviceBackend* cuda = rt::CudaBackend();
  if (cuda == nullptr) return rt::Fail(AGATE_UNAVAILABLE) << "this runtime was built without the cuda profile";
  return cuda->device_count(out_count);
}

AGATE_API agate_status_t agate_executor_set_output(agate_executor_t* executor, uint32_t index, const DLTensor* tensor) {
  if (executor == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "executor is NULL";
  const uint32_t num_outputs = executor->module->fb->outputs()->size();
  if (index >= num_outputs) return rt::Fail(AGATE_OUT_OF_RANGE) << "output " << index << " of " << num_outputs;
  if (executor->module->device != nullptr) return executor->module->device->set_output(executor, index, tensor);
  return SetCpuOutput(executor, index, tensor);
}

AGATE_API agate_status_t agate_executor_create(const agate_module_t* module, const agate_executor_options* options,
                                               agate_executor_t** out_executor) {
  if (module == nullptr || out_executor == nullptr) {
    return rt::Fail(AGATE_INVALID_ARGUMENT) << "module or out_executor is NULL";
  }
  int32_t num_threads = 0;
  if (options != nullptr) {
    if (options->struct_size < sizeof(uint32_t)) {
      return rt::Fail(AGATE_INVALID_ARGUMENT) << "agate_executor_options.struct_size is " << options->struct_size;
    }
    if (options->struct_size >= offsetof(agate_executor_options, num_threads) + sizeof(int32_t)) {
      num_threads = options->num_threads;
    }
    if (num_threads < 0) return rt::Fail(AGATE_INVALID_ARGUMENT) << "num_threads is " << num_threads;
  }
  const fb::Module& m = *module->fb;
  HostExecutor* h = new (std::nothrow) HostExecutor();
  if (h == nullptr) return rt::Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the executor";
  const bool on_device = module->device != nullptr;
  agate_status_t status = AllocateExact(rt::ExecutorTablesBytes(*module), 64, "tables", &h->tables);
  if (status == AGATE_OK && !on_device) {
    status = AllocateExact(static_cast<size_t>(m.arena_bytes()), m.arena_alignment(), "arena", &h->arena);
  }
  if (status == AGATE_OK && !on_device) {
    status = AllocateExact(static_cast<size_t>(m.workspace_bytes()), 64, "workspace", &h->workspace);
  }
  if (status == AGATE_OK && !on_device) {
    status = AllocateExact(static_cast<size_t>(module->facts.outputs_bytes), 64, "outputs", &h->outputs);
  }
  if (status != AGATE_OK) {
    ReleaseHostExecutor(h);
    return status;
  }
  agate_executor* e = rt::InitExecutor(*module, h->tables, static_cast<uint8_t*>(h->arena),
                                       static_cast<uint8_t*>(h->workspace), static_cast<uint8_t*>(h->outputs));
  e->release = ReleaseExecutor;
  e->owner = h;
  if (num_threads != 1) {
    e->ctx.parallel_for = rt::SharedParallelFor;
    e->ctx.pool = rt::SharedPoolHandle();
    e->ctx.num_threads = rt::SharedPoolThreads();
  }
  if (on_device) {
    status = module->device->create_executor(e);
    if (status != AGATE_OK) {
      ReleaseHostExecutor(h);
      return status;
    }
  }
  *out_executor = e;
  return AGATE_OK;
}

AGATE_API agate_status_t agate_runtime_set_num_threads(int32_t num_threads) {
  if (num_threads < 0) return rt::Fail(AGATE_INVALID_ARGUMENT) << "num_threads is " << num_threads;
  rt::SetSharedPoolThreads(num_threads);
  return AGATE_OK;
}

AGATE_API agate_status_t agate_runtime_set_kernel_dir(const char* dir) { return rt::SetKernelDir(dir); }

AGATE_API agate_status_t agate_runtime_num_threads(int32_t* out_num_threads) {
  if (out_num_threads == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "out_num_threads is NULL";
  *out_num_threads = rt::SharedPoolThreads();
  return AGATE_OK;
}

AGATE_API agate_status_t agate_module_num_calls(const agate_module_t* module, uint32_t* out_count) {
  if (module == nullptr || out_count == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "module or out_count is NULL";
  *out_count = module->facts.num_calls;
  return AGATE_OK;
}

AGATE_API agate_status_t agate_module_call_kernel_name(const agate_module_t* module, uint32_t index,
                                                       const char** out_name) {
  if (module == nullptr || out_name == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "module or out_name is NULL";
  if (index >= module->facts.num_calls) {
    return rt::Fail(AGATE_OUT_OF_RANGE) << "call " << index << " of " << module->facts.num_calls;
  }
  const fb::Module& m = *module->fb;
  *out_name = m.kernels()->Get(m.plan()->Get(index)->kernel())->name()->c_str();
  return AGATE_OK;
}

AGATE_API agate_status_t agate_executor_run_profiled(agate_executor_t* executor, uint64_t* out_call_ns,
                                                     uint32_t count) {
  if (executor == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "executor is NULL";
  const rt::ModuleFacts& facts = executor->module->facts;
  if (facts.dynamic != nullptr && facts.dynamic->variants() != nullptr) {
    return rt::Fail(AGATE_UNSUPPORTED) << "the module has dynamic shapes: each run runs one of its "
                                       << facts.dynamic->variants()->size()
                                       << " plan variants, which are not profiled; profile a module compiled for "
                                       << "one shape (--input-shape) instead";
  }
  if (out_call_ns == nullptr) return rt::Fail(AGATE_INVALID_ARGUMENT) << "out_call_ns is NULL";
  const uint32_t num_calls = facts.num_calls;
  if (count != num_calls) {
    return rt::Fail(AGATE_INVALID_ARGUMENT) << "out_call_ns holds " << count << " entries; the plan has " << num_calls
                                            << " calls";
  }
  if (executor->module->device != nullptr) return executor->module->device->run(executor, out_call_ns);
  return rt::RunPlanOnCpu(executor, MonotonicNs, out_call_ns);
}

}  // extern "C"
