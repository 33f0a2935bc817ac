#include "runtime_minimal/core/executor.h"

#include <string.h>

#include "runtime_minimal/core/message.h"

namespace agate {
namespace rt {
namespace {

size_t AlignUp(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

void* ArgAddress(const agate_executor& e, const fb::Module& m, const fb::Arg& arg) {
  switch (arg.kind()) {
    case fb::ArgKind::Input: return nullptr;  // bound by set_input
    case fb::ArgKind::Output: return e.outputs[arg.index()];
    case fb::ArgKind::Arena: return e.arena + arg.offset();
    case fb::ArgKind::Constant:
      return const_cast<uint8_t*>(m.constants()->Get(arg.index())->data()->data());
  }
  return nullptr;
}

// Starts "<role> <index> '<name>'": the prefix every tensor mismatch shares
// (one call site instead of seven keeps microcontroller builds small).
Message TensorFail(const char* role, uint32_t index, const char* name, SourceLine where = SourceLine::Current()) {
  Message m = Fail(AGATE_INVALID_ARGUMENT, where);
  m << role << " " << index << " '" << name << "'";
  return m;
}

}  // namespace

size_t ExecutorTablesBytes(const agate_module& module) {
  const fb::Module& m = *module.fb;
  size_t bytes = AlignUp(sizeof(agate_executor), 8);
  bytes += sizeof(CallRecord) * module.facts.num_calls;
  bytes += sizeof(void*) * module.facts.total_args;
  bytes += sizeof(void*) * m.inputs()->size();
  bytes += 2 * sizeof(uint8_t*) * m.outputs()->size();  // outputs, own_outputs
  bytes += m.inputs()->size();  // input_on_device
  return AlignUp(bytes, 64);
}

size_t ExecutorInPlaceBytes(const agate_module& module) {
  const fb::Module& m = *module.fb;
  const size_t arena_slack = m.arena_alignment() > 64 ? m.arena_alignment() - 64 : 0;
  return ExecutorTablesBytes(module) + static_cast<size_t>(module.facts.outputs_bytes) + arena_slack +
         AlignUp(static_cast<size_t>(m.arena_bytes()), 64) + static_cast<size_t>(m.workspace_bytes());
}

agate_executor* InitExecutor(const agate_module& module, void* tables, uint8_t* arena, uint8_t* workspace,
                             uint8_t* outputs_block) {
  const fb::Module& m = *module.fb;
  uint8_t* p = static_cast<uint8_t*>(tables);
  agate_executor* e = reinterpret_cast<agate_executor*>(p);
  memset(e, 0, sizeof(*e));
  p += AlignUp(sizeof(agate_executor), 8);
  e->calls = reinterpret_cast<CallRecord*>(p);
  p += sizeof(CallRecord) * module.facts.num_calls;
  e->args = reinterpret_cast<void**>(p);
  p += sizeof(void*) * module.facts.total_args;
  e->inputs = reinterpret_cast<void**>(p);
  p += sizeof(void*) * m.inputs()->size();
  e->outputs = reinterpret_cast<uint8_t**>(p);
  p += sizeof(uint8_t*) * m.outputs()->size();
  e->own_outputs = reinterpret_cast<uint8_t**>(p);
  p += sizeof(uint8_t*) * m.outputs()->size();
  e->input_on_device = p;

  e->module = &module;
  e->arena = arena;
  e->arena_bytes = m.arena_bytes();
  e->workspace = m.workspace_bytes() != 0 ? workspace : nullptr;
  for (uint32_t i = 0; i < m.inputs()->size(); ++i) {
    e->inputs[i] = nullptr;
    e->input_on_device[i] = 0;
  }
  uint8_t* out = outputs_block;
  for (uint32_t o = 0; o < m.outputs()->size(); ++o) {
    e->outputs[o] = out;
    e->own_outputs[o] = out;
    out += AlignUp(static_cast<size_t>(TensorBytes(*m.outputs()->Get(o))), 64);
  }
  void** slot = e->args;
  for (uint32_t c = 0; c < module.facts.num_calls; ++c) {
    const fb::Call& call = *m.plan()->Get(c);
    CallRecord& record = e->calls[c];
    record.fn = module.kernels != nullptr ? module.kernels[call.kernel()] : nullptr;
    record.args = slot;
    record.workspace_bytes = m.kernels()->Get(call.kernel())->workspace_bytes();
    for (const fb::Arg* arg : *call.args()) *slot++ = ArgAddress(*e, m, *arg);
  }
  e->ctx.abi_version = AGATE_KERNEL_ABI_VERSION;
  e->ctx.parallel_for = SerialParallelFor;
  e->ctx.pool = nullptr;
  e->ctx.num_threads = 1;
  e->ctx.workspace = nullptr;
  e->ctx.workspace_bytes = 0;
  return e;
}

int32_t SerialParallelFor(void* pool, agate_parallel_task_fn task, void* closure, int32_t num_tasks) {
  (void)pool;
  for (int32_t t = 0; t < num_tasks; ++t) {
    const int32_t rc = task(t, num_tasks, closure);
    if (rc != 0) return rc;
  }
  return 0;
}

agate_status_t CheckTensorMatches(const fb::Tensor& info, const DLTensor* tensor, int32_t device_type,
                                  const char* role, uint32_t index) {
  const char* name = info.name()->c_str();
  if (tensor == nullptr) return TensorFail(role, index, name) << ": tensor is NULL";
  if (tensor->device.device_type != device_type) {
    return TensorFail(role, index, name) << " is on DLPack device type "
                                        << static_cast<int32_t>(tensor->device.device_type) << "; the module needs "
                                        << device_type;
  }
  const DLDataType want = ToDLDataType(*info.dtype());
  if (tensor->dtype.code != want.code || tensor->dtype.bits != want.bits || tensor->dtype.lanes != want.lanes) {
    return TensorFail(role, index, name) << " has dtype (code "
                                        << tensor->dtype.code << ", bits " << tensor->dtype.bits << ", lanes "
                                        << tensor->dtype.lanes << "); the module needs (code " << want.code
                                        << ", bits " << want.bits << ", lanes " << want.lanes << ")";
  }
  const auto& shape = *info.shape();
  if (tensor->ndim != static_cast<int32_t>(shape.size()) || (tensor->ndim > 0 && tensor->shape == nullptr)) {
    return TensorFail(role, index, name) << " has " << tensor->ndim
                                        << " dimensions; the module needs " << shape.size();
  }
  int64_t stride = 1;
  for (int32_t axis = tensor->ndim - 1; axis >= 0; --axis) {
    if (tensor->shape[axis] != shape.Get(axis)) {
      return TensorFail(role, index, name) << " has extent "
                                          << tensor->shape[axis] << " on axis " << axis << "; the module needs "
                                          << shape.Get(axis);
    }
    if (tensor->strides != nullptr && shape.Get(axis) != 1 && tensor->strides[axis] != stride) {
      return TensorFail(role, index, name) << " has stride "
                                          << tensor->strides[axis] << " on axis " << axis
                                          << "; agate needs compact row-major tensors (stride " << stride << ")";
    }
    stride *= shape.Get(axis);
  }
  const uintptr_t address = reinterpret_cast<uintptr_t>(tensor->data) + tensor->byte_offset;
  const uint32_t element = want.bits <= 8 ? 1 : want.bits / 8;
  // DLPack producers may give a zero-element tensor no storage (data NULL); nothing is ever read
  // or written through it, so only a tensor with elements needs a pointer.
  const bool needs_data = TensorBytes(info) != 0;
  if ((tensor->data == nullptr && needs_data) || address % element != 0) {
    return Fail(AGATE_INVALID_ARGUMENT) << role << " " << index << " '" << name
                                        << "' data is NULL or not aligned to its " << element << "-byte elements";
  }
  return AGATE_OK;
}

agate_status_t RunPlanOnCpu(agate_executor* e, uint64_t (*clock_ns)(), uint64_t* out_call_ns) {
  const fb::Module& m = *e->module->fb;
  for (uint32_t i = 0; i < m.inputs()->size(); ++i) {
    if (e->inputs[i] == nullptr) {
      return Fail(AGATE_INVALID_ARGUMENT) << "input " << i << " '" << m.inputs()->Get(i)->name()->c_str()
                                              << "' is not bound (agate_executor_set_input)";
    }
  }
  agate_kernel_ctx* ctx = &e->ctx;
  const uint32_t num_calls = e->module->facts.num_calls;
  for (uint32_t c = 0; c < num_calls; ++c) {
    const CallRecord& call = e->calls[c];
    ctx->workspace_bytes = call.workspace_bytes;
    ctx->workspace = call.workspace_bytes != 0 ? e->workspace : nullptr;
    const uint64_t start = clock_ns != nullptr ? clock_ns() : 0;
    const int32_t rc = call.fn(call.args, ctx);
    if (clock_ns != nullptr) out_call_ns[c] = clock_ns() - start;
    if (rc != 0) {
      const uint32_t k = m.plan()->Get(c)->kernel();
      return Fail(AGATE_INTERNAL) << "kernel '" << m.kernels()->Get(k)->name()->c_str() << "' (plan call " << c
                                      << ") failed with code " << rc;
    }
  }
  return AGATE_OK;
}

}  // namespace rt
}  // namespace agate
