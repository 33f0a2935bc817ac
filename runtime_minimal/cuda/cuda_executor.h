// A CUDA executor: the device memory of one run and the way the plan is
// launched.
//
// Memory, allocated when the executor is created (so a run allocates nothing
// and an out-of-memory GPU fails there, leaving the module usable): the arena
// (the compile-time memory plan's intermediates), the kernels' workspace, the
// outputs and a staging buffer per input for host inputs, each block from one
// cuMemAlloc with every buffer 256-byte aligned.
//
// Calling convention: a kernel's parameters are the call's argument device
// addresses in plan order plus, when its Kernel.workspace_bytes > 0, one last
// pointer to the executor's workspace. The argument slots of the host executor
// (agate_executor.args) hold the device addresses; each kernel parameter points
// at its slot.
//
// Launching: batch-1 inference is launch-bound, so the first run records the
// whole plan on the executor's stream as a CUDA graph (stream capture) and every
// run replays it with one cuGraphLaunch. The graph bakes in the device addresses
// of inputs and outputs; when one changes (an input or output bound to other
// device memory, or a host input after a device one) the graph is recorded
// again. Host inputs are copied into their staging buffers on the stream before
// the replay; device inputs are read in place. A driver that cannot capture
// falls back to launching kernel by kernel. Profiled runs launch kernel by
// kernel with CUDA events around each.
//
// Ownership: the state belongs to the agate_executor (executor->device_state)
// and is freed by FreeCudaExecutor; it borrows the module's CudaModuleState.
#ifndef AGATE_RUNTIME_MINIMAL_CUDA_CUDA_EXECUTOR_H_
#define AGATE_RUNTIME_MINIMAL_CUDA_CUDA_EXECUTOR_H_

#include <stdint.h>

#include "runtime_minimal/core/executor.h"
#include "runtime_minimal/cuda/cuda_module.h"

namespace agate {
namespace rt {

struct CudaExecutorState {
  const cu::DriverApi* driver;
  const CudaDevice* device;
  const CudaModuleState* module;
  cu::Stream stream;
  cu::DevicePtr arena;
  cu::DevicePtr workspace;
  cu::DevicePtr outputs_block;
  cu::DevicePtr staging_block;
  cu::DevicePtr* staging;        // per input: where a host input is copied to
  void** params;                 // every call's kernel parameters, back to back
  uint32_t* first_param;         // per call: the index of its first parameter in params
  // The device addresses the argument slots (and the recorded graph) hold now.
  cu::DevicePtr* slot_inputs;    // per input
  cu::DevicePtr* slot_outputs;   // per output
  bool slots_written;
  cu::GraphExec graph;           // NULL: none recorded (yet, or since an address changed)
  bool graphs_unsupported;       // the driver refused stream capture: launch directly
  uint64_t graph_recordings;     // how many times the plan was recorded (tests, diagnostics)
  cu::Event* events;             // profiling: num_calls + 1, created on the first profiled run
};

agate_status_t CreateCudaExecutor(agate_executor* executor);
void FreeCudaExecutor(agate_executor* executor);
agate_status_t RunCudaExecutor(agate_executor* executor, uint64_t* out_call_ns);
agate_status_t SetCudaInput(agate_executor* executor, uint32_t index, const DLTensor* tensor);
agate_status_t SetCudaOutput(agate_executor* executor, uint32_t index, const DLTensor* tensor);
agate_status_t CopyCudaOutput(agate_executor* executor, uint32_t index, const DLTensor* dst);

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CUDA_CUDA_EXECUTOR_H_
