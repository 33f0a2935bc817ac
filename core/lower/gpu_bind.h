// BindThreads: loops bound to blockIdx/threadIdx become GPU launches.
//
// Why: a schedule binds loops of different stages to GPU axes wherever they
// are (an output's tiles to blockIdx.x and threadIdx.x, a shared-memory copy's
// loop to threadIdx.x inside the output's reduction loop), while a CUDA kernel
// has one grid and one block shape and every thread runs the whole body. This
// pass turns each root loop nest that holds bound loops into one launch of the
// form in core/ir/gpu_launch.h:
//  * the extent of an axis is the largest extent of the loops bound to it
//    (every such extent must be a compile-time constant); a loop with a
//    smaller extent becomes `if (threadIdx.x < extent)`;
//  * a bound loop becomes `let var = min + threadIdx.x`: loops bound to the
//    same axis take the same index (the cooperative-fetch pattern);
//  * shared buffers move to the block level (one per block) and are laid out in
//    the block's dynamic shared memory (16-byte aligned offsets);
//  * a store to shared or global memory outside some axis's loops, which every
//    thread (or block) of that axis would repeat, is done by index 0 only.
// Root nests run as separate launches in order (a group whose stages each read
// the whole of the previous one becomes several launches named `name`,
// `name_1`, ...). VerifyGpuBinding (gpu_verify.h) must have accepted the input:
// every loop at kernel level is bound.
#ifndef AGATE_CORE_LOWER_GPU_BIND_H_
#define AGATE_CORE_LOWER_GPU_BIND_H_

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "core/ir/gpu_launch.h"
#include "core/ir/stmt.h"

namespace agate {
namespace lower {

ir::Stmt BindThreads(const ir::Stmt& body, const std::string& kernel_name);

// A launch taken apart, for the passes that rewrite launches after binding
// (shared buffers they add are laid out again by AssembleLaunch).
struct LaunchParts {
  std::string name;
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  std::array<ir::Var, 3> block_vars = ir::NoVars();   // undefined where the axis is unused
  std::array<ir::Var, 3> thread_vars = ir::NoVars();
  // Shared buffers: where they start in the block's dynamic shared memory. Buffers
  // whose lifetimes did not overlap before they were moved to the block level
  // (the main and tail copies of a partitioned loop) share bytes; InsertSyncThreads
  // treats overlapping buffers as one. offset -1: to be placed after the others.
  struct SharedBuffer {
    ir::Buffer buffer;
    int64_t elements = 0;
    int64_t offset = -1;
    int64_t bytes() const { return elements * buffer->dtype.element_bytes(); }
  };
  std::vector<SharedBuffer> shared;
  ir::Stmt code;
  int64_t threads_per_block() const { return block[0] * block[1] * block[2]; }
};

LaunchParts DisassembleLaunch(const ir::GpuLaunch& launch);
// Places the shared buffers without an offset after the others (16-byte aligned)
// and builds the launch.
ir::Stmt AssembleLaunch(const LaunchParts& parts);
// Rewrites every launch of `body` with `f`.
ir::Stmt MapLaunches(const ir::Stmt& body, const std::function<void(LaunchParts*)>& f);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_GPU_BIND_H_
