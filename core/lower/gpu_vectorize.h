// PrepareGpuVectorize: which vectorized loops become wide memory accesses on a GPU.
//
// Why: on a GPU a "vector" is one thread loading 8 or 16 bytes with one
// instruction (float2/float4): it halves or quarters the memory instructions of
// a bandwidth-bound kernel, but only when the access is contiguous and its first
// element is aligned to the access width; a misaligned wide access faults. A
// vectorized loop whose every access depending on its variable is
// buffer[base + var] with a base provably divisible by the loop's extent, and
// whose accesses are 8 or 16 bytes wide, stays vectorized (the vectorize pass
// turns it into Ramp loads and stores, which the CUDA backend emits as wide
// accesses where the buffer's final alignment allows). Every other vectorized
// loop becomes an unrolled loop: plain per-element accesses, never a fault.
#ifndef AGATE_CORE_LOWER_GPU_VECTORIZE_H_
#define AGATE_CORE_LOWER_GPU_VECTORIZE_H_

#include "core/ir/stmt.h"

namespace agate {
namespace lower {

ir::Stmt PrepareGpuVectorize(const ir::Stmt& body, int max_vector_bytes = 16);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_GPU_VECTORIZE_H_
