#include "runtime_minimal/cuda/image_choice.h"

namespace agate {
namespace rt {
namespace {

// Appends the images matching `accept` to out, highest arch first (stable for ties).
template <typename Accept>
uint32_t AppendByArchDescending(const CudaImageRef* images, uint32_t count, Accept accept, uint32_t* out,
                                uint32_t n) {
  const uint32_t first = n;
  for (uint32_t i = 0; i < count; ++i) {
    if (!accept(images[i])) continue;
    uint32_t at = n++;
    while (at > first && images[out[at - 1]].arch < images[i].arch) {
      out[at] = out[at - 1];
      --at;
    }
    out[at] = i;
  }
  return n;
}

}  // namespace

uint32_t OrderCudaImages(const CudaImageRef* images, uint32_t count, uint32_t device_arch, uint32_t* out_order) {
  const uint32_t major = device_arch / 10;
  uint32_t n = AppendByArchDescending(
      images, count, [&](const CudaImageRef& image) { return image.cubin && image.arch == device_arch; }, out_order,
      0);
  n = AppendByArchDescending(
      images, count, [&](const CudaImageRef& image) { return !image.cubin && image.arch <= device_arch; }, out_order,
      n);
  n = AppendByArchDescending(
      images, count,
      [&](const CudaImageRef& image) {
        return image.cubin && image.arch / 10 == major && image.arch < device_arch;
      },
      out_order, n);
  return n;
}

void AppendCudaImageList(Message& m, const CudaImageRef* images, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    m << (i == 0 ? "" : ", ") << (images[i].cubin ? "cubin sm_" : "PTX compute_") << images[i].arch;
  }
  if (count == 0) m << "no images";
}

}  // namespace rt
}  // namespace agate
