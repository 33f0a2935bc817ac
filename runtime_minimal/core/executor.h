// The executor: the mutable memory of one run, and the loop that runs the plan.
//
// Why precomputed call records: the plan is resolved once, when the executor is
// created, into (kernel pointer, argument pointer array, workspace size) per call,
// so running a call is one indirect call with no decoding; binding an input
// patches the argument slots that name it. This keeps the executor's per-call
// overhead near that of calling the kernels directly.
#ifndef AGATE_RUNTIME_MINIMAL_CORE_EXECUTOR_H_
#define AGATE_RUNTIME_MINIMAL_CORE_EXECUTOR_H_

#include <stddef.h>
#include <stdint.h>

#include "agate/kernel_abi.h"
#include "agate/runtime.h"
#include "runtime_minimal/core/module.h"

namespace agate {
namespace rt {

struct CallRecord {
  agate_kernel_fn fn;
  void** args;
  uint64_t workspace_bytes;
};

}  // namespace rt
}  // namespace agate

struct agate_executor {
  const agate_module* module;
  agate::rt::CallRecord* calls;  // one per plan call
  void** args;                   // every call's arguments, back to back
  void** inputs;                 // bound input data, NULL until set
  uint8_t* input_on_device;      // device modules: 1 when the bound input is device memory
  uint8_t** outputs;             // output buffers (device pointers for device modules)
  uint8_t** own_outputs;         // the executor's own output buffers (outputs[i] unless
                                 // agate_executor_set_output bound the caller's memory)
  uint8_t* arena;
  uint64_t arena_bytes;
  uint8_t* workspace;
  agate_kernel_ctx ctx;
  // Set by the profile that allocated the executor (NULL when created in place).
  void (*release)(agate_executor* executor);
  void* owner;
  void* device_state;
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  // Dynamic-shape modules only (module->facts.dynamic; NULL otherwise):
  int64_t* input_rows;     // per input and symbol ([input * symbols + s]): the bound extent (0: not carried)
  int64_t* output_rows;    // per output and symbol: the extent of a caller's buffer bound by set_output
                           // (0: own buffer, or not carried)
  int64_t* output_shapes;  // every output's run-time shape, back to back (upper bounds before a run)
  void** chunk_args;       // one variant call's arguments (facts.max_variant_args)
#endif
};

namespace agate {
namespace rt {

// Bytes of the executor struct and its tables (not arena, workspace or outputs).
size_t ExecutorTablesBytes(const agate_module& module);

// The caller memory agate_executor_create_in_place needs (tables + outputs +
// arena + workspace, with alignment slack).
size_t ExecutorInPlaceBytes(const agate_module& module);

// Builds an executor in `tables` (ExecutorTablesBytes, 8-byte aligned) over the
// given arena (module arena_bytes, arena_alignment), workspace (module
// workspace_bytes, 64-byte aligned) and outputs block (facts.outputs_bytes,
// 64-byte aligned). Parallel loops run serially until the caller replaces ctx.
agate_executor* InitExecutor(const agate_module& module, void* tables, uint8_t* arena, uint8_t* workspace,
                             uint8_t* outputs_block);

// Runs tasks 0..num_tasks-1 in order on the calling thread: the core profile's
// agate_kernel_ctx.parallel_for.
int32_t SerialParallelFor(void* pool, agate_parallel_task_fn task, void* closure, int32_t num_tasks);

// Runs the plan's calls in order on the CPU (every input must be bound). When
// `clock_ns` is not NULL, call c's wall time (clock_ns() after minus before) is
// written to out_call_ns[c] (num_calls entries): the host profile's profiler;
// the core profile passes NULL and pays one untaken branch per call.
agate_status_t RunPlanOnCpu(agate_executor* e, uint64_t (*clock_ns)(), uint64_t* out_call_ns);

// Checks that `tensor` matches module tensor `info` exactly (dtype, shape,
// compact strides, device). `role` and `index` name it in the message.
agate_status_t CheckTensorMatches(const fb::Tensor& info, const DLTensor* tensor, int32_t device_type,
                                  const char* role, uint32_t index);

#ifndef AGATE_RT_STATIC_SHAPES_ONLY
using Symbols = flatbuffers::Vector<flatbuffers::Offset<fb::Symbol>>;

// Like CheckTensorMatches against `shape` (info's ndim entries) instead of info's shape; when
// `symbols` (the module's) is not NULL, each axis `dims` marks Symbolic may be any extent in its
// symbol's [min, max], one extent per symbol (written to symbol_extents[symbol], kMaxSymbols
// entries, 0 for a symbol the tensor does not carry, unless NULL), and the message for one
// outside names the axis, the symbol and its bounds.
agate_status_t CheckTensorShape(const fb::Tensor& info, const int64_t* shape, const fb::TensorDims* dims,
                                const Symbols* symbols, const DLTensor* tensor, int32_t device_type, const char* role,
                                uint32_t index, int64_t* symbol_extents);

// The symbol of input / output `index`'s first symbolic axis, or NULL when it has none.
const fb::Symbol* InputSymbol(const agate_module& module, uint32_t index);
const fb::Symbol* OutputSymbol(const agate_module& module, uint32_t index);

// Output `index`'s run-time shape after the last run (its upper bounds before the first): the
// executor's storage for dynamic modules, the module's shape for static ones.
const int64_t* OutputShape(const agate_executor& e, uint32_t index);

// The bytes output `index` holds after the last run (its run-time shape's size).
uint64_t OutputBytes(const agate_executor& e, uint32_t index);
#endif

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CORE_EXECUTOR_H_
