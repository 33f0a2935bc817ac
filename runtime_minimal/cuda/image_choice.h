// Which of a module's CUDA images (Module.cuda_images, format 1.1) a GPU loads.
//
// Why a rule of its own: a module carries a cubin for the architecture it was
// compiled for and PTX for forward compatibility. A cubin runs without any JIT
// but only on its own architecture (and on newer minor revisions of the same
// major); PTX runs on its architecture and every newer one after the driver
// JIT-compiles it (milliseconds to seconds, cached by the driver). The order:
//   1. the cubin whose arch equals the device's (no JIT, code tuned for it);
//   2. PTX, the highest arch not above the device's first (JIT for the device);
//   3. a cubin of the device's major and a lower minor, highest first (binary
//      compatible, e.g. sm_80 code on an sm_86 GPU: used when there is no PTX,
//      or when the driver cannot JIT it);
// and nothing else: a cubin of another major or a newer minor, or PTX for a
// newer arch, cannot run. The loader tries the candidates in this order until
// one loads, so PTX the driver is too old to JIT falls through to a compatible
// cubin before the load is refused.
#ifndef AGATE_RUNTIME_MINIMAL_CUDA_IMAGE_CHOICE_H_
#define AGATE_RUNTIME_MINIMAL_CUDA_IMAGE_CHOICE_H_

#include <stdint.h>

#include "runtime_minimal/core/message.h"

namespace agate {
namespace rt {

struct CudaImageRef {
  bool cubin;     // false: PTX
  uint32_t arch;  // major * 10 + minor
};

// Writes the indices of the images a device of `device_arch` can load to
// out_order (room for `count`), best first; returns how many there are (0: none).
uint32_t OrderCudaImages(const CudaImageRef* images, uint32_t count, uint32_t device_arch, uint32_t* out_order);

// Appends the images as "cubin sm_90, PTX compute_80" (for messages).
void AppendCudaImageList(Message& m, const CudaImageRef* images, uint32_t count);

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CUDA_IMAGE_CHOICE_H_
