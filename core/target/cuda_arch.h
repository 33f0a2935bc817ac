// CudaArch: the figures of an NVIDIA GPU architecture that code generation,
// the launch checks and `agate inspect` need, in one table.
//
// Why here: core/target is the one description of the machine code runs on.
// A schedule sizes its tiles by the shared memory per block, the lowering
// refuses launches above the threads or shared memory an architecture allows,
// and inspect computes theoretical occupancy (resident warps per SM) from
// registers and shared memory, so all of them read these figures (from NVIDIA's
// CUDA C Programming Guide, "Technical Specifications per Compute Capability").
#ifndef AGATE_CORE_TARGET_CUDA_ARCH_H_
#define AGATE_CORE_TARGET_CUDA_ARCH_H_

#include <cstdint>
#include <string>
#include <vector>

namespace agate {
namespace target {

struct CudaArch {
  int sm;                                  // compute capability major * 10 + minor: 80 for sm_80
  const char* example;                     // a GPU of the architecture, for messages
  int max_threads_per_block;
  int max_threads_per_sm;
  int max_blocks_per_sm;
  int registers_per_sm;
  int max_registers_per_thread;
  int register_allocation_unit;            // registers are given to a warp in units of this many
  int64_t shared_bytes_per_sm;             // the largest shared-memory carve-out
  int64_t max_shared_bytes_per_block;      // with the opt-in above 48 KiB (cuFuncSetAttribute)
  int64_t reserved_shared_bytes_per_block; // the driver's own shared memory per block
  int shared_allocation_unit;              // shared memory is given to a block in units of this many bytes
  int warp_size;
  std::string name() const { return "sm_" + std::to_string(sm); }
  int max_warps_per_sm() const { return max_threads_per_sm / warp_size; }
};

// Every architecture agate compiles for, oldest first: sm_70, sm_75, sm_80, sm_86, sm_89, sm_90.
const std::vector<CudaArch>& CudaArchs();
// The entry for `sm`, or nullptr.
const CudaArch* FindCudaArch(int sm);
// "sm_70, sm_75, ...".
std::string CudaArchList();

// How many blocks of a kernel one SM holds at once, and what stops more.
struct Occupancy {
  int blocks_per_sm = 0;
  int warps_per_sm = 0;
  double fraction = 0;           // resident warps / the SM's maximum
  std::string limited_by;        // "threads", "blocks", "registers" or "shared memory"
};
Occupancy TheoreticalOccupancy(const CudaArch& arch, int64_t threads_per_block, int registers_per_thread,
                               int64_t shared_bytes_per_block);

// The compute capability of the machine's first GPU (major * 10 + minor), asked
// of the CUDA driver opened with dlopen (never linked); 0 when there is no
// driver or no GPU. Asked once per process.
int LocalCudaArch();

}  // namespace target
}  // namespace agate

#endif  // AGATE_CORE_TARGET_CUDA_ARCH_H_
