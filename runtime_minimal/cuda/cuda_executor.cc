#include "runtime_minimal/cuda/cuda_executor.h"

#include <stdlib.h>
#include <string.h>

#include "runtime_minimal/core/message.h"
#include "runtime_minimal/core/verify.h"

namespace agate {
namespace rt {
namespace {

static_assert(sizeof(cu::DevicePtr) == sizeof(void*), "argument slots hold device addresses");

CudaExecutorState* StateOf(agate_executor* e) { return static_cast<CudaExecutorState*>(e->device_state); }

const char* KernelName(const fb::Module& m, uint32_t call) {
  return m.kernels()->Get(m.plan()->Get(call)->kernel())->name()->c_str();
}

void WriteSlot(void** slot, cu::DevicePtr value) { memcpy(slot, &value, sizeof(value)); }

cu::DevicePtr AsDevicePtr(const void* p) { return static_cast<cu::DevicePtr>(reinterpret_cast<uintptr_t>(p)); }

void DestroyGraph(CudaExecutorState* s) {
  if (s->graph != nullptr) s->driver->GraphExecDestroy(s->graph);
  s->graph = nullptr;
}

void FreeState(CudaExecutorState* s, uint32_t num_calls) {
  if (s == nullptr) return;
  const cu::DriverApi& d = *s->driver;
  DestroyGraph(s);
  if (s->events != nullptr) {
    for (uint32_t c = 0; c <= num_calls; ++c) {
      if (s->events[c] != nullptr) d.EventDestroy(s->events[c]);
    }
  }
  if (s->stream != nullptr) {
    d.StreamSynchronize(s->stream);  // nothing of this executor may still run when its memory goes
    d.StreamDestroy(s->stream);
  }
  const cu::DevicePtr blocks[] = {s->arena, s->workspace, s->outputs_block, s->staging_block};
  for (cu::DevicePtr block : blocks) {
    if (block != 0) d.MemFree(block);
  }
  free(s->staging);
  free(s->params);
  free(s->first_param);
  free(s->slot_inputs);
  free(s->slot_outputs);
  free(s->events);
  free(s);
}

agate_status_t Allocate(const CudaExecutorState& s, uint64_t bytes, const char* what, cu::DevicePtr* out) {
  *out = 0;
  if (bytes == 0) return AGATE_OK;
  const cu::Result r = s.driver->MemAlloc(out, static_cast<size_t>(bytes));
  if (r != cu::kSuccess) {
    *out = 0;
    return CudaFail(*s.driver, r, "cuMemAlloc") << " of " << bytes << " bytes for the executor's " << what
                                                << " on CUDA device " << s.device->ordinal << " (" << s.device->name
                                                << ")";
  }
  return AGATE_OK;
}

// The device memory: arena, workspace, outputs and input staging, each one block.
agate_status_t AllocateMemory(agate_executor* e, CudaExecutorState* s) {
  const fb::Module& m = *e->module->fb;
  agate_status_t status = Allocate(*s, m.arena_bytes(), "arena", &s->arena);
  if (status == AGATE_OK) status = Allocate(*s, m.workspace_bytes(), "workspace", &s->workspace);
  uint64_t outputs_bytes = 0;
  for (uint32_t o = 0; o < m.outputs()->size(); ++o) outputs_bytes += AlignDevice(TensorBytes(*m.outputs()->Get(o)));
  if (status == AGATE_OK) status = Allocate(*s, outputs_bytes, "outputs", &s->outputs_block);
  uint64_t staging_bytes = 0;
  for (uint32_t i = 0; i < m.inputs()->size(); ++i) staging_bytes += AlignDevice(TensorBytes(*m.inputs()->Get(i)));
  if (status == AGATE_OK) status = Allocate(*s, staging_bytes, "input staging", &s->staging_block);
  if (status != AGATE_OK) return status;
  uint64_t offset = 0;
  for (uint32_t o = 0; o < m.outputs()->size(); ++o) {
    const cu::DevicePtr address = s->outputs_block + offset;
    e->own_outputs[o] = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(address));
    e->outputs[o] = e->own_outputs[o];
    offset += AlignDevice(TensorBytes(*m.outputs()->Get(o)));
  }
  offset = 0;
  for (uint32_t i = 0; i < m.inputs()->size(); ++i) {
    s->staging[i] = s->staging_block + offset;
    offset += AlignDevice(TensorBytes(*m.inputs()->Get(i)));
  }
  e->arena = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(s->arena));
  e->workspace = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(s->workspace));
  return AGATE_OK;
}

