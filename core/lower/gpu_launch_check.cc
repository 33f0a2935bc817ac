#include "core/lower/gpu_launch_check.h"

#include "core/ir/gpu_launch.h"
#include "core/support/error.h"

namespace agate {
namespace lower {

void CheckGpuLaunches(const ir::Stmt& body, const GpuLimits& limits) {
  const char* axis = "xyz";
  for (const ir::GpuLaunch& l : ir::CollectGpuLaunches(body)) {
    AGATE_REQUIRE(l.threads_per_block() <= limits.max_threads_per_block, kResourceExhausted)
        << "kernel " << l.name << ": " << l.threads_per_block() << " threads per block (" << l.block[0] << " x "
        << l.block[1] << " x " << l.block[2] << "), more than the " << limits.max_threads_per_block << " of "
        << limits.arch << "; bind smaller loops to threadIdx";
    for (int d = 0; d < 3; ++d) {
      AGATE_REQUIRE(l.block[d] <= limits.max_block_dim[d], kResourceExhausted)
          << "kernel " << l.name << ": threadIdx." << axis[d] << " has extent " << l.block[d] << ", more than the "
          << limits.max_block_dim[d] << " of " << limits.arch;
      AGATE_REQUIRE(l.grid[d] <= limits.max_grid_dim[d], kResourceExhausted)
          << "kernel " << l.name << ": blockIdx." << axis[d] << " has extent " << l.grid[d] << ", more than the "
          << limits.max_grid_dim[d] << " of " << limits.arch << "; fuse it into blockIdx.x";
    }
    AGATE_REQUIRE(l.shared_bytes <= limits.max_shared_bytes_per_block, kResourceExhausted)
        << "kernel " << l.name << ": " << l.shared_bytes << " bytes of shared memory per block, more than the "
        << limits.max_shared_bytes_per_block << " of " << limits.arch << "; use smaller tiles";
  }
}

}  // namespace lower
}  // namespace agate
