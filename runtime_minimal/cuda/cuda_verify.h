// The checks of a CUDA module's payload, beyond what VerifyModule (core) checks.
//
// Why apart from runtime_minimal/core/verify.cc: only the cuda profile runs CUDA
// modules, so a microcontroller build does not carry these checks (its flash
// budget is 8 KiB); the cuda backend runs them before it touches the driver, and
// the module writer (core/serialize) runs them too, so the compiler never writes
// a CUDA module the runtime would refuse. No driver is needed.
//
// Checked: every kernel has a launch description and an image (its own, format
// 1.0, or the module's Module.cuda_images, format 1.1: one or the other); the
// module images have a known kind, bytes, a plausible compute capability and no
// duplicate (kind, arch); every launch is within CUDA's fixed limits (1024
// threads per block, block z <= 64, grid x < 2^31, grid y and z <= 65535);
// ptxas figures within what any GPU has (255 registers per thread, 48 KiB of
// static shared memory); arena arguments 16-byte aligned (kernels may use
// 128-bit accesses). Image checksums are checked just before an image is
// handed to the driver (cuda_module.cc), like the host object's.
#ifndef AGATE_RUNTIME_MINIMAL_CUDA_CUDA_VERIFY_H_
#define AGATE_RUNTIME_MINIMAL_CUDA_CUDA_VERIFY_H_

#include <stdint.h>

#include "agate/status.h"
#include "runtime_minimal/core/verify.h"

namespace agate {
namespace rt {

// Most module-wide CUDA images (Module.cuda_images) a module may carry.
constexpr uint32_t kMaxCudaImages = 64;

// Checks a module VerifyModule accepted; AGATE_OK for modules of other targets
// unless they carry CUDA payload (refused: AGATE_CORRUPT).
agate_status_t VerifyCudaPayload(const fb::Module& module);

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CUDA_CUDA_VERIFY_H_