// Fills the arena and constant slots (fixed for the executor's life) and points
// every kernel parameter at its slot, plus the workspace parameter.
void BindParameters(agate_executor* e, CudaExecutorState* s) {
  const agate_module& module = *e->module;
  const fb::Module& m = *module.fb;
  void** slot = e->args;
  uint32_t p = 0;
  for (uint32_t c = 0; c < module.facts.num_calls; ++c) {
    const fb::Call& call = *m.plan()->Get(c);
    s->first_param[c] = p;
    for (const fb::Arg* arg : *call.args()) {
      if (arg->kind() == fb::ArgKind::Arena) WriteSlot(slot, s->arena + arg->offset());
      if (arg->kind() == fb::ArgKind::Constant) WriteSlot(slot, s->module->constants[arg->index()]);
      s->params[p++] = slot++;
    }
    if (m.kernels()->Get(call.kernel())->workspace_bytes() > 0) s->params[p++] = &s->workspace;
  }
}

// The device address each input and output has now; when one differs from what
// the argument slots hold, rewrites the slots and drops the recorded graph.
void UpdateSlots(agate_executor* e, CudaExecutorState* s) {
  const agate_module& module = *e->module;
  const fb::Module& m = *module.fb;
  bool changed = !s->slots_written;
  for (uint32_t i = 0; i < m.inputs()->size(); ++i) {
    const cu::DevicePtr address = e->input_on_device[i] ? AsDevicePtr(e->inputs[i]) : s->staging[i];
    changed = changed || address != s->slot_inputs[i];
    s->slot_inputs[i] = address;
  }
  for (uint32_t o = 0; o < m.outputs()->size(); ++o) {
    const cu::DevicePtr address = AsDevicePtr(e->outputs[o]);
    changed = changed || address != s->slot_outputs[o];
    s->slot_outputs[o] = address;
  }
  if (!changed) return;
  void** slot = e->args;
  for (uint32_t c = 0; c < module.facts.num_calls; ++c) {
    for (const fb::Arg* arg : *m.plan()->Get(c)->args()) {
      if (arg->kind() == fb::ArgKind::Input) WriteSlot(slot, s->slot_inputs[arg->index()]);
      if (arg->kind() == fb::ArgKind::Output) WriteSlot(slot, s->slot_outputs[arg->index()]);
      ++slot;
    }
  }
  s->slots_written = true;
  DestroyGraph(s);
}

agate_status_t Launch(agate_executor* e, CudaExecutorState* s, uint32_t c) {
  const fb::Module& m = *e->module->fb;
  const uint32_t k = m.plan()->Get(c)->kernel();
  const fb::CudaKernel& cuda = *m.kernels()->Get(k)->cuda();
  const cu::Result r = s->driver->LaunchKernel(s->module->functions[k], cuda.grid()->x(), cuda.grid()->y(),
                                               cuda.grid()->z(), cuda.block()->x(), cuda.block()->y(),
                                               cuda.block()->z(), cuda.shared_memory_bytes(), s->stream,
                                               s->params + s->first_param[c], nullptr);
  if (r != cu::kSuccess) {
    return CudaFail(*s->driver, r, "cuLaunchKernel") << " for kernel '" << KernelName(m, c) << "' (plan call " << c
                                                     << ") on CUDA device " << s->device->ordinal;
  }
  return AGATE_OK;
}

agate_status_t LaunchAll(agate_executor* e, CudaExecutorState* s) {
  for (uint32_t c = 0; c < e->module->facts.num_calls; ++c) {
    agate_status_t status = Launch(e, s, c);
    if (status != AGATE_OK) return status;
  }
  return AGATE_OK;
}

bool CaptureUnsupported(cu::Result r) {
  return r == cu::kErrorStreamCaptureUnsupported || r == cu::kErrorNotSupported;
}

