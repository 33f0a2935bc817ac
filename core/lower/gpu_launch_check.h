// CheckGpuLaunches: every launch of a kernel fits the GPU it is compiled for.
//
// Why: a launch with more threads per block or more shared memory than the
// architecture allows fails only when it is run, on the user's GPU, with a
// driver error that names neither the operator nor the schedule. The limits of
// the target architecture (core/target's CUDA description) are known at
// compile time, so the compiler refuses such kernels with a message naming the
// kernel, the figure and the limit (kResourceExhausted).
#ifndef AGATE_CORE_LOWER_GPU_LAUNCH_CHECK_H_
#define AGATE_CORE_LOWER_GPU_LAUNCH_CHECK_H_

#include <cstdint>
#include <string>

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

// What the GPU passes need to know about the target architecture.
struct GpuLimits {
  std::string arch = "sm_80";             // for messages
  int64_t max_threads_per_block = 1024;
  int64_t max_block_dim[3] = {1024, 1024, 64};
  int64_t max_grid_dim[3] = {2147483647, 65535, 65535};
  int64_t max_shared_bytes_per_block = 48 * 1024;  // the opt-in maximum for dynamic shared memory
  int warp_size = 32;
  int max_vector_bytes = 16;              // the widest load or store of one thread
};

void CheckGpuLaunches(const ir::Stmt& body, const GpuLimits& limits);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_GPU_LAUNCH_CHECK_H_
