// CodeGenCUDA: lowered loop IR in GPU launch form to CUDA C.
//
// Why CUDA C (compiled by NVRTC, nvrtc.h) rather than LLVM's NVPTX backend:
// NVRTC is NVIDIA's own compiler, current for every architecture (LLVM 14's
// NVPTX stops at sm_86 and PTX 7.5), it returns a cubin for the exact
// architecture and the PTX for forward compatibility from one compile, and it
// reports each kernel's registers and shared memory at compile time; the
// source is also the most readable form of what a schedule does (--dump-ir).
//
// Every launch of a function (core/ir/gpu_launch.h) becomes one
//   extern "C" __global__ void __launch_bounds__(threads) name(T* __restrict__ arg0, ...)
// whose parameters are the function's buffers in order (const when the launch
// only reads them), then `unsigned char* agate_workspace` when the function
// needs a workspace (LoweredFunc::workspace_bytes > 0). This is the calling
// convention of the module's CUDA kernels: the runtime passes the call's
// argument device pointers in plan order, then the device workspace.
//  * Shared buffers live in the block's dynamic shared memory at the offsets
//    lowering chose; the launch's dynamic shared-memory size is their extent.
//  * The source needs no header, not even CUDA's: float16 and bfloat16 are
//    stored as 16-bit integers and computed in float32, rounded after every
//    operation exactly as the evaluator does (core/loop_eval).
//  * Vector code is written lane by lane; a vector load or store of 8 or 16
//    bytes whose first element is provably aligned (the buffer's alignment and
//    the index's known divisor, core/ir/divisor.h) is one wide access.
//  * A failed AssertStmt traps (the launch fails; a GPU kernel returns no status).
#ifndef AGATE_CORE_CODEGEN_CUDA_CODEGEN_CUDA_H_
#define AGATE_CORE_CODEGEN_CUDA_CODEGEN_CUDA_H_

#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/ir/gpu_launch.h"
#include "core/target/target.h"

namespace agate {
namespace codegen {

// One __global__ function of the generated source.
struct CudaKernelSource {
  std::string name;
  ir::GpuLaunch launch;       // geometry and dynamic shared memory
  int64_t workspace_bytes = 0;  // > 0: the last parameter is the workspace
  size_t num_params = 0;        // buffer parameters before the workspace
};

struct CudaSource {
  std::string code;                      // one translation unit
  std::vector<CudaKernelSource> kernels;  // in the order the functions' launches run
};

// Throws agate::Error: kInvalidArgument for a non-cuda target or duplicate
// kernel names, kIllegalSchedule for a function not lowered for a GPU (no
// launches), kInternal for IR that breaks the launch form.
CudaSource GenerateCuda(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target);

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_CUDA_CODEGEN_CUDA_H_