// Records the plan as a graph (s->graph). *out_fallback: the driver cannot
// capture here, launch directly instead.
agate_status_t RecordGraph(agate_executor* e, CudaExecutorState* s, bool* out_fallback) {
  const cu::DriverApi& d = *s->driver;
  *out_fallback = false;
  cu::Result r = d.StreamBeginCapture(s->stream, cu::kStreamCaptureModeThreadLocal);
  if (CaptureUnsupported(r)) {
    *out_fallback = true;
    return AGATE_OK;
  }
  if (r != cu::kSuccess) return CudaFail(d, r, "cuStreamBeginCapture") << " on CUDA device " << s->device->ordinal;
  const agate_status_t launched = LaunchAll(e, s);
  cu::Graph graph = nullptr;
  r = d.StreamEndCapture(s->stream, &graph);  // always ends the capture, also after a failed launch
  if (launched != AGATE_OK) {
    if (graph != nullptr) d.GraphDestroy(graph);
    return launched;
  }
  if (r != cu::kSuccess) {
    if (graph != nullptr) d.GraphDestroy(graph);
    return CudaFail(d, r, "cuStreamEndCapture") << " recording the plan of " << e->module->facts.num_calls
                                                << " kernels on CUDA device " << s->device->ordinal;
  }
  r = d.GraphInstantiateWithFlags(&s->graph, graph, 0);
  d.GraphDestroy(graph);  // the executable graph does not need it
  if (r != cu::kSuccess) {
    s->graph = nullptr;
    return CudaFail(d, r, "cuGraphInstantiateWithFlags") << " for the plan of " << e->module->facts.num_calls
                                                         << " kernels on CUDA device " << s->device->ordinal;
  }
  ++s->graph_recordings;
  return AGATE_OK;
}

agate_status_t LaunchPlan(agate_executor* e, CudaExecutorState* s) {
  if (!s->graphs_unsupported && s->graph == nullptr && e->module->facts.num_calls != 0) {
    bool fallback = false;
    agate_status_t status = RecordGraph(e, s, &fallback);
    if (status != AGATE_OK) return status;
    s->graphs_unsupported = fallback;
  }
  if (s->graph == nullptr) return LaunchAll(e, s);
  const cu::Result r = s->driver->GraphLaunch(s->graph, s->stream);
  if (r != cu::kSuccess) {
    return CudaFail(*s->driver, r, "cuGraphLaunch") << " replaying the plan of " << e->module->facts.num_calls
                                                    << " kernels on CUDA device " << s->device->ordinal;
  }
  return AGATE_OK;
}

// Kernel by kernel between events; out_call_ns[c] is call c's device time.
agate_status_t LaunchProfiled(agate_executor* e, CudaExecutorState* s, uint64_t* out_call_ns) {
  const cu::DriverApi& d = *s->driver;
  const uint32_t num_calls = e->module->facts.num_calls;
  if (s->events == nullptr) {
    s->events = static_cast<cu::Event*>(calloc(num_calls + 1, sizeof(cu::Event)));
    if (s->events == nullptr) return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the profiling events";
    for (uint32_t c = 0; c <= num_calls; ++c) {
      const cu::Result r = d.EventCreate(&s->events[c], cu::kEventDefault);
      if (r != cu::kSuccess) {  // none kept: the next profiled run tries again
        for (uint32_t made = 0; made < c; ++made) d.EventDestroy(s->events[made]);
        free(s->events);
        s->events = nullptr;
        return CudaFail(d, r, "cuEventCreate") << " for profiling";
      }
    }
  }
  cu::Result r = d.EventRecord(s->events[0], s->stream);
  for (uint32_t c = 0; c < num_calls && r == cu::kSuccess; ++c) {
    agate_status_t status = Launch(e, s, c);
    if (status != AGATE_OK) return status;
    r = d.EventRecord(s->events[c + 1], s->stream);
  }
  if (r != cu::kSuccess) return CudaFail(d, r, "cuEventRecord") << " for profiling";
  if ((r = d.StreamSynchronize(s->stream)) != cu::kSuccess) {
    return CudaFail(d, r, "cuStreamSynchronize") << " after a profiled run on CUDA device " << s->device->ordinal;
  }
  for (uint32_t c = 0; c < num_calls; ++c) {
    float ms = 0;
    if ((r = d.EventElapsedTime(&ms, s->events[c], s->events[c + 1])) != cu::kSuccess) {
      return CudaFail(d, r, "cuEventElapsedTime") << " for kernel '" << KernelName(*e->module->fb, c) << "' (plan call "
                                                  << c << ")";
    }
    out_call_ns[c] = ms > 0 ? static_cast<uint64_t>(static_cast<double>(ms) * 1e6 + 0.5) : 0;
  }
  return AGATE_OK;
}

// What a CUDA module accepts for a tensor: host memory, or memory of its GPU.
enum class Placement { kHost, kDevice, kInvalid };

Placement PlacementOf(const DLTensor& t) {
  switch (t.device.device_type) {
    case kDLCPU:
    case kDLCUDAHost: return Placement::kHost;
    case kDLCUDA:
    case kDLCUDAManaged: return Placement::kDevice;
    default: return Placement::kInvalid;
  }
}

// Device memory the kernels may read or write in place: of the module's GPU,
// 16-byte aligned (kernels may use 128-bit accesses), `bytes` inside one allocation.
agate_status_t CheckDeviceMemory(const agate_executor& e, const DLTensor& t, const char* role, uint32_t index,
                                 const char* name, uint64_t bytes) {
  const CudaExecutorState& s = *static_cast<const CudaExecutorState*>(e.device_state);
  const cu::DriverApi& d = *s.driver;
  if (t.device.device_id != e.module->device_id) {
    return Fail(AGATE_INVALID_ARGUMENT) << role << " " << index << " '" << name << "' is on CUDA device "
                                        << t.device.device_id << "; the module is loaded on CUDA device "
                                        << e.module->device_id;
  }
  if (bytes == 0) return AGATE_OK;
  const cu::DevicePtr address = AsDevicePtr(t.data) + t.byte_offset;
  if (address % 16 != 0) {
    return Fail(AGATE_INVALID_ARGUMENT) << role << " " << index << " '" << name
                                        << "' device memory is not 16-byte aligned (kernels may use 128-bit accesses)";
  }
  agate_status_t status = MakeCurrent(d, *s.device);
  if (status != AGATE_OK) return status;
  int ordinal = -1;
  cu::Result r = d.PointerGetAttribute(&ordinal, cu::kPointerAttributeDeviceOrdinal, address);
  if (r != cu::kSuccess) {
    return Fail(AGATE_INVALID_ARGUMENT) << role << " " << index << " '" << name << "' is marked as CUDA memory (DLPack "
                                        << static_cast<int32_t>(t.device.device_type)
                                        << ") but the driver does not know its address";
  }
  if (ordinal != e.module->device_id) {
    return Fail(AGATE_INVALID_ARGUMENT) << role << " " << index << " '" << name << "' memory belongs to CUDA device "
                                        << ordinal << "; the module is loaded on CUDA device " << e.module->device_id;
  }
  cu::DevicePtr base = 0;
  size_t size = 0;
  r = d.MemGetAddressRange(&base, &size, address);
  if (r == cu::kSuccess && (address < base || bytes > size - (address - base))) {
    return Fail(AGATE_INVALID_ARGUMENT) << role << " " << index << " '" << name << "' needs " << bytes
                                        << " bytes, but its allocation holds " << size - (address - base)
                                        << " from that address";
  }
  return AGATE_OK;
}

}  // namespace

agate_status_t CreateCudaExecutor(agate_executor* e) {
  const agate_module& module = *e->module;
  const fb::Module& m = *module.fb;
  const CudaModuleState& cm = *static_cast<const CudaModuleState*>(module.device_state);
  agate_status_t status = MakeCurrent(*cm.driver, *cm.device);
  if (status != AGATE_OK) return status;
  CudaExecutorState* s = static_cast<CudaExecutorState*>(calloc(1, sizeof(CudaExecutorState)));
  if (s == nullptr) return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the CUDA executor";
  s->driver = cm.driver;
  s->device = cm.device;
  s->module = &cm;
  const uint32_t num_calls = module.facts.num_calls;
  s->staging = static_cast<cu::DevicePtr*>(calloc(m.inputs()->size() + 1, sizeof(cu::DevicePtr)));
  s->params = static_cast<void**>(calloc(module.facts.total_args + num_calls + 1, sizeof(void*)));
  s->first_param = static_cast<uint32_t*>(calloc(num_calls + 1, sizeof(uint32_t)));
  s->slot_inputs = static_cast<cu::DevicePtr*>(calloc(m.inputs()->size() + 1, sizeof(cu::DevicePtr)));
  s->slot_outputs = static_cast<cu::DevicePtr*>(calloc(m.outputs()->size() + 1, sizeof(cu::DevicePtr)));
  if (s->staging == nullptr || s->params == nullptr || s->first_param == nullptr || s->slot_inputs == nullptr ||
      s->slot_outputs == nullptr) {
    FreeState(s, num_calls);
    return Fail(AGATE_RESOURCE_EXHAUSTED) << "cannot allocate the CUDA executor";
  }
  const cu::Result r = s->driver->StreamCreate(&s->stream, cu::kStreamNonBlocking);
  if (r != cu::kSuccess) {
    s->stream = nullptr;
    status = CudaFail(*s->driver, r, "cuStreamCreate") << " on CUDA device " << s->device->ordinal;
  }
  if (status == AGATE_OK) status = AllocateMemory(e, s);
  if (status != AGATE_OK) {
    FreeState(s, num_calls);
    return status;
  }
  BindParameters(e, s);
  e->device_state = s;
  return AGATE_OK;
}

void FreeCudaExecutor(agate_executor* e) {
  CudaExecutorState* s = StateOf(e);
  if (s == nullptr) return;
  MakeCurrent(*s->driver, *s->device);  // best effort: the frees below say nothing either way
  FreeState(s, e->module->facts.num_calls);
  e->device_state = nullptr;
}

agate_status_t RunCudaExecutor(agate_executor* e, uint64_t* out_call_ns) {
  CudaExecutorState* s = StateOf(e);
  const cu::DriverApi& d = *s->driver;
  const fb::Module& m = *e->module->fb;
  for (uint32_t i = 0; i < m.inputs()->size(); ++i) {
    if (e->inputs[i] == nullptr) {
      return Fail(AGATE_INVALID_ARGUMENT) << "input " << i << " '" << m.inputs()->Get(i)->name()->c_str()
                                          << "' is not bound (agate_executor_set_input)";
    }
  }
  agate_status_t status = MakeCurrent(d, *s->device);
  if (status != AGATE_OK) return status;
  UpdateSlots(e, s);
  for (uint32_t i = 0; i < m.inputs()->size() && status == AGATE_OK; ++i) {
    const uint64_t bytes = TensorBytes(*m.inputs()->Get(i));
    if (e->input_on_device[i] || bytes == 0) continue;
    const cu::Result r = d.MemcpyHtoDAsync(s->staging[i], e->inputs[i], static_cast<size_t>(bytes), s->stream);
    if (r != cu::kSuccess) {
      status = CudaFail(d, r, "cuMemcpyHtoDAsync") << " of input " << i << " '"
                                                   << m.inputs()->Get(i)->name()->c_str() << "' (" << bytes
                                                   << " bytes)";
    }
  }
  if (status == AGATE_OK && out_call_ns != nullptr) {
    status = LaunchProfiled(e, s, out_call_ns);  // synchronizes when it succeeds
    if (status == AGATE_OK) return AGATE_OK;
  } else if (status == AGATE_OK) {
    status = LaunchPlan(e, s);
  }
  // Whatever was enqueued before a failure must finish before the caller may
  // touch its inputs again, so the stream is synchronized on every path.
  const cu::Result r = d.StreamSynchronize(s->stream);
  if (status != AGATE_OK) return status;
  if (r != cu::kSuccess) {
    return CudaFail(d, r, "cuStreamSynchronize") << " after running the plan's " << e->module->facts.num_calls
                                                 << " kernels on CUDA device " << s->device->ordinal
                                                 << " (agate run --profile names the failing kernel)";
  }
  return AGATE_OK;
}

agate_status_t SetCudaInput(agate_executor* e, uint32_t index, const DLTensor* tensor) {
  const fb::Tensor& info = *e->module->fb->inputs()->Get(index);
  const char* name = info.name()->c_str();
  if (tensor == nullptr) return Fail(AGATE_INVALID_ARGUMENT) << "input " << index << " '" << name << "': tensor is NULL";
  const Placement placement = PlacementOf(*tensor);
  if (placement == Placement::kInvalid) {
    return Fail(AGATE_INVALID_ARGUMENT) << "input " << index << " '" << name << "' is on DLPack device type "
                                        << static_cast<int32_t>(tensor->device.device_type)
                                        << "; a CUDA module takes host memory (kDLCPU, kDLCUDAHost) or memory of its "
                                           "GPU (kDLCUDA, kDLCUDAManaged)";
  }
  agate_status_t status = CheckTensorMatches(info, tensor, tensor->device.device_type, "input", index);
  if (status == AGATE_OK && placement == Placement::kDevice) {
    status = CheckDeviceMemory(*e, *tensor, "input", index, name, TensorBytes(info));
  }
  if (status != AGATE_OK) return status;
  // A zero-element tensor may have no storage; a non-NULL slot means "bound".
  static uint8_t no_storage = 0;
  e->inputs[index] = tensor->data != nullptr ? static_cast<uint8_t*>(tensor->data) + tensor->byte_offset : &no_storage;
  e->input_on_device[index] = placement == Placement::kDevice && tensor->data != nullptr;
  return AGATE_OK;
}

agate_status_t SetCudaOutput(agate_executor* e, uint32_t index, const DLTensor* tensor) {
  if (tensor == nullptr) {
    e->outputs[index] = e->own_outputs[index];
    return AGATE_OK;
  }
  const fb::Tensor& info = *e->module->fb->outputs()->Get(index);
  const char* name = info.name()->c_str();
  if (PlacementOf(*tensor) != Placement::kDevice) {
    return Fail(AGATE_INVALID_ARGUMENT) << "output " << index << " '" << name << "' is on DLPack device type "
                                        << static_cast<int32_t>(tensor->device.device_type)
                                        << "; a CUDA module writes outputs to its GPU's memory (kDLCUDA, "
                                           "kDLCUDAManaged): copy host outputs out with agate_executor_copy_output";
  }
  agate_status_t status = CheckTensorMatches(info, tensor, tensor->device.device_type, "output", index);
  if (status == AGATE_OK) status = CheckDeviceMemory(*e, *tensor, "output", index, name, TensorBytes(info));
  if (status != AGATE_OK) return status;
  if (tensor->data == nullptr) {  // a zero-element output: nothing is written
    e->outputs[index] = e->own_outputs[index];
  } else {
    e->outputs[index] = static_cast<uint8_t*>(tensor->data) + tensor->byte_offset;
  }
  return AGATE_OK;
}

agate_status_t CopyCudaOutput(agate_executor* e, uint32_t index, const DLTensor* dst) {
  CudaExecutorState* s = StateOf(e);
  const cu::DriverApi& d = *s->driver;
  const fb::Tensor& info = *e->module->fb->outputs()->Get(index);
  const char* name = info.name()->c_str();
  if (dst == nullptr) return Fail(AGATE_INVALID_ARGUMENT) << "output " << index << " '" << name << "': tensor is NULL";
  const Placement placement = PlacementOf(*dst);
  if (placement == Placement::kInvalid) {
    return Fail(AGATE_INVALID_ARGUMENT) << "output " << index << " '" << name << "' destination is on DLPack device type "
                                        << static_cast<int32_t>(dst->device.device_type)
                                        << "; copy to host memory or to memory of the module's GPU";
  }
  agate_status_t status = CheckTensorMatches(info, dst, dst->device.device_type, "output", index);
  const uint64_t bytes = TensorBytes(info);
  if (status == AGATE_OK && placement == Placement::kDevice) {
    status = CheckDeviceMemory(*e, *dst, "output", index, name, bytes);
  }
  if (status == AGATE_OK) status = MakeCurrent(d, *s->device);
  if (status != AGATE_OK || bytes == 0) return status;
  const cu::DevicePtr source = AsDevicePtr(e->outputs[index]);
  uint8_t* target = static_cast<uint8_t*>(dst->data) + dst->byte_offset;
  cu::Result r = cu::kSuccess;
  if (placement == Placement::kHost) {
    r = d.MemcpyDtoHAsync(target, source, static_cast<size_t>(bytes), s->stream);
  } else {
    r = d.MemcpyDtoDAsync(AsDevicePtr(target), source, static_cast<size_t>(bytes), s->stream);
  }
  const cu::Result synced = d.StreamSynchronize(s->stream);
  if (r == cu::kSuccess) r = synced;
  if (r != cu::kSuccess) {
    return CudaFail(d, r, placement == Placement::kHost ? "cuMemcpyDtoHAsync" : "cuMemcpyDtoDAsync")
           << " of output " << index << " '" << name << "' (" << bytes << " bytes)";
  }
  return AGATE_OK;
}

}  // namespace rt
}  // namespace agate
